/* SPDX-License-Identifier: MIT */
/*
 * Framing: requests as their protocol delimits them, from the bytes of a
 * connection in stream order (bpf/frame/frame_skb.bpf.h feeds them from
 * cgroup_skb programs). Shared by the BPF programs and user space (the unit
 * tests run the very parsers the kernel runs, metrics/src/frame/): plain C
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

/*
 * The framers: one line each, the one list the rest is made from (the enum
 * below; the kernel's step, detection, resync and framed set, dispatch.h;
 * user space's table and names, metrics/src/frame/frame_ops.c; ebee(8)'s
 * list of names, at build time). The help texts that name the framers in
 * prose (ebee trace --help, the Prometheus HELP, ebee.h) are written by hand
 * and checked against it (tests/unit/test_frame_list.c). In id order:
 * the ids index struct ebee_fstat.conns and the names are in outputs, so a
 * new framer goes last. X(ID, stem, name, kind):
 *   ID    its id, EBEE_FRAME_<ID>
 *   stem  its two files: bpf/frame/<stem>.h, the parser (kernel and user
 *         space), and metrics/src/frame/<stem>.c, struct ebee_frame_ops
 *         ebee_frame_<stem> (a stem must not be a predefined macro: linux)
 *   name  what users see: JSON framing, the Prometheus label, help, man page
 *   kind  ONLY    recognised only, counted by length: no parser header
 *         PARSE   parsed by its step; its header defines, __always_inline,
 *                 ebee_<stem>_detect(b, n): whether a client's first n >= 1
 *                   bytes b (up to 16) call for it (the framers' first bytes
 *                   must not overlap: the list order decides nothing),
 *                 ebee_<stem>_may_start(resp, c): whether a segment starting
 *                   with byte c may start a message (resynchronising),
 *                 ebee_<stem>_frame_step(d, c, resp, head_bits): one byte
 *         VERIFY  PARSE, and counted by length once its requests are seen
 *                 to come one at a time (EBEE_FV_*)
 */
/* clang-format off */
#define EBEE_FRAME_LIST(X) \
	X(LENGTH, length, "length",          ONLY)   /* no framer: the io pattern's bursts */     \
	X(RESP,   resp,   "resp",            PARSE)  /* redis RESP: every command one request */  \
	X(HTTP1,  http1,  "http1",           PARSE)  /* HTTP/1.x, pipelining included */          \
	X(HTTP2,  http2,  "http2",           PARSE)  /* HTTP/2 (h2c, gRPC), by stream id */       \
	X(TLS,    tls,    "tls",             PARSE)  /* TLS records: request-response turns */    \
	X(MCTEXT, mctext, "memcache",        VERIFY) /* memcached text, meta commands included */ \
	X(MCBIN,  mcbin,  "memcache-binary", VERIFY) /* memcached binary protocol */              \
	/* (the end of the list: a new framer goes on the line above) */
/* clang-format on */

/* Framer ids: struct ebee_sconn.fr, the index of struct ebee_fstat.conns. */
enum ebee_frame {
	EBEE_FRAME_NONE = 0, /* no data seen yet (or the framing hooks are off) */
#define EBEE_FRAME_ENUM_(ID, stem, name, kind) EBEE_FRAME_##ID,
	EBEE_FRAME_LIST(EBEE_FRAME_ENUM_)
#undef EBEE_FRAME_ENUM_
	    EBEE_FRAME_MAX,
};

/* The kinds, as flags (EBEE_FRAME_FLAGS_<kind>: EBEE_FRAME_KIND_*) for expressions,
 * and as emitters (EBEE_FRAME_IF_PARSED_<kind>(code): the code for a parsed
 * framer, nothing for one recognised only, whose functions do not exist). */
#define EBEE_FRAME_KIND_PARSE	0x1 /* parsed by its step */
#define EBEE_FRAME_KIND_VERIFY	0x2 /* counted by length once verified */
#define EBEE_FRAME_FLAGS_ONLY	0
#define EBEE_FRAME_FLAGS_PARSE	EBEE_FRAME_KIND_PARSE
#define EBEE_FRAME_FLAGS_VERIFY (EBEE_FRAME_KIND_PARSE | EBEE_FRAME_KIND_VERIFY)
#define EBEE_FRAME_IF_PARSED_ONLY(...)
#define EBEE_FRAME_IF_PARSED_PARSE(...)	 __VA_ARGS__
#define EBEE_FRAME_IF_PARSED_VERIFY(...) __VA_ARGS__

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

#define EBEE_FRAME_DEPTH 4 /* RESP: nesting of aggregate replies followed */

/* One direction of one connection. */
struct ebee_fdir {
	__u32 next; /* next sequence number expected (EBEE_FD_SYNC) */
	__u32 skip; /* bytes to pass over before parsing again */
	__u32 num;  /* number being parsed (length, count, status) */
	__u32 left; /* RESP request: bulk strings left; HTTP: header name match state */
	__u32 stack[EBEE_FRAME_DEPTH]; /* RESP reply: elements left at each level */
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
static __always_inline int ebee_frame_unanswered(struct ebee_fdir *d)
{
	d->unans++;
	return EBEE_FEV_UNANSWERED;
}

static __always_inline int ebee_frame_is_digit(__u8 c)
{
	return c >= '0' && c <= '9';
}

static __always_inline __u8 ebee_frame_lower(__u8 c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* The first four bytes at b, big-endian: a word the detections compare. */
static __always_inline __u32 ebee_frame_word(const __u8 *b)
{
	return (__u32)b[0] << 24 | (__u32)b[1] << 16 | (__u32)b[2] << 8 | b[3];
}

#endif /* EBEE_FRAME_H */
