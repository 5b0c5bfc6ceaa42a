// SPDX-License-Identifier: MIT
/* RESP (redis): the parser is bpf/frame/resp.h. */
#include "frame_ops.h"
#include "frame/resp.h"

const struct ebee_frame_ops ebee_frame_resp = {
	.step = ebee_resp_frame_step,
};
