/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Framing in the kernel: TLS's pairing across the two directions, a
 * response over when the client sends again or a side closes (tls.h).
 */
#ifndef EBEE_FRAME_PAIR_TLS_BPF_H
#define EBEE_FRAME_PAIR_TLS_BPF_H

#include "frame/pair.bpf.h"
#include "frame/walk.bpf.h"

/* TLS (tls.h): a response is known to be over only when the client sends a
 * record again or a side closes; it ended at the server's last response
 * record before that, whose end egress keeps (pend_seq, pend_ns). Ingress:
 * responses over (END), then requests begun (START). */
static __always_inline void frame_tls_pair(struct ebee_sconn *c, struct ebee_sframe *f,
					   const struct frame_ws *ws, int egress)
{
	struct ebee_fstat *s;

	if (egress) {
		if (ws->ends) {
			f->pend_ns = frame_write_ns(f, ws->last_end, bpf_ktime_get_ns());
			f->pend_seq = ws->last_end;
		}
		return;
	}
	if (ws->ends)
		frame_answer(c, f, ws->ends, f->pend_ns ? f->pend_ns : bpf_ktime_get_ns());
	if (ws->starts) {
		frame_queue(c, f, ws->first, ws->starts);
		/* The hellos are over at the first request: judge them once. */
		if (!(c->fflags & EBEE_FF_TLSMUX)) {
			c->fflags |= EBEE_FF_TLSMUX;
			if (ebee_tls_mux(&f->head_bits) && (s = fstat_get(c->wid)))
				__sync_fetch_and_add(&s->tls_mux, 1);
		}
	}
	if ((*(__u8 *)&f->head_bits & EBEE_TLS_C_AGAIN) && !(c->fflags & EBEE_FF_TLSAGN)) {
		c->fflags |= EBEE_FF_TLSAGN;
		if ((s = fstat_get(c->wid)))
			__sync_fetch_and_add(&s->tls_again, 1);
	}
}

/* TLS: a side's FIN ends the response in progress, if the server sent one. */
static __always_inline void frame_tls_close(struct ebee_sconn *c, struct ebee_sframe *f)
{
	__u8 *b = (__u8 *)&f->head_bits;
	__u16 n = ebee_tls_nresp(&f->head_bits);

	if (!(*b & EBEE_TLS_C_OPEN) || (__u16)f->in.stack[3] == n)
		return;
	*b &= ~EBEE_TLS_C_OPEN;
	f->in.stack[3] = n;
	frame_answer(c, f, 1, f->pend_ns ? f->pend_ns : bpf_ktime_get_ns());
}

#endif /* EBEE_FRAME_PAIR_TLS_BPF_H */
