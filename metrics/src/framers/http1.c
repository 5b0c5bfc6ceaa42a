// SPDX-License-Identifier: MIT
/* HTTP/1.x with pipelining: the parser is bpf/frame/http1.h. */
#include "framer.h"
#include "frame/http1.h"

const struct ebee_framer_ops ebee_framer_http1 = {
	.step = ebee_http1_frame_step,
};
