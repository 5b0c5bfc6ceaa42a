/* SPDX-License-Identifier: MIT */
/*
 * Workloads named where they live (cgroup = PATH, unit = NAME.service): where
 * their cgroup is, whether parties may manage it in place, and which
 * processes are in it. The actuators do the writes (act_workload_add_inplace());
 * this file only looks. Every function takes the cgroup mount points, so unit
 * tests run it against a fake tree in a temp dir.
 */
#ifndef PARTIES_INPLACE_H
#define PARTIES_INPLACE_H

#include <stddef.h>
#include <sys/types.h>

#include "config.h"

#define INPLACE_PATH_MAX 512

/* Mount points; "" when not mounted. v1 is used when v1_cpuset is set (as the
 * actuators decide), else v2. */
struct inplace_roots {
	char v1_cpuset[INPLACE_PATH_MAX];
	char v1_cpu[INPLACE_PATH_MAX];
	char v2[INPLACE_PATH_MAX];
};

/* Fill roots from /proc/self/mounts. 0 or -errno. */
int inplace_roots_find(struct inplace_roots *r);

/*
 * The cgroup of workload w (find = CFG_FIND_CGROUP or CFG_FIND_UNIT) relative
 * to the hierarchy root, without leading '/', into grp. unit = X.service is
 * system.slice/X.service (v2: <v2>/system.slice/X.service; v1: the same
 * below the cpuset hierarchy). -ENOENT with a message when it does not exist.
 */
int inplace_resolve(const struct inplace_roots *r, const struct cfg_workload *w, char *grp,
		    size_t len, char *msg, size_t mlen);

/*
 * May grp be managed in place? Refused: the root, parties' own parent
 * (parent) or anything below it, a cgroup holding pid self (the daemon), a
 * cgroup without the cpuset/cpu controllers' files. 0 or -errno with msg.
 */
int inplace_check(const struct inplace_roots *r, const char *grp, const char *parent, pid_t self,
		  char *msg, size_t mlen);

/* Processes in grp (cgroup.procs): up to cap into pids; returns how many were
 * found (may exceed cap), or -errno. */
int inplace_pids(const struct inplace_roots *r, const char *grp, pid_t *pids, size_t cap);

/* The cgroup.procs file of grp (what ebee re-reads). 0 or -ENAMETOOLONG. */
int inplace_procs_path(const struct inplace_roots *r, const char *grp, char *buf, size_t len);

#endif /* PARTIES_INPLACE_H */
