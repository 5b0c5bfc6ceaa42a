/* SPDX-License-Identifier: MIT */
/*
 * gRPC: the grpc BPF object (bpf/ebee_grpc.bpf.c) and its uprobes
 * on the libgrpc files traced processes map (internal). It shares the
 * traced-process tables and the ring buffer manager of the syscall object
 * (loader.h), so its records reach the same consumer.
 */
#ifndef EBEE_GRPC_H
#define EBEE_GRPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "loader.h"

struct ebee_grpc;

/* Load the grpc object next to k (nothing attached). msg: one line why not. */
int ebee_grpc_open(struct ebee_loader *k, size_t ringbuf_size, unsigned int max_streams,
		   struct ebee_grpc **out, char *msg, size_t msg_len);
void ebee_grpc_close(struct ebee_grpc *g);

/*
 * Look for libgrpc in the maps of pid and, if children, its descendants;
 * resolve the functions of each library not seen before, and attach to it if
 * the probes are on. *found: some process maps a usable libgrpc. Returns 0,
 * or a negative errno with msg when a library is unusable (missing or
 * changed functions) or attaching failed.
 */
int ebee_grpc_scan(struct ebee_grpc *g, pid_t pid, bool children, bool *found, char *msg,
		   size_t msg_len);

/* Attach to every known library (on) or detach and forget them all (off:
 * no workload needs grpc; the next scan finds them again). */
int ebee_grpc_set_probes(struct ebee_grpc *g, bool on, char *msg, size_t msg_len);
bool ebee_grpc_probes(const struct ebee_grpc *g);

/* Forget the in-flight streams of workload wid. */
void ebee_grpc_workload_del(struct ebee_grpc *g, uint32_t wid);
/* In-flight server streams (walks the map). */
uint64_t ebee_grpc_stream_count(struct ebee_grpc *g);
/* Sum of a per-CPU counter (enum ebee_grpc_counter). */
uint64_t ebee_grpc_counter(struct ebee_grpc *g, unsigned int idx);

#endif
