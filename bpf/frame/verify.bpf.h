/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Framing in the kernel: verification. A memcached connection whose
 * requests arrive one at a time is counted by length (the io pattern),
 * sampled, and parsed again for good once a sample finds requests together
 * (EBEE_FV_*).
 */
#ifndef EBEE_FRAME_VERIFY_BPF_H
#define EBEE_FRAME_VERIFY_BPF_H

#include "frame/state.bpf.h"
#include "frame/walk.bpf.h"

/* A connection of a verifiable framer has had EBEE_FV_SOLO requests in a
 * row arrive alone, all answered: the io pattern counts it from its next
 * read, fresh (the arrival data_ready kept while it was framed is stale). */
static __always_inline void frame_verified(struct ebee_sconn *c)
{
	struct ebee_fstat *s;

	c->state = EBEE_CS_IDLE;
	c->flags &= ~(EBEE_CF_ARRIVED | EBEE_CF_ARRW);
	c->fsample = 0;
	c->fverify = EBEE_FV_LENGTH;
	if ((s = fstat_get(c->wid)))
		__sync_fetch_and_add(&s->verified, 1);
}

/* A sample found requests together on a connection counted by length: what
 * the samples before it missed may have been counted per burst (counted
 * against the workload: a warning), and it is parsed from this segment on;
 * its server side from the next segment that may begin a response (its
 * state is stale: init 2). The response the io pattern has in progress ends
 * at the next read (on_sock_recv). */
static __always_inline void frame_unverify(struct ebee_sconn *c, struct ebee_sframe *f)
{
	struct ebee_fstat *s;

	c->fverify = EBEE_FV_NEVER;
	f->head = f->tail;
	f->rd = f->tail;
	f->solo = 0;
	f->out.init = 2;
	if ((s = fstat_get(c->wid)))
		__sync_fetch_and_add(&s->late, 1);
}

/* A client segment of a verifiable framer still parsed (EBEE_FV_FRAMING):
 * alone, the only request of its segment, answered or not, and nothing
 * waiting before it, it counts towards verification; anything else starts
 * the count again. */
static __always_inline void frame_solo(struct ebee_sconn *c, struct ebee_sframe *f,
				       const struct ebee_fdir *d, const struct frame_ws *ws, int fr,
				       int egress)
{
	if (egress || !frame_verifiable(fr) || c->fverify != EBEE_FV_FRAMING)
		return;
	if (ws->starts == 1 && !d->unans && f->head == f->tail && !ws->err)
		f->solo++;
	else if (ws->starts || d->unans || ws->err)
		f->solo = 0;
}

/* Enough alone, all answered, the client side between requests: by length
 * from here, sampled (frame_verified). */
static __always_inline void frame_verify_check(struct ebee_sconn *c, struct ebee_sframe *f,
					       const struct frame_ws *ws, int fr, int egress)
{
	if (egress && ws->ends && f->solo >= EBEE_FV_SOLO && c->fverify == EBEE_FV_FRAMING &&
	    f->head == f->tail && frame_verifiable(fr) && !f->in.st && !f->in.pos && !f->in.skip &&
	    (f->in.flags & EBEE_FD_SYNC))
		frame_verified(c);
}

#endif /* EBEE_FRAME_VERIFY_BPF_H */
