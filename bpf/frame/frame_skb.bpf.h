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
 *
 * HTTP/2 multiplexes streams that end in any order: its requests are paired
 * by stream id instead, in a table of the streams in flight (struct
 * ebee_h2tab, its own socket storage sh2s): each start takes a slot at its
 * HEADERS, each end (END_STREAM from the server, or a reset from either
 * side) emits one record from its slot, during the walk, as the events come.
 */
#ifndef EBEE_FRAME_SKB_BPF_H
#define EBEE_FRAME_SKB_BPF_H

#include "frame/dispatch.h"

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

/* HTTP/2 connections: the streams in flight. */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ebee_h2tab);
} sh2s SEC(".maps");

/*
 * A client segment that reached the ingress hook before the one just before
 * it. The hook runs before TCP puts segments in order, and on loopback each
 * segment is processed on the CPU that sent it: a client writing from two
 * threads (Go's), one segment left in a CPU's backlog for ksoftirqd (a busy
 * host, an emulated guest), and the next arrives first. Taken as a gap, it
 * cost an HTTP/2 connection its sync for good (lane runs 9, 20 and 24: 207
 * and 1 229 of 1 600 Go gRPC calls counted, said as untrusted). So such a
 * segment is held here, one run per connection (the early segments that
 * follow it are appended), up to EBEE_FSTASH_LEN bytes in all, and walked
 * right after the bytes that fill the gap, as if it had come with them (its
 * requests' arrival is then theirs, a little late); an early segment that
 * does not continue the run, more bytes than that, or a run held while the
 * walk of the gap's bytes was already over is a gap as before. A state word
 * hands it over between CPUs: FREE -> WRITING (the holder copies) -> READY
 * -> TAKEN (the walker reads) -> FREE. The buffer is twice the bytes held:
 * an append at any offset below EBEE_FSTASH_LEN of any size up to it fits,
 * which the verifier can see from the masks.
 */
#define EBEE_FSTASH_LEN 4096
enum { EBEE_FST_FREE, EBEE_FST_WRITING, EBEE_FST_READY, EBEE_FST_TAKEN };

struct ebee_fstash {
	__u64 state; /* EBEE_FST_*; 64 bits for the compare-and-swap (-mcpu=v2) */
	__u32 seq, plen;
	__u8 b[2 * EBEE_FSTASH_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ebee_fstash);
} sstash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* workload id */
	__type(value, struct ebee_fstat);
} fstats SEC(".maps");

/*
 * A connection's first bytes may complete its handshake: a server listening
 * with TCP_DEFER_ACCEPT (nginx's `deferred`, HAProxy's defer-accept) drops
 * the client's bare ACK and makes the connection at its first data, and a
 * client's data can overtake that ACK (a multi-CPU or emulated host: lane
 * run 12's Go gRPC connection). That segment reaches the ingress hook in
 * the listener's context (tcp_v4_rcv's TCP_NEW_SYN_RECV branch filters it
 * with the listener, before the connection exists), where no connection
 * storage can hold what it says: it was never parsed, and the connection
 * was counted by length without a word (nginx `deferred`, HTTP/1.1
 * pipelined 8 deep: 141 of 1000 requests, trusted). So the listener's
 * segments with payload are parsed into an entry of their own, keyed by
 * the connection's addresses, and the connection takes that state over as
 * its own at its next segment either way (frame_adopt). A TCP Fast Open
 * SYN's data makes an entry too, never taken: the child exists, and may be
 * read and answered, before the handshake ends, where its ISN is recorded
 * past that data (not handled; docs/design.md 4.9).
 */
struct ebee_fkey {
	__u32 cli[4], srv[4]; /* addresses, IPv4 as ::ffff:a.b.c.d */
	__u16 cport, sport;   /* ports, network order */
};

struct ebee_sfirst {
	__u32 seq, plen; /* the segment's first byte and length */
	__u32 ok;	 /* parsed whole, in sync: its state may be taken over */
	__u32 pad;
	__u8 b[16];	     /* its first bytes, which chose the framer */
	struct ebee_sconn c; /* what the walk keeps of the connection (fr) */
	struct ebee_sframe f;
	struct ebee_h2tab h2;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 512); /* handshakes in flight, taken at the next segment */
	__type(key, struct ebee_fkey);
	__type(value, struct ebee_sfirst);
} sfirsts SEC(".maps");

static const struct ebee_sfirst sfirst_zero;

/* The initial value, from .rodata: its 184 bytes off the stack, which the
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

/* Whether the connection's framer parses its bytes (the list's kinds). */
static __always_inline bool fr_framed(const struct ebee_sconn *c)
{
	return ebee_fr_framed(c->fr);
}

/* Whether the connection's bytes are parsed now: framed, and not counted by
 * length after verification (EBEE_FV_LENGTH: the io pattern counts). */
static __always_inline bool fr_parsed(const struct ebee_sconn *c)
{
	return fr_framed(c) && c->fverify != EBEE_FV_LENGTH;
}

/* Framers whose requests may be counted by length once verified to arrive
 * one at a time (EBEE_FV_*): one response per request, which the io
 * pattern's read-then-write alternation counts exactly when nothing is
 * pipelined. memcached's, the costliest to parse per request (a 64-byte key
 * walked twice, command and VALUE line) of the protocols a saturated server
 * speaks one request at a time. */
static __always_inline bool fr_verifiable(int fr)
{
	return ebee_fr_verifiable(fr); /* kind VERIFY in the list */
}

/* memcached: the requests no response answers, and a meta command in quiet
 * mode (once per connection), counted in the workload once it is known. */
static __always_inline void frame_mc_note(struct ebee_sconn *c, struct ebee_sframe *f)
{
	struct ebee_fstat *s;
	__u32 n = f->unans;
	int q = (f->head_bits & EBEE_MC_QUIET) && !(c->fflags & EBEE_FF_MCQ);

	if (!c->wid || (!n && !q) || !(s = fstat_get(c->wid)))
		return;
	if (n) {
		__sync_fetch_and_add(&s->unanswered, n);
		__sync_fetch_and_add(&f->unans, -n); /* the walk may be adding more */
	}
	if (q) {
		c->fflags |= EBEE_FF_MCQ;
		__sync_fetch_and_add(&s->mc_quiet, 1);
	}
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
	if (c->fnote & EBEE_FN_HSDATA)
		__sync_fetch_and_add(&s->hsdata, 1);
	if (c->fnote & EBEE_FN_UNSEEN)
		__sync_fetch_and_add(&s->unseen, 1);
	c->fflags |= EBEE_FF_NOTED;
}

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
	if (c->fr == EBEE_FR_MCTEXT || c->fr == EBEE_FR_MCBIN)
		frame_mc_note(c, f);
	if (c->fr == EBEE_FR_HTTP2) {
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

/* The walk over one skb's payload. The part a global function may see (no
 * pointers: a global function takes what it is handed as plain memory). */
struct fr_ws {
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

/* bpf_loop's context, on frame_walk_loop's stack (bpf_loop takes only a
 * stack pointer): the pointers the callback needs, each with the type the
 * verifier gave it there, which a pointer read from plain memory would not
 * keep. */
struct fr_loop {
	struct __sk_buff *skb;
	struct ebee_sconn *c;	/* HTTP/2: the connection, */
	struct ebee_sframe *f;	/* its framing state (the direction's: ws->resp) */
	struct ebee_h2tab *h2;	/* and its streams in flight; NULL for other framers */
	struct fr_ws *ws;	/* the walk, on frame_io's stack */
	struct ebee_fstash *st; /* the held segment the walk goes on with, or NULL */
};

/* One byte through the framer the connection has, dispatched by id (the
 * list's, dispatch.h). A global function: the verifier checks it once, on
 * its own (inlined into the walk, the framers' branches along every path
 * of it overflowed the verifier's limits and took seconds to check). */
__noinline int frame_step(struct ebee_fdir *d, __u32 ch, __u32 fr, __u32 resp, __u32 *head_bits)
{
	if (!d || !head_bits)
		return EBEE_FEV_ERR;
	return ebee_fr_step(d, ch, fr, resp, head_bits);
}

/* An HTTP/2 frame header from the walk's buffer at k, in one call (as its
 * nine steps would). Global, verified once, not at every byte of the
 * walk's loop. The bytes are copied one by one, each index masked, the
 * compiler made to forget k's bound so that it keeps the masks: the
 * verifier does not see the bound in the registers it indexes with. */
__noinline int frame_h2_header(struct ebee_fdir *d, struct fr_ws *ws, __u32 k)
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
__noinline int frame_walk_chunk(struct fr_ws *ws, struct ebee_fdir *d, __u32 *head_bits)
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
		if (ws->fr == EBEE_FR_HTTP2 && ebee_h2_at_header(d) && k + H2_HDR_LEN <= ws->clen &&
		    k <= sizeof(ws->buf) - H2_HDR_LEN) {
			/* An HTTP/2 frame header whole in the buffer: one call,
			 * its event the last byte's. */
			ws->pos += H2_HDR_LEN - 1;
			ev = frame_h2_header(d, ws, k);
		} else {
			ev = frame_step(d, ws->buf[k & (sizeof(ws->buf) - 1)], ws->fr, ws->resp,
					head_bits);
		}
		if (ws->fr == EBEE_FR_HTTP2 && ev != EBEE_FEV_NONE && ev != EBEE_FEV_ERR) {
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

/* One record of framed requests. A global function, verified once: inlined
 * into frame_answer's loop, the ring buffer's branches at each of its
 * iterations were verified again and again. */
__noinline int frame_emit(__u32 wid, __u64 end, __u64 lat, __u64 soj, __u32 n)
{
	emit(wid, EBEE_REC_FRAMED, end, lat, soj, n);
	return 0;
}

static __always_inline __u64 fr_since(__u64 end, __u64 t)
{
	return end > t ? end - t : 0;
}

/* An HTTP/2 event of the walk: a stream begins (a slot, its arrival and
 * where its frame header lies for the read marking) or ends (its record,
 * one request, the slot freed). An end of a stream not in the table was
 * reset already, or did not fit (counted then as untimed); one of a stream
 * the client never opened is unmatched. Global, verified once. */
__noinline int frame_h2_event(struct ebee_sconn *c, struct ebee_sframe *f, struct ebee_h2tab *t,
			      struct fr_ws *ws)
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
		if (ws->ev == EBEE_FEV_END && ws->ev_id > f->in.stack[2] && (s = fstat_get(c->wid)))
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
		frame_emit(c->wid, end, fr_since(end, svc), fr_since(end, arr), 1);
	c->nreq++;
	if (ws->ev == EBEE_FEV_ABORT && (s = fstat_get(c->wid)))
		__sync_fetch_and_add(&s->aborted, 1);
	return 0;
}

/* bpf_loop's callback: the bytes into the buffer when the next one is not
 * there (and no skip is pending), then the steps they allow, then the
 * HTTP/2 event that stopped them, if one did. */
static long fr_walk_cb(__u64 i, void *ctx)
{
	struct fr_loop *l = ctx;
	struct fr_ws *ws = l->ws;
	struct ebee_fdir *d;
	__u32 n;
	int done;

	if (!ws || !l->f || ws->pos >= ws->end)
		return 1;
	d = ws->resp ? &l->f->out : &l->f->in;
	if (!d->skip && (ws->pos < ws->cpos || ws->pos >= ws->cpos + ws->clen)) {
		if (ws->pos >= ws->xpos) {
			/* The held segment's bytes (the walk's end is
			 * within it): copied a buffer's worth, each index
			 * masked into the stash. */
			__u32 k = ws->pos - ws->xpos + ws->xoff;

			if (!l->st) {
				ws->err = 1;
				return 1;
			}
			n = ws->end - ws->pos;
			if (n > sizeof(ws->buf))
				n = sizeof(ws->buf);
#pragma unroll
			for (int j = 0; j < (int)sizeof(ws->buf); j++)
				ws->buf[j] = l->st->b[(k + j) & (2 * EBEE_FSTASH_LEN - 1)];
		} else {
			n = ws->xpos - ws->pos;
			if (n > sizeof(ws->buf))
				n = sizeof(ws->buf);
			/* ((n - 1) & 63) + 1 is n here; the verifier needs to
			 * see it in [1, 64] in the register the call takes. */
			if (!n ||
			    bpf_skb_load_bytes(l->skb, ws->pos, ws->buf, ((n - 1) & 63) + 1)) {
				ws->err = 1;
				return 1;
			}
		}
		ws->cpos = ws->pos;
		ws->clen = n;
	}
	done = frame_walk_chunk(ws, d, &l->f->head_bits);
	if (ws->ev) {
		if (l->c && l->h2)
			frame_h2_event(l->c, l->f, l->h2, ws);
		ws->ev = 0;
	}
	return done ? 1 : 0;
}

/* The walk's loop. A global function, so that the verifier checks the loop
 * once, from the types of its arguments: bpf_loop inlined in frame_io, its
 * callback was verified again for every distinct state of frame_io that
 * reached the call (about 1 300 times, half of all the instructions the
 * verifier processed for ebee, most of ebee's start). */
__noinline int frame_walk_loop(struct __sk_buff *skb, struct ebee_sconn *c, struct ebee_sframe *f,
			       struct ebee_h2tab *h2, struct fr_ws *ws)
{
	struct fr_loop l = { .skb = skb, .c = c, .f = f, .h2 = h2, .ws = ws };
	struct bpf_sock *bsk;
	__u32 plen;

	if (!skb || !c || !f || !ws || ws->end < ws->pos)
		return 0;
	if (ws->xpos < ws->end) {
		/* Taken for this walk by frame_stash_take: read, then freed. */
		bsk = skb->sk;
		l.st = bsk ? bpf_sk_storage_get(&sstash, bsk, 0, 0) : NULL;
		if (!l.st)
			ws->end = ws->xpos;
	}
	plen = ws->end - ws->pos;
	bpf_loop(plen < FR_STEPS ? plen + 1 : FR_STEPS, fr_walk_cb, &l, 0);
	if (l.st) {
		f->stashed = 0;
		asm volatile("" ::: "memory");
		l.st->state = EBEE_FST_FREE;
	}
	return 0;
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

/* why: 0 bytes that did not parse, 1 a sequence gap, 2 a walk cut short. */
static __always_inline void fr_desync(struct ebee_sconn *c, struct ebee_sframe *f,
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
	if (!s)
		return;
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

/* frame_answer's loop state, on its stack (bpf_loop takes only a stack
 * pointer). */
struct fr_ans {
	struct ebee_sconn *c;
	struct ebee_sframe *f;
	__u64 now;
	__u32 n;     /* responses still to pair */
	__u32 n_bad; /* paired wrongly: counted, not timed */
};

/* One queue entry per call: its requests answered, as many as are left. */
static long fr_answer_cb(__u64 i, void *ctx)
{
	struct fr_ans *a = ctx;
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
	struct fr_ans a = { .c = c, .f = f, .now = now, .n = n };
	struct ebee_fstat *s;

	if (!c || !f)
		return 0;
	bpf_loop(EBEE_FQ_LEN, fr_answer_cb, &a, 0);
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

/* TLS (tls.h): a response is known to be over only when the client sends a
 * record again or a side closes; it ended at the server's last response
 * record before that, whose end egress keeps (pend_seq, pend_ns). Ingress:
 * responses over (END), then requests begun (START). */
static __always_inline void frame_tls_pair(struct ebee_sconn *c, struct ebee_sframe *f,
					   const struct fr_ws *ws, int egress)
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

/* The framing state of a connection about to be framed by fr, from both
 * directions' first bytes. */
static __always_inline int frame_storage(struct bpf_sock *bsk, struct ebee_sconn *c, int fr)
{
	struct ebee_sframe *f;

	/* Created (or found: the other direction may have made it a moment
	 * ago), never reset here: each direction sets itself up at its own
	 * first segment (frame_skb), since the other may be parsing already. */
	f = bpf_sk_storage_get(&sframes, bsk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!f || (fr == EBEE_FR_HTTP2 &&
		   !bpf_sk_storage_get(&sh2s, bsk, 0, BPF_SK_STORAGE_GET_F_CREATE)))
		return -1;
	return 0;
}

/* The key of a connection's entry in sfirsts, from one of its packets
 * (egress: the server's, so source and destination swap). */
static __always_inline int frame_fkey(struct __sk_buff *skb, const struct tcphdr *th,
				      struct ebee_fkey *k, int egress)
{
	__u32 ip[2];

	if (skb->protocol == bpf_htons(ETH_P_IP_)) {
		if (bpf_skb_load_bytes(skb, 12, ip, 8))
			return -1;
		k->cli[2] = k->srv[2] = bpf_htonl(0xffff);
		k->cli[3] = egress ? ip[1] : ip[0];
		k->srv[3] = egress ? ip[0] : ip[1];
	} else if (bpf_skb_load_bytes(skb, 8, egress ? k->srv : k->cli, 16) ||
		   bpf_skb_load_bytes(skb, 24, egress ? k->cli : k->srv, 16)) {
		return -1;
	}
	k->cport = egress ? th->dest : th->source;
	k->sport = egress ? th->source : th->dest;
	return 0;
}

/* The connection's first bytes went by in its listener's context (sfirsts):
 * 1 when its framing takes over the state they left (c->fr set), -1 when
 * they call for the length pattern or could not be parsed (unseen, said),
 * 0 when there is no entry for them. Egress asks too, the server's first
 * bytes may leave before the client's next ones come (HTTP/2's SETTINGS, a
 * response to a lone request). Global, its key on a stack of its own: the
 * program's stack and its calls' must fit 512 bytes (6.1 counted 544). */
__noinline int frame_adopt(struct __sk_buff *skb, const struct tcphdr *th, struct ebee_sconn *c,
			   __u32 seq, int egress)
{
	struct ebee_fkey k = {};
	struct bpf_sock *bsk;
	struct ebee_sfirst *v;
	struct ebee_sframe *f;
	int fr;

	if (!skb || !th || !c || !(bsk = skb->sk) || frame_fkey(skb, th, &k, egress))
		return 0;
	v = bpf_map_lookup_elem(&sfirsts, &k);
	/* Another connection's of the same addresses, long gone, or bytes
	 * not contiguous with these: no evidence of this one's. */
	if (!v || v->seq != c->rcv_isn || (!egress && v->seq + v->plen != seq))
		return 0;
	fr = v->c.fr;
	if (fr == EBEE_FR_LENGTH) {
		bpf_map_delete_elem(&sfirsts, &k);
		return -1;
	}
	/* The state is copied into storage made for it: one that exists
	 * already is the other direction's, on another CPU, which took the
	 * entry over a moment ago (its framer set, or about to be: then
	 * this segment is lost to it, and said). */
	if (bpf_sk_storage_get(&sframes, bsk, 0, 0)) {
		if (c->fr != EBEE_FR_NONE)
			return 1;
		goto unseen;
	}
	if (!v->ok)
		goto unseen;
	f = bpf_sk_storage_get(&sframes, bsk, &v->f, BPF_SK_STORAGE_GET_F_CREATE);
	if (!f || (fr == EBEE_FR_HTTP2 &&
		   !bpf_sk_storage_get(&sh2s, bsk, &v->h2, BPF_SK_STORAGE_GET_F_CREATE)))
		goto unseen;
	c->fnote |= EBEE_FN_HSDATA;
	bpf_map_delete_elem(&sfirsts, &k);
	asm volatile("" ::: "memory"); /* state before framer, as in frame_detect */
	c->fr = fr;
	return 1;
unseen:
	c->fnote |= EBEE_FN_UNSEEN;
	bpf_map_delete_elem(&sfirsts, &k);
	return -1;
}

/* The first payload of a connection: choose its framer. 0 when its bytes
 * are to be parsed, by c->fr, or while EBEE_FF_H2SRV by HTTP/2's server
 * side. */
static __always_inline int frame_detect(struct __sk_buff *skb, const struct tcphdr *th,
					struct bpf_sock *bsk, struct ebee_sconn *c, __u32 off,
					__u32 plen, __u32 seq, int egress)
{
	__u8 b[16] = {};
	__u32 n = plen < sizeof(b) ? plen : sizeof(b);
	int fr;

	/* Bytes before these went by (at the listener): their entry, if
	 * any, decides (frame_adopt); without one they went unseen. */
	if ((c->fflags & EBEE_FF_SEQ) && (egress || seq != c->rcv_isn)) {
		int r = frame_adopt(skb, th, c, seq, egress);

		if (r > 0)
			return 0;
		if (r < 0)
			goto length;
		if (!egress) {
			c->fnote |= EBEE_FN_UNSEEN;
			goto length;
		}
	}
	/* The handshake was not seen, or the stream began before the hooks:
	 * the length pattern. The size is written so that its range is
	 * [1, 16] by arithmetic: 6.1's verifier does not learn "not zero" from
	 * a branch, and refuses a possibly zero-sized read. */
	if (!(c->fflags & EBEE_FF_SEQ) || seq != (egress ? c->snd_isn : c->rcv_isn) || !n ||
	    bpf_skb_load_bytes(skb, off, b, ((n - 1) & 15) + 1))
		goto length;
	if (egress) {
		/* The server spoke first: the length pattern, unless it is
		 * an HTTP/2 server's SETTINGS, which may go before the
		 * client's preface arrives (gRPC servers send them at once):
		 * its bytes are parsed as HTTP/2's from here, the framer
		 * decided by the client's first bytes. */
		if (ebee_h2_is_settings(b, n) && !frame_storage(bsk, c, EBEE_FR_HTTP2)) {
			c->fflags |= EBEE_FF_H2SRV;
			return 0;
		}
		goto length;
	}
	fr = ebee_fr_detect(b, n);
	if (c->fflags & EBEE_FF_H2SRV) {
		if (fr != EBEE_FR_HTTP2)
			goto length;
		/* The framer before the flag goes (the storages exist
		 * already), and egress reads them the other way round
		 * (frame_skb): a server segment on another CPU sees either
		 * the flag or the framer. */
		c->fr = fr;
		asm volatile("" ::: "memory");
		c->fflags &= ~EBEE_FF_H2SRV;
		return 0;
	}
	if (fr == EBEE_FR_LENGTH) {
		c->fr = fr;
		return -1;
	}
	if (frame_storage(bsk, c, fr))
		goto length;
	/* The framer is published once its state exists: egress, on another
	 * CPU, reads c->fr and then the storage (a server's first bytes can
	 * leave as the client's arrive: gRPC's SETTINGS). Set first, a
	 * segment egress saw between the two went unparsed, and the next was
	 * a gap: the connection lost sync, 0 of 80 calls counted, once in 31
	 * runs of test_ebee_frame_grpc.sh. A compiler barrier: enough on x86,
	 * as for the queue (frame_queue). */
	asm volatile("" ::: "memory");
	c->fr = fr;
	return 0;
length:
	c->fr = EBEE_FR_LENGTH; /* before the flag goes, as above */
	asm volatile("" ::: "memory");
	c->fflags &= ~EBEE_FF_H2SRV;
	return -1;
}

/* The TCP header of an IPv4 or IPv6 packet: 0 with *off at the payload, or
 * -1 (not TCP, or IPv6 extension headers, not followed). */
static __always_inline int frame_tcp(struct __sk_buff *skb, struct tcphdr *th, __u32 *off)
{
	__u8 ip[20];

	if (skb->protocol == bpf_htons(ETH_P_IP_)) {
		if (bpf_skb_load_bytes(skb, 0, ip, sizeof(ip)) || ip[9] != IPPROTO_TCP_)
			return -1;
		*off = (ip[0] & 0xf) * 4;
	} else if (skb->protocol == bpf_htons(ETH_P_IPV6_)) {
		if (bpf_skb_load_bytes(skb, 0, ip, 8) || ip[6] != IPPROTO_TCP_)
			return -1;
		*off = 40;
	} else {
		return -1;
	}
	if (bpf_skb_load_bytes(skb, *off, th, sizeof(*th)))
		return -1;
	*off += th->doff * 4;
	return 0;
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
	    !ebee_fr_may_start(fr, egress, ch)) {
		if (diff >= 0)
			d->next = seq + plen;
		return -1;
	}
	fr_reset(d);
	d->next = seq;
	if ((s = fstat_get(c->wid)))
		__sync_fetch_and_add(&s->resync, 1);
	return 0;
}

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
	struct fr_ws ws = {
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
	if (verify) {
		/* Still one request alone, or part of one, or bytes that do
		 * not begin one (no evidence either way): still by length. */
		if (ws.err || ws.pos < ws.end || (ws.starts <= 1 && !d->unans))
			return;
		frame_unverify(c, f);
		d->next = seq + plen + ext;
	} else if ((ws.err || ws.pos < ws.end) && c->fr == EBEE_FR_NONE) {
		/* Not HTTP/2 after all: no framer lost sync. */
		c->fr = EBEE_FR_LENGTH;
		asm volatile("" ::: "memory");
		c->fflags &= ~EBEE_FF_H2SRV;
		return;
	} else if (ws.err || ws.pos < ws.end) {
		fr_desync(c, f, d, ws.err ? 0 : 2);
		d->next = seq + plen + ext;
	} else {
		d->next = seq + plen + ext;
	}
	if (c->fr == EBEE_FR_TLS) {
		frame_tls_pair(c, f, &ws, egress);
		if (fin)
			frame_tls_close(c, f);
		return;
	}
	if (!egress && fr_verifiable(fr) && c->fverify == EBEE_FV_FRAMING) {
		/* Alone: the only request of its segment, answered or not, and
		 * nothing waiting before it. */
		if (ws.starts == 1 && !d->unans && f->head == f->tail && !ws.err)
			f->solo++;
		else if (ws.starts || d->unans || ws.err)
			f->solo = 0;
	}
	if (d->unans) {
		/* memcached: the requests no response answers (the step counted
		 * them, d->unans), for the workload once it is known. */
		__sync_fetch_and_add(&f->unans, d->unans);
		d->unans = 0;
		frame_mc_note(c, f);
	} else if (c->fr == EBEE_FR_MCTEXT && (f->head_bits & EBEE_MC_QUIET)) {
		frame_mc_note(c, f);
	}
	if (ws.starts)
		frame_queue(c, f, ws.first, ws.starts);
	if (ws.ends)
		frame_answer(c, f, ws.ends, frame_write_ns(f, ws.last_end, bpf_ktime_get_ns()));
	/* Enough alone, all answered, the client side between requests: by
	 * length from here, sampled. */
	if (egress && ws.ends && f->solo >= EBEE_FV_SOLO && c->fverify == EBEE_FV_FRAMING &&
	    f->head == f->tail && fr_verifiable(fr) && !f->in.st && !f->in.pos && !f->in.skip &&
	    (f->in.flags & EBEE_FD_SYNC))
		frame_verified(c);
}

/* A segment with payload in a listener's context: bytes that complete a
 * handshake, parsed into their own entry for the connection TCP is about to
 * make of them (sfirsts, frame_adopt). */
static __always_inline void frame_listen(struct __sk_buff *skb, struct tcphdr *th, __u32 off,
					 __u32 plen, __u32 seq)
{
	struct ebee_fkey k = {};
	struct ebee_sfirst *v;
	__u32 n = plen < sizeof(v->b) ? plen : sizeof(v->b);
	int fr;

	/* The first bytes go to the entry, not the stack: the program's
	 * stack and its calls' must fit 512 bytes (6.1 counts 544 else). */
	if (frame_fkey(skb, th, &k, 0) || !n ||
	    bpf_map_update_elem(&sfirsts, &k, &sfirst_zero, BPF_ANY))
		return;
	v = bpf_map_lookup_elem(&sfirsts, &k);
	if (!v || bpf_skb_load_bytes(skb, off, v->b, ((n - 1) & 15) + 1))
		return;
	v->seq = seq;
	v->plen = plen;
	fr = ebee_fr_detect(v->b, n);
	v->c.fr = fr;
	if (fr == EBEE_FR_LENGTH)
		return;
	fr_reset(&v->f.in);
	v->f.in.next = seq;
	v->f.in.init = 1;
	frame_walk(skb, &v->c, &v->f, &v->f.in, fr == EBEE_FR_HTTP2 ? &v->h2 : NULL, off, plen, seq,
		   fr, 0, th->fin, 0, 0, 0);
	/* Parsed to its end and in sync: the connection may go on from here. */
	v->ok = !(v->f.in.flags & EBEE_FD_HUNT) && v->c.fr == fr;
}

/* Hold a client segment that came before the bytes just before it
 * (sstash): 1 when held, 0 when it is a gap after all (not the next after
 * the run held, or too many bytes). Global: its stack is not the caller's,
 * whose chain of calls must fit 512 bytes (6.1 counted 544 inlined). */
__noinline int frame_stash_put(struct __sk_buff *skb, struct ebee_sframe *f, __u32 off, __u32 seq,
			       __u32 plen)
{
	struct ebee_fstash *st;
	struct bpf_sock *bsk;
	__u32 at = 0;

	if (!skb || !f || !(bsk = skb->sk))
		return 0;
	if (!plen || plen > EBEE_FSTASH_LEN)
		return 0;
	st = bpf_sk_storage_get(&sstash, bsk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!st)
		return 0;
	if (f->stashed) {
		/* The next early segment after the run held: appended. */
		if (__sync_val_compare_and_swap(&st->state, EBEE_FST_READY, EBEE_FST_WRITING) !=
		    EBEE_FST_READY)
			return 0;
		at = st->plen;
		if (seq != st->seq + at || at + plen > EBEE_FSTASH_LEN) {
			st->state = EBEE_FST_READY;
			return 0;
		}
	} else if (__sync_val_compare_and_swap(&st->state, EBEE_FST_FREE, EBEE_FST_WRITING) !=
		   EBEE_FST_FREE) {
		return 0;
	}
	/* offset in [0, LEN - 1], size in [1, LEN] (6.1 learns no "not zero"
	 * from a branch): within the buffer of 2 * LEN */
	if (bpf_skb_load_bytes(skb, off, st->b + (at & (EBEE_FSTASH_LEN - 1)),
			       ((plen - 1) & (EBEE_FSTASH_LEN - 1)) + 1)) {
		st->state = at ? EBEE_FST_READY : EBEE_FST_FREE;
		return 0;
	}
	if (!at)
		st->seq = seq;
	st->plen = at + plen;
	asm volatile("" ::: "memory"); /* the bytes before the state (x86: in order) */
	st->state = EBEE_FST_READY;
	f->stashed = 1;
	return 1;
}

/* Let the held segment go (the connection lost sync anyway, or its bytes
 * came again with the gap's). The flag is cleared before the state frees
 * it, so that a holder on another CPU sets it after. */
static __always_inline void frame_stash_drop(struct bpf_sock *bsk, struct ebee_sframe *f)
{
	struct ebee_fstash *st = bpf_sk_storage_get(&sstash, bsk, 0, 0);

	if (!st || __sync_val_compare_and_swap(&st->state, EBEE_FST_READY, EBEE_FST_TAKEN) !=
		       EBEE_FST_READY)
		return;
	f->stashed = 0;
	asm volatile("" ::: "memory");
	st->state = EBEE_FST_FREE;
}

/* The held segment, when the bytes about to be walked (up to end) reach
 * it: how many of its bytes to walk after them (from *xoff, its part past
 * end), claimed for this walk (frame_walk_loop frees it); 0 when there is
 * still a gap before it, or none held. */
static __always_inline __u32 frame_stash_take(struct bpf_sock *bsk, struct ebee_sconn *c,
					      struct ebee_sframe *f, __u32 end, __u32 *xoff)
{
	struct ebee_fstash *st = bpf_sk_storage_get(&sstash, bsk, 0, 0);
	struct ebee_fstat *s;
	__u32 plen;
	__s32 k;

	if (!st || st->state != EBEE_FST_READY)
		return 0;
	k = (__s32)(end - st->seq);
	plen = st->plen;
	if (k < 0)
		return 0;
	if ((__u32)k >= plen || plen > EBEE_FSTASH_LEN) {
		frame_stash_drop(bsk, f); /* seen whole by now */
		return 0;
	}
	if (__sync_val_compare_and_swap(&st->state, EBEE_FST_READY, EBEE_FST_TAKEN) !=
	    EBEE_FST_READY)
		return 0;
	if ((s = fstat_get(c->wid)))
		__sync_fetch_and_add(&s->reordered, 1);
	*xoff = k;
	return plen - k;
}

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

	if (c->state == EBEE_CS_READING || (c->flags & EBEE_CF_ARRIVED) || fr_parsed(c) ||
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

static __always_inline void frame_skb(struct __sk_buff *skb, int egress)
{
	struct bpf_sock *bsk = skb->sk;
	struct ebee_h2tab *h2 = NULL;
	struct ebee_sconn *c;
	struct ebee_sframe *f;
	struct ebee_fdir *d;
	struct tcphdr th;
	__u32 off, plen, seq, ext = 0, xoff = 0;
	__s32 diff;
	int fr, verify = 0;
	__u8 ff;

	if (!bsk)
		return;
	c = bpf_sk_storage_get(&sconns, bsk, 0, 0);
	if (!c) {
		/* A listener's segment with payload: see sfirsts. */
		if (!egress && bsk->state == BPF_TCP_LISTEN && !frame_tcp(skb, &th, &off) &&
		    skb->len > off)
			frame_listen(skb, &th, off, skb->len - off, bpf_ntohl(th.seq) + th.syn);
		return;
	}
	if (!egress)
		frame_arrive(skb, bsk, c);
	if (c->fr != EBEE_FR_NONE && !fr_framed(c))
		return;
	/* Counted by length (verified): what the gate costs, but for one
	 * ingress segment in EBEE_FV_SAMPLE of those arriving while the
	 * server reads no request (so between two: the segment begins one). */
	if (c->fverify == EBEE_FV_LENGTH) {
		if (egress || c->state == EBEE_CS_READING || (c->fsample++ & (EBEE_FV_SAMPLE - 1)))
			return;
		verify = 1;
	}
	if (frame_tcp(skb, &th, &off))
		return;
	seq = bpf_ntohl(th.seq);
	plen = skb->len > off ? skb->len - off : 0;
	if (verify && !plen) {
		c->fsample = 0; /* an ACK: the next segment is the sample */
		return;
	}
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
	if (c->fr == EBEE_FR_NONE && (!egress || !(ff & EBEE_FF_H2SRV))) {
		int r;

		if (!plen)
			return;
		r = frame_detect(skb, &th, bsk, c, off, plen, seq, egress);
		/* Decided at the server's first bytes, the connection may never
		 * be read again (a lone request answered, closed): noted now,
		 * its workload known since the server read. */
		if (egress)
			frame_note(c);
		if (r)
			return;
	}
	/* Still none: an HTTP/2 server's bytes before the client's. */
	fr = c->fr == EBEE_FR_NONE ? EBEE_FR_HTTP2 : c->fr;
	f = bpf_sk_storage_get(&sframes, bsk, 0, 0);
	if (!f)
		return;
	d = egress ? &f->out : &f->in;
	if (verify) {
		fr_reset(d);
		d->unans = 0;
		d->next = seq;
		d->init = 1;
	}
	if (!d->init) {
		/* This direction's first segment since the storage was made:
		 * its own state only (see frame_storage). */
		fr_reset(d);
		d->next = egress ? c->snd_isn : c->rcv_isn;
		d->init = 1;
	}
	if (fr == EBEE_FR_HTTP2) {
		/* Lost is lost for both directions (no resynchronising): what
		 * a stream's end or start means is gone with the bytes. */
		if ((f->in.flags | f->out.flags) & EBEE_FD_HUNT)
			return;
		h2 = bpf_sk_storage_get(&sh2s, bsk, 0, 0);
		if (!h2)
			return;
	}
	/* A response delimited by the server's close ends at its FIN. */
	if (egress && th.fin && (d->flags & EBEE_FD_TOCLOSE)) {
		d->flags &= ~EBEE_FD_TOCLOSE;
		d->st = 0;
		frame_answer(c, f, 1, bpf_ktime_get_ns());
	}
	if (!plen) {
		if (th.fin && c->fr == EBEE_FR_TLS)
			frame_tls_close(c, f);
		return;
	}
	if (d->init == 2) {
		/* Counted by length until a sample (frame_unverify): parsed
		 * from the first segment that may begin a message. */
		__u8 ch;

		if (bpf_skb_load_bytes(skb, off, &ch, 1) || !ebee_fr_may_start(fr, egress, ch))
			return;
		fr_reset(d);
		d->next = seq;
		d->init = 1;
	}
	diff = (__s32)(seq - d->next);
	if (diff > 0 && (d->flags & EBEE_FD_SYNC)) {
		/* A client segment early: held for the bytes before it. */
		if (!egress && !verify && frame_stash_put(skb, f, off, seq, plen))
			return;
		if (!egress && f->stashed)
			frame_stash_drop(bsk, f); /* this direction lost sync anyway */
		fr_desync(c, f, d, 1);		  /* a gap: bytes this parser never saw */
	}
	if (d->flags & EBEE_FD_HUNT) {
		if (frame_hunt(skb, c, d, off, seq, plen, diff, fr, egress))
			return;
		diff = 0;
	}
	if (diff < 0) {
		if ((__u32)-diff >= plen)
			return; /* all seen before */
		off += -diff;
		plen -= -diff;
		seq = d->next;
	}
	/* The bytes that fill the gap before a held segment: it follows them. */
	if (!egress && !verify && f->stashed)
		ext = frame_stash_take(bsk, c, f, seq + plen, &xoff);
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
