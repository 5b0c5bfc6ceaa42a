/* SPDX-License-Identifier: MIT */
/*
 * actuators: the only code that writes cgroup or cpufreq files.
 *
 * The controller sees this header only: one opaque handle (struct act), one
 * handle per managed workload (struct act_workload), a capability report and a
 * handful of verbs. Behind the front sit backends (ops tables, see
 * act_backend.h): cgroup v1 or v2 through libcgroup (cpuset cores and CPU
 * quota), cpufreq through libcpupower, a dry-run backend that only logs, and,
 * in unit tests, fakes.
 *
 * Conventions (libbpf style): calls returning int give 0 or a negative errno;
 * calls returning a pointer give NULL and set errno; options structs start
 * with `size_t sz` (set it to sizeof) so they can grow. Every failure is also
 * described in one line (what failed, on what, what to do) passed to the log
 * callback at ACT_LOG_WARN and kept for act_last_error().
 *
 * Cgroup layout: a parent cgroup owned by the daemon (act_opts.parent,
 * default "parties") with one child per workload, named after the workload:
 *   v1: /sys/fs/cgroup/cpuset/<parent>/<name> and /sys/fs/cgroup/cpu/<parent>/<name>
 *   v2: <unified mount>/<parent>/<name>, leaves only (the parent holds no process);
 *       +cpuset +cpu enabled where missing on the path from the root to <parent>, each
 *       change recorded in the state file first and undone by act_restore()/cleanup
 * Workload names are one path component of [A-Za-z0-9_.-], at most 63 bytes.
 *
 * Invariants the front enforces:
 *   - core sets of different workloads never overlap; a request that would
 *     overlap is refused with -EBUSY and a message naming the other workload;
 *   - a workload's core set is never empty while cpuset is managed;
 *   - nothing is left half-applied: a multi-step change that fails part way is
 *     rolled back before the call returns its error;
 *   - everything found at start (cgroup membership of every moved thread, its
 *     CPU affinity, frequency limits of every touched CPU) is recorded, in
 *     memory and in a state file (act_opts.state_dir), and put back by
 *     act_restore()/act_close(). A later act_open() with the same parent name
 *     finds what a killed daemon left behind (state file, parent cgroup) and
 *     cleans it up before doing anything else.
 *
 * Threads and signals: a struct act is not thread-safe; use it from one
 * thread (the controller's loop). Nothing here is async-signal-safe: on
 * SIGINT/SIGTERM the controller sets a flag in its handler and calls
 * act_close() (or act_restore()) from its main loop; on a fatal error it calls
 * act_close() before exiting. After SIGKILL, the next act_open() (or
 * act_cleanup()) repairs the machine from the state file.
 *
 * Units: frequencies in kHz (as cpufreq sysfs); CPU quota in milli-cores
 * (`long *_mc`, 1000 = one CPU's worth of time), converted to the cgroup
 * files' microseconds per period only in the cgroup backend. The period, the
 * kernel's minimum quota and the raw values act_get() reads back are facts of
 * those files and stay in microseconds (`*_us`).
 */
#ifndef ACT_ACTUATOR_H
#define ACT_ACTUATOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cpulist.h"
#include "topology.h"

#ifdef __cplusplus
extern "C" {
#endif

struct act;
struct act_workload;
struct act_cgroup_ops; /* act_backend.h */
struct act_freq_ops;   /* act_backend.h */

/* Resources an actuator can control; masks of these. */
enum act_resource {
	ACT_RES_CPUSET = 1u << 0,  /* cores per workload (cgroup cpuset) */
	ACT_RES_CPUFREQ = 1u << 1, /* per-core min/max frequency (cpufreq) */
	ACT_RES_QUOTA = 1u << 2,   /* CPU time per workload (cgroup cpu: CFS quota) */
	ACT_RES_ALL = 0x7u,
};

enum act_cgroup_mode {
	ACT_CGROUP_AUTO = 0, /* v1 if a v1 cpuset (or cpu) hierarchy is mounted, else v2 */
	ACT_CGROUP_V1,
	ACT_CGROUP_V2,
};

/* Where launched commands' own cgroups go (act_cmd_prepare()). */
enum act_cmd_cgroup {
	ACT_CMD_CGROUP_AUTO = 0, /* cgroup v2 if mounted, else the v1 freezer */
	ACT_CMD_CGROUP_V2,	 /* cgroup v2 only */
	ACT_CMD_CGROUP_FREEZER,	 /* the v1 freezer only */
};

enum act_log_level { ACT_LOG_WARN, ACT_LOG_INFO, ACT_LOG_DEBUG };
/* msg is one line without trailing newline, prefixed "act: ". */
typedef void (*act_log_fn)(enum act_log_level level, const char *msg, void *ctx);

#define ACT_DEFAULT_PARENT	    "parties"
#define ACT_DEFAULT_STATE_DIR	    "/run/parties"
#define ACT_DEFAULT_FREQ_STEP_KHZ   100000u
#define ACT_DEFAULT_QUOTA_PERIOD_US 100000u
#define ACT_NAME_MAX		    64 /* including NUL */
#define ACT_REASON_MAX		    192

struct act_opts {
	size_t sz; /* sizeof(struct act_opts) */
	/* Parent cgroup name, one path component; NULL = ACT_DEFAULT_PARENT.
	 * Tests use throwaway names ("parties-test-<pid>"). */
	const char *parent;
	/* Log every write that would be done, change nothing. Reads (caps,
	 * act_get) then report the simulated state. */
	bool dry_run;
	/* ACT_RES_* to manage; 0 = every resource that is available. A
	 * requested resource that is unavailable is not an error: the caps say
	 * so (with the reason) and its calls return -EOPNOTSUPP. */
	unsigned int resources;
	enum act_cgroup_mode cgroup_mode;
	/* CPUs the daemon may hand out; NULL = every CPU of the root cpuset
	 * (or every online CPU). Must be a subset of those. */
	const struct act_cpumask *cpus;
	unsigned int freq_step_khz;   /* 0 = ACT_DEFAULT_FREQ_STEP_KHZ */
	unsigned int quota_period_us; /* 0 = ACT_DEFAULT_QUOTA_PERIOD_US */
	/* Directory of the state file "<parent>.state"; NULL =
	 * ACT_DEFAULT_STATE_DIR; "" = no state file (no repair after SIGKILL). */
	const char *state_dir;
	act_log_fn log; /* NULL: warnings to stderr */
	void *log_ctx;
	enum act_log_level log_level; /* highest level passed to log */
	/* Backends; NULL = the real ones (or the dry-run ones when dry_run).
	 * Unit tests plug fakes here; backend_ctx is handed to their open(). */
	const struct act_cgroup_ops *cgroup_ops;
	const struct act_freq_ops *freq_ops;
	void *backend_ctx;
	/* act_open(): keep the live process groups an earlier instance launched
	 * (act_adopt_pgrp()) instead of stopping them; act_stop_unadopted()
	 * stops the rest. act_cleanup() always stops them. */
	bool adopt_pgrps;
	/* Which hierarchy act_cmd_prepare() uses (tests pin one). */
	enum act_cmd_cgroup cmd_cgroup;
	/* Where the topology is read (topology.h): NULL = "/sys"; unit tests
	 * point it at a fake tree. On a machine with more than one NUMA node
	 * with memory, a workload's cpuset.mems are the nodes of its cores. */
	const char *topo_root;
};

/* What this machine lets the actuators control, filled by act_open(). */
struct act_caps {
	unsigned int resources; /* ACT_RES_* that are managed and usable */
	bool dry_run;
	int cgroup_version;	 /* 1 or 2; 0 when no cgroup resource is usable */
	struct act_cpumask cpus; /* CPUs that may be assigned */
	int nr_cpus;		 /* act_cpumask_count(&cpus) */

	bool cpuset;			    /* cores can be assigned */
	char cpuset_reason[ACT_REASON_MAX]; /* why not, when !cpuset */

	bool quota; /* CPU quota can be set */
	char quota_reason[ACT_REASON_MAX];
	unsigned int quota_period_us; /* period every quota is expressed in */
	unsigned int quota_min_us;    /* smallest quota the kernel accepts (1000) */
	long quota_max_mc;	      /* nr_cpus * 1000 */

	bool cpufreq; /* per-core frequency limits can be set */
	char cpufreq_reason[ACT_REASON_MAX];
	/* Hardware limits common to every managed CPU (highest cpuinfo_min,
	 * lowest cpuinfo_max) and the step requests are rounded to. */
	unsigned long freq_min_khz, freq_max_khz, freq_step_khz;
	char cpufreq_driver[32];
	char cpufreq_governor[32]; /* of the first managed CPU; never changed */
};

/* What is actually in force for a workload, read back from the files by
 * act_get(). (What was there before any change is the actuators' own record,
 * kept inside, in act_records.h and the state file.) */
struct act_current {
	struct act_cpumask cpus; /* cpuset.cpus of its cgroup (empty if cpuset unmanaged) */
	int64_t quota_us;	 /* -1 = unlimited (or quota unmanaged) */
	uint64_t period_us;
	long quota_mc;		    /* quota_us / period_us in milli-cores; 0 when unlimited */
	unsigned long freq_min_khz; /* lowest scaling_min over its cpus; 0 = unknown */
	unsigned long freq_max_khz; /* highest scaling_max over its cpus; 0 = unknown */
	bool freq_mixed;	    /* its cpus do not all have the same limits */
	int nr_tasks;		    /* threads in its cgroup */
};

/*
 * Open the actuators: clean up leftovers of an earlier instance with the same
 * parent name (state file and parent cgroup: tasks go back to where they were
 * found, or to the root), probe what the machine supports, create the parent
 * cgroup (v1: cpuset.cpus/mems set first; v2: +cpuset +cpu enabled in the
 * root's subtree_control where missing, recorded, undone by act_restore()).
 * Returns NULL and sets errno on failure (-EINVAL on bad options, -EPERM when
 * not root, ...).
 */
struct act *act_open(const struct act_opts *opts);

/*
 * act_restore(), then free everything. NULL is a no-op. Call it on normal
 * exit, after SIGINT/SIGTERM (from the main loop) and on fatal errors.
 */
void act_close(struct act *act);

/*
 * Put the machine back as found: every managed thread (and any process it
 * forked since) moves back to the cgroups it came from (or to the root if
 * those are gone) with its original CPU affinity, every frequency limit
 * touched is reset, workload cgroups and the parent are removed, the state file
 * is deleted. All workload handles become invalid. Best effort: continues past
 * errors and returns the first one. The act stays open (empty) until
 * act_close().
 */
int act_restore(struct act *act);

/*
 * Repair what a killed instance with opts->parent left (as act_open() does
 * first), without opening. For a "--cleanup" command. 0 if nothing was left,
 * 1 if something was repaired, -EBUSY while a daemon holds the parent,
 * -EEXIST if the parent cgroup exists but no state file proves it ours.
 */
int act_cleanup(const struct act_opts *opts);

/* Grace period between SIGTERM and SIGKILL for leftover process groups. */
#define ACT_PGRP_GRACE_MS 3000

/*
 * Record a process group the caller launched (its leader pgid) in the state
 * file, so that after SIGKILL the next act_open()/act_cleanup() stops it
 * (SIGTERM, ACT_PGRP_GRACE_MS, SIGKILL) instead of leaving it unmanaged.
 */
int act_record_pgrp(struct act *act, const char *wl, pid_t pgid);

/*
 * With opts->adopt_pgrps: the live process group an earlier instance launched
 * for workload wl (recorded again, now ours), or 0 if none. A restarted daemon
 * takes it over rather than starting a second copy of the command.
 */
pid_t act_adopt_pgrp(struct act *act, const char *wl);
/* Stop (SIGTERM, ACT_PGRP_GRACE_MS, SIGKILL) the leftover groups not adopted,
 * and everything in their commands' cgroups. */
void act_stop_unadopted(struct act *act);

/*
 * A cgroup of its own for the command the caller is about to launch for
 * workload wl, so that nothing it starts outlives the daemon, whatever it
 * does (setsid, double fork, ignoring SIGTERM, thousands of processes):
 * cgroup v2 (emptied by cgroup.kill; beside a v1 placement on a hybrid
 * machine), else the v1 freezer (frozen, every task killed, thawed, until
 * empty). Recorded in the state file before it is made, so act_cleanup()
 * after SIGKILL of the daemon empties it. Returns an fd open for writing on
 * its cgroup.procs (O_CLOEXEC): the child writes its own pid there before
 * exec, then everything it forks is inside. Negative errno: -EOPNOTSUPP
 * when no such hierarchy is mounted (or a dry run), with act_last_error().
 */
int act_cmd_prepare(struct act *act, const char *wl);
/*
 * Stop everything in wl's command cgroup (and, on a v2-only machine, in its
 * workload group, where placed tasks are): SIGTERM, up to grace_ms for it
 * to empty, then killed until empty (bounded); the cgroup removed and its
 * record dropped. 0 (also when wl has none), or -EBUSY when processes are
 * still there at the deadline (the record is kept for act_cleanup()).
 * act_restore() does this for every command still recorded.
 */
int act_cmd_stop(struct act *act, const char *wl, int grace_ms);

/* The topology read at act_open() (no online cpu when it could not be
 * read; the reason was logged). Owned by act. */
const struct act_topo *act_topology(const struct act *act);
/* The capability report (owned by act, valid until act_close()). */
const struct act_caps *act_caps(const struct act *act);

/* The message of the last failed call ("" if none). Owned by act. */
const char *act_last_error(const struct act *act);

struct act_workload_opts {
	size_t sz; /* sizeof(struct act_workload_opts) */
	/* Initial cores; required (non-empty, disjoint from every other
	 * workload, within caps->cpus) when cpuset is managed, ignored
	 * otherwise. */
	const struct act_cpumask *cpus;
	/* Initial CPU quota in milli-cores (e.g. 500 for half a CPU); <= 0 =
	 * unlimited. */
	long quota_mc;
	/* Initial frequency cap for the workload's cores, kHz; 0 = leave. */
	unsigned long freq_max_khz;
};

/*
 * Manage a workload: create its cgroup(s) with the initial cores (before any
 * task joins) and quota, then move pid, all its threads and all its existing
 * descendant processes (found by walking /proc) into it. Processes and threads
 * created later inherit the cgroup. The original cgroups and affinity of every
 * moved thread are recorded for restore. On any failure nothing stays changed.
 * Returns the handle, or NULL with errno: -EINVAL (bad name/opts), -EEXIST
 * (name in use), -EBUSY (cores overlap another workload), -ESRCH (no such
 * pid), -ERANGE (cores outside caps->cpus), or the backend's error.
 */
struct act_workload *act_workload_add(struct act *act, const char *name, pid_t pid,
				      const struct act_workload_opts *opts);

/*
 * Manage a workload IN PLACE: cgroup (a path relative to the hierarchy root,
 * e.g. "system.slice/web.service"; a leading '/' is ignored) is the workload's
 * own, existing cgroup. Its cpuset.cpus and CPU quota/period (whichever
 * resources are managed) are read and recorded (memory and state file) before
 * the first write, then set to opts like any workload's; no process is moved
 * and the cgroup is never removed. Release, act_restore(), act_close() and a
 * cleanup after SIGKILL write the recorded values back (cpuset.mems too: it
 * is recorded and written on a machine with more than one memory node, to the
 * nodes of the cores, see act_opts.topo_root). Refused: the root, parties' own parent or
 * anything below it, a cgroup another workload manages (-EINVAL/-EEXIST),
 * a missing cgroup (-ENOENT). act_workload_pid() is the first task found in
 * it (0 if empty); act_workload_attach() is a no-op for such a workload.
 */
struct act_workload *act_workload_add_inplace(struct act *act, const char *name, const char *cgroup,
					      const struct act_workload_opts *opts);

/*
 * Move another process (with its threads and descendants) into an existing
 * workload, e.g. a worker found later. Recorded for restore like the first.
 */
int act_workload_attach(struct act *act, struct act_workload *wl, pid_t pid);

/*
 * Stop managing a workload: its threads go back to where they were found, the
 * frequency limits of its cores are restored, its cgroup is removed. Its cores
 * become free. wl is invalid afterwards (also on error).
 */
int act_workload_remove(struct act *act, struct act_workload *wl);

/* Look up by name; NULL (errno ENOENT) if not managed. */
struct act_workload *act_workload_find(struct act *act, const char *name);
const char *act_workload_name(const struct act_workload *wl);
pid_t act_workload_pid(const struct act_workload *wl);
/* The cores the front believes assigned (no file read; see act_get()). */
const struct act_cpumask *act_workload_cpus(const struct act_workload *wl);

/*
 * Give wl exactly the cores in cpus. Refused with -EBUSY if cpus overlaps
 * another workload's cores, -ERANGE if outside caps->cpus, -EINVAL if empty.
 * If the workload has a frequency cap (act_workload_set_freq()), cores it
 * gains get that cap. Rolled back on failure.
 */
int act_set_cpus(struct act *act, struct act_workload *wl, const struct act_cpumask *cpus);

/* One element of a batch of core assignments. */
struct act_assign {
	struct act_workload *wl;
	struct act_cpumask cpus;
};

/*
 * Apply several core assignments as one change, e.g. to swap the cores of two
 * workloads, which no sequence of single disjoint moves can do. Only the final
 * state must be disjoint (workloads not listed keep their cores). Applied as
 * grow-then-shrink so no workload is ever left without cores; rolled back as a
 * whole on failure.
 */
int act_assign_cpus(struct act *act, const struct act_assign *assign, size_t n);

/*
 * Limit wl to quota_mc milli-cores, i.e. quota_mc / 1000 CPUs worth of time
 * per period (cpu.cfs_quota_us / cpu.cfs_period_us on v1, cpu.max on v2);
 * quota_mc <= 0 means unlimited. quota_us = round(quota_mc * period / 1000);
 * -ERANGE if that is below caps->quota_min_us or quota_mc is above
 * caps->quota_max_mc.
 */
int act_workload_set_quota(struct act *act, struct act_workload *wl, long quota_mc);

/*
 * Set the frequency limits (scaling_min_freq, scaling_max_freq) of every CPU in
 * cpus; 0 keeps the current value of that limit. Values are rounded to the
 * nearest multiple of caps->freq_step_khz, except that the hardware limits
 * themselves are always accepted and rounding never leaves them. Returns
 * -ERANGE outside [freq_min_khz, freq_max_khz], -EINVAL if min > max,
 * -EOPNOTSUPP without cpufreq. Never touches the governor. Rolled back on
 * failure.
 */
int act_set_freq(struct act *act, const struct act_cpumask *cpus, unsigned long min_khz,
		 unsigned long max_khz);

/*
 * Give every core of wl the maximum frequency max_khz and remember it as the
 * workload's cap, so cores it gains later get it too; 0 clears the cap and
 * resets its cores to the hardware maximum. Rounding and errors as
 * act_set_freq().
 */
int act_workload_set_freq(struct act *act, struct act_workload *wl, unsigned long max_khz);

/* Read back what is in force for wl (from the cgroup and cpufreq files). */
int act_get(struct act *act, const struct act_workload *wl, struct act_current *cur);

/* Read the current limits of one CPU. -EOPNOTSUPP without cpufreq. */
int act_get_freq(struct act *act, int cpu, unsigned long *min_khz, unsigned long *max_khz);

/* Round a frequency as act_set_freq() would; -ERANGE/-EOPNOTSUPP as it. */
int act_freq_round(const struct act *act, unsigned long khz, unsigned long *out);

/* "cpuset", "cpufreq", "quota" or NULL. */
const char *act_resource_str(enum act_resource res);

#ifdef __cplusplus
}
#endif

#endif /* ACT_ACTUATOR_H */
