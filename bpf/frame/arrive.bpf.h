/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Framing in the kernel: arrival, the first new bytes from the client of a
 * connection the io pattern counts (not parsed) start its next request.
 */
#ifndef EBEE_FRAME_ARRIVE_BPF_H
#define EBEE_FRAME_ARRIVE_BPF_H

#include "frame/state.bpf.h"
#include "frame/packet.bpf.h"

/*
 * New bytes from the client of a connection the io pattern counts: the first
 * after a response are the next request's arrival, its sojourn start. This
 * is what sk_data_ready says a moment later (on_sock_data_ready), and with
 * the framing hooks attached that hook is not: one program run fewer for
 * every segment any socket of the host receives (two a request, the
 * server's and the client's, on loopback). Only bytes TCP takes in order
 * count, as only they wake a reader: a retransmit of bytes already in, or a
 * segment after a gap, is no arrival (the one that fills the gap is). Parsed
 * connections time their requests themselves (frame_queue). Once per
 * request: while a request is being read or its arrival is known, two
 * compares.
 */
static __always_inline void frame_arrive(struct __sk_buff *skb, struct bpf_sock *bsk,
					 struct ebee_sconn *c)
{
	struct bpf_tcp_sock *tp;
	struct tcphdr th;
	__u32 off, seq, end;

	if (c->state == EBEE_CS_READING || (c->flags & EBEE_CF_ARRIVED) || frame_parsed(c) ||
	    (c->wid && !(c->wflags & EBEE_F_IO)))
		return;
	if (frame_tcp(skb, &th, &off) || skb->len <= off || !(tp = bpf_tcp_sock(bsk)))
		return;
	seq = bpf_ntohl(th.seq);
	end = seq + (skb->len - off);
	if ((__s32)(seq - tp->rcv_nxt) > 0 || (__s32)(end - tp->rcv_nxt) <= 0)
		return;
	c->arrive_ns = bpf_ktime_get_ns();
	c->flags |= EBEE_CF_ARRIVED;
}

#endif /* EBEE_FRAME_ARRIVE_BPF_H */
