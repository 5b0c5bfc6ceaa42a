/* SPDX-License-Identifier: MIT */
/*
 * The parties configuration: one INI file (inih), parsed into one struct that
 * the rest of the daemon receives as const.
 *
 * Three steps, each in one place:
 *   parse     config.c: every key from the table of its section (name,
 *             type, range, default, where it goes; its line is recorded),
 *             strict: an unknown section or key, a malformed number, a
 *             target <= 0 is an error "file:line: what is wrong";
 *   resolve   config.c: every default that depends on other keys (max_cores
 *             0 = every managed cpu, the quota bounds, the ebee window, the
 *             interval of flavour = code, the managed cpus) is resolved once,
 *             then the whole file is checked (min > max, overlapping or
 *             unmanaged cpus, quotas over the total);
 *   live      config_live.c: the file against the running machine (the
 *             processes, files, users and cpus it names), changing nothing.
 * cfg_load_*() does the first two and never looks at the machine beyond the
 * list of online cpus (the default of [resources] cpus); the daemon and
 * --check-config then call cfg_check_live(). Everything is reported before
 * anything on the machine is changed. Every key and its default is
 * documented in configs/example.ini.
 */
#ifndef PARTIES_CONFIG_H
#define PARTIES_CONFIG_H

#include <limits.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cfg_key.h"
#include "cpulist.h"
#include "ebee.h"
#include "policy.h"
#include "sim_config.h"

#define CFG_MAX_WL     POL_MAX_WORKLOADS
#define CFG_MAX_PARAMS 32
#define CFG_NAME_LEN   64
#define CFG_PATH_LEN   256
#define CFG_CMD_LEN    1024

/* The keys of [controller] and [resources] that are no resource's, in their
 * table's order (config.c): index of struct cfg's line_of[]. A resource's
 * keys are its own file's (controller/res/NAME.c, struct cfg_res). */
enum cfg_key_id {
	CFG_INTERVAL_MS = 0, /* [controller] */
	CFG_POLICY,
	CFG_SEED,
	CFG_LOG,
	CFG_CGROUP_PARENT,
	CFG_STATE_DIR,
	CFG_EBEE,
	CFG_EBEE_WINDOW_MS,
	CFG_AVG_WINDOW_MS,
	CFG_STALE_INTERVALS,
	CFG_CPUS, /* [resources] */
	CFG_NKEYS,
};

/* The keys of [workload NAME] (the sim_* ones are sim_config.h's): index of
 * struct cfg_workload's line[]. The first five are how it is found, in the
 * order of enum cfg_find. */
enum cfg_wl_key_id {
	CFG_WL_PID = 0,
	CFG_WL_PIDFILE,
	CFG_WL_COMMAND,
	CFG_WL_CGROUP,
	CFG_WL_UNIT,
	CFG_WL_TARGET_MS,
	CFG_WL_CPUS,
	CFG_WL_SOURCE,
	CFG_WL_FEED,
	CFG_WL_EBEE_MODE,
	CFG_WL_EBEE_LATENCY,
	CFG_WL_TRUST_UNFRAMED,
	CFG_WL_USER,
	CFG_WL_GROUP,
	CFG_WL_NKEYS,
};

enum cfg_find {
	CFG_FIND_NONE = 0,
	CFG_FIND_PID,
	CFG_FIND_PIDFILE,
	CFG_FIND_COMMAND,
	CFG_FIND_CGROUP, /* cgroup = PATH: managed in place (inplace.h) */
	CFG_FIND_UNIT,	 /* unit = NAME.service: its cgroup, managed in place */
};
enum cfg_src { CFG_SRC_EBEE = 0, CFG_SRC_CLIENT };
/* Which server-side latency feeds the policy when source = ebee. */
enum cfg_lat { CFG_LAT_SERVICE = 0, CFG_LAT_SOJOURN };

/*
 * One resource's settings in one section ([resources], or one [workload
 * NAME]): the values of its keys in the struct its file declares (conf; the
 * file's _Static_assert keeps it within CFG_RES_CONF bytes), and where each
 * key was given (line_of[k] for its table's k-th key; 0 = not given). Only
 * the resource's file reads conf (res/res.h: res_conf()), so config.h names
 * no resource.
 */
#define CFG_RES_KEYS 16
#define CFG_RES_CONF 64
struct cfg_res {
	int line_of[CFG_RES_KEYS];
	_Alignas(max_align_t) unsigned char conf[CFG_RES_CONF];
};

struct cfg_param {
	char key[CFG_NAME_LEN];
	char val[CFG_PATH_LEN];
	int line;
};

/*
 * Values in the program's units (latency ns, quota milli-cores, frequency
 * kHz; the file gives ms, cores and MHz). After cfg_load_*() every default
 * that can be known without the running machine is resolved: nothing
 * downstream reads a 0 as "the default" except where a comment says so.
 */
struct cfg_workload {
	char name[CFG_NAME_LEN];
	int line;		   /* its [workload NAME] header */
	int line_of[CFG_WL_NKEYS]; /* where each key was given; 0 = not given */
	enum cfg_find find;
	pid_t pid; /* pid = (a pidfile is read by cfg_workload_pid()) */
	char pidfile[CFG_PATH_LEN];
	char command[CFG_CMD_LEN]; /* run with /bin/sh -c; the daemon owns it */
	char cgroup[CFG_PATH_LEN]; /* cgroup = PATH or unit = NAME.service, as given */
	double target_ns;	   /* QoS target for p99 */
	struct act_cpumask cpus;   /* explicit initial cpus (the cores resource's) */
	bool has_cpus;
	struct cfg_res res[POL_RES_COUNT]; /* each resource's keys of [workload NAME] */
	enum cfg_src source;		   /* what drives the policy */
	char feed[CFG_PATH_LEN];	   /* client feed ("t_ms p99_us rps" lines), or "" */
	int feed_line; /* of the key that named it: feed or source = client:PATH */
	enum ebee_mode ebee_mode;
	enum cfg_lat ebee_latency; /* default sojourn (docs/design.md 5.3) */
	/* act on figures ebee marks untrusted (its framing cannot count them
	 * exactly: ebee_stats.untrusted); default no: such an interval is stale */
	bool trust_unframed;
	/* command workloads: run as this user/group instead of root ("" = root) */
	char user[CFG_NAME_LEN], group[CFG_NAME_LEN];
};

struct cfg {
	char file[CFG_PATH_LEN]; /* for messages */
	int line_of[CFG_NKEYS];	 /* where each key was given; 0 = not given */

	/* [controller] */
	unsigned int interval_ms;
	char policy[POL_NAME_LEN];
	uint64_t seed;
	char log[CFG_PATH_LEN];
	char cgroup_parent[CFG_NAME_LEN];
	char state_dir[CFG_PATH_LEN];
	enum cfg_tristate ebee;	     /* open ebee: auto = when a workload needs it */
	unsigned int ebee_window_ms; /* ebee's window bound by age */
	unsigned int avg_window_ms;  /* the "long slack" average */
	unsigned int stale_intervals;

	/* [resources] */
	struct act_cpumask cpus;	   /* managed cpus */
	struct cfg_res res[POL_RES_COUNT]; /* each resource's keys (res/NAME.c) */

	/* [policy NAME] for the chosen policy */
	int nparams;
	struct cfg_param params[CFG_MAX_PARAMS];
	/* what resolving the file decided that its keys do not say (said at start) */
	char note[256];

	int nwl;
	struct cfg_workload wl[CFG_MAX_WL];

	/* [simulation] and the workloads' sim_* keys (sim_config.h) */
	struct cfg_sim sim;
};

/* Defaults only (what an empty file gives, minus the required workloads). */
void cfg_defaults(struct cfg *c);

/*
 * Every key a file may hold, section by section: fn(ctx, section, key) with
 * section "controller", "resources", "workload", "simulation" or "policy
 * NAME" (every policy's settings that it lists). configs/example.ini
 * documents every one (tests/unit/test_config_doc.c).
 */
void cfg_keys_each(void (*fn)(void *ctx, const char *section, const char *key), void *ctx);

/*
 * Parse, resolve and check the file as a whole (nothing live). 0, or a
 * negative errno with err holding "file:line: what is wrong" (line omitted
 * when the problem has none).
 */
int cfg_load_file(struct cfg *c, const char *path, char *err, size_t err_len);
/* The same from a string; name stands for the file name in messages. */
int cfg_load_string(struct cfg *c, const char *name, const char *text, char *err, size_t err_len);

/* The line of the key that says how w is found (pid, pidfile, ...); 0 if none. */
static inline int cfg_find_line(const struct cfg_workload *w)
{
	return w->find != CFG_FIND_NONE ? w->line_of[CFG_WL_PID + (int)w->find - 1] : 0;
}

/* config_live.c: the pid of a pid/pidfile workload now (pidfile re-read),
 * -ESRCH when it is not running. */
int cfg_workload_pid(const struct cfg_workload *w, pid_t *pid);

/*
 * config_live.c: check a parsed configuration against the running machine
 * and this process, changing nothing: what the workloads name exists (the
 * process of pid or pidfile, the program of command, the feed file), cpus
 * are online, workload pids may be managed (not init, not this daemon or an
 * ancestor, not a kernel thread, not another workload's), ebee modes this
 * build supports, users and groups that exist, and the files the daemon
 * will write (log, state_dir) are regular files in directories only root
 * may write.
 * log_override is --log (NULL: the config's log). Both start-up and
 * --check-config call it, after cfg_load_file(). 0, or -EINVAL with err
 * holding "file:line: what is wrong".
 */
int cfg_check_live(const struct cfg *c, const char *log_override, char *err, size_t err_len);

/*
 * The decision log the daemon will append to (log_override, else c->log; 0
 * when neither names one): absent, or a regular file of ours (not a
 * symlink), in a directory only root may write. Start-up (through
 * cfg_check_live()) and every SIGHUP reopen run this one check. 0, or
 * -EINVAL with err holding "file:line: what is wrong".
 */
int cfg_check_log(const struct cfg *c, const char *log_override, char *err, size_t err_len);

/* Is a directory safe to create root's files in: owned by root (or us), and
 * not writable by a group other than root's or by others? 0 or -EPERM with
 * why filled. */
int cfg_dir_safe(const char *dir, char *why, size_t len);

#endif /* PARTIES_CONFIG_H */
