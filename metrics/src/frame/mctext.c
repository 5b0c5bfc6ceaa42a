// SPDX-License-Identifier: MIT
/*
 * memcached text protocol: the parser is bpf/frame/mctext.h. Requests with
 * noreply get no response: counted apart (unanswered), never paired. Meta
 * commands in quiet mode (the q flag) are answered or not as their outcome
 * goes, which FIFO pairing cannot follow: the workload is untrusted then.
 */
#include <stddef.h>
#include "frame_ops.h"
#include "frame/mctext.h"

static const struct ebee_frame_reason mctext_reasons[] = {
	{ EBEE_WARN_MC_QUIET, offsetof(struct ebee_fstat, mc_quiet),
	  "of them sent meta commands in quiet mode (q flag), answered only sometimes: responses "
	  "may pair with the wrong requests" },
	{ .text = NULL },
};

const struct ebee_frame_ops ebee_frame_mctext = {
	.step = ebee_mctext_frame_step,
	.reasons = mctext_reasons,
};
