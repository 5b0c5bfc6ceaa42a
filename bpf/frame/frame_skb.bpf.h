/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Framing in the kernel: the bytes of every TCP segment of the workload's
 * connections, in stream order, fed to the framer a connection's first bytes
 * chose (frame.h, one header per framer; TLS pairs its records across the
 * two directions, frame_tls_pair). Included by bpf/ebee.bpf.c, whose
 * socket-local storage (sconns) is the gate; docs/design.md 4.9 says why this
 * mechanism and what it costs.
 *
 * One cgroup_skb program (frame_io), attached (multi) to the cgroup v2
 * root's ingress and egress hooks, runs for every IP packet of every socket
 * of the host, before TCP processes it (ingress) and before it leaves
 * (egress, once per GSO skb).
 * bpf_skb_load_bytes reads paged data too. A socket without ebee storage
 * returns after one helper call; a connection whose framer is `length`
 * after two loads more.
 *
 * The program in rooms, each included by the next (the order of the C
 * they hold): state.bpf.h (storages, workload counters), packet.bpf.h (TCP
 * header), order.bpf.h (stream order, sync lost and found), stash.bpf.h
 * (a client segment held for the bytes before it), pair.bpf.h (pairing in
 * order), walk.bpf.h (the byte walk over a buffer), pair_h2.bpf.h (HTTP/2's
 * pairing by stream id), walk_skb.bpf.h (the walk's loop over an skb),
 * pair_tls.bpf.h (TLS's pairing), verify.bpf.h (memcached counted by
 * length once verified), segment.bpf.h (one segment walked, then paired),
 * adopt.bpf.h (bytes that complete a handshake), mid.bpf.h (a connection
 * whose start went unseen, framed from mid-stream), detect.bpf.h (the
 * framer chosen), arrive.bpf.h (the io pattern's arrivals); this file, the
 * entry point (frame_io) and its steps. The parsers and their dispatch by
 * id are shared with user space: frame.h (the list), dispatch.h, NAME.h.
 */
#ifndef EBEE_FRAME_SKB_BPF_H
#define EBEE_FRAME_SKB_BPF_H

#include "frame/detect.bpf.h"
#include "frame/arrive.bpf.h"

/* bpf/ebee.bpf.c: the storage of a connection open before tracing began,
 * made at one of its client's segments (the adopt entry user space left). */
static __always_inline struct ebee_sconn *sconn_adopt_seg(struct __sk_buff *skb,
							  struct bpf_sock *bsk);

/* A segment of a socket without ebee's storage: what matters is a
 * listener's with payload, bytes that complete a handshake (sfirsts), and
 * a client's of a connection open before tracing began, which may arrive
 * before the server's first read claims it (sconn_adopt_seg): its storage
 * made here, returned, its bytes framed from this segment on (mid.bpf.h). */
static __always_inline struct ebee_sconn *frame_unknown(struct __sk_buff *skb, struct bpf_sock *bsk,
							int egress)
{
	struct tcphdr th;
	__u32 off;

	if (egress)
		return NULL;
	if (bsk->state == BPF_TCP_ESTABLISHED)
		return sconn_adopt_seg(skb, bsk);
	if (bsk->state == BPF_TCP_LISTEN && !frame_tcp(skb, &th, &off) && skb->len > off)
		frame_listen(skb, &th, off, skb->len - off, bpf_ntohl(th.seq) + th.syn);
	return NULL;
}

/* Whether the connection's segment goes on to be parsed: 0 (a verification
 * sample: *verify set), -1 when not (recognised only, or counted by length
 * and not sampled). Ingress notes the io pattern's arrival first. */
static __always_inline int frame_gate(struct __sk_buff *skb, struct bpf_sock *bsk,
				      struct ebee_sconn *c, int egress, int *verify)
{
	if (!egress)
		frame_arrive(skb, bsk, c);
	if (c->fr != EBEE_FRAME_NONE && !frame_framed(c))
		return -1;
	/* Counted by length (verified): what the gate costs, but for one
	 * ingress segment in EBEE_FV_SAMPLE of those arriving while the
	 * server reads no request (so between two: the segment begins one). */
	if (c->fverify == EBEE_FV_LENGTH) {
		if (egress || c->state == EBEE_CS_READING || (c->fsample++ & (EBEE_FV_SAMPLE - 1)))
			return -1;
		*verify = 1;
	}
	return 0;
}

/* A connection without a framer yet: chosen at its first payload
 * (detect.bpf.h). 0 when the segment is to be parsed, -1 when not. */
static __always_inline int frame_choose(struct __sk_buff *skb, const struct tcphdr *th,
					struct bpf_sock *bsk, struct ebee_sconn *c, __u32 off,
					__u32 plen, __u32 seq, int egress)
{
	__u8 ff;
	int r;

	/* The flag before the framer: ingress publishes the framer and only
	 * then drops EBEE_FF_H2SRV (frame_detect), so an egress that sees the
	 * flag gone sees the framer too (x86 keeps loads in order, the barrier
	 * keeps the compiler from swapping them). Read the other way round, a
	 * server segment between the two saw no framer and no flag, chose
	 * itself and, not being the server's first, wrote `length` over the
	 * client's HTTP/2: Go gRPC 249 of 1 600 calls, framing length, nothing
	 * unseen, once in 11 runs of test_ebee_frame_gogrpc.sh on this host. */
	ff = c->fflags;
	asm volatile("" ::: "memory");
	if (c->fr != EBEE_FRAME_NONE || (egress && (ff & EBEE_FF_H2SRV)))
		return 0;
	r = plen ? frame_detect(skb, th, bsk, c, off, plen, seq, egress) : -1;
	/* Its start unseen and no message start found yet (mid.bpf.h), the
	 * connection closes (this segment's FIN, which may ride on the very
	 * bytes that told the start went unseen: a deferred listener's
	 * connection whose first bytes did not parse, answered and closed):
	 * it was counted by length, and that is said (unseen), as when the
	 * search gives up. */
	if (th->fin && c->fr == EBEE_FRAME_NONE && (c->fnote & EBEE_FN_UNSEEN)) {
		c->fr = EBEE_FRAME_LENGTH;
		r = -1;
	}
	/* Decided at the server's first bytes, or at the close, the
	 * connection may never be read again (a lone request answered,
	 * closed): noted now, its workload known since the server read. */
	if (egress || c->fr == EBEE_FRAME_LENGTH)
		frame_note(c);
	return r ? -1 : 0;
}

/* The direction's state: set up afresh for a verification sample, and at
 * the direction's first segment since the storage was made (its own state
 * only, see frame_storage). */
static __always_inline void frame_dir_init(const struct ebee_sconn *c, struct ebee_fdir *d,
					   __u32 seq, int egress, int verify)
{
	if (verify) {
		frame_reset(d);
		d->unans = 0;
		d->next = seq;
		d->init = 1;
	}
	if (!d->init) {
		frame_reset(d);
		d->next = egress ? c->snd_isn : c->rcv_isn;
		d->init = 1;
	}
}

/* HTTP/2: the streams in flight, NULL when there is no table. A direction
 * that lost sync resynchronises on its own (frame_h2_resync); the other,
 * in sync, goes on: the client's starts seen fill the table, the server's
 * ends pair with them (those of streams opened in the client's gap are
 * not unmatched, frame_desync's h2mid). Before, either direction's loss
 * stopped both for good. */
static __always_inline struct ebee_h2tab *frame_h2_table(struct bpf_sock *bsk)
{
	return bpf_sk_storage_get(&sh2s, bsk, 0, 0);
}

/* frame_hunt for HTTP/2, whose first byte cannot tell a frame header from
 * payload (ebee_http2_may_start): a segment (diff >= 0) that begins a frame
 * header confirmed by the next (frame_h2_mid, as for a connection framed
 * from mid-stream) is where the parser restarts, the client's past the
 * preface. 0 there, -1 when the segment is passed over. */
static __always_inline int frame_h2_resync(struct __sk_buff *skb, struct ebee_sconn *c,
					   struct ebee_fdir *d, __u32 off, __u32 seq, __u32 plen,
					   __s32 diff, int egress)
{
	struct ebee_fstat *s;

	if (diff < 0 || !frame_h2_mid(skb, off, plen, egress)) {
		if (diff >= 0)
			d->next = seq + plen;
		return -1;
	}
	frame_reset(d);
	d->next = seq;
	if (!egress)
		d->st = H2_HDR;
	if ((s = fstat_get(c->wid)))
		__sync_fetch_and_add(&s->resync, 1);
	return 0;
}

/* What a FIN ends: a response delimited by the server's close; TLS's
 * response in progress. 0 when the segment has payload to walk. */
static __always_inline int frame_fin(struct ebee_sconn *c, struct ebee_sframe *f,
				     struct ebee_fdir *d, const struct tcphdr *th, __u32 plen,
				     int egress)
{
	if (egress && th->fin && (d->flags & EBEE_FD_TOCLOSE)) {
		d->flags &= ~EBEE_FD_TOCLOSE;
		d->st = 0;
		frame_answer(c, f, 1, bpf_ktime_get_ns());
	}
	if (plen)
		return 0;
	if (th->fin && c->fr == EBEE_FRAME_TLS)
		frame_tls_close(c, f);
	return -1;
}

/* A direction counted by length until a sample (frame_unverify, init 2), or
 * the server's of a connection framed from mid-stream (mid.bpf.h), is
 * parsed from the first segment that may begin a message (HTTP/2's: a
 * frame header confirmed): 0 when this one is parsed. */
static __always_inline int frame_late_start(struct __sk_buff *skb, struct ebee_fdir *d, __u32 off,
					    __u32 plen, __u32 seq, int fr, int egress)
{
	__u8 ch;

	if (d->init != 2)
		return 0;
	if (fr == EBEE_FRAME_HTTP2) {
		if (!frame_h2_mid(skb, off, plen, egress))
			return -1;
	} else if (bpf_skb_load_bytes(skb, off, &ch, 1) || !ebee_frame_may_start(fr, egress, ch)) {
		return -1;
	}
	frame_mid_start(d, seq, fr, egress);
	return 0;
}

/* The segment against the next byte its direction expects (order.bpf.h):
 * a gap (a client's early segment held instead, stash.bpf.h), a hunt for
 * where to resynchronise, bytes seen before cut off. 0 with *off, *plen
 * and *seq at the new bytes, -1 when there are none to walk. */
static __always_inline int frame_in_order(struct __sk_buff *skb, struct bpf_sock *bsk,
					  struct ebee_sconn *c, struct ebee_sframe *f,
					  struct ebee_fdir *d, __u32 *off, __u32 *plen, __u32 *seq,
					  int fr, int egress, int verify)
{
	__s32 diff = (__s32)(*seq - d->next);

	/* A client segment early: waited for when the bytes before it are
	 * being walked (then in order), else held for them. */
	if (diff > 0 && (d->flags & EBEE_FD_SYNC) && !egress && !verify &&
	    frame_wait_next(f, *seq))
		diff = (__s32)(*seq - *(volatile __u32 *)&d->next);
	if (diff > 0 && (d->flags & EBEE_FD_SYNC)) {
		if (!egress && !verify && frame_stash_put(skb, f, *off, *seq, *plen)) {
			if (!frame_stash_due(bsk, d))
				return -1;
			/* Walked now, all from the run held (plen 0): its
			 * take in frame_skb, at its first byte. */
			*off += *plen;
			*plen = 0;
			*seq = *(volatile __u32 *)&d->next;
			return 0;
		}
		if (!egress && f->stashed)
			frame_stash_drop(bsk, f); /* this direction lost sync anyway */
		frame_desync(c, f, d, 1);	  /* a gap: bytes this parser never saw */
	}
	if (d->flags & EBEE_FD_HUNT) {
		if (fr == EBEE_FRAME_HTTP2
			? frame_h2_resync(skb, c, d, *off, *seq, *plen, diff, egress)
			: frame_hunt(skb, c, d, *off, *seq, *plen, diff, fr, egress))
			return -1;
		diff = 0;
	}
	if (diff < 0) {
		if ((__u32)-diff >= *plen)
			return -1; /* all seen before */
		*off += -diff;
		*plen -= -diff;
		*seq = d->next;
	}
	return 0;
}

/* One skb of either direction, in the steps above; then the walk over its
 * new bytes and the pairing of what it found (segment.bpf.h). */
static __always_inline void frame_skb(struct __sk_buff *skb, int egress)
{
	struct bpf_sock *bsk = skb->sk;
	struct ebee_h2tab *h2 = NULL;
	struct ebee_sconn *c;
	struct ebee_sframe *f;
	struct ebee_fdir *d;
	struct tcphdr th;
	__u32 off, plen, seq, ext = 0, xoff = 0;
	int fr, verify = 0;

	if (!bsk)
		return;
	c = bpf_sk_storage_get(&sconns, bsk, 0, 0);
	if (!c && !(c = frame_unknown(skb, bsk, egress)))
		return;
	if (frame_gate(skb, bsk, c, egress, &verify) || frame_tcp(skb, &th, &off))
		return;
	seq = bpf_ntohl(th.seq);
	plen = skb->len > off ? skb->len - off : 0;
	if (verify && !plen) {
		c->fsample = 0; /* an ACK: the next segment is the sample */
		return;
	}
	if (frame_choose(skb, &th, bsk, c, off, plen, seq, egress))
		return;
	/* Still none: an HTTP/2 server's bytes before the client's. */
	fr = c->fr == EBEE_FRAME_NONE ? EBEE_FRAME_HTTP2 : c->fr;
	f = bpf_sk_storage_get(&sframes, bsk, 0, 0);
	if (!f)
		return;
	d = egress ? &f->out : &f->in;
	frame_dir_init(c, d, seq, egress, verify);
	if (fr == EBEE_FRAME_HTTP2 && !(h2 = frame_h2_table(bsk)))
		return;
	if (frame_fin(c, f, d, &th, plen, egress) ||
	    frame_late_start(skb, d, off, plen, seq, fr, egress) ||
	    frame_in_order(skb, bsk, c, f, d, &off, &plen, &seq, fr, egress, verify))
		return;
	/* The bytes that fill the gap before a held segment: it follows them. */
	if (!egress && !verify && f->stashed)
		ext = frame_stash_take(bsk, c, f, seq + plen, &xoff);
	if (!plen && !ext)
		return; /* a run due, taken by another CPU first: walked there */
	frame_walk(skb, c, f, d, h2, off, plen, seq, fr, egress, th.fin, verify, ext, xoff);
}

/*
 * One program for both directions, attached to the root cgroup's ingress
 * hook and, by the loader's second link, to its egress hook: its
 * verification, most of the socket path's cost at start, is paid once, not
 * once per direction (61 000 instructions walked; two programs took
 * 104 000). The
 * direction is the skb's: one received has the device it came in on
 * (skb_iif, set on every receive), one this host sends has none.
 */
SEC("cgroup_skb/ingress")
int frame_io(struct __sk_buff *skb)
{
	frame_skb(skb, !skb->ingress_ifindex);
	return 1; /* never drop: ebee only looks */
}

#endif /* EBEE_FRAME_SKB_BPF_H */
