/* SPDX-License-Identifier: MIT */
/*
 * RESP (redis): a request is a command, an array of bulk strings
 * ("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n") or an inline command line;
 * a response is one top-level reply, whose aggregates ('*' arrays, RESP3 sets
 * and maps) are followed EBEE_FRAME_DEPTH deep. Pipelined commands are counted
 * one each; RESP3 pushes ('>', pub/sub messages) are not replies. Bulk
 * payloads are skipped, never read. See frame.h for the step contract.
 */
#ifndef EBEE_FRAME_RESP_H
#define EBEE_FRAME_RESP_H

#include "frame.h"

enum { RQ_IDLE, RQ_NARGS, RQ_DOLLAR, RQ_BLEN, RQ_BCR, RQ_BLF, RQ_INLINE };

/* Client -> server. */
static __always_inline int ebee_resp_req_step(struct ebee_fdir *d, __u8 c)
{
	switch (d->st) {
	case RQ_IDLE:
		if (c == '\r' || c == '\n')
			return EBEE_FEV_NONE;
		d->num = 0;
		d->st = c == '*' ? RQ_NARGS : RQ_INLINE;
		return EBEE_FEV_START;
	case RQ_NARGS:
		if (ebee_frame_is_digit(c)) {
			d->num = d->num * 10 + (c - '0');
			return d->num > 0x100000 ? EBEE_FEV_ERR : EBEE_FEV_NONE;
		}
		if (c == '\r' || c == '-')
			return EBEE_FEV_NONE; /* "*-1": a null array, nothing follows */
		if (c != '\n')
			return EBEE_FEV_ERR;
		d->left = d->num;
		d->st = d->num ? RQ_DOLLAR : RQ_IDLE;
		return EBEE_FEV_NONE;
	case RQ_DOLLAR:
		if (c != '$')
			return EBEE_FEV_ERR;
		d->num = 0;
		d->st = RQ_BLEN;
		return EBEE_FEV_NONE;
	case RQ_BLEN:
		if (ebee_frame_is_digit(c)) {
			d->num = d->num * 10 + (c - '0');
			return d->num > 0x20000000 ? EBEE_FEV_ERR : EBEE_FEV_NONE;
		}
		if (c == '\r')
			return EBEE_FEV_NONE;
		if (c != '\n')
			return EBEE_FEV_ERR;
		d->skip = d->num;
		d->st = RQ_BCR;
		return EBEE_FEV_NONE;
	case RQ_BCR:
		if (c != '\r')
			return EBEE_FEV_ERR;
		d->st = RQ_BLF;
		return EBEE_FEV_NONE;
	case RQ_BLF:
		if (c != '\n')
			return EBEE_FEV_ERR;
		d->left--;
		d->st = d->left ? RQ_DOLLAR : RQ_IDLE;
		return EBEE_FEV_NONE;
	case RQ_INLINE:
		if (c == '\n')
			d->st = RQ_IDLE;
		return EBEE_FEV_NONE;
	}
	return EBEE_FEV_ERR;
}

enum { RP_TYPE, RP_LINE, RP_BLEN, RP_BCR, RP_BLF, RP_ALEN };

/* An element is complete: close the aggregates it completes; the reply ends
 * when none is left open. */
static __always_inline int ebee_resp_elem_done(struct ebee_fdir *d)
{
	d->st = RP_TYPE;
	for (int i = 0; i < EBEE_FRAME_DEPTH; i++) {
		if (!d->depth || d->depth > EBEE_FRAME_DEPTH)
			break;
		if (--d->stack[(d->depth - 1) & (EBEE_FRAME_DEPTH - 1)])
			return EBEE_FEV_NONE;
		d->depth--;
	}
	if (d->depth)
		return EBEE_FEV_NONE;
	return d->flags & EBEE_FD_PUSH ? EBEE_FEV_NONE : EBEE_FEV_END;
}

/* Server -> client. d->pos holds the aggregate's multiplier (2 for maps)
 * and, in bit 7, a minus sign. One case per state of a reply: longer than a
 * screen as a whole, read one case at a time. */
static __always_inline int ebee_resp_rsp_step(struct ebee_fdir *d, __u8 c)
{
	__u32 n;

	switch (d->st) {
	case RP_TYPE:
		if (!d->depth) {
			d->flags &= ~EBEE_FD_PUSH;
			if (c == '>')
				d->flags |= EBEE_FD_PUSH;
		}
		d->num = 0;
		d->pos = 1;
		switch (c) {
		case '+':
		case '-':
		case ':':
		case ',':
		case '#':
		case '(':
		case '_':
			d->st = RP_LINE;
			return EBEE_FEV_NONE;
		case '$':
		case '=':
		case '!':
			d->st = RP_BLEN;
			return EBEE_FEV_NONE;
		case '%':
			d->pos = 2;
			/* fallthrough */
		case '*':
		case '~':
		case '>':
			d->st = RP_ALEN;
			return EBEE_FEV_NONE;
		}
		return EBEE_FEV_ERR; /* '|' attributes included: not followed */
	case RP_LINE:
		return c == '\n' ? ebee_resp_elem_done(d) : EBEE_FEV_NONE;
	case RP_BLEN:
	case RP_ALEN:
		if (ebee_frame_is_digit(c)) {
			d->num = d->num * 10 + (c - '0');
			return d->num > 0x20000000 ? EBEE_FEV_ERR : EBEE_FEV_NONE;
		}
		if (c == '-') {
			d->pos |= 0x80;
			return EBEE_FEV_NONE;
		}
		if (c == '\r')
			return EBEE_FEV_NONE;
		if (c != '\n')
			return EBEE_FEV_ERR;
		if (d->pos & 0x80)
			return ebee_resp_elem_done(d); /* null bulk or aggregate */
		if (d->st == RP_BLEN) {
			d->skip = d->num;
			d->st = RP_BCR;
			return EBEE_FEV_NONE;
		}
		n = d->num * (d->pos & 3);
		if (!n)
			return ebee_resp_elem_done(d);
		if (d->depth >= EBEE_FRAME_DEPTH)
			return EBEE_FEV_ERR;
		d->stack[d->depth & (EBEE_FRAME_DEPTH - 1)] = n;
		d->depth++;
		d->st = RP_TYPE;
		return EBEE_FEV_NONE;
	case RP_BCR:
		if (c != '\r')
			return EBEE_FEV_ERR;
		d->st = RP_BLF;
		return EBEE_FEV_NONE;
	case RP_BLF:
		return c == '\n' ? ebee_resp_elem_done(d) : EBEE_FEV_ERR;
	}
	return EBEE_FEV_ERR;
}

/* The list's interface (frame.h): a client's first byte '*' (an array of
 * bulk strings); a message starts with a type byte. */
static __always_inline int ebee_resp_detect(const __u8 *b, __u32 n)
{
	return n >= 1 && b[0] == '*';
}

static __always_inline int ebee_resp_may_start(int resp, __u8 c)
{
	return resp ? (c == '+' || c == '-' || c == ':' || c == '$' || c == '*') : c == '*';
}

static __always_inline int ebee_resp_frame_step(struct ebee_fdir *d, __u8 c, int resp,
						__u32 *head_bits)
{
	(void)head_bits;
	return resp ? ebee_resp_rsp_step(d, c) : ebee_resp_req_step(d, c);
}

#endif /* EBEE_FRAME_RESP_H */
