/* SPDX-License-Identifier: MIT */
/*
 * One resource: everything that differs between cores, frequency, quota and
 * any resource to come is one struct res_ops in one file, controller/res/
 * NAME.c. The config (config.c reads its keys into its own struct, resolves
 * and checks them through it; config_live.c its live check), the loop
 * (limits, initial allocation, validation, apply, observation), the machine
 * layer (machine.c: the actuator), the simulator (sim_run.c), the JSONL
 * record (logrec.c) and the exporter (pmetrics.c) iterate res_table[] and
 * name no resource.
 *
 * A resource is either a value per workload (frequency, quota: the loop
 * writes it through loop_mach_ops.set(), which reaches act.set or sim.set
 * below) or a partition of the machine (cores: its own apply, one change
 * through struct res_view's assign()).
 *
 * Adding one: controller/res/NAME.c defining `const struct res_ops
 * res_NAME_ops` (its keys, its settings' struct, its ops), and its X(ENUM,
 * NAME) line in POL_RES_LIST (policy.h). Every key it declares must be
 * documented in configs/example.ini (tests/unit/test_config_doc.c).
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

/* A resource's settings, in the struct its file declares: the [resources]
 * one (conf) and workload i's (wl_conf), with the line of its k-th key. */
static inline const void *res_conf(const struct cfg *c, enum pol_res r)
{
	return c->res[r].conf;
}
static inline const void *res_wl_conf(const struct cfg *c, int i, enum pol_res r)
{
	return c->wl[i].res[r].conf;
}
static inline int res_line(const struct cfg *c, enum pol_res r, int k)
{
	return c->res[r].line_of[k];
}
static inline int res_wl_line(const struct cfg_workload *w, enum pol_res r, int k)
{
	return w->res[r].line_of[k];
}
/* The resource's settings struct T fits struct cfg_res (config.h). */
#define RES_CONF_FITS(T) \
	_Static_assert(sizeof(T) <= CFG_RES_CONF, #T " outgrows CFG_RES_CONF (config.h)")

/*
 * What a resource sees of the loop, instead of the loop (loop.c fills it,
 * res_view()): the config, what the machine offers, its own row of what is
 * known about it, and each workload's name, liveness and its own
 * allocation and bounds. A partition also has each workload's cpus, the
 * partition's state and its one change.
 */
struct res_wl {
	const char *name;
	bool alive;
	long *alloc, *min, *max;  /* of this resource */
	struct act_cpumask *cpus; /* the cpus it has now (a partition's) */
};

struct res_view {
	const struct cfg *cfg;
	enum pol_res r;
	struct pol_res_info *info;    /* this resource's; limits() fills it */
	const struct loop_caps *caps; /* caps->res[r], why[r], lo[r], hi[r], cpus, topo */
	int nwl;
	struct res_wl wl[CFG_MAX_WL];
	struct cores *cores; /* which cpus a count of cores is (cores.h) */
	/* Give each wls[k] exactly cpus[k], as one change; last_error() says
	 * why not. */
	int (*assign)(void *ctx, const int *wls, const struct act_cpumask *cpus, int n);
	const char *(*last_error)(void *ctx);
	void *ctx;
};

/* Checks of the file as a whole (config.c's validate(), which reports err
 * at *line, 0 for none). 0, or -EINVAL with err and *line set. */
typedef int (*res_check_fn)(const struct cfg *c, char *err, size_t len, int *line);

struct res_ops {
	const char *name; /* the log's reasons, [policy parties] wheel = */
	/* Messages and the log show v / shown_div (frequency in MHz). */
	long shown_div;

	/* --- its settings (config.c, config_live.c, reload.c) --- */
	struct {
		/* [resources] keys and [workload NAME] keys, stored at their
		 * offsets in the file's own structs (res_conf(), res_wl_conf()),
		 * line_of[] at their index. */
		const struct cfg_key *keys, *wl_keys;
		int nkeys, nwl_keys;
		/* bit k: wl_keys[k] is an initial allocation (a reload may
		 * change it; it matters at start only); any other key of a
		 * resource needs a restart */
		unsigned int wl_initial;
		/* Optional: the defaults that depend on other keys, once the
		 * managed cpus (c->cpus) are known; what the rest reads is the
		 * value in force. */
		void (*resolve)(struct cfg *c);
		/* Optional, in this order, each resource in table order: check
		 * before any workload (its [resources] keys together); check_wl
		 * for each workload, after the checks that are no resource's
		 * (workload i against itself and the ones before it); check_all
		 * once every workload passed (the workloads together). */
		res_check_fn check;
		int (*check_wl)(const struct cfg *c, int i, char *err, size_t len, int *line);
		res_check_fn check_all;
		/* Optional: against this machine, changing nothing
		 * (cfg_check_live(), after the managed cpus are found online). */
		res_check_fn check_live;
	} cfg;

	/* --- the loop (loop.c, observe.c) --- */
	struct {
		/* Fill v->info and every workload's min and max from the config
		 * and the machine's caps. 0, or a negative errno with err set
		 * (the config asks for what the machine cannot do). Required. */
		int (*limits)(struct res_view *v, char *err, size_t len);
		/* Every workload's initial allocation, once every limit is
		 * known. Required; called only when the resource is available. */
		int (*initial)(struct res_view *v, char *err, size_t len);
		/* Optional: what a decision may not do beyond min, max and the pool. */
		int (*validate)(const struct res_view *v, const struct pol_decision *dec, char *why,
				size_t len);
		/* A partition: apply the decision's as one change. NULL: a
		 * value per workload, written through loop_mach_ops.set(). */
		void (*apply)(struct res_view *v, const struct pol_decision *dec,
			      struct pol_outcome *out, bool *changed);
		/* Optional: what the observation says of it beyond alloc, min
		 * and max (cores: the topology, each workload's cpus, threads
		 * and nodes); every interval, managed or not. */
		void (*observe)(const struct res_view *v, struct pol_observation *o);
		/* Optional: how it was handed out, for the operator at start
		 * (loop_print_cores()). */
		void (*print)(const struct res_view *v, FILE *f);
	} loop;

	/* --- the machine (machine.c) --- */
	struct {
		/* What act_open() is asked for: its ACT_RES_* bit in
		 * o->resources when the config manages it, and its options.
		 * NULL: no actuator offers it (unavailable but in --simulate). */
		void (*open)(const struct cfg *c, struct act_opts *o);
		/* The actuators can set it here; why not, when not. */
		bool (*can)(const struct act_caps *c, const char **why);
		/* Optional: the range the hardware offers (loop_caps lo, hi). */
		void (*range)(const struct act_caps *c, long *lo, long *hi);
		/* A value resource's initial value in act_workload_add()'s options. */
		void (*add)(struct act_workload_opts *o, long v);
		/* Write a value resource. 0 or a negative errno (act_last_error()). */
		int (*set)(struct act *act, struct act_workload *wl, long v);
	} act;

	/* --- the simulator (sim_run.c) --- */
	struct {
		/* Optional: the range the modelled machine offers (loop_caps lo, hi). */
		void (*range)(const struct cfg_sim *s, long *lo, long *hi);
		/* A value resource into the model's input; NULL: not modelled. */
		void (*set)(struct res_sim *s, long v);
	} sim;

	/* --- the JSONL record (logrec.c) --- */
	struct {
		/* "key": the allocation / div with prec decimals, null when not
		 * managed; in "free" too when pooled. Or wl, for a resource
		 * that logs more about workload i. Neither: not in the record. */
		const char *key;
		double div;
		int prec;
		void (*wl)(struct log_json *j, const struct res_view *v, int i);
	} log;

	/* --- Prometheus (pmetrics.c): the allocation * scale --- */
	struct {
		const char *name, *help;
		double scale; /* alloc unit -> base unit */
	} prom;
};

/* Indexed by enum pol_res (res/table.c, from POL_RES_LIST). */
extern const struct res_ops *const res_table[POL_RES_COUNT];

/* The resources' keys that need a restart (every [resources] one; with wl,
 * workload i's limits) read the same in a and b. */
bool res_keys_same(const struct cfg *a, const struct cfg *b, bool wl, int i);
/* Units of r held by live workloads. */
long res_used(const struct loop *l, enum pol_res r);
/* What resource r sees of l (struct res_view). */
void res_view(struct loop *l, enum pol_res r, struct res_view *v);
/* Read-only uses (validate, observe, the log): the view's pointers are
 * not written through. */
void res_view_const(const struct loop *l, enum pol_res r, struct res_view *v);

/*
 * For tests and tools: the value of a resource's key as a number in the
 * program's unit (a boolean or a choice as its integer) and its line, of
 * [resources] (wl < 0) or of workload wl. 0, or -ENOENT when no resource
 * has the key there.
 */
int res_cfg_value(const struct cfg *c, int wl, const char *key, long *v, int *line);

#endif /* PARTIES_RES_H */
