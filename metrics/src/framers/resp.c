// SPDX-License-Identifier: MIT
/* RESP (redis): the parser is bpf/frame/resp.h. */
#include "framer.h"
#include "frame/resp.h"

static int resp_step(struct ebee_fdir *d, uint8_t c, int resp, uint32_t *head_bits)
{
	return resp ? ebee_resp_rsp_step(d, c) : ebee_resp_req_step(d, c);
}

const struct ebee_framer_ops ebee_framer_resp = {
	.id = EBEE_FR_RESP,
	.name = "resp",
	.step = resp_step,
};
