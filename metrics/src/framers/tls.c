// SPDX-License-Identifier: MIT
/*
 * TLS, recognised by a handshake record header (0x16 0x03 0x00..0x04) and
 * not framed: the records are encrypted, so requests are counted by length,
 * the handshake counts as one and any multiplexing inside (HTTP/2 over TLS)
 * cannot be seen.
 */
#include "framer.h"

const struct ebee_framer_ops ebee_framer_tls = {
	.id = EBEE_FR_TLS,
	.name = "tls",
	.warning = "TLS-encrypted: requests counted by length, the handshake counted as a "
		   "request, multiplexing inside invisible",
};
