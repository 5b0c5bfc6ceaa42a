// SPDX-License-Identifier: GPL-2.0
/*
 * bench_hooks: what a syscall costs under each way ebee could hook it.
 *
 * What it measures. The same minimal work as ebee's hot path (look up the
 * caller's tgid in a hash of traced processes; if found, count the event in a
 * per-CPU array) behind two kinds of hook, attached one kind at a time by
 * tests/bench/bench_hooks.c:
 *   tp:  per-syscall tracepoints syscalls:sys_enter_read / sys_exit_read, what
 *        ebee uses. They fire for read() only, so every other syscall, and
 *        every process, pays nothing beyond the tracepoint's static branch.
 *   raw: raw tracepoints sys_enter / sys_exit, one program for every syscall
 *        of every process, which must find out the syscall id and return early
 *        unless it is read(). This is the alternative: fewer attachments, no
 *        per-syscall event plumbing, but a BPF program run on every syscall.
 * Each program counts into its own slot, so user space can check that every
 * enter and every exit of its read() calls was seen, exactly once.
 *
 * Assumptions. x86_64: __NR_read is 0 and the syscall id at sys_exit is
 * pt_regs->orig_ax (what the kernel's own syscall_get_nr() reads); the exit
 * raw tracepoint passes only (regs, ret), hence the CO-RE read.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "GPL";

#define BH_NR_READ 0 /* x86_64 */

/* Counter slots, one per program (read by bench_hooks.c by these numbers). */
enum bh_cnt {
	BH_TP_ENTER,
	BH_TP_EXIT,
	BH_RAW_ENTER,
	BH_RAW_EXIT,
	BH_CNT_MAX,
};

/* Same shape as ebee's procs map, so the lookup costs what ebee's does. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tgid */
	__type(value, __u32);
} traced SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BH_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static __always_inline int hit(__u32 idx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u64 *v;

	if (!bpf_map_lookup_elem(&traced, &tgid))
		return 0;
	v = bpf_map_lookup_elem(&counters, &idx);
	if (v)
		(*v)++;
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_read")
int tp_enter_read(void *ctx)
{
	return hit(BH_TP_ENTER);
}

SEC("tracepoint/syscalls/sys_exit_read")
int tp_exit_read(void *ctx)
{
	return hit(BH_TP_EXIT);
}

/* args[0] is the pt_regs, args[1] the syscall id. */
SEC("raw_tp/sys_enter")
int raw_enter(struct bpf_raw_tracepoint_args *ctx)
{
	if (ctx->args[1] != BH_NR_READ)
		return 0;
	return hit(BH_RAW_ENTER);
}

/* args[0] is the pt_regs, args[1] the return value: the id is not passed. */
SEC("raw_tp/sys_exit")
int raw_exit(struct bpf_raw_tracepoint_args *ctx)
{
	struct pt_regs *regs = (struct pt_regs *)ctx->args[0];

	if (BPF_CORE_READ(regs, orig_ax) != BH_NR_READ)
		return 0;
	return hit(BH_RAW_EXIT);
}
