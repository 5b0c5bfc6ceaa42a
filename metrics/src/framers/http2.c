// SPDX-License-Identifier: MIT
/*
 * HTTP/2, recognised by the client's connection preface ("PRI * HTTP/2.0")
 * and not framed yet: its streams are multiplexed on one connection, so the
 * length pattern counts bursts, not requests.
 */
#include "framer.h"

const struct ebee_framer_ops ebee_framer_http2 = {
	.id = EBEE_FR_HTTP2,
	.name = "http2",
	.warning = "HTTP/2 streams are multiplexed and no HTTP/2 framer is built: a read "
		   "burst is counted as one request, its latency a batch's",
};
