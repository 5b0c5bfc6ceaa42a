/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Framing in the kernel: the byte walk, the steps of the connection's
 * parser over a buffer of its bytes (struct frame_ws), skips passed over,
 * events tallied for pairing; an HTTP/2 frame header in one call.
 */
#ifndef EBEE_FRAME_WALK_BPF_H
#define EBEE_FRAME_WALK_BPF_H

#include "frame/state.bpf.h"

/* The walk over one skb's payload. The part a global function may see (no
 * pointers: a global function takes what it is handed as plain memory). */
struct frame_ws {
	__u32 pos, end;			     /* skb offsets: next byte to parse, end of payload */
	__u32 cpos, clen;		     /* bytes of the skb in buf */
	__u32 seq0, off0;		     /* sequence number of the byte at skb offset off0 */
	__u32 starts, ends, first, last_end; /* last_end: seq of the last END byte */
	__u32 ev, ev_id, ev_seq;	     /* HTTP/2: an event to pair (stream id, its byte) */
	__u32 xpos;			     /* bytes from here on: the held segment's (sstash) */
	__u64 now; /* HTTP/2: the time of this skb, once an event needed it */
	__u8 fr, resp, err, pad;
	/* ... from its byte xoff. In the padding's place: the program's stack
	 * and its calls' must fit 512 bytes (6.1 counted 544 with 8 more). */
	__u32 xoff;
	__u8 buf[64];
};

/* One byte through the framer the connection has, dispatched by id (the
 * list's, dispatch.h). A global function: the verifier checks it once, on
 * its own (inlined into the walk, the framers' branches along every path
 * of it overflowed the verifier's limits and took seconds to check). */
__noinline int frame_step(struct ebee_fdir *d, __u32 ch, __u32 fr, __u32 resp, __u32 *head_bits)
{
	if (!d || !head_bits)
		return EBEE_FEV_ERR;
	return ebee_frame_step(d, ch, fr, resp, head_bits);
}

/* An HTTP/2 frame header from the walk's buffer at k, in one call (as its
 * nine steps would). Global, verified once, not at every byte of the
 * walk's loop. The bytes are copied one by one, each index masked, the
 * compiler made to forget k's bound so that it keeps the masks: the
 * verifier does not see the bound in the registers it indexes with. */
__noinline int frame_h2_header(struct ebee_fdir *d, struct frame_ws *ws, __u32 k)
{
	__u8 h[H2_HDR_LEN];

	if (!d || !ws)
		return EBEE_FEV_ERR;
	asm volatile("" : "+r"(k));
#pragma unroll
	for (int j = 0; j < H2_HDR_LEN; j++)
		h[j] = ws->buf[(k + j) & (sizeof(ws->buf) - 1)];
	return ebee_h2_header9(d, h, ws->resp);
}

/* The walk through the bytes in the buffer (and the skips they ask for): 1
 * when the walk is over (the payload's end, or bytes that do not parse:
 * err), 0 when the next byte needs the buffer refilled. Up to a buffer's
 * worth of steps per call: one bpf_loop callback per byte cost about twice
 * the parsing itself. Global, verified once. */
__noinline int frame_walk_chunk(struct frame_ws *ws, struct ebee_fdir *d, __u32 *head_bits)
{
	__u32 n, k;
	int ev;

	if (!ws || !d || !head_bits)
		return 1;
	for (int i = 0; i < (int)sizeof(ws->buf); i++) {
		if (ws->pos >= ws->end)
			return 1;
		if (d->skip) {
			n = ws->end - ws->pos;
			if (n > d->skip)
				n = d->skip;
			d->skip -= n;
			ws->pos += n;
			continue;
		}
		if (ws->pos < ws->cpos || ws->pos >= ws->cpos + ws->clen)
			return 0; /* refill */
		k = ws->pos - ws->cpos;
		if (ws->fr == EBEE_FRAME_HTTP2 && ebee_h2_at_header(d) &&
		    k + H2_HDR_LEN <= ws->clen && k <= sizeof(ws->buf) - H2_HDR_LEN) {
			/* An HTTP/2 frame header whole in the buffer: one call,
			 * its event the last byte's. */
			ws->pos += H2_HDR_LEN - 1;
			ev = frame_h2_header(d, ws, k);
		} else {
			ev = frame_step(d, ws->buf[k & (sizeof(ws->buf) - 1)], ws->fr, ws->resp,
					head_bits);
		}
		if (ws->fr == EBEE_FRAME_HTTP2 && ev != EBEE_FEV_NONE && ev != EBEE_FEV_ERR) {
			/* Paired by stream id, now: the caller's, with the table. */
			ws->ev = ev;
			ws->ev_id = ebee_h2_event_id(d);
			ws->ev_seq = ws->seq0 + (ws->pos - ws->off0);
			ws->pos++;
			return ws->pos >= ws->end;
		}
		if (ev == EBEE_FEV_START) {
			if (!ws->starts)
				ws->first = ws->seq0 + (ws->pos - ws->off0);
			ws->starts++;
		} else if (ev == EBEE_FEV_END) {
			ws->ends++;
			ws->last_end = ws->seq0 + (ws->pos - ws->off0);
		} else if (ev == EBEE_FEV_ERR) {
			ws->err = 1;
			return 1;
		}
		ws->pos++;
	}
	return 0;
}

#endif /* EBEE_FRAME_WALK_BPF_H */
