// SPDX-License-Identifier: MIT
/*
 * memcached text protocol: the parser is bpf/frame/mctext.h. Requests with
 * noreply get no response: counted apart (unanswered), never paired. Meta
 * commands in quiet mode (the q flag) are answered or not as their outcome
 * goes, which FIFO pairing cannot follow: the workload is untrusted then.
 */
#include <stdio.h>
#include "frame_ops.h"
#include "frame/mctext.h"

static int mctext_check(const struct ebee_fstat *f, char *buf, size_t len)
{
	if (!f->mc_quiet)
		return 0;
	return snprintf(buf, len,
			"%llu of them sent meta commands in quiet mode (q flag), answered only "
			"sometimes: responses may pair with the wrong requests",
			(unsigned long long)f->mc_quiet);
}

const struct ebee_frame_ops ebee_frame_mctext = {
	.step = ebee_mctext_frame_step,
	.check = mctext_check,
};
