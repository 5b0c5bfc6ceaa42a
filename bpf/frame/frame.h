/* SPDX-License-Identifier: MIT */
/*
 * Framing: requests as their protocol delimits them, from the bytes of a
 * connection in stream order (bpf/frame/frame_skb.bpf.h feeds them from
 * cgroup_skb programs). Shared by the BPF programs and user space (the unit
 * tests run the very parsers the kernel runs, metrics/src/framers/): plain C
 * on fixed-width types, no loops, no helpers.
 *
 * A parser is a step function, one byte at a time, over the state of one
 * direction of one connection (struct ebee_fdir). It returns an event:
 *   EBEE_FEV_START  this byte is the first of a request (client -> server)
 *   EBEE_FEV_END    this byte is the last of a response (server -> client)
 *   EBEE_FEV_ERR    the bytes do not parse: the direction is out of sync
 *   EBEE_FEV_ABORT  this byte is the last of a request's reset (either side;
 *                   HTTP/2's RST_STREAM): the request ends, unanswered
 *   EBEE_FEV_UNANSWERED  this byte completes a request no response will
 *                   answer (memcached's noreply, quiet opcodes): never
 *                   paired; the step also counts it in d->unans, which the
 *                   kernel's walk takes after the segment (a branch on the
 *                   event in its loop cost the verifier 20 000 instructions)
 *                   into struct ebee_fstat.unanswered
 * and may ask for d->skip bytes to be passed over unread after this one
 * (bulk payloads, bodies of known length), so the cost is per header byte,
 * not per payload byte.
 */
#ifndef EBEE_FRAME_H
#define EBEE_FRAME_H

#if !defined(__VMLINUX_H__) && !defined(__KERNEL__)
#include <linux/types.h>
#endif

/* Framer ids: struct ebee_sconn.fr, the index of struct ebee_fstat.conns. */
enum ebee_fr {
	EBEE_FR_NONE = 0, /* no data seen yet (or the framing hooks are off) */
	EBEE_FR_LENGTH,	  /* no framer: the io pattern's read/write bursts */
	EBEE_FR_RESP,	  /* redis RESP: every command one request */
	EBEE_FR_HTTP1,	  /* HTTP/1.x, pipelining included */
	EBEE_FR_HTTP2,	  /* HTTP/2 (h2c, gRPC), paired by stream id */
	EBEE_FR_TLS,	  /* TLS records: the request-response alternation (tls.h) */
	EBEE_FR_MCTEXT,	  /* memcached text protocol, meta commands included */
	EBEE_FR_MCBIN,	  /* memcached binary protocol */
	EBEE_FR_MAX,
};

/* Events of a step function. */
#define EBEE_FEV_NONE	    0
#define EBEE_FEV_START	    1
#define EBEE_FEV_END	    2
#define EBEE_FEV_ERR	    3
#define EBEE_FEV_ABORT	    4
#define EBEE_FEV_UNANSWERED 5

/* struct ebee_fdir.flags */
#define EBEE_FD_SYNC	0x01 /* next is valid: bytes before it were all parsed */
#define EBEE_FD_HUNT	0x02 /* lost sync: resynchronise at the next segment that starts a message */
#define EBEE_FD_CHUNKED 0x04 /* HTTP: Transfer-Encoding: chunked */
#define EBEE_FD_CL	0x08 /* HTTP: Content-Length seen */
#define EBEE_FD_NOBODY	0x10 /* HTTP response: no body whatever the headers say */
#define EBEE_FD_TOCLOSE 0x20 /* HTTP response: body until the server closes */
#define EBEE_FD_INTERIM 0x40 /* HTTP response: 1xx, not the final response */
#define EBEE_FD_PUSH	0x80 /* RESP response: a push (RESP3 '>'), not a reply */

#define EBEE_FR_DEPTH 4 /* RESP: nesting of aggregate replies followed */

/* One direction of one connection. */
struct ebee_fdir {
	__u32 next; /* next sequence number expected (EBEE_FD_SYNC) */
	__u32 skip; /* bytes to pass over before parsing again */
	__u32 num;  /* number being parsed (length, count, status) */
	__u32 left; /* RESP request: bulk strings left; HTTP: header name match state */
	__u32 stack[EBEE_FR_DEPTH]; /* RESP reply: elements left at each level */
	__u16 msgs;  /* HTTP: requests seen (ingress) / responses finished (egress) */
	__u8 st;     /* parser state */
	__u8 depth;  /* RESP reply: open aggregates */
	__u8 flags;  /* EBEE_FD_* */
	__u8 pos;    /* HTTP: byte of the line (saturating) */
	__u16 unans; /* memcached: EBEE_FEV_UNANSWERED events not yet taken by the walk */
	/* Set up (next from the handshake, the parser reset): by this
	 * direction's own first segment, never by the other's (kernel). */
	__u32 init;
};

/* A request no response will answer: counted for the walk (d->unans). */
static __always_inline int ebee_fr_unanswered(struct ebee_fdir *d)
{
	d->unans++;
	return EBEE_FEV_UNANSWERED;
}

static __always_inline int ebee_fr_is_digit(__u8 c)
{
	return c >= '0' && c <= '9';
}

static __always_inline __u8 ebee_fr_lower(__u8 c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* Whether byte k ends a memcached command word: a space or CR after it. */
static __always_inline int ebee_fr_mc_end(const __u8 *b, __u32 n, __u32 k)
{
	return k < n && (b[k] == ' ' || b[k] == '\r');
}

/* memcached text: a lowercase command word (its first four bytes w, the
 * longer ones by their first four and their end), then a space or CR. */
static __always_inline int ebee_fr_detect_mc(const __u8 *b, __u32 n, __u32 w)
{
	int ok = 0;

	switch (w >> 8) {
	case 0x676574: /* get */
	case 0x676174: /* gat */
	case 0x736574: /* set */
	case 0x616464: /* add */
	case 0x636173: /* cas */
		/* and gets, gats */
		ok = ebee_fr_mc_end(b, n, 3) || ebee_fr_mc_end(b, n, 4);
		break;
	}
	switch (w >> 16) {
	case 0x6d67: /* mg */
	case 0x6d73: /* ms */
	case 0x6d64: /* md */
	case 0x6d61: /* ma */
	case 0x6d6e: /* mn */
	case 0x6d65: /* me */
		ok = ok || ebee_fr_mc_end(b, n, 2);
		break;
	}
	switch (w) {
	case 0x7265706c: /* "repl"ace */
	case 0x70726570: /* "prep"end */
		ok = ok || ebee_fr_mc_end(b, n, 7);
		break;
	case 0x61707065: /* "appe"nd */
	case 0x64656c65: /* "dele"te */
		ok = ok || ebee_fr_mc_end(b, n, 6);
		break;
	case 0x696e6372: /* incr */
	case 0x64656372: /* decr */
	case 0x71756974: /* quit */
		ok = ok || ebee_fr_mc_end(b, n, 4);
		break;
	case 0x746f7563: /* "touc"h */
	case 0x73746174: /* "stat"s */
		ok = ok || ebee_fr_mc_end(b, n, 5);
		break;
	case 0x76657273: /* "vers"ion */
		ok = ok || ebee_fr_mc_end(b, n, 7);
		break;
	case 0x666c7573: /* "flus"h_all */
	case 0x76657262: /* "verb"osity */
		ok = ok || ebee_fr_mc_end(b, n, 9);
		break;
	}
	return ok ? EBEE_FR_MCTEXT : EBEE_FR_LENGTH;
}

/* Which framer the first bytes of a client's stream call for (b: up to n
 * bytes, n >= 1). */
static __always_inline int ebee_fr_detect(const __u8 *b, __u32 n)
{
	__u32 w;

	if (n >= 1 && b[0] == '*')
		return EBEE_FR_RESP;
	if (n >= 1 && b[0] == 0x80)
		return EBEE_FR_MCBIN; /* a binary request header's magic */
	if (n >= 3 && b[0] == 0x16 && b[1] == 0x03 && b[2] <= 0x04)
		return EBEE_FR_TLS; /* handshake record, SSL 3.0 .. TLS 1.3 */
	if (n < 4)
		return EBEE_FR_LENGTH;
	w = (__u32)b[0] << 24 | (__u32)b[1] << 16 | (__u32)b[2] << 8 | b[3];
	switch (w) {
	case 0x50524920: /* "PRI " of "PRI * HTTP/2.0" */
		return EBEE_FR_HTTP2;
	case 0x47455420: /* "GET " */
	case 0x504f5354: /* "POST" */
	case 0x50555420: /* "PUT " */
	case 0x48454144: /* "HEAD" */
	case 0x44454c45: /* "DELE"TE */
	case 0x4f505449: /* "OPTI"ONS */
	case 0x50415443: /* "PATC"H */
	case 0x434f4e4e: /* "CONN"ECT */
	case 0x54524143: /* "TRAC"E */
		return EBEE_FR_HTTP1;
	}
	if (b[0] >= 'a' && b[0] <= 'z')
		return ebee_fr_detect_mc(b, n, w);
	return EBEE_FR_LENGTH;
}

/* Whether a segment starting with byte c may start a message of framer fr,
 * client (resp 0) or server (resp 1) side: where a lost direction tries to
 * resynchronise. */
static __always_inline int ebee_fr_may_start(int fr, int resp, __u8 c)
{
	if (fr == EBEE_FR_RESP)
		return resp ? (c == '+' || c == '-' || c == ':' || c == '$' || c == '*') : c == '*';
	if (fr == EBEE_FR_HTTP1)
		return resp ? c == 'H' : (c >= 'A' && c <= 'Z');
	if (fr == EBEE_FR_TLS)
		return c >= 20 && c <= 24; /* a record's content type */
	/* memcached: a response word, a command word; a header's magic. */
	if (fr == EBEE_FR_MCTEXT)
		return resp ? (c >= 'A' && c <= 'Z') : (c >= 'a' && c <= 'z');
	if (fr == EBEE_FR_MCBIN)
		return c == (resp ? 0x81 : 0x80);
	/* HTTP/2: a frame header cannot be told from payload; its streams
	 * stay unpaired once lost. */
	return 0;
}

#endif /* EBEE_FRAME_H */
