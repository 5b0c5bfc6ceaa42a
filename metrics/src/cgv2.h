/* SPDX-License-Identifier: MIT */
/*
 * The cgroup v2 hierarchy as libebee needs it (internal): its root (where
 * it is mounted: cgfs_v2_mount(), common/cgroupfs.h), which cgroup a process or a socket is in, and
 * the cgroups the framing program attaches to (its scope).
 *
 * Why a scope. A cgroup_skb program runs for the packets of every socket
 * whose cgroup is the one it is attached to or below it. On the root it runs
 * for every packet of the host: every neighbour pays its call and a storage
 * lookup for nothing, and on a host whose clients are local so does each
 * client's every packet. So framing attaches to the cgroups the traced
 * workloads' sockets are in: a socket belongs to the cgroup of the process
 * that made it (an accepted one to its listener's), which is the workload's
 * own unless its listeners were made elsewhere (before the process was
 * moved; by systemd, for socket activation) or its workers sit in cgroups of
 * their own. Those are read at the start (the processes' cgroups, and their
 * listeners' from the kernel's socket diagnostics); what happens later
 * (a listener made after a move) the kernel side reports when the server
 * reads bytes the hook never saw (frame_missed, bpf/ebee.bpf.c), and the
 * scope grows to that cgroup. Wherever anything is unknown, the root.
 */
#ifndef EBEE_CGV2_H
#define EBEE_CGV2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Whether cgroup path `anc` is `path` or one of its ancestors (paths as
 * /proc/PID/cgroup gives them: "/" is the root, no trailing slash). */
bool ebee_cg2_covers(const char *anc, const char *path);

/* Reduce a set of cgroup paths in place to the ones no other covers (the
 * root, if present, alone), duplicates removed: attached at both a cgroup and
 * its ancestor, a program runs twice for each packet below. Returns the new
 * count; the order of what stays is kept. */
size_t ebee_cg2_reduce(char **paths, size_t n);

struct ebee_cg2;

/* The hierarchy's root (cgfs_v2_mount()), opened. -ENOENT when no cgroup v2
 * is mounted. */
int ebee_cg2_open(struct ebee_cg2 **out);
void ebee_cg2_close(struct ebee_cg2 *cg);

/* A directory fd of cgroup path (O_CLOEXEC), or a negative errno. */
int ebee_cg2_open_path(const struct ebee_cg2 *cg, const char *path);

/* Process pid's cgroup (the "0::" line of /proc/PID/cgroup), or a negative
 * errno. */
int ebee_cg2_of_pid(pid_t pid, char *buf, size_t len);
/* The path of the cgroup with id `id` (its kernfs node id, what
 * bpf_get_current_cgroup_id() and sock diagnostics give): -ESTALE or
 * -ENOENT when it is gone. */
int ebee_cg2_of_id(const struct ebee_cg2 *cg, uint64_t id, char *buf, size_t len);

/* The distinct cgroup ids of the TCP sockets process pid listens on (its
 * /proc/PID/fd, matched by inode with the socket diagnostics of its network
 * namespace), in a malloc'd array; 0 or a negative errno. */
int ebee_cg2_listeners(pid_t pid, uint64_t **ids, size_t *n);

/* ---- the framing scope: the cgroups of each traced workload's sockets */

/* The cgroups workload wid's sockets are known to be in: pid's own and its
 * listeners', and with children those of its descendants now alive. Any
 * that cannot be read makes it the root, as pid 1 with children does. */
int ebee_cg2_wl_add(struct ebee_cg2 *cg, uint32_t wid, pid_t pid, bool children);
/* Forget workload wid (none, or cg NULL: nothing to do). */
void ebee_cg2_wl_del(struct ebee_cg2 *cg, uint32_t wid);
/* A socket of workload wid in cgroup id that the framing hook did not see.
 * 1 when that cgroup is new to the scope (the caller re-attaches: see
 * ebee_cg2_scope), 0 when it is covered already (the report was one of the
 * cases frame_missed cannot tell apart), negative errno when it cannot be
 * resolved (then the workload's scope becomes the root, and 1). path gets the
 * cgroup's path either way, "?" if unknown. */
int ebee_cg2_wl_missed(struct ebee_cg2 *cg, uint32_t wid, uint64_t id, char *path, size_t path_len);

/* The scope now: the reduced set of every workload's cgroups, as opened
 * directory fds (the caller closes them and frees *fds) and a printable list;
 * *root when it is the root (no fd then: the loader attaches to the root), as
 * it is with no workload. Fds only when *changed: when it differs from the
 * last call's. */
int ebee_cg2_scope(struct ebee_cg2 *cg, int **fds, size_t *n, bool *root, bool *changed, char *desc,
		   size_t desc_len);
/* The scope just handed out could not be attached: the root from now on. */
void ebee_cg2_scope_failed(struct ebee_cg2 *cg);

#endif
