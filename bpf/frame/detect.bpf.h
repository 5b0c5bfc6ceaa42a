/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Framing in the kernel: detection, a connection's framer chosen from its
 * first bytes (the list's detect, dispatch.h), or taken over from its
 * listener's entry (adopt.bpf.h), and its framing state made.
 */
#ifndef EBEE_FRAME_DETECT_BPF_H
#define EBEE_FRAME_DETECT_BPF_H

#include "frame/adopt.bpf.h"
#include "frame/mid.bpf.h"

/*
 * A storage of the connection, made or found. The kernel makes it with
 * BPF_NOEXIST: of two CPUs making the same socket's storage at once (a
 * gRPC server's SETTINGS leaving as the client's preface arrives) the one
 * that loses gets NULL, not the winner's storage, so that one looks again.
 * Taken for a failure, the race chose `length` without a word: Go gRPC
 * 397 of 1 600 calls, framing length, nothing unseen, once in the suite
 * beside the lane's guests (CI run of stop 45). A macro: the helper wants
 * the map itself, not a pointer passed on.
 */
#define frame_sk_storage(map, bsk)                                                        \
	({                                                                                \
		void *__s = bpf_sk_storage_get(map, bsk, 0, BPF_SK_STORAGE_GET_F_CREATE); \
		__s ? __s : bpf_sk_storage_get(map, bsk, 0, 0);                           \
	})

/* The framing state of a connection about to be framed by fr, from both
 * directions' first bytes. */
static __always_inline int frame_storage(struct bpf_sock *bsk, struct ebee_sconn *c, int fr)
{
	/* Made here or by the other direction a moment ago, never reset
	 * here: each direction sets itself up at its own first segment
	 * (frame_skb), since the other may be parsing already. */
	if (!frame_sk_storage(&sframes, bsk) ||
	    (fr == EBEE_FRAME_HTTP2 && !frame_sk_storage(&sh2s, bsk)))
		return -1;
	return 0;
}

/* Bytes before these went by (at the listener): their entry, if any,
 * decides (frame_adopt); without one they went unseen. 1 when the entry's
 * framing goes on (c->fr set), -1 for the length pattern (the entry's
 * bytes were length's, or did not parse: unseen), -2 when a client's bytes
 * went by with no entry (unseen: a message start is looked for, mid.bpf.h),
 * 0 when these are the connection's first bytes. */
static __always_inline int frame_detect_late(struct __sk_buff *skb, const struct tcphdr *th,
					     struct ebee_sconn *c, __u32 seq, int egress)
{
	int r;

	if (!(c->fflags & EBEE_FF_SEQ) || (!egress && seq == c->rcv_isn))
		return 0;
	r = frame_adopt(skb, th, c, seq, egress);
	if (r)
		return r;
	if (!egress) {
		c->fnote |= EBEE_FN_UNSEEN;
		return -2;
	}
	return 0;
}

/* A client segment of a connection whose start went by unseen (mid.bpf.h),
 * b its first n bytes: 0 when a message starts here (c->fr set, both
 * directions set up), 1 while still looking, -1 once looked long enough
 * (length, counted unseen). */
static __always_inline int frame_detect_mid(struct __sk_buff *skb, struct bpf_sock *bsk,
					    struct ebee_sconn *c, const __u8 *b, __u32 n, __u32 off,
					    __u32 plen, __u32 seq)
{
	struct ebee_sframe *f;
	int fr = ebee_frame_detect(b, n);

	/* A preface mid-stream is none: HTTP/2 by its frame headers. */
	if (fr == EBEE_FRAME_HTTP2 || fr == EBEE_FRAME_LENGTH)
		fr = frame_h2_mid(skb, off, plen, 0) ? EBEE_FRAME_HTTP2 : EBEE_FRAME_LENGTH;
	if (fr == EBEE_FRAME_LENGTH)
		return ++c->fsample < EBEE_FMID_TRIES ? 1 : -1;
	if (frame_storage(bsk, c, fr) || !(f = bpf_sk_storage_get(&sframes, bsk, 0, 0)))
		return -1;
	frame_mid_start(&f->in, seq, fr, 0);
	frame_reset(&f->out);
	f->out.init = 2; /* from its first segment that may begin a response */
	if (fr == EBEE_FRAME_HTTP2)
		f->h2mid = EBEE_H2MID_NONE;
	c->fsample = 0;
	c->fnote = (c->fnote & ~EBEE_FN_UNSEEN) | EBEE_FN_MID;
	asm volatile("" ::: "memory"); /* state before framer, as below */
	c->fr = fr;
	return 0;
}

/* The server spoke first: the length pattern (-1), unless it is an HTTP/2
 * server's SETTINGS, which may go before the client's preface arrives (gRPC
 * servers send them at once): its bytes are parsed as HTTP/2's from here
 * (0, EBEE_FF_H2SRV), the framer decided by the client's first bytes. */
static __always_inline int frame_detect_server(struct bpf_sock *bsk, struct ebee_sconn *c,
					       const __u8 *b, __u32 n)
{
	if (!ebee_h2_is_settings(b, n) || frame_storage(bsk, c, EBEE_FRAME_HTTP2))
		return -1;
	c->fflags |= EBEE_FF_H2SRV;
	return 0;
}

/* The first payload of a connection: choose its framer. 0 when its bytes
 * are to be parsed, by c->fr, or while EBEE_FF_H2SRV by HTTP/2's server
 * side. */
static __always_inline int frame_detect(struct __sk_buff *skb, const struct tcphdr *th,
					struct bpf_sock *bsk, struct ebee_sconn *c, __u32 off,
					__u32 plen, __u32 seq, int egress)
{
	__u8 b[16] = {};
	__u32 n = plen < sizeof(b) ? plen : sizeof(b);
	int fr, r;

	r = frame_detect_late(skb, th, c, seq, egress);
	if (r > 0)
		return 0;
	/* The listener's copy said length, or its bytes did not parse (then
	 * unseen, said): so be it. A connection answered and closed on that
	 * first segment (nginx's 400) would otherwise end with no framer. */
	if (r == -1)
		goto length;
	/* The size is written so that its range is [1, 16] by arithmetic:
	 * 6.1's verifier does not learn "not zero" from a branch, and refuses
	 * a possibly zero-sized read. */
	if (!n || bpf_skb_load_bytes(skb, off, b, ((n - 1) & 15) + 1))
		goto length;
	/* The handshake was not seen, or the stream began before the hooks
	 * (r < 0: the client's first bytes went by): the protocol is looked
	 * for where the client's messages may begin (mid.bpf.h); the server's
	 * bytes wait for that. */
	if (r < 0 || !(c->fflags & EBEE_FF_SEQ) || seq != (egress ? c->snd_isn : c->rcv_isn)) {
		if (egress)
			return -1;
		c->fnote |= EBEE_FN_UNSEEN;
		r = frame_detect_mid(skb, bsk, c, b, n, off, plen, seq);
		if (r > 0)
			return -1;
		if (r < 0)
			goto length;
		return 0;
	}
	if (egress) {
		if (frame_detect_server(bsk, c, b, n))
			goto length;
		return 0;
	}
	fr = ebee_frame_detect(b, n);
	if (c->fflags & EBEE_FF_H2SRV) {
		if (fr != EBEE_FRAME_HTTP2)
			goto length;
		/* The framer before the flag goes (the storages exist
		 * already), as frame_length does. */
		c->fr = fr;
		asm volatile("" ::: "memory");
		c->fflags &= ~EBEE_FF_H2SRV;
		return 0;
	}
	if (fr == EBEE_FRAME_LENGTH) {
		c->fr = fr;
		return -1;
	}
	if (frame_storage(bsk, c, fr))
		goto length;
	/* The framer is published once its state exists: egress, on another
	 * CPU, reads c->fr and then the storage (a server's first bytes can
	 * leave as the client's arrive: gRPC's SETTINGS). Set first, a
	 * segment egress saw between the two went unparsed, and the next was
	 * a gap: the connection lost sync, 0 of 80 calls counted, once in 31
	 * runs of test_ebee_frame_grpc.sh. A compiler barrier: enough on x86,
	 * as for the queue (frame_queue). */
	asm volatile("" ::: "memory");
	c->fr = fr;
	return 0;
length:
	return frame_length(c);
}

#endif /* EBEE_FRAME_DETECT_BPF_H */
