// SPDX-License-Identifier: MIT
/*
 * memcached binary protocol: the parser is bpf/frame/mcbin.h. Requests with
 * quiet opcodes (GETQ, SETQ...) are counted apart (unanswered); the
 * responses they get on a miss or an error are not paired.
 */
#include "framer.h"
#include "frame/mcbin.h"

static int mcbin_step(struct ebee_fdir *d, uint8_t c, int resp, uint32_t *head_bits)
{
	return ebee_mcbin_step(d, c, resp);
}

const struct ebee_framer_ops ebee_framer_mcbin = {
	.id = EBEE_FR_MCBIN,
	.name = "memcache-binary",
	.step = mcbin_step,
};
