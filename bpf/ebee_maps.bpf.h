/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The maps both BPF objects declare: bpf/ebee.bpf.c owns them, and
 * bpf/ebee_grpc.bpf.c's copies are made the same maps by user space
 * (bpf_map__reuse_fd before load, metrics/src/grpc.c), so one table of traced
 * processes, kept by the fork hook, gates both. reuse_fd needs the two
 * definitions to agree in type, key, value and size: hence one definition.
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

#endif /* EBEE_MAPS_BPF_H */
