/* SPDX-License-Identifier: MIT */
/*
 * The front of the actuators: what its files share. The front validates,
 * refuses overlaps, records what it finds before it writes, rolls back failed
 * multi-step changes, restores, and cleans up what a killed instance left.
 * Backends (act_backend.h) do single writes; the front reaches them only
 * through their ops tables.
 *
 * Order of every change: record what is there (memory, then state file), then
 * write. So at any point a restore, in this process or a later one, knows how
 * to put things back.
 *
 * Calls go one way, down this list (a file calls only files below it):
 *
 *   lifecycle.c         act_open/act_close/act_cleanup/act_restore
 *   leftovers.c         what an earlier instance left: its records, cgroups, process groups
 *   workload_inplace.c  act_workload_add_inplace
 *   workload.c          act_workload_add/remove/attach, the checks of a new workload, act_get
 *   release.c           putting one workload back (threads, group or in-place values, freqs)
 *   parent.c            the parent cgroup, created once, its ownership recorded first
 *   commands.c          a cgroup of its own per launched command (cmd_cgroup.c below it)
 *   assign.c            core assignments: the proposal checked, then applied
 *   quota.c             CPU quota (milli-cores) of a workload
 *   frequency.c         frequency limits, with rollback and restore
 *   threads.c           moving threads into a workload's group and back out
 *   subtree.c           v2: controllers enabled on the path to a group, and put back
 *   wl_list.c           the list of workload handles, workload names
 *   persist.c           the records written to the state file before each write
 *   records.c           the records themselves and the state file's format (act_records.h)
 *   log.c               messages: the log callback and act_last_error()
 *
 * Not part of the public interface.
 */
#ifndef ACT_FRONT_H
#define ACT_FRONT_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "act_backend.h"
#include "act_records.h"

/* act_last_error()'s buffer: the longest message names two cgroup paths. */
#define ACT_ERR_MAX 512
/* A core list quoted in a message; longer lists end in "...". */
#define ACT_CPUS_TEXT 256

struct act_workload {
	struct act *act;
	char name[ACT_NAME_MAX];
	char grp[ACT_PATH_MAX]; /* "<parent>/<name>", or its own cgroup when inplace */
	pid_t pid;
	struct act_cpumask cpus;
	long quota_mc; /* -1 = unlimited */
	unsigned long freq_cap;
	struct act_origin origin;
	bool inplace; /* grp is the workload's own cgroup: values written, nothing moved */
	struct act_workload *next;
};

struct act {
	char parent[ACT_NAME_MAX];
	char state_path[ACT_PATH_MAX];
	int lock_fd; /* flock: one daemon per parent; -1 when not held */
	bool adopt_pgrps;
	enum act_cmd_cgroup cmd_cgroup;
	struct act_rec_pgrp *leftover; /* live groups of an earlier instance, to adopt */
	size_t nleftover;
	struct act_rec_cmd *leftover_cmds; /* their command cgroups */
	size_t nleftover_cmds;
	bool dry_run;
	bool real_cgroup; /* the real cgroup backend: threads' affinity is ours to restore */
	bool parent_created;
	act_log_fn log;
	void *log_ctx;
	enum act_log_level log_level;
	struct act_be_conf conf;
	const struct act_cgroup_ops *cg;
	void *cgbe;
	const struct act_freq_ops *fq;
	void *fqbe;
	struct act_caps caps;
	struct act_topo topo; /* read at act_open() */
	bool numa;	      /* more than one node has memory: cpuset.mems follow the cores */
	struct act_records rec;
	struct act_workload *wls;
	char err[ACT_ERR_MAX];
};

#define ERR(act, err, ...) act_be_err((act), (err), __VA_ARGS__)

static inline void *err_ptr(int err)
{
	errno = -err;
	return NULL;
}

static inline bool managed_cpuset(const struct act *act)
{
	return act->caps.resources & ACT_RES_CPUSET;
}

static inline bool managed_quota(const struct act *act)
{
	return act->caps.resources & ACT_RES_QUOTA;
}

static inline bool managed_cgroup(const struct act *act)
{
	return managed_cpuset(act) || managed_quota(act);
}

static inline bool managed_freq(const struct act *act)
{
	return act->caps.resources & ACT_RES_CPUFREQ;
}

/* ---- log.c */

/* m as a core list for a message, cut with "..." if it does not fit. */
void act__fmt_cpus(const struct act_cpumask *m, char *buf, size_t len);

/* ---- persist.c */

/* Write the records to the state file (no-op in dry-run or without one). */
int act__persist(struct act *act);
void act__drop_state_file(struct act *act);

/* ---- parent.c */

/* Create the parent cgroup, its ownership recorded first; once. */
int act__ensure_parent(struct act *act);

/* ---- leftovers.c */

/* Put back what an earlier instance with this parent left; *found if anything. */
int act__cleanup_leftovers(struct act *act, bool *found);

/* ---- commands.c */

/* Which hierarchy commands' cgroups go in here (act_cmdcg.h), *mnt its mount. */
enum act_cmd_kind act__cmd_kind(struct act *act, char *mnt, size_t len);
/* act_cmd_stop() every recorded command; the first error. */
int act__cmd_stop_all(struct act *act, int grace_ms);
/* The command cgroups in act->rec left by an earlier instance: those of
 * process groups kept for adoption are kept too, the rest stopped. */
int act__cmd_leftovers(struct act *act);
/* wl's process group was adopted: its command cgroup is ours again. */
int act__cmd_adopt(struct act *act, const char *wl);
void act__cmd_stop_unadopted(struct act *act);

/* ---- workload.c */

/* opts is NULL or has its sz set far enough to hold every field read. */
int act__check_wl_opts(struct act *act, const struct act_workload_opts *opts);
/* The initial cores and quota of a new workload: valid, free, and the quota in us. */
int act__check_initial(struct act *act, const char *name, const struct act_workload_opts *opts,
		       int64_t *quota_us);

/* ---- release.c */

/* Threads back, frequencies back, group removed (in place: values back), records dropped. */
int act__wl_release(struct act *act, struct act_workload *wl);
/* Undo a half-made workload: release it, keeping the message of what failed. */
void act__wl_undo(struct act *act, struct act_workload *wl);
/* Write an in-place workload's cgroup values back as recorded. */
int act__restore_inplace(struct act *act, const struct act_rec_wl *r);

/* ---- wl_list.c */

/* One path component of [A-Za-z0-9_.-], shorter than ACT_NAME_MAX, not . or .. */
bool act__valid_name(const char *s);
/* A new handle (not yet listed) for name in group grp. */
struct act_workload *act__wl_new(struct act *act, const char *name, const char *grp, pid_t pid);
bool act__wl_listed(const struct act *act, const struct act_workload *wl);
void act__wl_unlink(struct act *act, struct act_workload *wl);

/* ---- assign.c */

/* grp's cpuset.mems: the nodes of cpus (topology.h, act_topo_mems_for()); a
 * no-op unless act->numa. */
int act__set_mems(struct act *act, const char *grp, const struct act_cpumask *cpus);
/* May cpus go to a new workload called name? -EINVAL/-ERANGE/-EBUSY with a message. */
int act__check_new_cpus(struct act *act, const char *name, const struct act_cpumask *cpus);

/* ---- quota.c */

/* quota_mc (<= 0: unlimited) as the cgroup quota in us, checked against the caps. */
int act__quota_check(struct act *act, const char *name, long quota_mc, int64_t *quota_us);

/* ---- frequency.c */

/*
 * Set the limits of every cpu in cpus (0 = keep); with clamp_min a kept
 * minimum above the new maximum comes down to it. Rolls back on failure.
 */
int act__freq_apply(struct act *act, const struct act_cpumask *cpus, unsigned long min,
		    unsigned long max, bool clamp_min);
/* Put back the recorded limits of the cpus in only (NULL: all), dropping the records. */
int act__freq_restore(struct act *act, const struct act_cpumask *only);

/* ---- threads.c */

extern const struct act_origin act__root_origin;

/* Record, then move every thread of pid's process tree into wl's group. */
int act__move_tree(struct act *act, struct act_workload *wl, pid_t pid);
/* Empty grp: recorded threads to their origin, the rest to fallback. */
int act__empty_group(struct act *act, const char *grp, const struct act_origin *fallback);

/* ---- subtree.c */

/*
 * v2: enable the managed controllers missing from cgroup.subtree_control on
 * the path from the root to grp's parent, each recorded before its write.
 */
int act__subtree_enable(struct act *act, const char *grp);
/* Take back every recorded addition, deepest first; the first error (kept then). */
int act__subtree_restore(struct act *act);

#endif /* ACT_FRONT_H */
