// SPDX-License-Identifier: MIT
/*
 * memcached binary protocol: the parser is bpf/frame/mcbin.h. Requests with
 * quiet opcodes (GETQ, SETQ...) are counted apart (unanswered); the
 * responses they get on a miss or an error are not paired.
 */
#include "frame_ops.h"
#include "frame/mcbin.h"

const struct ebee_frame_ops ebee_frame_mcbin = {
	.step = ebee_mcbin_frame_step,
};
