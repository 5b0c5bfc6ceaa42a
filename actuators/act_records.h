/* SPDX-License-Identifier: MIT */
/*
 * What the actuators found before changing anything (records.c): records in
 * memory and the state file a later instance repairs from. Used by the front
 * only; not part of the public interface.
 */
#ifndef ACT_RECORDS_H
#define ACT_RECORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "act_backend.h"
#include "act_cmdcg.h"

struct act_rec_task {
	pid_t tid;
	unsigned long long start; /* procfs_starttime() when recorded */
	char wl[ACT_NAME_MAX];
	bool has_aff;
	struct act_cpumask aff;
	struct act_origin origin;
};

struct act_rec_wl {
	char name[ACT_NAME_MAX];
	struct act_origin origin; /* of its main pid: where unrecorded tasks go back */
	/* An in-place workload (act_workload_add_inplace()): its own cgroup grp,
	 * never moved into, emptied or removed; only the values found before
	 * the first write are put back. */
	bool inplace;
	char grp[ACT_PATH_MAX];
	bool has_cpus, has_quota;
	struct act_cpumask cpus; /* cpuset.cpus as found */
	bool has_mems;		 /* written only on a machine with NUMA nodes */
	char mems[64];		 /* cpuset.mems as found ("" on v2: the parent's) */
	int64_t quota_us;	 /* as found; -1 = unlimited */
	uint64_t period_us;
};

struct act_rec_freq {
	int cpu;
	unsigned long min_khz, max_khz;
};

/* A process group the daemon launched: stopped by a cleanup after SIGKILL. */
struct act_rec_pgrp {
	pid_t pgid;
	unsigned long long start; /* of the leader: a reused pid is not ours */
	char wl[ACT_NAME_MAX];
};

/*
 * A launched command's own cgroup, MNT/<parent>.cmd/WL (commands.c): what a
 * cleanup kills after SIGKILL, whatever the command did (setsid, ignoring
 * SIGTERM). Recorded before the command is started.
 */
struct act_rec_cmd {
	char wl[ACT_NAME_MAX];
	enum act_cmd_kind kind;
	char mnt[ACT_PATH_MAX]; /* the hierarchy's mount point */
};

/*
 * cgroup v2: controllers (ACT_RES_CPUSET, ACT_RES_QUOTA) this daemon added to
 * grp's cgroup.subtree_control ("" = the root), to be removed again. Only
 * what it added: a controller someone else had enabled is never touched.
 */
struct act_rec_subtree {
	char grp[ACT_PATH_MAX];
	unsigned int res;
};

struct act_records {
	/* the parent cgroup was created by this daemon (or an earlier instance):
	 * the only proof that lets a cleanup remove it */
	bool owns_parent;
	struct act_rec_pgrp *pgrps;
	size_t npgrps;
	struct act_rec_task *tasks;
	size_t ntasks;
	struct act_rec_wl *wls;
	size_t nwls;
	struct act_rec_freq *freqs;
	size_t nfreqs;
	struct act_rec_cmd *cmds;
	size_t ncmds;
	struct act_rec_subtree *subtrees; /* in the order enabled: root first */
	size_t nsubtrees;
};

int act__rec_add_task(struct act_records *r, const struct act_rec_task *t);
int act__rec_add_wl(struct act_records *r, const struct act_rec_wl *w);
int act__rec_add_freq(struct act_records *r, const struct act_rec_freq *f);
struct act_rec_task *act__rec_find_task(struct act_records *r, pid_t tid);
struct act_rec_wl *act__rec_find_wl(struct act_records *r, const char *name);
struct act_rec_freq *act__rec_find_freq(struct act_records *r, int cpu);
/* Drop every record of workload wl (tasks and the wl entry). */
void act__rec_drop_wl(struct act_records *r, const char *wl);
void act__rec_drop_freq(struct act_records *r, int cpu);
void act__rec_free(struct act_records *r);
int act__rec_add_pgrp(struct act_records *r, const struct act_rec_pgrp *g);
/* Add (or replace, same wl) a command cgroup record; drop it again. */
int act__rec_add_cmd(struct act_records *r, const struct act_rec_cmd *c);
struct act_rec_cmd *act__rec_find_cmd(struct act_records *r, const char *wl);
void act__rec_drop_cmd(struct act_records *r, const char *wl);
/* Add res to grp's subtree record (a new one goes last). */
int act__rec_add_subtree(struct act_records *r, const char *grp, unsigned int res);
/*
 * One daemon per parent: an exclusive flock on "<state file>.lock" (created
 * 0600, never through a symlink), holding our pid for the message of the
 * next one. The fd, or -EBUSY with *holder set to the running pid.
 */
int act__state_file_lock(const char *state_path, pid_t *holder);
/* Release it: unlink the lock file, then close (in this order: see act__state_file_lock). */
void act__state_file_unlock(const char *state_path, int fd);
/* Atomically replace the state file (write + rename); creates its directory. */
int act__state_file_write(const char *path, const struct act_records *r);
/* -ENOENT if there is no state file. */
int act__state_file_read(const char *path, struct act_records *r);

#endif /* ACT_RECORDS_H */
