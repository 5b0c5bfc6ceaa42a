// SPDX-License-Identifier: MIT
/* HTTP/1.x with pipelining: the parser is bpf/frame/http1.h. */
#include "frame_ops.h"
#include "frame/http1.h"

const struct ebee_frame_ops ebee_frame_http1 = {
	.step = ebee_http1_frame_step,
};
