// SPDX-License-Identifier: MIT
/*
 * HTTP/2 by stream (h2c with prior knowledge, gRPC): the parser and the table
 * of streams in flight are bpf/frame/http2.h. Streams are paired with their
 * ends by stream id, so multiplexed requests are counted and timed one each.
 */
#include "framer.h"
#include "frame/http2.h"

static int http2_step(struct ebee_fdir *d, uint8_t c, int resp, uint32_t *head_bits)
{
	(void)head_bits;
	return ebee_h2_step(d, c, resp);
}

static uint32_t http2_event_id(const struct ebee_fdir *d)
{
	return ebee_h2_event_id(d);
}

const struct ebee_framer_ops ebee_framer_http2 = {
	.id = EBEE_FR_HTTP2,
	.name = "http2",
	.step = http2_step,
	.event_id = http2_event_id,
};
