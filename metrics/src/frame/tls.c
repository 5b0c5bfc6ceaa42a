// SPDX-License-Identifier: MIT
/*
 * TLS records: the parser is bpf/frame/tls.h. A request is the client's
 * application-data records up to the server's reply, the handshake excluded:
 * exact for one request at a time per connection. Trusted unless the kernel
 * saw what breaks that: a client that offered h2 (or a ClientHello it could
 * not read) where the server's choice is encrypted, or a client that wrote
 * again before any reply.
 */
#include <stdio.h>
#include "frame_ops.h"
#include "frame/tls.h"

static int tls_check(const struct ebee_fstat *f, char *buf, size_t len)
{
	int n = 0;

	if (f->tls_mux)
		n += snprintf(buf, len,
			      "%llu of them offered h2 (ALPN) or a ClientHello ebee could not "
			      "read: requests multiplexed in encrypted records count as one",
			      (unsigned long long)f->tls_mux);
	if (f->tls_again)
		n += snprintf(buf + ((size_t)n < len ? (size_t)n : len),
			      (size_t)n < len ? len - n : 0,
			      "%s%llu had a client that wrote again before a reply (pipelined, "
			      "or a request in pieces): counted as one request",
			      n ? "; " : "", (unsigned long long)f->tls_again);
	return n;
}

const struct ebee_frame_ops ebee_frame_tls = {
	.step = ebee_tls_frame_step,
	.check = tls_check,
};
