/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Framing in the kernel: pairing in order, requests with their responses
 * through a queue of arrivals; the server's reads (start of service) and
 * writes (end of a response) that time them; HTTP/2's read marking.
 *
 * Pairing. Ingress timestamps the segments where requests start (a queue of
 * EBEE_FQ_LEN entries, requests starting in one segment share one);
 * sock_recv marks an entry read when the server's reads pass its first byte
 * (copied_seq); egress counts responses that end in the skb and pops as many
 * requests, one record per entry (nreq requests that ended together): the
 * latency of a request ends when the server's write holding its response's
 * last byte returned (sock_send keeps the last four writes' ends), as the io
 * pattern's ends at the last write: not when TCP sent it, which Nagle, a
 * full window or send buffer can delay (a response written in three pieces
 * 6 ms apart left 44 ms after its request, held by Nagle until the
 * client's delayed ACK: test_ebee_io's test_three_piece_response).
 */
#ifndef EBEE_FRAME_PAIR_BPF_H
#define EBEE_FRAME_PAIR_BPF_H

#include "frame/state.bpf.h"

/* The HTTP/2 streams the server's reads passed (copied) start their service
 * time. Global: its loop over the table is verified once, on its own. */
__noinline int frame_h2_read(struct ebee_h2tab *t, __u32 copied)
{
	if (t && t->unread)
		ebee_h2_mark_read(t, copied, bpf_ktime_get_ns());
	return 0;
}

/* sock_recv of a framed connection: the requests whose first byte the server
 * has now read start their service time. */
static __always_inline void frame_mark_read(struct sock *sk, struct ebee_sconn *c)
{
	struct ebee_sframe *f = bpf_sk_storage_get(&sframes, sk, 0, 0);
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
	struct ebee_h2tab *t;
	__u64 now = 0;
	__u32 copied;

	if (!f || !tp)
		return;
	copied = tp->copied_seq;
	if (c->fr == EBEE_FRAME_MCTEXT || c->fr == EBEE_FRAME_MCBIN)
		frame_mc_note(c, f);
	if (c->fr == EBEE_FRAME_HTTP2) {
		t = bpf_sk_storage_get(&sh2s, sk, 0, 0);
		if (t && !((f->in.flags | f->out.flags) & EBEE_FD_HUNT))
			frame_h2_read(t, copied);
		return;
	}
#pragma unroll
	for (int i = 0; i < EBEE_FQ_LEN; i++) {
		__u32 r = f->rd;
		struct ebee_freq *e;

		if (r == f->tail)
			break;
		e = &f->q[r & (EBEE_FQ_LEN - 1)];
		if ((__s32)(e->seq - copied) >= 0)
			break;
		if (!now)
			now = bpf_ktime_get_ns();
		e->svc_ns = now;
		f->rd = r + 1;
	}
}

/* sock_send of a framed connection: remember where the write ended and when. */
static __always_inline void frame_mark_write(struct sock *sk)
{
	struct ebee_sframe *f = bpf_sk_storage_get(&sframes, sk, 0, 0);
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
	__u32 i;

	if (!f || !tp)
		return;
	i = f->nwr & 3;
	f->wr[i].ns = bpf_ktime_get_ns();
	f->wr[i].end = tp->write_seq;
	f->nwr++;
}

/* When the byte at seq was written: the earliest remembered write that
 * holds it; egress time (now) when none does (written before the last four
 * writes, or by a path the I/O hook does not see). */
static __always_inline __u64 frame_write_ns(struct ebee_sframe *f, __u32 seq, __u64 now)
{
	__u64 t = now;

	for (int i = 0; i < 4; i++) {
		__u64 ns = f->wr[i].ns;

		if (ns && (__s32)(f->wr[i].end - (seq + 1)) >= 0 && ns < t)
			t = ns;
	}
	return t;
}

/* n requests answered: once both directions are in sync again, they count
 * towards the EBEE_FRAME_REGAIN that trust a connection that lost sync
 * again. One load and a branch for a connection in trust
 * (order.bpf.h: the loss). */
static __always_inline void frame_confirm(struct ebee_sconn *c, struct ebee_sframe *f, __u32 n)
{
	struct ebee_fstat *s;
	__u32 left = f->regain;

	if (!left || !n || ((f->in.flags | f->out.flags) & EBEE_FD_HUNT))
		return;
	if (left > n) {
		f->regain = left - n;
		return;
	}
	f->regain = 0;
	if ((s = fstat_get(c->wid)))
		__sync_fetch_and_add(&s->regained, 1);
}

/* One record of framed requests. A global function, verified once: inlined
 * into frame_answer's loop, the ring buffer's branches at each of its
 * iterations were verified again and again. */
__noinline int frame_emit(__u32 wid, __u64 end, __u64 lat, __u64 soj, __u32 n)
{
	emit(wid, EBEE_REC_FRAMED, end, lat, soj, n);
	return 0;
}

static __always_inline __u64 frame_since(__u64 end, __u64 t)
{
	return end > t ? end - t : 0;
}

/* frame_answer's loop state, on its stack (bpf_loop takes only a stack
 * pointer). */
struct frame_ans {
	struct ebee_sconn *c;
	struct ebee_sframe *f;
	__u64 now;
	__u32 n;     /* responses still to pair */
	__u32 n_bad; /* paired wrongly: counted, not timed */
};

/* One queue entry per call: its requests answered, as many as are left. */
static long frame_answer_cb(__u64 i, void *ctx)
{
	struct frame_ans *a = ctx;
	struct ebee_sconn *c = a->c;
	struct ebee_sframe *f = a->f;
	struct ebee_freq *e;
	__u32 h, take;
	__u64 now = a->now;

	if (!c || !f)
		return 1;
	h = f->head;
	if (!a->n || h == f->tail)
		return 1;
	e = &f->q[h & (EBEE_FQ_LEN - 1)];
	take = e->n < a->n ? e->n : a->n;
	/* An end before the request's arrival, or before the server read
	 * it, is a wrong pairing (TLS: a server that answered while the
	 * client still wrote, tls.h): no latency for it, counted as
	 * unmatched (untrusted), never a wrapped-around one. */
	if (take && ((__s64)(now - e->arr_ns) < 0 ||
		     (__s64)(now - (e->svc_ns ? e->svc_ns : e->arr_ns)) < 0))
		a->n_bad += take;
	else if (take && c->wid && (c->wflags & EBEE_F_IO))
		frame_emit(c->wid, now, now - (e->svc_ns ? e->svc_ns : e->arr_ns), now - e->arr_ns,
			   take);
	c->nreq += take;
	e->n -= take;
	a->n -= take;
	if (!e->n) {
		f->head = h + 1;
		if ((__s32)(f->rd - f->head) < 0)
			f->rd = f->head;
	}
	return 0;
}

/* Pair n responses that ended at `now` with the oldest requests. Global (c
 * and f are plain memory to it), its loop a bpf_loop: verified once each
 * (unrolled over the queue's 16 entries, 17 000 of the 86 000 instructions
 * the verifier processed for frame_io). */
__noinline int frame_answer(struct ebee_sconn *c, struct ebee_sframe *f, __u32 n, __u64 now)
{
	struct frame_ans a = { .c = c, .f = f, .now = now, .n = n };
	struct ebee_fstat *s;

	if (!c || !f)
		return 0;
	bpf_loop(EBEE_FQ_LEN, frame_answer_cb, &a, 0);
	frame_confirm(c, f, n - a.n - a.n_bad);
	if ((a.n || a.n_bad) && (s = fstat_get(c->wid)))
		__sync_fetch_and_add(&s->unmatched, a.n + a.n_bad);
	return 0;
}

static __always_inline void frame_queue(struct ebee_sconn *c, struct ebee_sframe *f, __u32 first,
					__u32 n)
{
	__u32 t = f->tail;
	struct ebee_freq *e;
	struct ebee_fstat *s;

	if (t - f->head < EBEE_FQ_LEN) {
		e = &f->q[t & (EBEE_FQ_LEN - 1)];
		e->arr_ns = bpf_ktime_get_ns();
		e->svc_ns = 0;
		e->seq = first;
		e->n = n;
		/* The entry is written before the tail that publishes it to the
		 * egress side, which may run on another CPU at once: a compiler
		 * barrier only (BPF has no store fence). Enough on x86, whose
		 * stores stay in order; on a weakly ordered CPU the egress side
		 * could rarely pair a response with a stale entry (a wrong
		 * latency for it, the counts unaffected). */
		asm volatile("" ::: "memory");
		f->tail = t + 1;
		return;
	}
	e = &f->q[(t - 1) & (EBEE_FQ_LEN - 1)];
	e->n += n;
	if ((s = fstat_get(c->wid)))
		__sync_fetch_and_add(&s->merged, n);
}

#endif /* EBEE_FRAME_PAIR_BPF_H */
