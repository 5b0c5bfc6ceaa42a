/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What both BPF objects share. The maps: bpf/ebee.bpf.c owns them, and
 * bpf/ebee_grpc.bpf.c's copies are made the same maps by user space
 * (bpf_map__reuse_fd before load, metrics/src/grpc.c), so one table of traced
 * processes, kept by the fork hook, gates both. reuse_fd needs the two
 * definitions to agree in type, key, value and size: hence one definition.
 * And the record submission, the same for every pattern.
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
	__u64 flags = BPF_RB_NO_WAKEUP;
	struct ebee_wl *w;

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

#endif /* EBEE_MAPS_BPF_H */
