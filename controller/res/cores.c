// SPDX-License-Identifier: MIT
/*
 * Cores: a partition of the managed cpus ([resources] cores, smt; a
 * workload's cores, min_cores, max_cores; the managed cpus and a workload's
 * explicit cpus are config.c's keys, which quota's defaults use too; the
 * checks of a workload's cpus are here). Which cpus a count of cores is, is
 * cores.[ch]; the cpuset actuator writes them, as one change for every
 * workload that moves.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "res.h"

/* Its settings: [resources] cores, smt and a workload's cores, min_cores,
 * max_cores (configs/example.ini). */
struct cores_conf {
	bool on;	  /* cores are a resource the policy moves */
	enum pol_smt smt; /* what a core is: whole, primary or shared (policy.h) */
};
struct cores_wl_conf {
	int min, max;
	int cores; /* initial count; 0 = fair share */
};
RES_CONF_FITS(struct cores_conf);
RES_CONF_FITS(struct cores_wl_conf);

#define C(f) CFG_KEY_AT(struct cores_conf, f)
#define W(f) CFG_KEY_AT(struct cores_wl_conf, f)

enum { CORES_ON, CORES_SMT };
static const struct cfg_key cores_keys[] = {
	[CORES_ON] = { "cores", CFG_KEY_BOOL, C(on), .def = true },
	/* what a core handed out is (policy.h, enum pol_smt) */
	[CORES_SMT] = { "smt", CFG_KEY_CHOICE, C(smt),
			.names = (const char *const[]){ "whole", "primary", "shared", NULL },
			.msg = "%s: '%s' must be whole, primary or shared", .def = POL_SMT_WHOLE },
};

enum { CORES_WL_MIN, CORES_WL_MAX, CORES_WL };
static const struct cfg_key cores_wl_keys[] = {
	[CORES_WL_MIN] = { "min_cores", CFG_KEY_WHOLE, W(min), .lo = 1, .hi = ACT_CPUMASK_MAX,
			   .def = 1 },
	/* 0: every managed cpu (its resolve) */
	[CORES_WL_MAX] = { "max_cores", CFG_KEY_WHOLE, W(max), .lo = 0, .hi = ACT_CPUMASK_MAX },
	[CORES_WL] = { "cores", CFG_KEY_WHOLE, W(cores), .lo = 1, .hi = ACT_CPUMASK_MAX },
};

static const struct cores_conf *conf(const struct cfg *c)
{
	return res_conf(c, POL_RES_CORES);
}

static const struct cores_wl_conf *wl_conf(const struct cfg *c, int i)
{
	return res_wl_conf(c, i, POL_RES_CORES);
}

/* The line of workload w's k-th key. */
static int wl_line(const struct cfg_workload *w, int k)
{
	return res_wl_line(w, POL_RES_CORES, k);
}

static void cores_cfg_resolve(struct cfg *c)
{
	for (int i = 0; i < c->nwl; i++) {
		struct cores_wl_conf *w = (struct cores_wl_conf *)c->wl[i].res[POL_RES_CORES].conf;

		if (!w->max)
			w->max = act_cpumask_count(&c->cpus);
	}
}

/* Explicit cpus, against the config alone: managed ones, nobody else's
 * (the workloads before i), under smt = shared as many as its cores allow. */
static int cfg_check_cpus(const struct cfg *c, int i, char *err, size_t len, int *line)
{
	const struct cfg_workload *w = &c->wl[i];
	const struct cores_wl_conf *wc = wl_conf(c, i);
	int n = act_cpumask_count(&w->cpus);
	struct act_cpumask before;
	char buf[64];

	*line = w->line_of[CFG_WL_CPUS];
	if (!act_cpumask_subset(&w->cpus, &c->cpus)) {
		act_cpumask_format(&c->cpus, buf, sizeof(buf));
		return cfg_key_err(err, len, "workload %s: cpus outside the managed cpus (%s)",
				   w->name, buf);
	}
	act_cpumask_zero(&before);
	for (int k = 0; k < i; k++)
		if (c->wl[k].has_cpus)
			act_cpumask_or(&before, &before, &c->wl[k].cpus);
	if (act_cpumask_intersects(&w->cpus, &before))
		return cfg_key_err(err, len, "workload %s: cpus overlap another workload's",
				   w->name);
	/* under smt whole or primary a core is not a cpu: the loop counts them
	 * against the topology (check_wl_units) */
	if (conf(c)->smt != POL_SMT_SHARED)
		return 0;
	if (wc->cores && wc->cores != n)
		return cfg_key_err(err, len, "workload %s: cpus has %d cpus but cores = %d",
				   w->name, n, wc->cores);
	if (n < wc->min || n > wc->max)
		return cfg_key_err(err, len,
				   "workload %s: %d cpus outside min_cores..max_cores (%d..%d)",
				   w->name, n, wc->min, wc->max);
	return 0;
}

/* The cpus a workload needs at least: its explicit ones, its cores, or its minimum. */
static int cfg_need(const struct cfg *c, int i)
{
	const struct cfg_workload *w = &c->wl[i];
	const struct cores_wl_conf *wc = wl_conf(c, i);

	return w->has_cpus ? act_cpumask_count(&w->cpus) : wc->cores ? wc->cores : wc->min;
}

/* Workload i's bounds, initial count and explicit cpus, and what it and
 * the workloads before it need at least against the managed cpus. */
static int cores_cfg_check_wl(const struct cfg *c, int i, char *err, size_t len, int *line)
{
	const struct cfg_workload *w = &c->wl[i];
	const struct cores_wl_conf *wc = wl_conf(c, i);
	const int *at = w->res[POL_RES_CORES].line_of;
	int ncpus = act_cpumask_count(&c->cpus), need = 0;

	if (wc->min > wc->max) {
		*line = at[CORES_WL_MAX] ? at[CORES_WL_MAX] : at[CORES_WL_MIN];
		return cfg_key_err(err, len, "workload %s: min_cores %d > max_cores %d", w->name,
				   wc->min, wc->max);
	}
	if (wc->cores && (wc->cores < wc->min || wc->cores > wc->max)) {
		*line = at[CORES_WL];
		return cfg_key_err(err, len,
				   "workload %s: cores %d outside min_cores..max_cores (%d..%d)",
				   w->name, wc->cores, wc->min, wc->max);
	}
	if (w->has_cpus && cfg_check_cpus(c, i, err, len, line))
		return -EINVAL;
	for (int k = 0; k <= i; k++)
		need += cfg_need(c, k);
	if (need > ncpus) {
		*line = w->line;
		return cfg_key_err(
		    err, len, "workload %s: the workloads need at least %d cpus, %d are managed",
		    w->name, need, ncpus);
	}
	return 0;
}

/* The live check: under smt whole or primary, the managed cpus and each
 * explicit list are whole cores of this machine (the loop checks it again at
 * start, after the actuators opened; here it is refused before anything is
 * touched). */
static int cores_check_live(const struct cfg *c, char *err, size_t len, int *line)
{
	struct act_topo *t;
	struct cores k;
	char why[192];
	int e = 0;

	if (!conf(c)->on)
		return 0;
	t = malloc(sizeof(*t));
	if (!t)
		return 0;
	if (act_topo_read(t, NULL))
		goto out; /* the actuators will say what they cannot read */
	if (cores_init(&k, t, &c->cpus, conf(c)->smt, why, sizeof(why))) {
		*line = res_line(c, POL_RES_CORES, CORES_SMT)
			    ? res_line(c, POL_RES_CORES, CORES_SMT)
			    : c->line_of[CFG_CPUS];
		e = cfg_key_err(err, len, "%s", why);
		goto out;
	}
	for (int i = 0; i < c->nwl && !e; i++) {
		if (c->wl[i].has_cpus && cores_check(&k, &c->wl[i].cpus, why, sizeof(why))) {
			*line = c->wl[i].line_of[CFG_WL_CPUS];
			e = cfg_key_err(err, len, "workload %s: %s", c->wl[i].name, why);
		}
	}
out:
	free(t);
	return e;
}

/* A workload's explicit cpus under smt: whole units, as many as its bounds
 * allow (the config counted cpus; under whole a core is more than one). */
static int check_wl_units(const struct res_view *v, int i, char *err, size_t len)
{
	const struct cfg *c = v->cfg;
	const struct cfg_workload *w = &c->wl[i];
	const struct cores_wl_conf *wc = wl_conf(c, i);
	int line = w->line_of[CFG_WL_CPUS], n;
	enum pol_smt smt = conf(c)->smt;
	char why[192];

	if (cores_check(v->cores, &w->cpus, why, sizeof(why))) {
		loop_msg(err, len, "%s:%d: workload %s: %s", c->file, line, w->name, why);
		return -EINVAL;
	}
	n = cores_count(v->cores, &w->cpus);
	if ((wc->cores && wc->cores != n) || n < *v->wl[i].min || n > *v->wl[i].max) {
		loop_msg(err, len, "%s:%d: workload %s: cpus are %d cores (smt = %s), not %s",
			 c->file, line, w->name, n,
			 smt == POL_SMT_WHOLE	  ? "whole"
			 : smt == POL_SMT_PRIMARY ? "primary"
						  : "shared",
			 wc->cores ? "its cores =" : "within min_cores..max_cores");
		return -EINVAL;
	}
	return 0;
}

static int cores_limits(struct res_view *v, char *err, size_t len)
{
	const struct cfg *c = v->cfg;
	const struct loop_caps *k = v->caps;
	struct pol_res_info *r = v->info;
	int ncpus = act_cpumask_count(&c->cpus);

	*r = (struct pol_res_info){ .pooled = true, .step = 1, .total = ncpus };
	if (conf(c)->on) {
		int smt_line = res_line(c, POL_RES_CORES, CORES_SMT);
		char buf[64], buf2[192];

		if (!k->res[POL_RES_CORES]) {
			loop_msg(err, len,
				 "cores are a resource but cpusets cannot be set here: %s",
				 k->why[POL_RES_CORES]);
			return -EOPNOTSUPP;
		}
		if (!act_cpumask_subset(&c->cpus, &k->cpus)) {
			act_cpumask_format(&k->cpus, buf, sizeof(buf));
			loop_msg(err, len, "%s:%d: [resources] cpus: only %s can be assigned here",
				 c->file, c->line_of[CFG_CPUS], buf);
			return -ERANGE;
		}
		r->avail = true;
		if (cores_init(v->cores, &k->topo, &c->cpus, conf(c)->smt, buf2, sizeof(buf2))) {
			loop_msg(err, len, "%s:%d: %s", c->file,
				 smt_line ? smt_line : c->line_of[CFG_CPUS], buf2);
			return -EINVAL;
		}
		r->total = v->cores->nunits;
	}
	for (int i = 0; i < v->nwl; i++) {
		const struct cfg_workload *w = &c->wl[i];
		const struct cores_wl_conf *wc = wl_conf(c, i);
		long *max = v->wl[i].max;

		*v->wl[i].min = r->avail ? wc->min : 0;
		*max = r->avail ? wc->max : 0; /* resolved by the config */
		/* the default, every managed cpu, is every unit (whole cores may be fewer) */
		if (!wl_line(w, CORES_WL_MAX) && *max > r->total)
			*max = r->total;
		if (r->avail && w->has_cpus && check_wl_units(v, i, err, len))
			return -EINVAL;
	}
	return 0;
}

/* Initial cpus: explicit lists, then counts, then a fair share of the rest
 * round robin (as the original code hands out every core); each core the
 * lowest free one on the workload's node (cores.h). */
static int initial_cpus(struct res_view *v, char *err, size_t len)
{
	const struct cfg *c = v->cfg;
	struct act_cpumask free = v->cores->handout;
	bool fair[CFG_MAX_WL] = { false };
	int nfair = 0;

	for (int i = 0; i < v->nwl; i++) {
		act_cpumask_zero(v->wl[i].cpus);
		if (c->wl[i].has_cpus) {
			*v->wl[i].cpus = c->wl[i].cpus;
			act_cpumask_andnot(&free, &free, &c->wl[i].cpus);
		}
	}
	for (int i = 0; i < v->nwl; i++) {
		const struct cores_wl_conf *wc = wl_conf(c, i);
		int want = c->wl[i].has_cpus ? 0 : wc->cores ? wc->cores : wc->min;

		if (!c->wl[i].has_cpus && !wc->cores) {
			fair[i] = true;
			nfair++;
		}
		for (int k = 0; k < want; k++) {
			if (cores_grow(v->cores, v->wl[i].cpus, &free, -1)) {
				loop_msg(err, len,
					 "workload %s: no core left for its initial allocation",
					 v->wl[i].name);
				return -ENOSPC;
			}
		}
	}
	while (nfair && !act_cpumask_empty(&free)) {
		bool gave = false;

		for (int i = 0; i < v->nwl && !act_cpumask_empty(&free); i++) {
			if (!fair[i] || cores_count(v->cores, v->wl[i].cpus) >= *v->wl[i].max)
				continue;
			if (cores_grow(v->cores, v->wl[i].cpus, &free, -1))
				break;
			gave = true;
		}
		if (!gave)
			break;
	}
	for (int i = 0; i < v->nwl; i++)
		*v->wl[i].alloc = cores_count(v->cores, v->wl[i].cpus);
	return 0;
}

/* A node a policy asks for: the workload is there, cores are managed, and
 * the node has some of them. 0, or -EINVAL with why set. */
static int validate_node(const struct res_view *v, int i, int node, char *why, size_t len)
{
	const char *bad = NULL;

	if (!v->wl[i].alive)
		bad = "it is gone";
	else if (!v->info->avail)
		bad = "cores are not a resource here";
	else if (node < 0 || node >= ACT_TOPO_NODES_MAX ||
		 !cores_free_on(v->cores, &v->cores->handout, node))
		bad = "no managed core is on it";
	if (!bad)
		return 0;
	loop_msg(why, len, "node %d for %s: %s", node, v->wl[i].name, bad);
	return -EINVAL;
}

/* Explicit cpus: on a managed resource, managed cpus only, whole units (a
 * core is never split between workloads under smt = whole), the right
 * count, no cpu asked for twice; a node asked for has managed cores. */
static int validate_cpus(const struct res_view *v, const struct pol_decision *dec, char *why,
			 size_t len)
{
	struct act_cpumask seen;

	act_cpumask_zero(&seen);
	for (int i = 0; i < v->nwl; i++) {
		const struct pol_wl_decision *d = &dec->wl[i];
		const char *name = v->wl[i].name;
		char msg[160];

		if (d->set_node && validate_node(v, i, d->node, why, len))
			return -EINVAL;
		if (!d->set_cpus)
			continue;
		if (!v->wl[i].alive || !v->info->avail) {
			loop_msg(why, len, "cpus for %s: %s", name,
				 v->wl[i].alive ? "cores are not a resource here" : "it is gone");
			return -EINVAL;
		}
		if (!act_cpumask_subset(&d->cpus, &v->cfg->cpus)) {
			loop_msg(why, len, "cpus for %s: not all managed", name);
			return -EINVAL;
		}
		if (cores_check(v->cores, &d->cpus, msg, sizeof(msg))) {
			loop_msg(why, len, "cpus for %s: %s", name, msg);
			return -EINVAL;
		}
		if (cores_count(v->cores, &d->cpus) != d->alloc[POL_RES_CORES]) {
			loop_msg(why, len, "cpus for %s: %d %s for %ld cores", name,
				 cores_count(v->cores, &d->cpus),
				 conf(v->cfg)->smt == POL_SMT_SHARED ? "cpus" : "cores",
				 d->alloc[POL_RES_CORES]);
			return -EINVAL;
		}
		if (act_cpumask_intersects(&d->cpus, &seen)) {
			loop_msg(why, len, "cpus for %s: given to another workload too", name);
			return -EINVAL;
		}
		act_cpumask_or(&seen, &seen, &d->cpus);
	}
	return 0;
}

/* Cores are a partition of the managed cpus: the cpus a policy named; for
 * the others, shrink (after giving up any cpu someone else was given), move
 * to the node a policy asked for, grow (cores.h: the highest core off, the
 * lowest free core on, the workload's node); then every change as one. */
static void apply_cpus(struct res_view *v, const struct pol_decision *dec, struct pol_outcome *out,
		       bool *changed)
{
	struct cores *cs = v->cores;
	struct act_cpumask free, nc[CFG_MAX_WL], named;
	int wls[CFG_MAX_WL], n = 0;

	act_cpumask_zero(&named);
	for (int i = 0; i < v->nwl; i++)
		if (dec->wl[i].set_cpus)
			act_cpumask_or(&named, &named, &dec->wl[i].cpus);
	free = cs->handout;
	for (int i = 0; i < v->nwl; i++) {
		nc[i] = dec->wl[i].set_cpus ? dec->wl[i].cpus : *v->wl[i].cpus;
		if (!dec->wl[i].set_cpus)
			act_cpumask_andnot(&nc[i], &nc[i], &named);
		act_cpumask_andnot(&free, &free, &nc[i]);
	}
	for (int i = 0; i < v->nwl; i++) {
		int node = dec->wl[i].set_node ? dec->wl[i].node : -1;

		while (cores_count(cs, &nc[i]) > dec->wl[i].alloc[POL_RES_CORES])
			if (cores_shrink(cs, &nc[i], &free, node))
				break;
	}
	for (int i = 0; i < v->nwl; i++)
		if (dec->wl[i].set_node && !dec->wl[i].set_cpus)
			cores_migrate(cs, &nc[i], &free, dec->wl[i].node);
	for (int i = 0; i < v->nwl; i++) {
		int node = dec->wl[i].set_node ? dec->wl[i].node : -1;

		while (cores_count(cs, &nc[i]) < dec->wl[i].alloc[POL_RES_CORES])
			if (cores_grow(cs, &nc[i], &free, node))
				break; /* validation makes this impossible */
	}
	for (int i = 0; i < v->nwl; i++) {
		if (!v->wl[i].alive || act_cpumask_equal(&nc[i], v->wl[i].cpus))
			continue;
		wls[n] = i;
		nc[n] = nc[i]; /* compact: n <= i */
		n++;
	}
	if (!n)
		return;
	*changed = true;
	if (v->assign(v->ctx, wls, nc, n)) {
		out->applied = false;
		loop_msg(out->why, sizeof(out->why), "cores: %s", v->last_error(v->ctx));
		return;
	}
	for (int k = 0; k < n; k++) {
		*v->wl[wls[k]].cpus = nc[k];
		*v->wl[wls[k]].alloc = cores_count(cs, &nc[k]);
	}
}

/* The count, always (0 when cores are not managed), and which cpus. */
static void log_cores(struct log_json *j, const struct res_view *v, int i)
{
	char buf[256];

	log_json_int(j, "cores", *v->wl[i].alloc);
	act_cpumask_format(v->wl[i].cpus, buf, sizeof(buf));
	log_json_str(j, "cpus", v->info->avail ? buf : NULL);
}

/* "parties: topology: ..." and one line per live workload. */
static void print_cores(const struct res_view *v, FILE *f)
{
	char buf[2304];

	if (!v->info->avail)
		return;
	cores_describe(v->cores, NULL, buf, sizeof(buf));
	fprintf(f, "parties: topology: %s\n", buf);
	for (int i = 0; i < v->nwl; i++) {
		if (!v->wl[i].alive)
			continue;
		cores_describe(v->cores, v->wl[i].cpus, buf, sizeof(buf));
		fprintf(f, "parties: workload %s: %s\n", v->wl[i].name, buf);
	}
}

_Static_assert(POL_NODES_MAX == ACT_TOPO_NODES_MAX, "policy.h's node bound is the actuators'");

/* The cores as handed out (what one is, siblings and nodes, units per
 * node), and each workload's cpus, threads and nodes. */
static void cores_observe(const struct res_view *v, struct pol_observation *o)
{
	const struct act_topo *topo = &v->caps->topo;
	struct pol_topology *t = &o->topo;
	struct act_cpumask free;

	for (int i = 0; i < v->nwl; i++) {
		o->wl[i].cpus = *v->wl[i].cpus;
		o->wl[i].threads = act_cpumask_count(v->wl[i].cpus);
		o->wl[i].nodes = act_topo_nodes_of(topo, v->wl[i].cpus);
	}
	t->smt = conf(v->cfg)->smt;
	t->topo = topo;
	t->threads_max = topo->threads_max;
	if (!v->info->avail)
		return;
	t->cpus = v->cores->handout;
	t->nodes = act_topo_nodes_of(topo, &t->cpus);
	free = t->cpus;
	for (int i = 0; i < v->nwl; i++)
		if (v->wl[i].alive)
			act_cpumask_andnot(&free, &free, v->wl[i].cpus);
	for (int n = 0; n < ACT_TOPO_NODES_MAX; n++) {
		if (!(t->nodes >> n & 1))
			continue;
		t->node_units[n] = cores_free_on(v->cores, &t->cpus, n);
		t->node_free[n] = cores_free_on(v->cores, &free, n);
	}
}

static void cores_open(const struct cfg *c, struct act_opts *o)
{
	if (conf(c)->on)
		o->resources |= ACT_RES_CPUSET;
}

static bool cores_can(const struct act_caps *c, const char **why)
{
	*why = c->cpuset_reason;
	return c->cpuset;
}

/* The simulator's cores are the count of cpus assign() gives. */
const struct res_ops res_cores_ops = {
	.name = "cores",
	.shown_div = 1,
	.cfg = { .keys = cores_keys,
		 .nkeys = sizeof(cores_keys) / sizeof(cores_keys[0]),
		 .wl_keys = cores_wl_keys,
		 .nwl_keys = sizeof(cores_wl_keys) / sizeof(cores_wl_keys[0]),
		 .wl_initial = 1u << CORES_WL,
		 .resolve = cores_cfg_resolve,
		 .check_wl = cores_cfg_check_wl,
		 .check_live = cores_check_live },
	.loop = { .limits = cores_limits,
		  .initial = initial_cpus,
		  .validate = validate_cpus,
		  .apply = apply_cpus,
		  .observe = cores_observe,
		  .print = print_cores },
	.act = { .open = cores_open, .can = cores_can },
	.log = { .key = "cores", .div = 1, .wl = log_cores },
	.prom = { .name = "parties_cores",
		  .help = "Cores in the workload's cpuset (physical cores under smt = "
			  "whole or primary, cpus under shared).",
		  .scale = 1 },
};
