/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Framing in the kernel: the stash, a client segment held while the bytes
 * before it are late, walked right after them (frame_walk_loop).
 */
#ifndef EBEE_FRAME_STASH_BPF_H
#define EBEE_FRAME_STASH_BPF_H

#include "frame/state.bpf.h"

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
 * requests' arrival is then theirs, a little late), or by the CPU that held
 * it when that walk was over by then (frame_stash_due); an early segment
 * that does not continue the run, or more bytes than that, is a gap as
 * before. A state word
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

/*
 * A client segment early by the bytes another CPU is walking right now (its
 * segment, or it and the run it took from the stash): held, it would wait
 * for bytes already walked (frame_stash_due looks once, a moment too soon),
 * and with a run taken it cannot be held at all (the stash is being read):
 * a gap. Go gRPC in the 6.1 guest, 300 connections of 8 calls: 1 such gap
 * in 3 runs, 2 399 of 2 400 calls, untrusted. So it waits for that walk, a
 * bounded spin on the direction's next expected byte: 1 when that has
 * reached the segment (then it is in order, walked by this CPU), 0 when it
 * has not by the bound (a true reordering: the bytes before it are still on
 * their way, held as before). The bound: EBEE_FWAIT_NS, far above a walk's
 * few microseconds, and EBEE_FWAIT_SPINS reads of the clock (a bounded loop
 * the verifier walks through, once: a global function). Rare (only segments
 * that overtook one), and short: the CPU being waited for walks in softirq,
 * not preemptible, and an ingress walk never interrupts another on its CPU.
 * Not so in an emulated guest whose vCPUs share one host thread (the VM
 * lane's): there the walk does not move while this spins (tests/vm/README.md).
 */
#define EBEE_FWAIT_NS 50000
#define EBEE_FWAIT_SPINS 512

__noinline int frame_wait_next(struct ebee_sframe *f, __u32 seq)
{
	__u64 until;

	if (!f)
		return 0;
	until = bpf_ktime_get_ns() + EBEE_FWAIT_NS;
	for (int i = 0; i < EBEE_FWAIT_SPINS; i++) {
		if ((__s32)(seq - *(volatile __u32 *)&f->in.next) <= 0)
			return 1;
		if (bpf_ktime_get_ns() > until)
			break;
	}
	return 0;
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

/* The run held begins where its direction expects the next byte: the walk
 * of the gap's bytes, on another CPU, looked for a held run before this one
 * was held and has ended since, so no walk will come for it. 1 then, and
 * the caller walks it at once (the CPU that held it, or the next that
 * appends to it). Read after the hold's compare-and-swap, a full barrier.
 * Without this the run waited for the gap's bytes, already walked, while
 * the early segments after it were appended until 4 KiB ended it in a gap:
 * most likely Go gRPC in the 6.1 guest: 1 503 of 1 600 calls, 97 lost in
 * one gap (about 4 KiB of its calls). */
static __always_inline int frame_stash_due(struct bpf_sock *bsk, struct ebee_fdir *d)
{
	struct ebee_fstash *st = bpf_sk_storage_get(&sstash, bsk, 0, 0);

	return st && *(volatile __u64 *)&st->state == EBEE_FST_READY &&
	       *(volatile __u32 *)&st->seq == *(volatile __u32 *)&d->next;
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

#endif /* EBEE_FRAME_STASH_BPF_H */
