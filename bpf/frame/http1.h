/* SPDX-License-Identifier: MIT */
/*
 * HTTP/1.x: a message is a start line, header lines up to an empty line and
 * a body delimited by Content-Length or chunked transfer coding; pipelined
 * requests are counted one each. A response has no body after a HEAD request
 * or with status 1xx (interim: not the response), 204 or 304; without either
 * header it runs until the server closes (the caller ends it at its FIN).
 * Header names are matched case-insensitively. Bodies and chunks are skipped,
 * never read. head_bits: bit i % 32 set when the i-th request (counted from
 * 0, d->msgs of the client side) is a HEAD, read by the server side's parser
 * for the i-th response. See frame.h for the step contract.
 */
#ifndef EBEE_FRAME_HTTP1_H
#define EBEE_FRAME_HTTP1_H

#include "frame.h"

enum {
	H_IDLE,
	H_LINE,
	H_HSTART,
	H_NAME,
	H_CL,
	H_TE,
	H_VAL,
	H_HEND_LF,
	H_CSIZE,
	H_CEXT,
	H_CCR,
	H_CLF,
	H_TRAILER,
	H_TLINE,
	H_TEND,
	H_BODY_LAST,
	H_TOCLOSE,
};

#define H_CAND_CL 1u /* the header name may still be content-length */
#define H_CAND_TE 2u /* ... or transfer-encoding */

/* Byte i of a string of at most 24 bytes packed little-endian in three
 * words: constants, where a static array would be a BTF variable the kernel
 * refuses by its name. 0 past the end. */
static __always_inline __u8 ebee_http_strc(__u64 w0, __u64 w1, __u64 w2, __u32 i)
{
	if (i < 8)
		return w0 >> (8 * i);
	if (i < 16)
		return w1 >> (8 * (i - 8));
	if (i < 24)
		return w2 >> (8 * (i - 16));
	return 0;
}

/* "content-length" */
static __always_inline __u8 ebee_http_cl_char(__u32 i)
{
	return ebee_http_strc(0x2d746e65746e6f63ull, 0x00006874676e656cull, 0x0000000000000000ull,
			      i);
}

/* "transfer-encoding" */
static __always_inline __u8 ebee_http_te_char(__u32 i)
{
	return ebee_http_strc(0x726566736e617274ull, 0x6e69646f636e652dull, 0x0000000000000067ull,
			      i);
}

/* "chunked" */
static __always_inline __u8 ebee_http_chunked_char(__u32 i)
{
	return ebee_http_strc(0x0064656b6e756863ull, 0x0000000000000000ull, 0x0000000000000000ull,
			      i);
}

/* A message is complete. */
static __always_inline int ebee_http_done(struct ebee_fdir *d, int resp)
{
	d->st = H_IDLE;
	d->flags &= EBEE_FD_SYNC | EBEE_FD_HUNT;
	if (!resp)
		return EBEE_FEV_NONE;
	d->msgs++;
	return EBEE_FEV_END;
}

static __always_inline int ebee_http_hex(__u8 c)
{
	if (ebee_frame_is_digit(c))
		return c - '0';
	c = ebee_frame_lower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* The empty line after the headers: what follows. */
static __always_inline int ebee_http_headers_end(struct ebee_fdir *d, int resp)
{
	__u32 len = d->stack[0];

	if (d->flags & EBEE_FD_INTERIM) {
		d->st = H_IDLE;
		d->flags &= EBEE_FD_SYNC | EBEE_FD_HUNT;
		return EBEE_FEV_NONE;
	}
	if (resp && (d->flags & EBEE_FD_NOBODY))
		return ebee_http_done(d, resp);
	if (d->flags & EBEE_FD_CHUNKED) {
		d->num = 0;
		d->st = H_CSIZE;
		return EBEE_FEV_NONE;
	}
	if (d->flags & EBEE_FD_CL) {
		if (!len)
			return ebee_http_done(d, resp);
		d->skip = len - 1; /* the last body byte ends the message */
		d->st = H_BODY_LAST;
		return EBEE_FEV_NONE;
	}
	if (!resp)
		return ebee_http_done(d, resp);
	d->flags |= EBEE_FD_TOCLOSE;
	d->st = H_TOCLOSE;
	return EBEE_FEV_NONE;
}

/* The end of a chunk-size line. */
static __always_inline int ebee_http_chunk_line(struct ebee_fdir *d)
{
	if (!d->num) {
		d->st = H_TRAILER;
		return EBEE_FEV_NONE;
	}
	d->skip = d->num;
	d->st = H_CCR;
	return EBEE_FEV_NONE;
}

/* One byte through the parser (frame.h's step contract): one case per state,
 * longer than a screen as a whole and read one case at a time; the longer
 * states' work is in the helpers above. */
static __always_inline int ebee_http_step(struct ebee_fdir *d, __u8 c, int resp, __u32 *head_bits)
{
	__u8 lc;
	int h;

	switch (d->st) {
	case H_IDLE:
		if (c == '\r' || c == '\n')
			return EBEE_FEV_NONE;
		d->st = H_LINE;
		d->pos = 0;
		d->num = 0;
		d->stack[0] = 0;
		d->flags &= EBEE_FD_SYNC | EBEE_FD_HUNT;
		if (resp)
			return c == 'H' ? EBEE_FEV_NONE : EBEE_FEV_ERR;
		d->left = c == 'H';
		*head_bits &= ~(1u << (d->msgs & 31));
		d->msgs++;
		return EBEE_FEV_START;
	case H_LINE:
		if (d->pos < 255)
			d->pos++;
		if (c == '\n') {
			if (resp) {
				if (d->num >= 100 && d->num < 200)
					d->flags |= EBEE_FD_INTERIM;
				if (d->num == 204 || d->num == 304 ||
				    (*head_bits & (1u << (d->msgs & 31))))
					d->flags |= EBEE_FD_NOBODY;
			}
			d->st = H_HSTART;
			return EBEE_FEV_NONE;
		}
		if (resp) {
			/* "HTTP/1.1 200 OK": the status is bytes 9..11. */
			if (d->pos >= 9 && d->pos <= 11) {
				if (!ebee_frame_is_digit(c))
					return EBEE_FEV_ERR;
				d->num = d->num * 10 + (c - '0');
			}
			return EBEE_FEV_NONE;
		}
		if (d->left) { /* "HEAD " */
			if ((d->pos == 1 && c == 'E') || (d->pos == 2 && c == 'A') ||
			    (d->pos == 3 && c == 'D'))
				return EBEE_FEV_NONE;
			if (d->pos == 4 && c == ' ')
				*head_bits |= 1u << ((d->msgs - 1) & 31);
			d->left = 0;
		}
		return EBEE_FEV_NONE;
	case H_HSTART:
		if (c == '\r') {
			d->st = H_HEND_LF;
			return EBEE_FEV_NONE;
		}
		if (c == '\n')
			return ebee_http_headers_end(d, resp);
		d->st = H_NAME;
		d->left = H_CAND_CL | H_CAND_TE;
		d->pos = 0;
		/* fallthrough */
	case H_NAME:
		if (c == ':') {
			if ((d->left & H_CAND_CL) && d->pos == 14) {
				d->num = 0;
				d->st = H_CL;
			} else if ((d->left & H_CAND_TE) && d->pos == 17) {
				d->left = 0;
				d->st = H_TE;
			} else {
				d->st = H_VAL;
			}
			return EBEE_FEV_NONE;
		}
		if (c == '\n')
			return EBEE_FEV_ERR;
		lc = ebee_frame_lower(c);
		if (lc != ebee_http_cl_char(d->pos))
			d->left &= ~H_CAND_CL;
		if (lc != ebee_http_te_char(d->pos))
			d->left &= ~H_CAND_TE;
		if (d->pos < 255)
			d->pos++;
		return EBEE_FEV_NONE;
	case H_CL:
		if (ebee_frame_is_digit(c)) {
			d->num = d->num * 10 + (c - '0');
			return d->num > 0x40000000 ? EBEE_FEV_ERR : EBEE_FEV_NONE;
		}
		if (c == ' ' || c == '\t' || c == '\r')
			return EBEE_FEV_NONE;
		if (c != '\n')
			return EBEE_FEV_ERR;
		d->flags |= EBEE_FD_CL;
		d->stack[0] = d->num;
		d->st = H_HSTART;
		return EBEE_FEV_NONE;
	case H_TE:
		if (c == '\n') {
			d->st = H_HSTART;
			return EBEE_FEV_NONE;
		}
		lc = ebee_frame_lower(c);
		if (lc == ebee_http_chunked_char(d->left)) {
			if (++d->left == 7)
				d->flags |= EBEE_FD_CHUNKED;
		} else {
			d->left = lc == 'c';
		}
		return EBEE_FEV_NONE;
	case H_VAL:
		if (c == '\n')
			d->st = H_HSTART;
		return EBEE_FEV_NONE;
	case H_HEND_LF:
		if (c != '\n')
			return EBEE_FEV_ERR;
		return ebee_http_headers_end(d, resp);
	case H_CSIZE:
		h = ebee_http_hex(c);
		if (h >= 0) {
			d->num = d->num * 16 + h;
			return d->num > 0x40000000 ? EBEE_FEV_ERR : EBEE_FEV_NONE;
		}
		if (c == ';' || c == ' ' || c == '\t') {
			d->st = H_CEXT;
			return EBEE_FEV_NONE;
		}
		if (c == '\r')
			return EBEE_FEV_NONE;
		if (c != '\n')
			return EBEE_FEV_ERR;
		return ebee_http_chunk_line(d);
	case H_CEXT:
		return c == '\n' ? ebee_http_chunk_line(d) : EBEE_FEV_NONE;
	case H_CCR:
		if (c != '\r')
			return EBEE_FEV_ERR;
		d->st = H_CLF;
		return EBEE_FEV_NONE;
	case H_CLF:
		if (c != '\n')
			return EBEE_FEV_ERR;
		d->num = 0;
		d->st = H_CSIZE;
		return EBEE_FEV_NONE;
	case H_TRAILER:
		if (c == '\r') {
			d->st = H_TEND;
			return EBEE_FEV_NONE;
		}
		if (c == '\n')
			return ebee_http_done(d, resp);
		d->st = H_TLINE;
		return EBEE_FEV_NONE;
	case H_TLINE:
		if (c == '\n')
			d->st = H_TRAILER;
		return EBEE_FEV_NONE;
	case H_TEND:
		return c == '\n' ? ebee_http_done(d, resp) : EBEE_FEV_ERR;
	case H_BODY_LAST:
		return ebee_http_done(d, resp);
	case H_TOCLOSE:
		return EBEE_FEV_NONE;
	}
	return EBEE_FEV_ERR;
}

/* The list's interface (frame.h): a request line's method (its first four
 * bytes); a response starts with 'H' (HTTP/), a request with a capital. */
static __always_inline int ebee_http1_detect(const __u8 *b, __u32 n)
{
	if (n < 4)
		return 0;
	switch (ebee_frame_word(b)) {
	case 0x47455420: /* "GET " */
	case 0x504f5354: /* "POST" */
	case 0x50555420: /* "PUT " */
	case 0x48454144: /* "HEAD" */
	case 0x44454c45: /* "DELE"TE */
	case 0x4f505449: /* "OPTI"ONS */
	case 0x50415443: /* "PATC"H */
	case 0x434f4e4e: /* "CONN"ECT */
	case 0x54524143: /* "TRAC"E */
		return 1;
	}
	return 0;
}

static __always_inline int ebee_http1_may_start(int resp, __u8 c)
{
	return resp ? c == 'H' : (c >= 'A' && c <= 'Z');
}

static __always_inline int ebee_http1_frame_step(struct ebee_fdir *d, __u8 c, int resp,
						 __u32 *head_bits)
{
	return ebee_http_step(d, c, resp, head_bits);
}

#endif /* EBEE_FRAME_HTTP1_H */
