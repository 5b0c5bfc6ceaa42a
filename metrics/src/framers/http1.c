// SPDX-License-Identifier: MIT
/* HTTP/1.x with pipelining: the parser is bpf/frame/http1.h. */
#include "framer.h"
#include "frame/http1.h"

static int http1_step(struct ebee_fdir *d, uint8_t c, int resp, uint32_t *head_bits)
{
	return ebee_http_step(d, c, resp, head_bits);
}

const struct ebee_framer_ops ebee_framer_http1 = {
	.id = EBEE_FR_HTTP1,
	.name = "http1",
	.step = http1_step,
};
