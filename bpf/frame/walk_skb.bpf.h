/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Framing in the kernel: the walk's loop over an skb's payload, and the
 * held segment after it (stash.bpf.h): the buffer refilled, the byte walk
 * run over it (walk.bpf.h), HTTP/2 events handed to their pairing.
 */
#ifndef EBEE_FRAME_WALK_SKB_BPF_H
#define EBEE_FRAME_WALK_SKB_BPF_H

#include "frame/walk.bpf.h"
#include "frame/pair_h2.bpf.h"
#include "frame/stash.bpf.h"

/* Every parser step consumes at least one byte (a skip is one step), so a
 * walk needs at most as many steps as the skb has payload bytes; capped here
 * (a 64 KiB GSO skb, BIG TCP's larger ones get this many): a walk cut short
 * loses sync, counted. */
#define FRAME_STEPS (1u << 18)

/* bpf_loop's context, on frame_walk_loop's stack (bpf_loop takes only a
 * stack pointer): the pointers the callback needs, each with the type the
 * verifier gave it there, which a pointer read from plain memory would not
 * keep. */
struct frame_loop {
	struct __sk_buff *skb;
	struct ebee_sconn *c;	/* HTTP/2: the connection, */
	struct ebee_sframe *f;	/* its framing state (the direction's: ws->resp) */
	struct ebee_h2tab *h2;	/* and its streams in flight; NULL for other framers */
	struct frame_ws *ws;	/* the walk, on frame_io's stack */
	struct ebee_fstash *st; /* the held segment the walk goes on with, or NULL */
};

/* bpf_loop's callback: the bytes into the buffer when the next one is not
 * there (and no skip is pending), then the steps they allow, then the
 * HTTP/2 event that stopped them, if one did. */
static long frame_walk_cb(__u64 i, void *ctx)
{
	struct frame_loop *l = ctx;
	struct frame_ws *ws = l->ws;
	struct ebee_fdir *d;
	__u32 n;
	int done;

	if (!ws || !l->f || ws->pos >= ws->end)
		return 1;
	d = ws->resp ? &l->f->out : &l->f->in;
	if (!d->skip && (ws->pos < ws->cpos || ws->pos >= ws->cpos + ws->clen)) {
		if (ws->pos >= ws->xpos) {
			/* The held segment's bytes (the walk's end is
			 * within it): copied a buffer's worth, each index
			 * masked into the stash. */
			__u32 k = ws->pos - ws->xpos + ws->xoff;

			if (!l->st) {
				ws->err = 1;
				return 1;
			}
			n = ws->end - ws->pos;
			if (n > sizeof(ws->buf))
				n = sizeof(ws->buf);
#pragma unroll
			for (int j = 0; j < (int)sizeof(ws->buf); j++)
				ws->buf[j] = l->st->b[(k + j) & (2 * EBEE_FSTASH_LEN - 1)];
		} else {
			n = ws->xpos - ws->pos;
			if (n > sizeof(ws->buf))
				n = sizeof(ws->buf);
			/* ((n - 1) & 63) + 1 is n here; the verifier needs to
			 * see it in [1, 64] in the register the call takes. */
			if (!n ||
			    bpf_skb_load_bytes(l->skb, ws->pos, ws->buf, ((n - 1) & 63) + 1)) {
				ws->err = 1;
				return 1;
			}
		}
		ws->cpos = ws->pos;
		ws->clen = n;
	}
	done = frame_walk_chunk(ws, d, &l->f->head_bits);
	if (ws->ev) {
		if (l->c && l->h2)
			frame_h2_event(l->c, l->f, l->h2, ws);
		ws->ev = 0;
	}
	return done ? 1 : 0;
}

/* The walk's loop. A global function, so that the verifier checks the loop
 * once, from the types of its arguments: bpf_loop inlined in frame_io, its
 * callback was verified again for every distinct state of frame_io that
 * reached the call (about 1 300 times, half of all the instructions the
 * verifier processed for ebee, most of ebee's start). */
__noinline int frame_walk_loop(struct __sk_buff *skb, struct ebee_sconn *c, struct ebee_sframe *f,
			       struct ebee_h2tab *h2, struct frame_ws *ws)
{
	struct frame_loop l = { .skb = skb, .c = c, .f = f, .h2 = h2, .ws = ws };
	struct bpf_sock *bsk;
	__u32 plen;

	if (!skb || !c || !f || !ws || ws->end < ws->pos)
		return 0;
	if (ws->xpos < ws->end) {
		/* Taken for this walk by frame_stash_take: read, then freed. */
		bsk = skb->sk;
		l.st = bsk ? bpf_sk_storage_get(&sstash, bsk, 0, 0) : NULL;
		if (!l.st)
			ws->end = ws->xpos;
	}
	plen = ws->end - ws->pos;
	bpf_loop(plen < FRAME_STEPS ? plen + 1 : FRAME_STEPS, frame_walk_cb, &l, 0);
	if (l.st) {
		f->stashed = 0;
		asm volatile("" ::: "memory");
		l.st->state = EBEE_FST_FREE;
	}
	return 0;
}

#endif /* EBEE_FRAME_WALK_SKB_BPF_H */
