/* SPDX-License-Identifier: MIT */
/*
 * The control loop: every interval, observe -> decide -> validate -> apply ->
 * reflect -> log.
 *
 * The loop reaches the machine only through struct loop_mach_ops (the real
 * one, controller/machine.c, wraps the actuators; unit tests plug a fake),
 * and latencies only through struct src (source.h). Policies see only
 * struct pol_observation and return struct pol_decision.
 */
#ifndef PARTIES_LOOP_H
#define PARTIES_LOOP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "config.h"
#include "cores.h"
#include "cpulist.h"
#include "policy.h"
#include "source.h"

/* What the machine offers, in the loop's units. */
struct loop_caps {
	bool res[POL_RES_COUNT];      /* the machine can control it */
	char why[POL_RES_COUNT][192]; /* when it cannot */
	struct act_cpumask cpus;      /* cpus that may be assigned */
	/* Their siblings and nodes (sysfs, or the model's); no online cpu =
	 * not reported, taken as one node without SMT. */
	struct act_topo topo;
	/* The range the machine offers of a value resource (res_ops act.range,
	 * sim.range), in the loop's unit; 0..0 when it says none. */
	long lo[POL_RES_COUNT], hi[POL_RES_COUNT];
};

struct loop_mach_ops {
	int (*caps)(void *m, struct loop_caps *caps);
	/* Manage workload wl (index in the config) running as pid, with its
	 * initial allocation: cpus NULL when cores are not managed; alloc[r]
	 * of every value resource (res/res.h), 0 when r is not managed (quota
	 * 0 = unlimited, freq 0 = leave). */
	int (*add)(void *m, int wl, const char *name, pid_t pid, const struct act_cpumask *cpus,
		   const long alloc[POL_RES_COUNT]);
	/* Give each wls[i] exactly cpus[i], as one change (the cores partition). */
	int (*assign_cpus)(void *m, const int *wls, const struct act_cpumask *cpus, int n);
	/* Set value resource r of workload wl to v, in the loop's unit. */
	int (*set)(void *m, enum pol_res r, int wl, long v);
	/* The workload is gone: put back what was changed for it. */
	int (*remove)(void *m, int wl);
	/* Optional: CPU time the workload has used so far, in ns (cgroup or
	 * /proc; the model in a simulation). 0 or a negative errno. */
	int (*cpu_ns)(void *m, int wl, uint64_t *ns);
	/* One line about the last failure. */
	const char *(*last_error)(void *m);
};

struct loop_wl {
	char name[CFG_NAME_LEN];
	pid_t pid;
	/* pid's start time when the loop took it (procfs_starttime()): a later
	 * process given the same pid is not this workload; 0 unknown */
	unsigned long long start;
	bool alive;
	bool added;	 /* the machine manages it */
	struct src *src; /* drives the policy */
	struct src *aux; /* logged only (the other kind), or NULL */
	double target_ns;
	struct act_cpumask cpus;
	long alloc[POL_RES_COUNT];
	long min[POL_RES_COUNT], max[POL_RES_COUNT];
	/* fresh p99 samples (ns) inside the averaging window */
	unsigned int navg;
	uint64_t avg_t[64];
	double avg_p99[64];
	unsigned int nhist;
	double hist[POL_HIST];
	struct src_sample last, last_aux;
	uint64_t cpu_prev_ns, cpu_prev_t_ms; /* for cpu_used */
	bool cpu_have;
	double cpu_used;
};

/* Tells whether a workload's process still exists; the default
 * (loop_pid_alive) reaps our own children and checks /proc. */
typedef bool (*loop_alive_fn)(void *ctx, int wl, pid_t pid);

/* sz = sizeof(struct loop_args) (read as libbpf reads its options); cfg ..
 * aux are required, the rest optional. */
struct loop_args {
	size_t sz;
	const struct cfg *cfg;
	const struct pol_ops *pol;
	const struct loop_mach_ops *mops;
	void *mctx;
	pid_t pid[CFG_MAX_WL];
	struct src *src[CFG_MAX_WL]; /* owned by the loop once loop_init succeeds */
	struct src *aux[CFG_MAX_WL];
	FILE *log;	     /* JSONL, or NULL */
	loop_alive_fn alive; /* NULL: loop_pid_alive */
	void *alive_ctx;
};

struct loop_stats {
	uint64_t intervals;
	uint64_t actions;  /* decisions that changed something */
	uint64_t rejected; /* decisions refused by validation */
	uint64_t failed;   /* decisions whose writes failed */
	uint64_t exits;	   /* workloads that exited */
};

struct loop {
	const struct cfg *cfg;
	const struct pol_ops *pol;
	void *pol_state;
	const struct loop_mach_ops *mops;
	void *mctx;
	loop_alive_fn alive;
	void *alive_ctx;
	FILE *log;
	struct loop_caps caps;
	struct pol_res_info res[POL_RES_COUNT];
	struct cores cores; /* which cpus a count of cores is (cores.h) */
	int nwl;
	struct loop_wl wl[CFG_MAX_WL];
	uint64_t t0_ms;
	uint64_t tick;
	struct loop_stats stats;
	struct pol_observation obs; /* last one */
	struct pol_decision dec;
	struct pol_outcome out;
};

/*
 * Initial allocation from the config and the machine's caps, then add every
 * workload to the machine. On failure returns a negative errno with err set;
 * workloads already added are removed again.
 */
int loop_init(struct loop *l, const struct loop_args *a, char *err, size_t err_len);
/* Initialise the policy with the config's settings and free it again: the
 * start-up check. 0 or a negative errno with "file:line: what" in err. */
int loop_check_policy(const struct cfg *c, const struct pol_ops *pol, char *err, size_t err_len);
/* Replace the policy's state by one initialised from c's [policy] settings
 * (same policy). 0, or a negative errno with "file:line: what" in err and the
 * running state kept. */
int loop_restart_policy(struct loop *l, const struct cfg *c, char *err, size_t err_len);
/* How each resource was handed out (res_ops loop.print; cores: "parties:
 * topology: ..." and one "parties: workload NAME: ..." line each,
 * cores_describe()): who shares a physical core or a node is the first
 * thing to check on a new machine. Nothing when cores are not managed. */
void loop_print_cores(const struct loop *l, FILE *f);
/* One interval at monotonic time now_ms. */
int loop_step(struct loop *l, uint64_t now_ms);
/* Workloads still alive. */
int loop_alive_count(const struct loop *l);
/* Remove every workload from the machine, close sources, free the policy. */
void loop_fini(struct loop *l);

/* The default liveness check. ctx: the struct loop (loop_init() passes it
 * when the caller gives no alive function), whose wl[wl].start the process
 * must still have; NULL compares no start time. */
bool loop_pid_alive(void *ctx, int wl, pid_t pid);
uint64_t loop_now_ms(void);
/* vsnprintf() into a message buffer (err, why), truncated silently: the
 * loop's and the resources' (res/) messages. */
void loop_msg(char *dst, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Validate a decision against the loop's state; 0 or -EINVAL with why set.
 * Exposed for tests. */
int loop_validate(const struct loop *l, const struct pol_decision *dec, char *why, size_t len);

#endif /* PARTIES_LOOP_H */
