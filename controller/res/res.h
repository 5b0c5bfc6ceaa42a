/* SPDX-License-Identifier: MIT */
/*
 * One resource: everything that differs between cores, frequency, quota and
 * any resource to come is one struct res_ops in one file, controller/res/
 * NAME.c. The config (config.c: its keys, the checks across them), the
 * loop (limits, initial allocation, validation, apply), the machine layer
 * (machine.c: the actuator), the simulator (sim_run.c), the JSONL record
 * (logrec.c) and the exporter (pmetrics.c) iterate res_table[] and name no
 * resource.
 *
 * A resource is either a value per workload (frequency, quota: the loop
 * writes it through loop_mach_ops.set(), which reaches act_set or sim_set
 * below) or a partition of the machine (cores: its own apply, one change
 * through loop_mach_ops.assign_cpus()).
 *
 * Adding one: controller/res/NAME.c defining `const struct res_ops
 * res_NAME_ops`, and its X(ENUM, NAME) line in POL_RES_LIST (policy.h).
 */
#ifndef PARTIES_RES_H
#define PARTIES_RES_H

#include <stdbool.h>
#include <stddef.h>

#include "actuator.h"
#include "cfg_key.h"
#include "config.h"
#include "log.h"
#include "loop.h"
#include "policy.h"
#include "sim_config.h"

/* What the simulator's model is given for one workload (sim_set_alloc()),
 * and the modelled machine's frequency steps. */
struct res_sim {
	int cores;
	long quota_mc;
	long freq_khz;
	long fmin_khz, fstep_khz; /* in: the model's lowest frequency and step */
};

/* One of a resource's config keys, at its index in config.h's enum
 * cfg_key_id ([resources]) or enum cfg_wl_key_id ([workload NAME]): the
 * index is where the file's line is kept (line_of[]) and where the key
 * stands in the section's list of keys. */
struct res_key {
	bool wl;      /* a key of [workload NAME] */
	bool initial; /* an initial allocation: a reload may change it (it
		       * matters at start only); any other resource key
		       * needs a restart */
	int at;
	struct cfg_key key;
};

#define RES_C(f) CFG_KEY_AT(struct cfg, f)
#define RES_W(f) CFG_KEY_AT(struct cfg_workload, f)
#define RES_KEY(id, ...)                           \
	{                                          \
		.at = (id), .key = { __VA_ARGS__ } \
	}
#define RES_WL_KEY(id, ...)                                    \
	{                                                      \
		.wl = true, .at = (id), .key = { __VA_ARGS__ } \
	}
#define RES_WL_INITIAL(id, ...)                                                 \
	{                                                                       \
		.wl = true, .initial = true, .at = (id), .key = { __VA_ARGS__ } \
	}

struct res_ops {
	const char *name; /* the log's reasons, [policy parties] wheel = */
	/* Messages and the log show v / shown_div (frequency in MHz). */
	long shown_div;

	/* --- the config (config.c) --- */
	const struct res_key *keys;
	int nkeys;
	/* Optional: the defaults that depend on other keys, once the managed
	 * cpus (c->cpus) are known; what the rest reads is the value in force. */
	void (*cfg_resolve)(struct cfg *c);
	/* Optional: the file's checks across its keys and the workloads, on
	 * resolved values (config.c's validate(), which reports err at *line,
	 * 0 for none). In this order, each resource in table order: cfg_check
	 * before any workload (its [resources] keys together); cfg_check_wl
	 * for each workload, after the checks that are no resource's (workload
	 * i against itself and the ones before it); cfg_check_all once every
	 * workload passed (the workloads together). 0, or -EINVAL with err
	 * and *line set. */
	int (*cfg_check)(const struct cfg *c, char *err, size_t len, int *line);
	int (*cfg_check_wl)(const struct cfg *c, int i, char *err, size_t len, int *line);
	int (*cfg_check_all)(const struct cfg *c, char *err, size_t len, int *line);

	/* --- the loop (loop.c) --- */
	/* Fill l->res[r] and every workload's min and max from the config and
	 * the machine's caps. 0, or a negative errno with err set (the config
	 * asks for what the machine cannot do). Required. */
	int (*limits)(struct loop *l, char *err, size_t len);
	/* Every workload's initial allocation, once every limit is known.
	 * Required; called only when the resource is available. */
	int (*initial)(struct loop *l, char *err, size_t len);
	/* Optional: what a decision may not do beyond min, max and the pool. */
	int (*validate)(const struct loop *l, const struct pol_decision *dec, char *why,
			size_t len);
	/* A partition: apply the decision's as one change. NULL: a value per
	 * workload, written through loop_mach_ops.set(). */
	void (*apply)(struct loop *l, const struct pol_decision *dec, struct pol_outcome *out,
		      bool *changed);

	/* Optional: what the observation says of it beyond alloc, min and max
	 * (cores: the topology, each workload's cpus, threads and nodes); every
	 * interval, managed or not. */
	void (*observe)(const struct loop *l, struct pol_observation *o);

	/* --- the machine (machine.c) --- */
	/* The config manages it: act_open() is asked for act_res. */
	bool (*managed)(const struct cfg *c);
	unsigned int act_res; /* ACT_RES_* */
	/* The actuators can set it here; why not, when not. */
	bool (*act_can)(const struct act_caps *c, const char **why);
	/* Optional: the range the hardware offers (loop_caps lo, hi). */
	void (*act_range)(const struct act_caps *c, long *lo, long *hi);
	/* A value resource's initial value in act_workload_add()'s options. */
	void (*act_add)(struct act_workload_opts *o, long v);
	/* Write a value resource. 0 or a negative errno (act_last_error()). */
	int (*act_set)(struct act *act, struct act_workload *wl, long v);

	/* --- the simulator (sim_run.c) --- */
	/* Optional: the range the modelled machine offers (loop_caps lo, hi). */
	void (*sim_range)(const struct cfg_sim *s, long *lo, long *hi);
	/* A value resource into the model's input; NULL: not modelled. */
	void (*sim_set)(struct res_sim *s, long v);

	/* --- the JSONL record (logrec.c) --- */
	/* "log_key": the allocation / log_div with log_prec decimals, null when
	 * not managed; in "free" too when pooled. Or log_wl, for a resource that
	 * logs more. */
	const char *log_key;
	double log_div;
	int log_prec;
	void (*log_wl)(struct log_json *j, const struct loop *l, const struct loop_wl *w);

	/* --- Prometheus (pmetrics.c): the allocation * prom_scale --- */
	const char *prom_name, *prom_help;
	double prom_scale; /* alloc unit -> base unit */
};

/* Indexed by enum pol_res (res/table.c, from POL_RES_LIST). */
extern const struct res_ops *const res_table[POL_RES_COUNT];

/* The resources' keys that need a restart (every [resources] one; with wl,
 * workload i's limits) read the same in a and b. */
bool res_keys_same(const struct cfg *a, const struct cfg *b, bool wl, int i);
/* Units of r held by live workloads. */
long res_used(const struct loop *l, enum pol_res r);

#endif /* PARTIES_RES_H */
