/* SPDX-License-Identifier: MIT */
/*
 * memcached text protocol: a request is a command line ("get k1 k2\r\n",
 * "set k 0 0 5\r\n" and its data block, meta "mg k v\r\n", "ms k 5 T0\r\n"
 * and its data); a response is what answers it: one line ("STORED",
 * "NOT_FOUND", "HD", "EN", a number...), or "VALUE" / "STAT" / "ITEM" lines
 * up to "END", or meta "VA <size> ..." and its data block. Data blocks are
 * skipped, never read: their length is a token of the line.
 *
 * A request starts (EBEE_FEV_START) on the LF of its command line: only then
 * is it known whether it ends in "noreply", which the server answers with
 * nothing (EBEE_FEV_UNANSWERED instead, as for "quit"). Meta commands with
 * the q flag are answered or not as their outcome goes (a miss of "mg k q"
 * is silent, a hit is not), which FIFO pairing cannot follow: they are
 * EBEE_FEV_UNANSWERED too, and EBEE_MC_QUIET in *bits tells the walk, which
 * counts the connection (struct ebee_fstat.mc_quiet) as untrusted. See
 * frame.h for the step contract.
 *
 * State: st the state, pos the length of the token (saturating), depth its
 * index on the line (saturating), stack[0..1] its last eight bytes (a shift
 * register, for "noreply" and the command word), left the command's class
 * (MC_*), num the data length token, msgs the line's flags (MT_*).
 */
#ifndef EBEE_FRAME_MCTEXT_H
#define EBEE_FRAME_MCTEXT_H

#include "frame.h"

/* *bits (the walk's head_bits): a meta command in quiet mode was seen. */
#define EBEE_MC_QUIET 0x1

enum { MT_LINE, MT_TOKEN, MT_DCR, MT_DLF };

/* d->left: the index of the data length token (0: no data block), and: */
#define MC_DATA	 0x0ff
#define MC_META	 0x100	/* a meta command: the q flag applies, noreply does not */
#define MC_QUIT	 0x200	/* quit: the server closes, no answer */
#define MC_NONR	 0x1000 /* a command that has no noreply (get, stats...) */
#define MC_MULTI 0x400	/* response: a line of a multi-line block (VALUE, STAT, ITEM) */
#define MC_VA	 0x800	/* response: meta VA, over after its data */

/* d->msgs */
#define MT_NOREPLY 0x1 /* the last token was "noreply" */
#define MT_QUIET   0x2 /* a meta command's "q" flag */
#define MT_HAVELEN 0x4 /* the data length token was seen */

/* The class of a command word: w its last four bytes, n its length. */
static __always_inline __u32 ebee_mc_req_class(__u32 w, __u32 n)
{
	if (n == 3 && (w == 0x736574 || w == 0x616464 || w == 0x636173)) /* set add cas */
		return 4;
	if ((n == 7 && (w == 0x6c616365 || w == 0x70656e64)) || /* replace prepend */
	    (n == 6 && w == 0x70656e64))			/* append */
		return 4;
	if (n == 2 && (w >> 8) == 'm') {
		if (w == 0x6d73) /* ms <key> <datalen> <flags>* */
			return MC_META | 2;
		return MC_META; /* mg md ma mn me (and any other meta) */
	}
	if (n == 4 && w == 0x71756974) /* quit */
		return MC_QUIT;
	/* Retrieval and reports: a last token "noreply" is a key, or nothing. */
	if ((n == 3 && (w == 0x676574 || w == 0x676174)) ||		/* get gat */
	    (n == 4 && (w == 0x67657473 || w == 0x67617473)) ||		/* gets gats */
	    (n == 5 && w == 0x74617473) || (n == 7 && w == 0x73696f6e)) /* stats version */
		return MC_NONR;
	return 0; /* delete incr decr touch flush_all verbosity ...: noreply applies */
}

/* The end of a request token of n bytes (its last in lo, hi). */
static __always_inline void ebee_mc_req_token(struct ebee_fdir *d, __u32 n)
{
	__u32 lo = d->stack[0], hi = d->stack[1] & 0xffffff;

	if (!d->depth)
		d->left = ebee_mc_req_class(lo, n);
	else if ((d->left & MC_DATA) == d->depth)
		d->msgs |= MT_HAVELEN;
	d->msgs &= ~MT_NOREPLY;
	if (n == 7 && lo == 0x65706c79 && hi == 0x6e6f72) /* "noreply" */
		d->msgs |= MT_NOREPLY;
	if ((d->left & MC_META) && d->depth >= 2 && n == 1 && lo == 'q')
		d->msgs |= MT_QUIET;
	if (d->depth < 255)
		d->depth++;
	d->pos = 0;
}

/* Client -> server. One case per state of the command line: longer than a
 * screen as a whole, read one case at a time. */
static __always_inline int ebee_mctext_req_step(struct ebee_fdir *d, __u8 c, __u32 *bits)
{
	switch (d->st) {
	case MT_LINE:
		if (c == '\r' || c == '\n' || c == ' ')
			return EBEE_FEV_NONE; /* blank lines and leading blanks */
		d->depth = 0;
		d->left = 0;
		d->msgs = 0;
		d->num = 0;
		d->st = MT_TOKEN;
		d->pos = 0;
		/* fallthrough */
	case MT_TOKEN:
		if (c == ' ' || c == '\r' || c == '\n') {
			if (d->pos)
				ebee_mc_req_token(d, d->pos);
			if (c != '\n')
				return EBEE_FEV_NONE;
			d->st = MT_LINE;
			if ((d->left & MC_DATA) && (d->msgs & MT_HAVELEN)) {
				d->skip = d->num;
				d->st = MT_DCR;
			}
			if (d->msgs & MT_QUIET) {
				*bits |= EBEE_MC_QUIET;
				return ebee_frame_unanswered(d);
			}
			if ((d->left & MC_QUIT) ||
			    ((d->msgs & MT_NOREPLY) && !(d->left & (MC_META | MC_NONR))))
				return ebee_frame_unanswered(d);
			return EBEE_FEV_START;
		}
		if (d->depth && (d->left & MC_DATA) == d->depth) {
			if (!ebee_frame_is_digit(c))
				return EBEE_FEV_ERR;
			d->num = d->num * 10 + (c - '0');
			if (d->num > 0x40000000)
				return EBEE_FEV_ERR;
		}
		if (d->pos) {
			d->stack[1] = d->stack[1] << 8 | d->stack[0] >> 24;
			d->stack[0] = d->stack[0] << 8 | c;
		} else {
			d->stack[1] = 0;
			d->stack[0] = c;
		}
		if (d->pos < 255)
			d->pos++;
		return EBEE_FEV_NONE;
	case MT_DCR:
		if (c != '\r')
			return EBEE_FEV_ERR;
		d->st = MT_DLF;
		return EBEE_FEV_NONE;
	case MT_DLF:
		if (c != '\n')
			return EBEE_FEV_ERR;
		d->st = MT_LINE;
		return EBEE_FEV_NONE;
	}
	return EBEE_FEV_ERR;
}

/* The class of a response line's first word. */
static __always_inline __u32 ebee_mc_rsp_class(__u32 w, __u32 n)
{
	if (n == 5 && w == 0x414c5545) /* VALUE <key> <flags> <bytes> [<cas>] */
		return MC_MULTI | 3;
	if (n == 2 && w == 0x5641) /* VA <size> <flags>* */
		return MC_VA | 1;
	if (n == 4 && (w == 0x53544154 || w == 0x4954454d)) /* STAT ITEM */
		return MC_MULTI;
	return 0; /* END, STORED, HD, EN, ERROR, a number...: one line, the whole answer */
}

/* Server -> client. */
static __always_inline int ebee_mctext_rsp_step(struct ebee_fdir *d, __u8 c)
{
	switch (d->st) {
	case MT_LINE:
		d->depth = 0;
		d->left = 0;
		d->msgs = 0;
		d->num = 0;
		d->pos = 0;
		d->st = MT_TOKEN;
		/* fallthrough */
	case MT_TOKEN:
		if (c == ' ' || c == '\r' || c == '\n') {
			if (d->pos) {
				if (!d->depth)
					d->left = ebee_mc_rsp_class(d->stack[0], d->pos);
				else if ((d->left & MC_DATA) == d->depth)
					d->msgs |= MT_HAVELEN;
				if (d->depth < 255)
					d->depth++;
				d->pos = 0;
			}
			if (c != '\n')
				return EBEE_FEV_NONE;
			d->st = MT_LINE;
			if (d->left & MC_DATA) {
				if (!(d->msgs & MT_HAVELEN))
					return EBEE_FEV_ERR;
				d->skip = d->num;
				d->st = MT_DCR;
				return EBEE_FEV_NONE;
			}
			return d->left & MC_MULTI ? EBEE_FEV_NONE : EBEE_FEV_END;
		}
		if (d->depth && (d->left & MC_DATA) == d->depth) {
			if (!ebee_frame_is_digit(c))
				return EBEE_FEV_ERR;
			d->num = d->num * 10 + (c - '0');
			if (d->num > 0x40000000)
				return EBEE_FEV_ERR;
		}
		d->stack[0] = (d->pos ? d->stack[0] << 8 : 0) | c;
		if (d->pos < 255)
			d->pos++;
		return EBEE_FEV_NONE;
	case MT_DCR:
		if (c != '\r')
			return EBEE_FEV_ERR;
		d->st = MT_DLF;
		return EBEE_FEV_NONE;
	case MT_DLF:
		if (c != '\n')
			return EBEE_FEV_ERR;
		d->st = MT_LINE;
		return d->left & MC_VA ? EBEE_FEV_END : EBEE_FEV_NONE;
	}
	return EBEE_FEV_ERR;
}

/* Whether byte k ends a memcached command word: a space or CR after it. */
static __always_inline int ebee_mctext_end(const __u8 *b, __u32 n, __u32 k)
{
	return k < n && (b[k] == ' ' || b[k] == '\r');
}

/* memcached text: a lowercase command word (its first four bytes w, the
 * longer ones by their first four and their end), then a space or CR. */
static __always_inline int ebee_mctext_detect_word(const __u8 *b, __u32 n, __u32 w)
{
	int ok = 0;

	switch (w >> 8) {
	case 0x676574: /* get */
	case 0x676174: /* gat */
	case 0x736574: /* set */
	case 0x616464: /* add */
	case 0x636173: /* cas */
		/* and gets, gats */
		ok = ebee_mctext_end(b, n, 3) || ebee_mctext_end(b, n, 4);
		break;
	}
	switch (w >> 16) {
	case 0x6d67: /* mg */
	case 0x6d73: /* ms */
	case 0x6d64: /* md */
	case 0x6d61: /* ma */
	case 0x6d6e: /* mn */
	case 0x6d65: /* me */
		ok = ok || ebee_mctext_end(b, n, 2);
		break;
	}
	switch (w) {
	case 0x7265706c: /* "repl"ace */
	case 0x70726570: /* "prep"end */
		ok = ok || ebee_mctext_end(b, n, 7);
		break;
	case 0x61707065: /* "appe"nd */
	case 0x64656c65: /* "dele"te */
		ok = ok || ebee_mctext_end(b, n, 6);
		break;
	case 0x696e6372: /* incr */
	case 0x64656372: /* decr */
	case 0x71756974: /* quit */
		ok = ok || ebee_mctext_end(b, n, 4);
		break;
	case 0x746f7563: /* "touc"h */
	case 0x73746174: /* "stat"s */
		ok = ok || ebee_mctext_end(b, n, 5);
		break;
	case 0x76657273: /* "vers"ion */
		ok = ok || ebee_mctext_end(b, n, 7);
		break;
	case 0x666c7573: /* "flus"h_all */
	case 0x76657262: /* "verb"osity */
		ok = ok || ebee_mctext_end(b, n, 9);
		break;
	}
	return ok;
}

/* The list's interface (frame.h): a command word (lowercase); a response
 * starts with a capital (VALUE, STORED, END...), a command with a lowercase
 * letter. */
static __always_inline int ebee_mctext_detect(const __u8 *b, __u32 n)
{
	return n >= 4 && b[0] >= 'a' && b[0] <= 'z' &&
	       ebee_mctext_detect_word(b, n, ebee_frame_word(b));
}

static __always_inline int ebee_mctext_may_start(int resp, __u8 c)
{
	return resp ? (c >= 'A' && c <= 'Z') : (c >= 'a' && c <= 'z');
}

static __always_inline int ebee_mctext_frame_step(struct ebee_fdir *d, __u8 c, int resp,
						  __u32 *head_bits)
{
	return resp ? ebee_mctext_rsp_step(d, c) : ebee_mctext_req_step(d, c, head_bits);
}

#endif /* EBEE_FRAME_MCTEXT_H */
