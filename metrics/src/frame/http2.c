// SPDX-License-Identifier: MIT
/*
 * HTTP/2 by stream (h2c with prior knowledge, gRPC): the parser and the table
 * of streams in flight are bpf/frame/http2.h. Streams are paired with their
 * ends by stream id, so multiplexed requests are counted and timed one each.
 */
#include "frame_ops.h"
#include "frame/http2.h"

static uint32_t http2_event_id(const struct ebee_fdir *d)
{
	return ebee_h2_event_id(d);
}

const struct ebee_frame_ops ebee_frame_http2 = {
	.step = ebee_http2_frame_step,
	.event_id = http2_event_id,
};
