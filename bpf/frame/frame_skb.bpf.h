/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Framing in the kernel: the bytes of every TCP segment of the workload's
 * connections, in stream order, fed to the framer a connection's first bytes
 * chose (frame.h, one header per framer). Included by bpf/ebee.bpf.c, whose
 * socket-local storage (sconns) is the gate; docs/design.md 4.9 says why this
 * mechanism and what it costs.
 *
 * cgroup_skb/ingress and cgroup_skb/egress, attached (multi) to the cgroup v2
 * root, run for every IP packet of every socket of the host, before TCP
 * processes it (ingress) and before it leaves (egress, once per GSO skb).
 * bpf_skb_load_bytes reads paged data too. A socket without ebee storage
 * returns after one helper call; a connection whose framer is `length`
 * after two loads more.
 *
 * Order. Each direction keeps the next sequence number it expects. A segment
 * before it (a retransmit, or data TCP dropped and the peer sent again) is
 * skipped up to it; a segment after it (a gap: lost or out-of-order data, or
 * bytes the parser rejected) loses sync: counted against the workload
 * (desync, a warning in user space), and the direction waits for a segment
 * that begins where a message may begin (ebee_fr_may_start), where its parser
 * restarts (resync). Requests lost in a gap are not counted, responses then
 * paired with later requests shift their latencies: the warning says so.
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
#ifndef EBEE_FRAME_SKB_BPF_H
#define EBEE_FRAME_SKB_BPF_H

#include "frame/resp.h"
#include "frame/http1.h"

#define ETH_P_IP_   0x0800
#define ETH_P_IPV6_ 0x86DD
/* Every parser step consumes at least one byte (a skip is one step), so a
 * walk needs at most as many steps as the skb has payload bytes; capped here
 * (a 64 KiB GSO skb, BIG TCP's larger ones get this many): a walk cut short
 * loses sync, counted. */
#define FR_STEPS (1u << 18)

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ebee_sframe);
} sframes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* workload id */
	__type(value, struct ebee_fstat);
} fstats SEC(".maps");

/* The initial value, from .rodata: 80 bytes fewer on the stack, which the
 * programs' call chain (walk, pairing, record) must keep within 512. */
static const struct ebee_fstat fstat_zero;

static __always_inline struct ebee_fstat *fstat_get(__u32 wid)
{
	struct ebee_fstat *s;

	if (!wid)
		return NULL;
	s = bpf_map_lookup_elem(&fstats, &wid);
	if (s)
		return s;
	bpf_map_update_elem(&fstats, &wid, &fstat_zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&fstats, &wid);
}

static __always_inline bool fr_framed(const struct ebee_sconn *c)
{
	return c->fr == EBEE_FR_RESP || c->fr == EBEE_FR_HTTP1;
}

/* Count a connection under its framer once both are known: the framer at its
 * first bytes, the workload when a traced process first reads or writes it. */
static __always_inline void frame_note(struct ebee_sconn *c)
{
	struct ebee_fstat *s;
	__u32 fr = c->fr;

	if (!c->wid || fr == EBEE_FR_NONE || (c->fflags & EBEE_FF_NOTED) || fr >= EBEE_FR_MAX)
		return;
	s = fstat_get(c->wid);
	if (!s)
		return;
	__sync_fetch_and_add(&s->conns[fr], 1);
	c->fflags |= EBEE_FF_NOTED;
}

/* sock_recv of a framed connection: the requests whose first byte the server
 * has now read start their service time. */
static __always_inline void frame_mark_read(struct sock *sk)
{
	struct ebee_sframe *f = bpf_sk_storage_get(&sframes, sk, 0, 0);
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
	__u64 now = 0;
	__u32 copied;

	if (!f || !tp)
		return;
	copied = tp->copied_seq;
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

/* The walk over one skb's payload. The part a global function may see (no
 * pointers: a global function takes what it is handed as plain memory). */
struct fr_ws {
	__u32 pos, end;			     /* skb offsets: next byte to parse, end of payload */
	__u32 cpos, clen;		     /* bytes of the skb in buf */
	__u32 seq0, off0;		     /* sequence number of the byte at skb offset off0 */
	__u32 starts, ends, first, last_end; /* last_end: seq of the last END byte */
	__u8 fr, resp, err, pad;
	__u8 buf[64];
};

struct fr_walk {
	struct __sk_buff *skb;
	struct ebee_fdir *d;
	__u32 *head_bits;
	struct fr_ws ws;
};

/* One byte through the framer the connection has, dispatched by id. A
 * global function: the verifier checks it once, on its own (inlined into
 * the walk, the framers' branches along every path of it overflowed the
 * verifier's limits and took seconds to check). */
__noinline int frame_step(struct ebee_fdir *d, __u32 ch, __u32 fr, __u32 resp, __u32 *head_bits)
{
	if (!d || !head_bits)
		return EBEE_FEV_ERR;
	if (fr == EBEE_FR_RESP)
		return resp ? ebee_resp_rsp_step(d, ch) : ebee_resp_req_step(d, ch);
	if (fr == EBEE_FR_HTTP1)
		return ebee_http_step(d, ch, resp, head_bits);
	return EBEE_FEV_ERR;
}

/* The walk through the bytes in the buffer (and the skips they ask for): 1
 * when the walk is over (the payload's end, or bytes that do not parse:
 * err), 0 when the next byte needs the buffer refilled. Up to a buffer's
 * worth of steps per call: one bpf_loop callback per byte cost about twice
 * the parsing itself. Global, verified once. */
__noinline int frame_walk_chunk(struct fr_ws *ws, struct ebee_fdir *d, __u32 *head_bits)
{
	__u32 n;
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
		ev = frame_step(d, ws->buf[(ws->pos - ws->cpos) & (sizeof(ws->buf) - 1)], ws->fr,
				ws->resp, head_bits);
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

/* bpf_loop's callback: the bytes into the buffer when the next one is not
 * there (and no skip is pending), then the steps they allow. */
static long fr_walk_cb(__u64 i, void *ctx)
{
	struct fr_walk *w = ctx;
	struct fr_ws *ws = &w->ws;
	__u32 n;

	if (ws->pos >= ws->end)
		return 1;
	if (!w->d->skip && (ws->pos < ws->cpos || ws->pos >= ws->cpos + ws->clen)) {
		n = ws->end - ws->pos;
		if (n > sizeof(ws->buf))
			n = sizeof(ws->buf);
		/* ((n - 1) & 63) + 1 is n here; the verifier needs to see it in
		 * [1, 64] in the register the call takes. */
		if (!n || bpf_skb_load_bytes(w->skb, ws->pos, ws->buf, ((n - 1) & 63) + 1)) {
			ws->err = 1;
			return 1;
		}
		ws->cpos = ws->pos;
		ws->clen = n;
	}
	return frame_walk_chunk(ws, w->d, w->head_bits) ? 1 : 0;
}

static __always_inline void fr_reset(struct ebee_fdir *d)
{
	d->st = 0;
	d->skip = 0;
	d->num = 0;
	d->left = 0;
	d->depth = 0;
	d->pos = 0;
	d->flags = EBEE_FD_SYNC;
}

static __always_inline void fr_desync(struct ebee_sconn *c, struct ebee_sframe *f,
				      struct ebee_fdir *d)
{
	struct ebee_fstat *s = fstat_get(c->wid);

	d->flags = EBEE_FD_HUNT;
	d->skip = 0;
	/* Which responses answer which requests is lost with the bytes: the
	 * requests waiting are forgotten (responses that come for them count
	 * as unmatched), pairing starts again with the next request. */
	f->head = f->tail;
	f->rd = f->tail;
	if (!s)
		return;
	__sync_fetch_and_add(&s->desync, 1);
	if (!(c->fflags & EBEE_FF_DESYNC)) {
		c->fflags |= EBEE_FF_DESYNC;
		__sync_fetch_and_add(&s->desync_conns, 1);
	}
}

/* One record of framed requests. A global function, verified once: inlined
 * into frame_answer's loop, the ring buffer's branches at each of its
 * iterations were verified again and again. */
__noinline int frame_emit(__u32 wid, __u64 end, __u64 lat, __u64 soj, __u32 n)
{
	emit(wid, EBEE_REC_FRAMED, end, lat, soj, n);
	return 0;
}

/* Pair n responses that ended at `now` with the oldest requests. Global (c
 * and f are plain memory to it), so its loop is verified once. */
__noinline int frame_answer(struct ebee_sconn *c, struct ebee_sframe *f, __u32 n, __u64 now)
{
	struct ebee_fstat *s;

	if (!c || !f)
		return 0;
#pragma unroll
	for (int i = 0; i < EBEE_FQ_LEN; i++) {
		__u32 h = f->head, take;
		struct ebee_freq *e;

		if (!n || h == f->tail)
			break;
		e = &f->q[h & (EBEE_FQ_LEN - 1)];
		take = e->n < n ? e->n : n;
		if (take && c->wid && (c->wflags & EBEE_F_IO))
			frame_emit(c->wid, now, now - (e->svc_ns ? e->svc_ns : e->arr_ns),
				   now - e->arr_ns, take);
		c->nreq += take;
		e->n -= take;
		n -= take;
		if (!e->n) {
			f->head = h + 1;
			if ((__s32)(f->rd - f->head) < 0)
				f->rd = f->head;
		}
	}
	if (n && (s = fstat_get(c->wid)))
		__sync_fetch_and_add(&s->unmatched, n);
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

/* The first payload of a connection: choose its framer. */
static __always_inline int frame_detect(struct __sk_buff *skb, struct bpf_sock *bsk,
					struct ebee_sconn *c, __u32 off, __u32 plen, __u32 seq,
					int egress)
{
	struct ebee_sframe *f;
	__u8 b[16] = {};
	__u32 n = plen < sizeof(b) ? plen : sizeof(b);

	/* The server spoke first, the handshake was not seen, or the stream
	 * began before the hooks: the length pattern. */
	if (egress || !(c->fflags & EBEE_FF_SEQ) || seq != c->rcv_isn || !n ||
	    bpf_skb_load_bytes(skb, off, b, n & 15 ? n & 15 : 16)) {
		c->fr = EBEE_FR_LENGTH;
		return -1;
	}
	c->fr = ebee_fr_detect(b, n);
	if (!fr_framed(c))
		return -1;
	f = bpf_sk_storage_get(&sframes, bsk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!f) {
		c->fr = EBEE_FR_LENGTH;
		return -1;
	}
	fr_reset(&f->in);
	fr_reset(&f->out);
	f->in.next = c->rcv_isn;
	f->out.next = c->snd_isn;
	return 0;
}

/* The TCP header of skb into th, and in *off where its payload starts. -1:
 * not TCP over IPv4, nor over IPv6 without extension headers. */
static __always_inline int frame_tcp(struct __sk_buff *skb, struct tcphdr *th, __u32 *off)
{
	__u8 ip[20];

	if (skb->protocol == bpf_htons(ETH_P_IP_)) {
		if (bpf_skb_load_bytes(skb, 0, ip, sizeof(ip)) || ip[9] != IPPROTO_TCP_)
			return -1;
		*off = (ip[0] & 0xf) * 4;
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6_)) {
		if (bpf_skb_load_bytes(skb, 0, ip, 8) || ip[6] != IPPROTO_TCP_)
			return -1; /* extension headers: not followed */
		*off = 40;
	} else {
		return -1;
	}
	if (bpf_skb_load_bytes(skb, *off, th, sizeof(*th)))
		return -1;
	*off += th->doff * 4;
	return 0;
}

/* The plen new bytes at off (stream position seq) through d's parser, a
 * byte a step; then the requests that started and the responses that ended. */
static __always_inline void frame_walk(struct __sk_buff *skb, struct ebee_sconn *c,
				       struct ebee_sframe *f, struct ebee_fdir *d, __u32 off,
				       __u32 plen, __u32 seq, int egress)
{
	struct fr_walk w = {
		.skb = skb,
		.d = d,
		.head_bits = &f->head_bits,
		.ws = {
			.pos = off,
			.end = off + plen,
			.seq0 = seq,
			.off0 = off,
			.fr = c->fr,
			.resp = egress,
		},
	};

	bpf_loop(plen < FR_STEPS ? plen + 1 : FR_STEPS, fr_walk_cb, &w, 0);
	if (w.ws.err || w.ws.pos < w.ws.end) {
		fr_desync(c, f, d);
		d->next = seq + plen;
	} else {
		d->next = seq + plen;
	}
	if (w.ws.starts)
		frame_queue(c, f, w.ws.first, w.ws.starts);
	if (w.ws.ends)
		frame_answer(c, f, w.ws.ends, frame_write_ns(f, w.ws.last_end, bpf_ktime_get_ns()));
}

static __always_inline void frame_skb(struct __sk_buff *skb, int egress)
{
	struct bpf_sock *bsk = skb->sk;
	struct ebee_sconn *c;
	struct ebee_sframe *f;
	struct ebee_fdir *d;
	struct tcphdr th;
	__u32 off, plen, seq;
	__s32 diff;

	if (!bsk)
		return;
	c = bpf_sk_storage_get(&sconns, bsk, 0, 0);
	if (!c || (c->fr != EBEE_FR_NONE && !fr_framed(c)))
		return;
	if (frame_tcp(skb, &th, &off))
		return;
	seq = bpf_ntohl(th.seq);
	plen = skb->len > off ? skb->len - off : 0;
	if (c->fr == EBEE_FR_NONE) {
		if (!plen || frame_detect(skb, bsk, c, off, plen, seq, egress))
			return;
	}
	f = bpf_sk_storage_get(&sframes, bsk, 0, 0);
	if (!f)
		return;
	d = egress ? &f->out : &f->in;
	/* A response delimited by the server's close ends at its FIN. */
	if (egress && th.fin && (d->flags & EBEE_FD_TOCLOSE)) {
		d->flags &= ~EBEE_FD_TOCLOSE;
		d->st = 0;
		frame_answer(c, f, 1, bpf_ktime_get_ns());
	}
	if (!plen)
		return;
	diff = (__s32)(seq - d->next);
	if (diff > 0 && (d->flags & EBEE_FD_SYNC))
		fr_desync(c, f, d); /* a gap: bytes this parser never saw */
	if (d->flags & EBEE_FD_HUNT) {
		__u8 ch;

		if (diff < 0 || bpf_skb_load_bytes(skb, off, &ch, 1) ||
		    !ebee_fr_may_start(c->fr, egress, ch)) {
			if (diff >= 0)
				d->next = seq + plen;
			return;
		}
		fr_reset(d);
		d->next = seq;
		diff = 0;
		{
			struct ebee_fstat *s = fstat_get(c->wid);

			if (s)
				__sync_fetch_and_add(&s->resync, 1);
		}
	}
	if (diff < 0) {
		if ((__u32)-diff >= plen)
			return; /* all seen before */
		off += -diff;
		plen -= -diff;
		seq = d->next;
	}
	frame_walk(skb, c, f, d, off, plen, seq, egress);
}

SEC("cgroup_skb/ingress")
int frame_in(struct __sk_buff *skb)
{
	frame_skb(skb, 0);
	return 1; /* never drop: ebee only looks */
}

SEC("cgroup_skb/egress")
int frame_out(struct __sk_buff *skb)
{
	frame_skb(skb, 1);
	return 1;
}

#endif /* EBEE_FRAME_SKB_BPF_H */
