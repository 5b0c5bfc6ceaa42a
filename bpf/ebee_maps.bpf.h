/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the BPF objects share. The maps: bpf/ebee.bpf.c owns them, and
 * bpf/ebee_grpc.bpf.c's and bpf/ebee_dgram.bpf.c's copies are made the same
 * maps by user space (bpf_map__reuse_fd before load, metrics/src/grpc.c,
 * dgram.c), so one table of traced processes, kept by the fork hook, gates
 * them all, and one table counts every workload's requests. reuse_fd needs
 * the definitions to agree in type, key, value and size: hence one
 * definition. And the record submission, the same for every pattern.
 */
#ifndef EBEE_MAPS_BPF_H
#define EBEE_MAPS_BPF_H

#include "ebee_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tgid */
	__type(value, struct ebee_proc);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* workload id */
	__type(value, struct ebee_wl);
} workloads SEC(".maps");

/* Requests per workload (struct ebee_kcount), per CPU: every request of
 * every CPU passes here, and a shared counter would bounce its cache line
 * between the CPUs at each one. User space creates a workload's entry when it
 * adds the workload (zeroed: a re-added workload starts from 0) and deletes it
 * with the workload; the programs never create one, so a record emitted for a
 * workload being removed cannot leave an entry behind. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1024); /* as workloads */
	__type(key, __u32);	   /* workload id */
	__type(value, struct ebee_kcount);
} kcounts SEC(".maps");

/* Wake the consumer only once this much data waits (set before load); below
 * it, user space drains on its own timer: a wakeup per request costs a
 * context switch per request. */
const volatile __u64 wakeup_bytes = 64 * 1024;

/* One completed request into ringbuf. false: the ring is full (or missing),
 * the record is lost and counted against its workload (the caller counts it
 * globally). */
static __always_inline bool ebee_submit(void *ringbuf, __u32 wid, __u16 kind, __u64 end, __u64 lat,
					__u64 soj, __u32 nreq)
{
	struct ebee_rec *r = ringbuf ? bpf_ringbuf_reserve(ringbuf, sizeof(*r), 0) : NULL;
	struct ebee_kcount *kc = bpf_map_lookup_elem(&kcounts, &wid);
	__u64 flags = BPF_RB_NO_WAKEUP;
	__u64 n = kind == EBEE_REC_FRAMED ? nreq : 1;
	__u32 i = kind == EBEE_REC_CONN	    ? EBEE_KC_CONN
		  : kind == EBEE_REC_IO	    ? EBEE_KC_IO
		  : kind == EBEE_REC_FRAMED ? EBEE_KC_IO
		  : kind == EBEE_REC_GRPC   ? EBEE_KC_GRPC
		  : kind == EBEE_REC_DGRAM  ? EBEE_KC_DGRAM
					    : EBEE_KC_MAX; /* adopted close: no request */
	struct ebee_wl *w;

	/* Atomic although per CPU: a socket-layer program in process context
	 * can be interrupted on its CPU by the framing program in softirq,
	 * which counts into the same entry. */
	if (kc && i < EBEE_KC_MAX) {
		__sync_fetch_and_add(&kc->req[i], n);
		if (!r)
			__sync_fetch_and_add(&kc->lost[i], n);
	}
	if (!r) {
		w = bpf_map_lookup_elem(&workloads, &wid);
		if (w)
			__sync_fetch_and_add(&w->dropped, 1);
		return false;
	}
	r->end_ns = end;
	r->lat_ns = lat;
	r->soj_ns = soj;
	r->wid = wid;
	r->kind = kind;
	r->nreq = nreq > 0xffff ? 0xffff : nreq;
	if (bpf_ringbuf_query(ringbuf, BPF_RB_AVAIL_DATA) >= wakeup_bytes)
		flags = BPF_RB_FORCE_WAKEUP;
	bpf_ringbuf_submit(r, flags);
	return true;
}

/* A read or write of the workload's connection that moved bytes (n > 0):
 * counted whether or not a request comes of it, so that a workload whose
 * sockets move bytes while no request is counted is told apart from one
 * that is idle. One lookup and two adds on one cache line of this CPU's
 * entry; atomic for the reason ebee_submit()'s are. */
static __always_inline void ebee_kc_io(__u32 wid, long n)
{
	struct ebee_kcount *kc;

	if (n <= 0 || !wid)
		return;
	kc = bpf_map_lookup_elem(&kcounts, &wid);
	if (!kc)
		return;
	__sync_fetch_and_add(&kc->io_bytes, n);
	__sync_fetch_and_add(&kc->io_calls, 1);
}

#endif /* EBEE_MAPS_BPF_H */
