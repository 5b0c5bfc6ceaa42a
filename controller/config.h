/* SPDX-License-Identifier: MIT */
/*
 * The parties configuration: one INI file (inih), parsed into one struct that
 * the rest of the daemon receives as const.
 *
 * Every key and its default is documented in configs/example.ini. Parsing is
 * strict: an unknown section or key, a malformed number, a target <= 0,
 * min > max, overlapping or unmanaged cpus, a workload that cannot be found
 * or a feed file that does not exist is an error "file:line: what is wrong",
 * reported before anything on the machine is changed.
 */
#ifndef PARTIES_CONFIG_H
#define PARTIES_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cpulist.h"
#include "ebee.h"
#include "policy.h"
#include "sim_config.h"

#define CFG_MAX_WL     POL_MAX_WORKLOADS
#define CFG_MAX_PARAMS 32
#define CFG_NAME_LEN   64
#define CFG_PATH_LEN   256
#define CFG_CMD_LEN    1024

enum cfg_tristate { CFG_AUTO = 0, CFG_ON, CFG_OFF };
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

struct cfg_param {
	char key[CFG_NAME_LEN];
	char val[CFG_PATH_LEN];
	int line;
};

struct cfg_workload {
	char name[CFG_NAME_LEN];
	int line; /* first key of the section */
	enum cfg_find find;
	int find_line;
	pid_t pid; /* pid = (or read from pidfile) */
	char pidfile[CFG_PATH_LEN];
	char command[CFG_CMD_LEN]; /* run with /bin/sh -c; the daemon owns it */
	char cgroup[CFG_PATH_LEN]; /* cgroup = PATH or unit = NAME.service, as given */
	double target_us;	   /* QoS target for p99 (target_ms in the file) */
	int target_line;
	int min_cores, max_cores; /* max 0 = every managed cpu */
	int min_line, max_line;
	int cores; /* initial count; 0 = fair share */
	int cores_line;
	struct act_cpumask cpus; /* explicit initial cpus */
	bool has_cpus;
	int cpus_line;
	double quota;		     /* initial cpu quota in cores; 0 = fair share */
	double min_quota, max_quota; /* 0 = quota_step / quota_total */
	int quota_line, min_quota_line, max_quota_line;
	long freq_mhz;		 /* initial max frequency; 0 = hardware max */
	enum cfg_src source;	 /* what drives the policy */
	char feed[CFG_PATH_LEN]; /* client feed ("t_ms p99_us rps" lines), or "" */
	int source_line, feed_line;
	enum ebee_mode ebee_mode;
	enum cfg_lat ebee_latency; /* default sojourn (README "Which latency feeds parties") */
	int ebee_latency_line;	   /* 0 = not set in the file */
	int ebee_mode_line;
	/* command workloads: run as this user/group instead of root ("" = root) */
	char user[CFG_NAME_LEN], group[CFG_NAME_LEN];
	int user_line, group_line;
};

struct cfg {
	char file[CFG_PATH_LEN]; /* for messages */

	/* [controller] */
	unsigned int interval_ms;
	char policy[POL_NAME_LEN];
	int policy_line;
	uint64_t seed;
	char log[CFG_PATH_LEN];
	int log_line;
	char cgroup_parent[CFG_NAME_LEN];
	char state_dir[CFG_PATH_LEN];
	int state_dir_line;
	enum cfg_tristate ebee;	     /* open ebee: auto = when a workload needs it */
	unsigned int ebee_window_ms; /* 0 = 2 * interval_ms */
	unsigned int avg_window_ms;  /* the "long slack" average */
	unsigned int stale_intervals;

	/* [resources] */
	struct act_cpumask cpus; /* managed cpus */
	int cpus_line;
	bool cores;		/* cores are a resource the policy moves */
	enum cfg_tristate freq; /* auto = where cpufreq exists */
	long freq_min_mhz, freq_max_mhz, freq_step_mhz;
	bool quota;
	double quota_step;  /* cores */
	double quota_total; /* cores; 0 = number of managed cpus */

	/* [policy NAME] for the chosen policy */
	int nparams;
	struct cfg_param params[CFG_MAX_PARAMS];

	int nwl;
	struct cfg_workload wl[CFG_MAX_WL];

	/* [simulation] and the workloads' sim_* keys (sim_config.h) */
	struct cfg_sim sim;
};

/* Defaults only (what an empty file gives, minus the required workloads). */
void cfg_defaults(struct cfg *c);

/*
 * Parse and validate. 0, or a negative errno with err holding
 * "file:line: what is wrong" (line omitted when the problem has none).
 */
int cfg_load_file(struct cfg *c, const char *path, char *err, size_t err_len);
/* The same from a string; name stands for the file name in messages. */
int cfg_load_string(struct cfg *c, const char *name, const char *text, char *err, size_t err_len);

/* Resolve the pid of a pid/pidfile workload now (pidfile re-read). */
int cfg_workload_pid(const struct cfg_workload *w, pid_t *pid);

/*
 * config_live.c: check a parsed configuration against the running machine
 * and this process, changing nothing: cpus that are online, workload pids
 * that may be managed (not init, not this daemon or an ancestor, not a
 * kernel thread, not another workload's), ebee modes this build supports,
 * users and groups that exist, and the files the daemon will write (log,
 * state_dir) are regular files in directories only root may write.
 * log_override is --log (NULL: the config's log). Both start-up and
 * --check-config call it, after cfg_load_file(). 0, or -EINVAL with err
 * holding "file:line: what is wrong".
 */
int cfg_check_live(const struct cfg *c, const char *log_override, char *err, size_t err_len);

/* Is a directory safe to create root's files in: owned by root (or us), and
 * not writable by a group other than root's or by others? 0 or -EPERM with
 * why filled. */
int cfg_dir_safe(const char *dir, char *why, size_t len);

#endif /* PARTIES_CONFIG_H */
