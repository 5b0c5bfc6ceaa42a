// SPDX-License-Identifier: MIT
/*
 * TLS records: the parser is bpf/frame/tls.h. A request is the client's
 * application-data records up to the server's reply, the handshake excluded:
 * exact for one request at a time per connection. Trusted unless the kernel
 * saw what breaks that: a client that offered h2 (or a ClientHello it could
 * not read) where the server's choice is encrypted, or a client that wrote
 * again before any reply.
 */
#include <stddef.h>
#include "frame_ops.h"
#include "frame/tls.h"

static const struct ebee_frame_reason tls_reasons[] = {
	{ EBEE_WARN_TLS_MUX, offsetof(struct ebee_fstat, tls_mux),
	  "of them offered h2 (ALPN) or a ClientHello ebee could not read: requests multiplexed "
	  "in encrypted records count as one" },
	{ EBEE_WARN_TLS_AGAIN, offsetof(struct ebee_fstat, tls_again),
	  "had a client that wrote again before a reply (pipelined, or a request in pieces): "
	  "counted as one request" },
	{ .text = NULL },
};

const struct ebee_frame_ops ebee_frame_tls = {
	.step = ebee_tls_frame_step,
	.reasons = tls_reasons,
};
