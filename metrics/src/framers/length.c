// SPDX-License-Identifier: MIT
/*
 * No framer: the io pattern's read and write bursts (bpf/ebee.bpf.c). Exact
 * for one request at a time per connection; ebee cannot tell from lengths
 * when a client sends several at once, so no warning is possible here beyond
 * what the recognised protocols (http2) say.
 */
#include "framer.h"

const struct ebee_framer_ops ebee_framer_length = {
	.id = EBEE_FR_LENGTH,
	.name = "length",
};
