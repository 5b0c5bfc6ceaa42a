/* SPDX-License-Identifier: MIT */
/*
 * memcached binary protocol: every message is a 24-byte header (magic 0x80
 * for a request, 0x81 for a response; the opcode at byte 1; the total body
 * length, big-endian, at bytes 8..11) and its body, skipped, never read.
 * A request starts on its header's last byte; a response ends on its body's
 * last byte (its header's, when the body is empty). Quiet opcodes (GETQ,
 * SETQ...) are answered only on a miss or an error: their requests are
 * EBEE_FEV_UNANSWERED, their responses are no END. A STAT request is
 * answered by one packet per statistic up to an empty one: that one ends
 * it (or an error's, which has a body). A wrong magic loses sync. See frame.h for the step
 * contract.
 *
 * State: pos the byte of the header, left the opcode, num the body length,
 * depth whether a response's status is an error,
 * st (responses) what the body's last byte is: MB_HDR none pending,
 * MB_LAST_END an END, MB_LAST_NONE nothing.
 */
#ifndef EBEE_FRAME_MCBIN_H
#define EBEE_FRAME_MCBIN_H

#include "frame.h"

#define MB_HDR_LEN   24
#define MB_MAGIC_REQ 0x80
#define MB_MAGIC_RSP 0x81
#define MB_OP_STAT   0x10

enum { MB_HDR, MB_LAST_END, MB_LAST_NONE };

/* GETQ GETKQ SETQ ADDQ REPLACEQ DELETEQ INCREMENTQ DECREMENTQ QUITQ FLUSHQ
 * APPENDQ PREPENDQ GATQ GATKQ. */
static __always_inline int ebee_mb_quiet(__u32 op)
{
	return (op >= 0x11 && op <= 0x1a) || op == 0x09 || op == 0x0d || op == 0x1e || op == 0x24;
}

/* One header byte: the event of its last (START or UNANSWERED for a
 * request, END or NONE for a response, the body then pending), else NONE;
 * ERR on a wrong magic or an impossible length. */
static __always_inline int ebee_mcbin_step(struct ebee_fdir *d, __u8 c, int resp)
{
	__u32 p = d->pos;

	if (d->st != MB_HDR) { /* the body's last byte */
		p = d->st;
		d->st = MB_HDR;
		return p == MB_LAST_END ? EBEE_FEV_END : EBEE_FEV_NONE;
	}
	if (p == 0) {
		if (c != (resp ? MB_MAGIC_RSP : MB_MAGIC_REQ))
			return EBEE_FEV_ERR;
		d->num = 0;
		d->depth = 0;
	} else if (p == 1) {
		d->left = c;
	} else if ((p == 6 || p == 7) && c) {
		d->depth = 1; /* a response's status: an error */
	} else if (p >= 8 && p < 12) {
		d->num = d->num << 8 | c;
		if (d->num > 0x40000000)
			return EBEE_FEV_ERR;
	}
	if (p < MB_HDR_LEN - 1) {
		d->pos = p + 1;
		return EBEE_FEV_NONE;
	}
	d->pos = 0;
	if (!resp) {
		d->skip = d->num;
		return ebee_mb_quiet(d->left) ? ebee_frame_unanswered(d) : EBEE_FEV_START;
	}
	p = !ebee_mb_quiet(d->left) && (d->left != MB_OP_STAT || !d->num || d->depth);
	if (!d->num)
		return p ? EBEE_FEV_END : EBEE_FEV_NONE;
	d->skip = d->num - 1;
	d->st = p ? MB_LAST_END : MB_LAST_NONE;
	return EBEE_FEV_NONE;
}

/* The list's interface (frame.h): a header's magic, 0x80 for a request,
 * 0x81 for a response. */
static __always_inline int ebee_mcbin_detect(const __u8 *b, __u32 n)
{
	return n >= 1 && b[0] == 0x80;
}

static __always_inline int ebee_mcbin_may_start(int resp, __u8 c)
{
	return c == (resp ? 0x81 : 0x80);
}

static __always_inline int ebee_mcbin_frame_step(struct ebee_fdir *d, __u8 c, int resp,
						 __u32 *head_bits)
{
	(void)head_bits;
	return ebee_mcbin_step(d, c, resp);
}

#endif /* EBEE_FRAME_MCBIN_H */
