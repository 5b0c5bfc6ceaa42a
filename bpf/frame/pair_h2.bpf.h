/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Framing in the kernel: HTTP/2's pairing by stream id, during the walk.
 *
 * HTTP/2 multiplexes streams that end in any order: its requests are paired
 * by stream id instead, in a table of the streams in flight (struct
 * ebee_h2tab, its own socket storage sh2s): each start takes a slot at its
 * HEADERS, each end (END_STREAM from the server, or a reset from either
 * side) emits one record from its slot, during the walk, as the events come.
 */
#ifndef EBEE_FRAME_PAIR_H2_BPF_H
#define EBEE_FRAME_PAIR_H2_BPF_H

#include "frame/pair.bpf.h"
#include "frame/walk.bpf.h"

/* An HTTP/2 event of the walk: a stream begins (a slot, its arrival and
 * where its frame header lies for the read marking) or ends (its record,
 * one request, the slot freed). An end of a stream not in the table was
 * reset already, or did not fit (counted then as untimed), or was opened
 * before a connection framed from mid-stream was found; one of a stream the
 * client never opened is unmatched. Global, verified once. */
__noinline int frame_h2_event(struct ebee_sconn *c, struct ebee_sframe *f, struct ebee_h2tab *t,
			      struct frame_ws *ws)
{
	struct ebee_fstat *s;
	struct ebee_h2s *e;
	__u64 end, arr, svc;
	int j;

	if (!c || !f || !t || !ws)
		return 0;
	if (!ws->now)
		ws->now = bpf_ktime_get_ns();
	if (ws->ev == EBEE_FEV_START) {
		if (f->h2mid == EBEE_H2MID_NONE) {
			f->h2mid = ws->ev_id; /* the first stream seen opened */
			/* After a gap: the ids between were opened in it. */
			if (f->h2gap && ws->ev_id > f->h2gap && (s = fstat_get(c->wid)))
				__sync_fetch_and_add(&s->gap_lost, (ws->ev_id - f->h2gap) / 2);
			f->h2gap = 0;
		}
		if (ebee_h2_add(t, ws->ev_id, ws->now, ws->ev_seq) < 0)
			__sync_fetch_and_add(&t->untimed, 1);
		return 0;
	}
	if (ws->resp && t->untimed != t->untimed_noted && (s = fstat_get(c->wid))) {
		__u32 n = t->untimed - t->untimed_noted;

		__sync_fetch_and_add(&s->untimed, n);
		t->untimed_noted += n;
	}
	j = ebee_h2_find(t, ws->ev_id);
	if (j < 0) {
		/* Below the first stream seen opened on a connection framed
		 * from mid-stream: one opened unseen, not unmatched. */
		if (ws->ev == EBEE_FEV_END && ws->ev_id > f->in.stack[2] &&
		    !(f->h2mid && ws->ev_id < f->h2mid) && (s = fstat_get(c->wid)))
			__sync_fetch_and_add(&s->unmatched, 1);
		return 0;
	}
	e = &t->s[j & (EBEE_H2_SLOTS - 1)];
	arr = e->arr_ns;
	svc = e->svc_ns ? e->svc_ns : arr;
	/* The other side may be ending it at this moment: one of the two. */
	if (!ebee_h2_take(t, j, ws->ev_id))
		return 0;
	/* The server's end at the return of its write, as for the other
	 * framers; a client's reset at its arrival. */
	end = ws->resp ? frame_write_ns(f, ws->ev_seq, ws->now) : ws->now;
	if (c->wid && (c->wflags & EBEE_F_IO))
		frame_emit(c->wid, end, frame_since(end, svc), frame_since(end, arr), 1);
	c->nreq++;
	frame_confirm(c, f, 1);
	if (ws->ev == EBEE_FEV_ABORT && (s = fstat_get(c->wid)))
		__sync_fetch_and_add(&s->aborted, 1);
	return 0;
}

#endif /* EBEE_FRAME_PAIR_H2_BPF_H */
