/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Framing in the kernel, its state: the framing state of a connection
 * (sframes) and of its HTTP/2 streams (sh2s), in socket storage; the
 * counters of each workload (fstats, struct ebee_fstat) and what a
 * connection adds to them once its framer and workload are both known;
 * which connections are parsed. Part of the framing program
 * (frame_skb.bpf.h).
 */
#ifndef EBEE_FRAME_STATE_BPF_H
#define EBEE_FRAME_STATE_BPF_H

#include "frame/dispatch.h"

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

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* workload id */
	__type(value, struct ebee_fstat);
} fstats SEC(".maps");

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
static __always_inline bool frame_framed(const struct ebee_sconn *c)
{
	return ebee_frame_framed(c->fr);
}

/* The connection counted by length. The framer before the flag goes:
 * egress reads them the other way round (frame_choose), so a server segment
 * on another CPU sees either the flag or the framer. -1, for the callers'
 * "not parsed". */
static __always_inline int frame_length(struct ebee_sconn *c)
{
	c->fr = EBEE_FRAME_LENGTH;
	asm volatile("" ::: "memory");
	c->fflags &= ~EBEE_FF_H2SRV;
	return -1;
}

/* Whether the connection's bytes are parsed now: framed, and not counted by
 * length after verification (EBEE_FV_LENGTH: the io pattern counts). */
static __always_inline bool frame_parsed(const struct ebee_sconn *c)
{
	return frame_framed(c) && c->fverify != EBEE_FV_LENGTH;
}

/* Framers whose requests may be counted by length once verified to arrive
 * one at a time (EBEE_FV_*): one response per request, which the io
 * pattern's read-then-write alternation counts exactly when nothing is
 * pipelined. memcached's, the costliest to parse per request (a 64-byte key
 * walked twice, command and VALUE line) of the protocols a saturated server
 * speaks one request at a time. */
static __always_inline bool frame_verifiable(int fr)
{
	return ebee_frame_verifiable(fr); /* kind VERIFY in the list */
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

	if (!c->wid || fr == EBEE_FRAME_NONE || (c->fflags & EBEE_FF_NOTED) || fr >= EBEE_FRAME_MAX)
		return;
	/* The bound checked stays with the value used: without this the
	 * compiler may read c->fr's byte again from a spill, re-masked, and
	 * the verifier sees an index up to 255 (it refused frame_io so). */
	asm volatile("" : "+r"(fr));
	s = fstat_get(c->wid);
	if (!s)
		return;
	__sync_fetch_and_add(&s->conns[fr], 1);
	if (c->fnote & EBEE_FN_HSDATA)
		__sync_fetch_and_add(&s->hsdata, 1);
	if (c->fnote & EBEE_FN_UNSEEN)
		__sync_fetch_and_add(&s->unseen, 1);
	if (c->fnote & EBEE_FN_MID)
		__sync_fetch_and_add(&s->midstream, 1);
	c->fflags |= EBEE_FF_NOTED;
}

#endif /* EBEE_FRAME_STATE_BPF_H */
