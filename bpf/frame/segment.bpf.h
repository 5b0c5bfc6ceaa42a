/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Framing in the kernel: one segment's new bytes, walked (walk_skb.bpf.h),
 * then what the walk found: sync kept or lost, requests queued, responses
 * paired, verification (verify.bpf.h).
 */
#ifndef EBEE_FRAME_SEGMENT_BPF_H
#define EBEE_FRAME_SEGMENT_BPF_H

#include "frame/walk_skb.bpf.h"
#include "frame/order.bpf.h"
#include "frame/pair_tls.bpf.h"
#include "frame/verify.bpf.h"

/* After the walk: the direction in sync or not, the next byte it expects;
 * for a verification sample, whether it found requests together. 1 when
 * what the walk found is to be paired, 0 when not. */
static __always_inline int frame_walked(struct ebee_sconn *c, struct ebee_sframe *f,
					struct ebee_fdir *d, const struct frame_ws *ws, __u32 end,
					int verify)
{
	if (verify) {
		/* Still one request alone, or part of one, or bytes that do
		 * not begin one (no evidence either way): still by length. */
		if (ws->err || ws->pos < ws->end || (ws->starts <= 1 && !d->unans))
			return 0;
		frame_unverify(c, f);
	} else if ((ws->err || ws->pos < ws->end) && c->fr == EBEE_FRAME_NONE) {
		/* Not HTTP/2 after all: no framer lost sync. */
		frame_length(c);
		return 0;
	} else if (ws->err || ws->pos < ws->end) {
		frame_desync(c, f, d, ws->err ? 0 : 2);
	}
	d->next = end;
	return 1;
}

/* memcached: the requests no response answers (the step counted them,
 * d->unans), for the workload once it is known; a meta command in quiet
 * mode. */
static __always_inline void frame_mc_take(struct ebee_sconn *c, struct ebee_sframe *f,
					  struct ebee_fdir *d)
{
	if (d->unans) {
		__sync_fetch_and_add(&f->unans, d->unans);
		d->unans = 0;
		frame_mc_note(c, f);
	} else if (c->fr == EBEE_FRAME_MCTEXT && (f->head_bits & EBEE_MC_QUIET)) {
		frame_mc_note(c, f);
	}
}

/* Run the parser over plen new bytes at off (sequence number seq), then
 * pair what it found: requests begun, responses ended. verify: a sample of
 * a connection counted by length (EBEE_FV_LENGTH), parsed from a fresh
 * state at a segment that begins between requests. */
static __always_inline void frame_walk(struct __sk_buff *skb, struct ebee_sconn *c,
				       struct ebee_sframe *f, struct ebee_fdir *d,
				       struct ebee_h2tab *h2, __u32 off, __u32 plen, __u32 seq,
				       int fr, int egress, int fin, int verify, __u32 ext,
				       __u32 xoff)
{
	struct frame_ws ws = {
		.pos = off,
		.end = off + plen + ext, /* ext: the held segment's bytes after the skb's */
		.xpos = off + plen,
		.xoff = xoff,
		.seq0 = seq,
		.off0 = off,
		.fr = fr,
		.resp = egress,
	};

	frame_walk_loop(skb, c, f, h2, &ws);
	if (!frame_walked(c, f, d, &ws, seq + plen + ext, verify))
		return;
	if (c->fr == EBEE_FRAME_TLS) {
		frame_tls_pair(c, f, &ws, egress);
		if (fin)
			frame_tls_close(c, f);
		return;
	}
	frame_solo(c, f, d, &ws, fr, egress);
	frame_mc_take(c, f, d);
	if (ws.starts)
		frame_queue(c, f, ws.first, ws.starts);
	if (ws.ends)
		frame_answer(c, f, ws.ends, frame_write_ns(f, ws.last_end, bpf_ktime_get_ns()));
	frame_verify_check(c, f, &ws, fr, egress);
}

#endif /* EBEE_FRAME_SEGMENT_BPF_H */
