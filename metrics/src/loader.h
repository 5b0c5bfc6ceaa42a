/* SPDX-License-Identifier: MIT */
/*
 * The loader of bpf/ebee.bpf.c, libebee's kernel side seen from user space:
 * the BPF object, its maps and its probe groups. metrics/src/loader.c is the
 * only file that includes its generated skeleton (grpc.c and dgram.c load
 * objects of their own); nothing outside libebee sees a libbpf type.
 */
#ifndef EBEE_LOADER_H
#define EBEE_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "attach.h"
#include "ebee.h"
#include "ebee_common.h"

/* Probe groups: the bits of enum ebee_probe (ebee.h), up to
 * EBEE_PROBE_SOCK_FRAME; EBEE_PROBE_DGRAM's programs are dgram.c's, its
 * group here stays empty. */
#define EBEE_NPROBE_GROUPS 11
_Static_assert(EBEE_PROBE_SOCK_FRAME == 1u << (EBEE_NPROBE_GROUPS - 1),
	       "the last probe group is the framers'");

struct ebee_loader;

struct ebee_loader_opts {
	size_t ringbuf_size;
	unsigned int max_conns;
	/* Socket-layer tracepoints instead of syscall tracepoints (only the
	 * chosen path's programs are loaded). */
	bool sock_path;
	/* Socket path: how each hook group attaches (only those programs load). */
	struct ebee_sock_attach attach;
	/* Called by ebee_loader_consume() for each record. */
	int (*on_record)(void *ctx, const struct ebee_rec *rec);
	void *ctx;
};

/* Open, size and load the BPF object and set up the ring buffers' consumer.
 * Nothing is attached yet. msg gets a one-line reason on failure. */
int ebee_loader_open(const struct ebee_loader_opts *opts, struct ebee_loader **out, char *msg,
		     size_t msg_len);
void ebee_loader_close(struct ebee_loader *k);

/* Attach or detach probe groups (enum ebee_probe) so that exactly `mask` is
 * live. On failure, what was live stays live and msg says what failed. */
int ebee_loader_set_probes(struct ebee_loader *k, unsigned int mask, char *msg, size_t msg_len);
unsigned int ebee_loader_probes(const struct ebee_loader *k);

/* Workload table: flags are EBEE_F_*, copied into every process entry of the
 * workload (call again to repair a copy a racing fork took before a change). */
int ebee_loader_workload_set(struct ebee_loader *k, uint32_t wid, uint32_t flags);
int ebee_loader_workload_dropped(struct ebee_loader *k, uint32_t wid, uint64_t *dropped);
/* Remove the workload, every process entry pointing at it and their
 * in-flight connections. */
void ebee_loader_workload_del(struct ebee_loader *k, uint32_t wid);
/* Add one process (tgid) to workload wid; -EEXIST if it is already traced
 * (under any workload). */
int ebee_loader_proc_add(struct ebee_loader *k, uint32_t tgid, uint32_t wid);
/* Put a connection accepted before tracing began into the connection map
 * (flagged EBEE_CF_ADOPTED); -EEXIST if it is there already. */
int ebee_loader_conn_adopt(struct ebee_loader *k, uint32_t tgid, uint32_t fd);
/* Socket path: the same for a connection known by its ports (and IPv4 peer
 * address, 0 for IPv6); the first read or write of workload wid claims it. */
int ebee_loader_sconn_adopt(struct ebee_loader *k, uint32_t wid, const struct ebee_adopt_key *key);
bool ebee_loader_sock_path(const struct ebee_loader *k);
/* Framing: the cgroups (open v2 directory fds, dup'd here) the framing
 * program attaches to, none for the cgroup v2 root (cgv2.h says why a
 * scope). While it is attached the links move at once, the new made before
 * the old go; on failure the old scope stays and msg says why. */
int ebee_loader_frame_scope(struct ebee_loader *k, const int *cgfds, size_t n, char *msg,
			    size_t msg_len);
/* The kernel's last report of a workload socket the framing hook did not
 * see (frame_missed in bpf/ebee.bpf.c): a count of reports so far (a change
 * means a new one), with the workload and the socket's cgroup id. */
uint64_t ebee_loader_frame_missed(struct ebee_loader *k, uint32_t *wid, uint64_t *cgid);
/* Framing counters of workload wid (zero until its first framed
 * connection); -ENOENT if none yet. */
int ebee_loader_fstat(struct ebee_loader *k, uint32_t wid, struct ebee_fstat *out);
/* Requests the programs counted for workload wid, summed over the CPUs;
 * -ENOENT once the workload is removed. */
int ebee_loader_kcount(struct ebee_loader *k, uint32_t wid, struct ebee_kcount *out);
/* Number of processes in workload wid (walks the map). */
unsigned int ebee_loader_proc_count(struct ebee_loader *k, uint32_t wid);

/* Wait up to timeout_ms for a wakeup (the ring filling up), then consume
 * everything queued. Returns records consumed or a negative errno. */
int ebee_loader_poll(struct ebee_loader *k, int timeout_ms);
int ebee_loader_consume(struct ebee_loader *k);
/* An epoll fd that becomes readable when the ring asks for a wakeup. */
int ebee_loader_epoll_fd(struct ebee_loader *k);

/* Sum of a per-CPU counter (enum ebee_counter). */
uint64_t ebee_loader_counter(struct ebee_loader *k, unsigned int idx);
/* Entries in the connection map (walks it). */
uint64_t ebee_loader_conn_count(struct ebee_loader *k);

/* gRPC: the grpc object (metrics/src/grpc.c) shares the traced-
 * process tables and the ring buffer manager of this one. */
/* fd of one of this object's maps by name ("procs", "workloads", "kcounts"), or -ENOENT. */
int ebee_loader_map_fd(struct ebee_loader *k, const char *name);
/* Consume another ring buffer map (records are struct ebee_rec) with this one. */
int ebee_loader_ringbuf_add(struct ebee_loader *k, int map_fd);

#endif
