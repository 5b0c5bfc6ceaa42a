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
#include <string.h>

#include "res.h"

/* Its keys: [resources] and [workload NAME] (configs/example.ini). */
static const struct res_key cores_keys[] = {
	RES_KEY(CFG_CORES, "cores", CFG_KEY_BOOL, RES_C(cores), .def = true),
	/* what a core handed out is (policy.h, enum pol_smt) */
	RES_KEY(CFG_SMT, "smt", CFG_KEY_CHOICE, RES_C(smt),
		.names = (const char *const[]){ "whole", "primary", "shared", NULL },
		.msg = "%s: '%s' must be whole, primary or shared", .def = POL_SMT_WHOLE),
	RES_WL_KEY(CFG_WL_MIN_CORES, "min_cores", CFG_KEY_WHOLE, RES_W(min_cores), .lo = 1,
		   .hi = ACT_CPUMASK_MAX, .def = 1),
	/* 0: every managed cpu (its cfg_resolve) */
	RES_WL_KEY(CFG_WL_MAX_CORES, "max_cores", CFG_KEY_WHOLE, RES_W(max_cores), .lo = 0,
		   .hi = ACT_CPUMASK_MAX),
	RES_WL_INITIAL(CFG_WL_CORES, "cores", CFG_KEY_WHOLE, RES_W(cores), .lo = 1,
		       .hi = ACT_CPUMASK_MAX),
};

static void cores_cfg_resolve(struct cfg *c)
{
	for (int i = 0; i < c->nwl; i++)
		if (!c->wl[i].max_cores)
			c->wl[i].max_cores = act_cpumask_count(&c->cpus);
}

/* Explicit cpus, against the config alone: managed ones, nobody else's
 * (the workloads before i), under smt = shared as many as its cores allow. */
static int cfg_check_cpus(const struct cfg *c, int i, char *err, size_t len, int *line)
{
	const struct cfg_workload *w = &c->wl[i];
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
	if (c->smt != POL_SMT_SHARED)
		return 0;
	if (w->cores && w->cores != n)
		return cfg_key_err(err, len, "workload %s: cpus has %d cpus but cores = %d",
				   w->name, n, w->cores);
	if (n < w->min_cores || n > w->max_cores)
		return cfg_key_err(err, len,
				   "workload %s: %d cpus outside min_cores..max_cores (%d..%d)",
				   w->name, n, w->min_cores, w->max_cores);
	return 0;
}

/* The cpus a workload needs at least: its explicit ones, its cores, or its minimum. */
static int cfg_need(const struct cfg_workload *w)
{
	return w->has_cpus ? act_cpumask_count(&w->cpus) : w->cores ? w->cores : w->min_cores;
}

/* Workload i's bounds, initial count and explicit cpus, and what it and
 * the workloads before it need at least against the managed cpus. */
static int cores_cfg_check_wl(const struct cfg *c, int i, char *err, size_t len, int *line)
{
	const struct cfg_workload *w = &c->wl[i];
	const int *at = w->line_of;
	int ncpus = act_cpumask_count(&c->cpus), need = 0;

	if (w->min_cores > w->max_cores) {
		*line = at[CFG_WL_MAX_CORES] ? at[CFG_WL_MAX_CORES] : at[CFG_WL_MIN_CORES];
		return cfg_key_err(err, len, "workload %s: min_cores %d > max_cores %d", w->name,
				   w->min_cores, w->max_cores);
	}
	if (w->cores && (w->cores < w->min_cores || w->cores > w->max_cores)) {
		*line = at[CFG_WL_CORES];
		return cfg_key_err(err, len,
				   "workload %s: cores %d outside min_cores..max_cores (%d..%d)",
				   w->name, w->cores, w->min_cores, w->max_cores);
	}
	if (w->has_cpus && cfg_check_cpus(c, i, err, len, line))
		return -EINVAL;
	for (int k = 0; k <= i; k++)
		need += cfg_need(&c->wl[k]);
	if (need > ncpus) {
		*line = w->line;
		return cfg_key_err(
		    err, len, "workload %s: the workloads need at least %d cpus, %d are managed",
		    w->name, need, ncpus);
	}
	return 0;
}

/* A workload's explicit cpus under smt: whole units, as many as its bounds
 * allow (the config counted cpus; under whole a core is more than one). */
static int check_wl_units(const struct loop *l, int i, char *err, size_t len)
{
	const struct cfg *c = l->cfg;
	const struct cfg_workload *w = &c->wl[i];
	const struct loop_wl *lw = &l->wl[i];
	int line = w->line_of[CFG_WL_CPUS], n;
	char why[192];

	if (cores_check(&l->cores, &w->cpus, why, sizeof(why))) {
		loop_msg(err, len, "%s:%d: workload %s: %s", c->file, line, w->name, why);
		return -EINVAL;
	}
	n = cores_count(&l->cores, &w->cpus);
	if ((w->cores && w->cores != n) || n < lw->min[POL_RES_CORES] ||
	    n > lw->max[POL_RES_CORES]) {
		loop_msg(err, len, "%s:%d: workload %s: cpus are %d cores (smt = %s), not %s",
			 c->file, line, w->name, n,
			 c->smt == POL_SMT_WHOLE     ? "whole"
			 : c->smt == POL_SMT_PRIMARY ? "primary"
						     : "shared",
			 w->cores ? "its cores =" : "within min_cores..max_cores");
		return -EINVAL;
	}
	return 0;
}

static int cores_limits(struct loop *l, char *err, size_t len)
{
	const struct cfg *c = l->cfg;
	const struct loop_caps *k = &l->caps;
	struct pol_res_info *r = &l->res[POL_RES_CORES];
	int ncpus = act_cpumask_count(&c->cpus);

	*r = (struct pol_res_info){ .pooled = true, .step = 1, .total = ncpus };
	if (c->cores) {
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
		if (cores_init(&l->cores, &k->topo, &c->cpus, c->smt, buf2, sizeof(buf2))) {
			loop_msg(err, len, "%s:%d: %s", c->file,
				 c->line_of[CFG_SMT] ? c->line_of[CFG_SMT] : c->line_of[CFG_CPUS],
				 buf2);
			return -EINVAL;
		}
		r->total = l->cores.nunits;
	}
	for (int i = 0; i < l->nwl; i++) {
		const struct cfg_workload *w = &c->wl[i];
		struct loop_wl *lw = &l->wl[i];

		lw->min[POL_RES_CORES] = r->avail ? w->min_cores : 0;
		lw->max[POL_RES_CORES] = r->avail ? w->max_cores : 0; /* resolved by the config */
		/* the default, every managed cpu, is every unit (whole cores may be fewer) */
		if (!w->line_of[CFG_WL_MAX_CORES] && lw->max[POL_RES_CORES] > r->total)
			lw->max[POL_RES_CORES] = r->total;
		if (r->avail && w->has_cpus && check_wl_units(l, i, err, len))
			return -EINVAL;
	}
	return 0;
}

/* Initial cpus: explicit lists, then counts, then a fair share of the rest
 * round robin (as the original code hands out every core); each core the
 * lowest free one on the workload's node (cores.h). */
static int initial_cpus(struct loop *l, char *err, size_t len)
{
	const struct cfg *c = l->cfg;
	struct act_cpumask free = l->cores.handout;
	bool fair[CFG_MAX_WL] = { false };
	int nfair = 0;

	for (int i = 0; i < l->nwl; i++) {
		act_cpumask_zero(&l->wl[i].cpus);
		if (c->wl[i].has_cpus) {
			l->wl[i].cpus = c->wl[i].cpus;
			act_cpumask_andnot(&free, &free, &c->wl[i].cpus);
		}
	}
	for (int i = 0; i < l->nwl; i++) {
		int want = c->wl[i].has_cpus ? 0
			   : c->wl[i].cores  ? c->wl[i].cores
					     : c->wl[i].min_cores;

		if (!c->wl[i].has_cpus && !c->wl[i].cores) {
			fair[i] = true;
			nfair++;
		}
		for (int k = 0; k < want; k++) {
			if (cores_grow(&l->cores, &l->wl[i].cpus, &free, -1)) {
				loop_msg(err, len,
					 "workload %s: no core left for its initial allocation",
					 l->wl[i].name);
				return -ENOSPC;
			}
		}
	}
	while (nfair && !act_cpumask_empty(&free)) {
		bool gave = false;

		for (int i = 0; i < l->nwl && !act_cpumask_empty(&free); i++) {
			if (!fair[i] ||
			    cores_count(&l->cores, &l->wl[i].cpus) >= l->wl[i].max[POL_RES_CORES])
				continue;
			if (cores_grow(&l->cores, &l->wl[i].cpus, &free, -1))
				break;
			gave = true;
		}
		if (!gave)
			break;
	}
	for (int i = 0; i < l->nwl; i++)
		l->wl[i].alloc[POL_RES_CORES] = cores_count(&l->cores, &l->wl[i].cpus);
	return 0;
}

static int cores_units_on(const struct loop *l, int node)
{
	return cores_free_on(&l->cores, &l->cores.handout, node);
}

/* Explicit cpus: on a managed resource, managed cpus only, whole units (a
 * core is never split between workloads under smt = whole), the right
 * count, no cpu asked for twice; a node asked for has managed cores. */
static int validate_cpus(const struct loop *l, const struct pol_decision *dec, char *why,
			 size_t len)
{
	struct act_cpumask seen;

	act_cpumask_zero(&seen);
	for (int i = 0; i < l->nwl; i++) {
		const struct pol_wl_decision *d = &dec->wl[i];
		char msg[160];

		if (d->set_node &&
		    (!l->wl[i].alive || !l->res[POL_RES_CORES].avail || d->node < 0 ||
		     d->node >= ACT_TOPO_NODES_MAX || !cores_units_on(l, d->node))) {
			loop_msg(why, len, "node %d for %s: %s", d->node, l->wl[i].name,
				 !l->wl[i].alive		? "it is gone"
				 : !l->res[POL_RES_CORES].avail ? "cores are not a resource here"
								: "no managed core is on it");
			return -EINVAL;
		}
		if (!d->set_cpus)
			continue;
		if (!l->wl[i].alive || !l->res[POL_RES_CORES].avail) {
			loop_msg(why, len, "cpus for %s: %s", l->wl[i].name,
				 l->wl[i].alive ? "cores are not a resource here" : "it is gone");
			return -EINVAL;
		}
		if (!act_cpumask_subset(&d->cpus, &l->cfg->cpus)) {
			loop_msg(why, len, "cpus for %s: not all managed", l->wl[i].name);
			return -EINVAL;
		}
		if (cores_check(&l->cores, &d->cpus, msg, sizeof(msg))) {
			loop_msg(why, len, "cpus for %s: %s", l->wl[i].name, msg);
			return -EINVAL;
		}
		if (cores_count(&l->cores, &d->cpus) != d->alloc[POL_RES_CORES]) {
			loop_msg(why, len, "cpus for %s: %d %s for %ld cores", l->wl[i].name,
				 cores_count(&l->cores, &d->cpus),
				 l->cfg->smt == POL_SMT_SHARED ? "cpus" : "cores",
				 d->alloc[POL_RES_CORES]);
			return -EINVAL;
		}
		if (act_cpumask_intersects(&d->cpus, &seen)) {
			loop_msg(why, len, "cpus for %s: given to another workload too",
				 l->wl[i].name);
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
static void apply_cpus(struct loop *l, const struct pol_decision *dec, struct pol_outcome *out,
		       bool *changed)
{
	struct act_cpumask free, nc[CFG_MAX_WL], named;
	int wls[CFG_MAX_WL], n = 0;

	act_cpumask_zero(&named);
	for (int i = 0; i < l->nwl; i++)
		if (dec->wl[i].set_cpus)
			act_cpumask_or(&named, &named, &dec->wl[i].cpus);
	free = l->cores.handout;
	for (int i = 0; i < l->nwl; i++) {
		nc[i] = dec->wl[i].set_cpus ? dec->wl[i].cpus : l->wl[i].cpus;
		if (!dec->wl[i].set_cpus)
			act_cpumask_andnot(&nc[i], &nc[i], &named);
		act_cpumask_andnot(&free, &free, &nc[i]);
	}
	for (int i = 0; i < l->nwl; i++) {
		int node = dec->wl[i].set_node ? dec->wl[i].node : -1;

		while (cores_count(&l->cores, &nc[i]) > dec->wl[i].alloc[POL_RES_CORES])
			if (cores_shrink(&l->cores, &nc[i], &free, node))
				break;
	}
	for (int i = 0; i < l->nwl; i++)
		if (dec->wl[i].set_node && !dec->wl[i].set_cpus)
			cores_migrate(&l->cores, &nc[i], &free, dec->wl[i].node);
	for (int i = 0; i < l->nwl; i++) {
		int node = dec->wl[i].set_node ? dec->wl[i].node : -1;

		while (cores_count(&l->cores, &nc[i]) < dec->wl[i].alloc[POL_RES_CORES])
			if (cores_grow(&l->cores, &nc[i], &free, node))
				break; /* validation makes this impossible */
	}
	for (int i = 0; i < l->nwl; i++) {
		if (!l->wl[i].alive || act_cpumask_equal(&nc[i], &l->wl[i].cpus))
			continue;
		wls[n] = i;
		nc[n] = nc[i]; /* compact: n <= i */
		n++;
	}
	if (!n)
		return;
	*changed = true;
	if (l->mops->assign_cpus(l->mctx, wls, nc, n)) {
		out->applied = false;
		loop_msg(out->why, sizeof(out->why), "cores: %s", l->mops->last_error(l->mctx));
		return;
	}
	for (int k = 0; k < n; k++) {
		l->wl[wls[k]].cpus = nc[k];
		l->wl[wls[k]].alloc[POL_RES_CORES] = cores_count(&l->cores, &nc[k]);
	}
}

/* The count, always (0 when cores are not managed), and which cpus. */
static void log_cores(struct log_json *j, const struct loop *l, const struct loop_wl *w)
{
	char buf[256];

	log_json_int(j, "cores", w->alloc[POL_RES_CORES]);
	act_cpumask_format(&w->cpus, buf, sizeof(buf));
	log_json_str(j, "cpus", l->res[POL_RES_CORES].avail ? buf : NULL);
}

void loop_print_cores(const struct loop *l, FILE *f)
{
	char buf[2304];

	if (!l->res[POL_RES_CORES].avail)
		return;
	cores_describe(&l->cores, NULL, buf, sizeof(buf));
	fprintf(f, "parties: topology: %s\n", buf);
	for (int i = 0; i < l->nwl; i++) {
		if (!l->wl[i].alive)
			continue;
		cores_describe(&l->cores, &l->wl[i].cpus, buf, sizeof(buf));
		fprintf(f, "parties: workload %s: %s\n", l->wl[i].name, buf);
	}
}

_Static_assert(POL_NODES_MAX == ACT_TOPO_NODES_MAX, "policy.h's node bound is the actuators'");

/* The cores as handed out (what one is, siblings and nodes, units per
 * node), and each workload's cpus, threads and nodes. */
static void cores_observe(const struct loop *l, struct pol_observation *o)
{
	struct pol_topology *t = &o->topo;
	struct act_cpumask free;

	for (int i = 0; i < l->nwl; i++) {
		o->wl[i].cpus = l->wl[i].cpus;
		o->wl[i].threads = act_cpumask_count(&l->wl[i].cpus);
		o->wl[i].nodes = act_topo_nodes_of(&l->caps.topo, &l->wl[i].cpus);
	}
	t->smt = l->cfg->smt;
	t->topo = &l->caps.topo;
	t->threads_max = l->caps.topo.threads_max;
	if (!l->res[POL_RES_CORES].avail)
		return;
	t->cpus = l->cores.handout;
	t->nodes = act_topo_nodes_of(&l->caps.topo, &t->cpus);
	free = t->cpus;
	for (int i = 0; i < l->nwl; i++)
		if (l->wl[i].alive)
			act_cpumask_andnot(&free, &free, &l->wl[i].cpus);
	for (int n = 0; n < ACT_TOPO_NODES_MAX; n++) {
		if (!(t->nodes >> n & 1))
			continue;
		t->node_units[n] = cores_free_on(&l->cores, &t->cpus, n);
		t->node_free[n] = cores_free_on(&l->cores, &free, n);
	}
}

static bool cores_managed(const struct cfg *c)
{
	return c->cores;
}

static bool cores_can(const struct act_caps *c, const char **why)
{
	*why = c->cpuset_reason;
	return c->cpuset;
}

/* The simulator's cores are the count of cpus assign_cpus() gives. */
const struct res_ops res_cores_ops = {
	.name = "cores",
	.keys = cores_keys,
	.nkeys = sizeof(cores_keys) / sizeof(cores_keys[0]),
	.cfg_resolve = cores_cfg_resolve,
	.cfg_check_wl = cores_cfg_check_wl,
	.shown_div = 1,
	.limits = cores_limits,
	.initial = initial_cpus,
	.validate = validate_cpus,
	.apply = apply_cpus,
	.observe = cores_observe,
	.managed = cores_managed,
	.act_res = ACT_RES_CPUSET,
	.act_can = cores_can,
	.log_key = "cores",
	.log_div = 1,
	.log_wl = log_cores,
	.prom_name = "parties_cores",
	.prom_help = "Cores in the workload's cpuset (physical cores under smt = "
		     "whole or primary, cpus under shared).",
	.prom_scale = 1,
};
