/* SPDX-License-Identifier: MIT */
/*
 * `parties --simulate`: the real control loop (loop.c) and the real policy,
 * driven in virtual time against the request-level model (sim_model.h).
 *
 * The model is reached only through the interfaces a real run uses: a
 * struct loop_mach_ops whose writes change the model's allocation, and one
 * struct src per latency feed (kind client, or kind ebee reporting the
 * service or sojourn p99 as the workload's ebee_latency says). Each workload
 * gets both kinds, the one its `source` names driving the policy, so the log
 * carries client, service and sojourn p99 every interval.
 */
#ifndef PARTIES_SIM_RUN_H
#define PARTIES_SIM_RUN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "policy.h"

struct sim_run_opts {
	size_t sz;
	const struct cfg *cfg; /* with a [simulation] section */
	const struct pol_ops *pol;
	FILE *log;	   /* JSONL, or NULL */
	double duration_s; /* 0: the config's (duration_s or the schedules' end) */
};

struct sim_run_result {
	double virtual_s;
	double wall_s; /* process CPU time is what one core spent; wall is printed too */
	double cpu_s;
	uint64_t events;
	uint64_t requests; /* that reached a server */
	uint64_t intervals, actions, refused;
};

/*
 * The work a simulation may do, refused before it starts (-EINVAL, which the
 * CLI answers with exit 2): at most SIM_MAX_INTERVALS control intervals
 * (the log has one line per interval: ~400 bytes per workload each), at
 * most SIM_MAX_REQUESTS requests offered by the schedules over the run (the
 * model runs about 3 million a second on one core here), and ebee windows
 * holding at most SIM_MAX_WINDOW_RECORDS requests in all (3 per workload,
 * each sized peak rate x ebee_window_ms x 3 + 4096, ~32 bytes a request).
 */
#define SIM_MAX_INTERVALS      100000
#define SIM_MAX_REQUESTS       1e9
#define SIM_MAX_WINDOW_RECORDS 12e6

/* 0 if a run of dur virtual seconds stays within those bounds, else
 * -EINVAL with err set. sim_run checks it first. */
int sim_run_check_bounds(const struct cfg *c, double dur, char *err, size_t len);

/* 0, or a negative errno with err set. */
int sim_run(const struct sim_run_opts *o, struct sim_run_result *res, char *err, size_t len);

#endif /* PARTIES_SIM_RUN_H */
