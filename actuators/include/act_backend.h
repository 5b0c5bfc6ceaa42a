/* SPDX-License-Identifier: MIT */
/*
 * Backend interface of the actuators: the ops tables the front drives. The
 * controller does not need this header; backends and unit-test fakes do.
 * Real backends: cgroup v1/v2 (cgroup_backend.c over libcgroup, with
 * cgroup_quota.c and cgroup_files.c below it), cpufreq (cpufreq.c over
 * libcpupower), dry-run (dryrun.c).
 *
 * Backends do one write per call and no policy: validation, overlap refusal,
 * bookkeeping, rollback and restore live in the front. Every call returns 0 or
 * a negative errno and reports failures through act_be_err().
 *
 * Cgroup names ("grp") are relative to the hierarchy root, without leading
 * slash: "parties", "parties/web". Origins are absolute paths as in
 * /proc/PID/cgroup ("/", "/system.slice/x.service").
 */
#ifndef ACT_BACKEND_H
#define ACT_BACKEND_H

#include <stdarg.h>
#include "actuator.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ACT_PATH_MAX 512

/* Where a thread lives, per managed controller (v2: both the same). */
struct act_origin {
	char cpuset[ACT_PATH_MAX];
	char cpu[ACT_PATH_MAX];
};

/* Configuration handed to every backend's open(); outlives the backend. */
struct act_be_conf {
	struct act *act;	/* for act_be_log()/act_be_err() */
	const char *parent;	/* parent cgroup name */
	unsigned int resources; /* ACT_RES_* requested */
	enum act_cgroup_mode cgroup_mode;
	unsigned int freq_step_khz;
	unsigned int quota_period_us;
	bool dry_run;
	void *user; /* act_opts.backend_ctx */
	/* For the dry-run backends: the real (or fake) backends they read
	 * through and never write through. */
	const struct act_cgroup_ops *inner_cgroup;
	const struct act_freq_ops *inner_freq;
};

struct act_cgroup_ops {
	const char *name;
	int (*open)(const struct act_be_conf *conf, void **be);
	void (*close)(void *be);
	/* Fill cgroup_version, cpus/nr_cpus, cpuset(+reason), quota(+reason),
	 * quota_min_us, quota_max_mc. "Unavailable" is not an error. */
	int (*probe)(void *be, struct act_caps *caps);
	bool (*exists)(void *be, const char *grp);
	/* Create grp in every usable controller (its parent exists). When
	 * cpuset is usable, cpus (non-NULL) and mems are in place on return,
	 * before any task can join. -EEXIST if it exists. */
	int (*create)(void *be, const char *grp, const struct act_cpumask *cpus);
	/* Remove an empty grp from every controller; -ENOENT if absent. */
	int (*remove)(void *be, const char *grp);
	int (*set_cpus)(void *be, const char *grp, const struct act_cpumask *cpus);
	int (*get_cpus)(void *be, const char *grp, struct act_cpumask *cpus);
	/* Optional (NULL: mems are never written): cpuset.mems of grp as a
	 * kernel node list; "" on v2 is "the parent's". */
	int (*set_mems)(void *be, const char *grp, const char *mems);
	int (*get_mems)(void *be, const char *grp, char *mems, size_t len);
	/* quota_us -1 = unlimited. */
	int (*set_quota)(void *be, const char *grp, int64_t quota_us, uint64_t period_us);
	int (*get_quota)(void *be, const char *grp, int64_t *quota_us, uint64_t *period_us);
	/* Where tid lives now (its /proc/tid/cgroup entries). */
	int (*where)(void *be, pid_t tid, struct act_origin *o);
	/* Move one thread to dst (v2: its whole process). -ESRCH if gone. */
	int (*attach)(void *be, const struct act_origin *dst, pid_t tid);
	/* Threads in grp (union over controllers): up to *n written to tids,
	 * *n set to the total found (may exceed capacity). */
	int (*tasks)(void *be, const char *grp, pid_t *tids, size_t *n);
	/* Child cgroup names of grp (one component each), up to *n. */
	int (*children)(void *be, const char *grp, char (*names)[ACT_NAME_MAX], size_t *n);
	/* The path of grp in the hierarchy of res, for messages (may be NULL). */
	const char *(*path)(void *be, enum act_resource res, const char *grp, char *buf,
			    size_t len);
	/* cgroup v2 (NULL where controllers need no enabling, as on v1): of the
	 * controllers managed (ACT_RES_CPUSET, ACT_RES_QUOTA), those missing
	 * from grp's cgroup.subtree_control ("" = the root) into *res; and
	 * enabling (+) or disabling (-) the ones in res there, one write each. */
	int (*subtree_missing)(void *be, const char *grp, unsigned int *res);
	int (*subtree_set)(void *be, const char *grp, unsigned int res, bool on);
};

struct act_freq_ops {
	const char *name;
	int (*open)(const struct act_be_conf *conf, void **be);
	void (*close)(void *be);
	/* Fill cpufreq(+reason), freq_min/max_khz (common to cpus), driver and
	 * governor. No cpufreq is not an error. */
	int (*probe)(void *be, const struct act_cpumask *cpus, struct act_caps *caps);
	int (*get)(void *be, int cpu, unsigned long *min_khz, unsigned long *max_khz);
	/* Set both limits of cpu, ordering the two writes so that min <= max
	 * holds after each. Never touches the governor. */
	int (*set)(void *be, int cpu, unsigned long min_khz, unsigned long max_khz);
};

/* The built-in backends. */
extern const struct act_cgroup_ops act_cgroup_v1_ops;
extern const struct act_cgroup_ops act_cgroup_v2_ops;
extern const struct act_cgroup_ops act_cgroup_dryrun_ops;
extern const struct act_freq_ops act_cpufreq_ops;
extern const struct act_freq_ops act_cpufreq_dryrun_ops;

/*
 * CPU quota units. Inside the actuators and their callers a quota is
 * milli-cores (long, 1000 = one CPU's worth of time per period); the cgroup
 * files hold microseconds per period. These two, in the cgroup backend
 * (cgroup_quota.c), are the only conversions between them.
 */
/* quota_mc per period_us in us, rounded to the nearest; -1 (unlimited) for quota_mc <= 0. */
int64_t act_quota_mc_to_us(long quota_mc, uint64_t period_us);
/* quota_us per period_us in milli-cores, rounded to the nearest; 0 when unlimited. */
long act_quota_us_to_mc(int64_t quota_us, uint64_t period_us);

/* The cgroup backend for mode (ACT_CGROUP_AUTO detects what is mounted). */
const struct act_cgroup_ops *act__cgroup_detect(enum act_cgroup_mode mode);

/* Log through the act's callback ("act: " is prepended). */
void act_be_log(struct act *act, enum act_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Record fmt as act_last_error(), log it at WARN, return err (negative). */
int act_be_err(struct act *act, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#ifdef __cplusplus
}
#endif

#endif /* ACT_BACKEND_H */
