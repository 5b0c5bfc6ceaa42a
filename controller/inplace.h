/* SPDX-License-Identifier: MIT */
/*
 * Workloads named where they live (cgroup = PATH, unit = NAME.service): where
 * their cgroup is, whether parties may manage it in place, and which
 * processes are in it. The actuators do the writes (act_workload_add_inplace());
 * this file only looks. Every function takes the mounts (common/cgroupfs.h,
 * cgfs_find()), so unit tests run it against a fake tree in a temp dir.
 */
#ifndef PARTIES_INPLACE_H
#define PARTIES_INPLACE_H

#include <stddef.h>
#include <sys/types.h>

#include "cgroupfs.h"
#include "config.h"

#define INPLACE_PATH_MAX CGFS_PATH_MAX

/*
 * The cgroup of workload w (find = CFG_FIND_CGROUP or CFG_FIND_UNIT) relative
 * to the hierarchy root, without leading '/', into grp. unit = X.service is
 * system.slice/X.service (v2: <v2>/system.slice/X.service; v1: the same
 * below the cpuset hierarchy). -ENOENT with a message when it does not exist.
 */
int inplace_resolve(const struct cgfs *fs, const struct cfg_workload *w, char *grp, size_t len,
		    char *msg, size_t mlen);

/*
 * May grp be managed in place? Refused: the root, parties' own parent
 * (parent) or anything below it, a cgroup holding pid self (the daemon) in it
 * or below it, a cgroup without the cpuset/cpu controllers' files. 0 or
 * -errno with msg.
 */
int inplace_may_manage(const struct cgfs *fs, const char *grp, const char *parent, pid_t self,
		       char *msg, size_t mlen);

/* Processes in grp and below it (cgfs_procs()): up to cap into pids; returns
 * how many were found (may exceed cap), or -errno. */
int inplace_pids(const struct cgfs *fs, const char *grp, pid_t *pids, size_t cap);

/* The directory of grp (what ebee re-reads with cgfs_procs()). 0 or -ENAMETOOLONG. */
int inplace_dir(const struct cgfs *fs, const char *grp, char *buf, size_t len);

#endif /* PARTIES_INPLACE_H */
