// SPDX-License-Identifier: MIT
/* RESP (redis): the parser is bpf/frame/resp.h. */
#include "framer.h"
#include "frame/resp.h"

const struct ebee_framer_ops ebee_framer_resp = {
	.step = ebee_resp_frame_step,
};
