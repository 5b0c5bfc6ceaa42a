/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Framing in the kernel: stream order, and sync lost and found again.
 *
 * Order. Each direction keeps the next sequence number it expects. A segment
 * before it (a retransmit, or data TCP dropped and the peer sent again) is
 * skipped up to it; a segment after it (a gap: lost or out-of-order data, or
 * bytes the parser rejected) loses sync: counted against the workload
 * (desync, a warning in user space), and the direction waits for a segment
 * that begins where a message may begin (ebee_frame_may_start; HTTP/2's, a
 * frame header confirmed by the next, frame_h2_resync), where its parser
 * restarts (resync). Requests lost in a gap are not counted, responses then
 * paired with later requests shift their latencies: the warning says so.
 * HTTP/2's client streams opened in a gap are counted (gap_lost, from the
 * stream ids on either side of it, pair_h2); other framers' are a gap, not
 * a number. The loss lasts until EBEE_FRAME_REGAIN requests were answered
 * with both directions in sync again (frame_confirm): then the connection
 * is trusted again (regained; lapses - regained are still untrusted).
 */
#ifndef EBEE_FRAME_ORDER_BPF_H
#define EBEE_FRAME_ORDER_BPF_H

#include "frame/state.bpf.h"

static __always_inline void frame_reset(struct ebee_fdir *d)
{
	d->st = 0;
	d->skip = 0;
	d->num = 0;
	d->left = 0;
	d->depth = 0;
	d->pos = 0;
	d->flags = EBEE_FD_SYNC;
}

/* why: 0 bytes that did not parse, 1 a sequence gap, 2 a walk cut short. */
static __always_inline void frame_desync(struct ebee_sconn *c, struct ebee_sframe *f,
					 struct ebee_fdir *d, int why)
{
	struct ebee_fstat *s = fstat_get(c->wid);

	d->flags = EBEE_FD_HUNT;
	d->skip = 0;
	/* Which responses answer which requests is lost with the bytes: the
	 * requests waiting are forgotten (responses that come for them count
	 * as unmatched), pairing starts again with the next request. */
	f->head = f->tail;
	f->rd = f->tail;
	/* HTTP/2's client: the streams opened in the bytes lost are not in
	 * the table; their ends, until the first start seen after the
	 * resync, are of streams opened unseen, not unmatched (pair_h2). */
	if (c->fr == EBEE_FRAME_HTTP2 && d == &f->in) {
		/* The next id the client would open, kept for pair_h2 to count
		 * the gap's streams; not on a connection framed from mid-stream
		 * that has shown no stream yet (those before it are not lost,
		 * they were before tracing: its id to come is not known). */
		if (!f->h2gap && f->h2mid != EBEE_H2MID_NONE)
			f->h2gap = d->stack[2] ? d->stack[2] + 2 : 1;
		f->h2mid = EBEE_H2MID_NONE;
	}
	if (!s)
		return;
	if (!f->regain)
		__sync_fetch_and_add(&s->lapses, 1);
	f->regain = EBEE_FRAME_REGAIN;
	__sync_fetch_and_add(&s->desync, 1);
	if (why == 1)
		__sync_fetch_and_add(&s->desync_gap, 1);
	else if (why == 2)
		__sync_fetch_and_add(&s->desync_cut, 1);
	if (!(c->fflags & EBEE_FF_DESYNC)) {
		c->fflags |= EBEE_FF_DESYNC;
		__sync_fetch_and_add(&s->desync_conns, 1);
	}
}

/* A direction that lost sync waits for a segment that begins where a
 * message may begin: 0 when this one does (the parser restarts at seq), -1
 * when it is passed over. */
static __always_inline int frame_hunt(struct __sk_buff *skb, struct ebee_sconn *c,
				      struct ebee_fdir *d, __u32 off, __u32 seq, __u32 plen,
				      __s32 diff, int fr, int egress)
{
	struct ebee_fstat *s;
	__u8 ch;

	if (diff < 0 || bpf_skb_load_bytes(skb, off, &ch, 1) ||
	    !ebee_frame_may_start(fr, egress, ch)) {
		if (diff >= 0)
			d->next = seq + plen;
		return -1;
	}
	frame_reset(d);
	d->next = seq;
	if ((s = fstat_get(c->wid)))
		__sync_fetch_and_add(&s->resync, 1);
	return 0;
}

#endif /* EBEE_FRAME_ORDER_BPF_H */
