// SPDX-License-Identifier: MIT
/*
 * Quota: a pooled value per workload, its CFS bandwidth in milli-cores
 * ([resources] quota, quota_step, quota_total; a workload's quota,
 * min_quota, max_quota), through the cpu controller.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "res.h"

#define XSTR(x) STR(x)
#define STR(x)	#x
/* Quotas become integers (milli-cores, then cgroup us): keep them far from overflow. */
#define CORES_MAX                                                                \
	{                                                                        \
		-INFINITY, ACT_CPUMASK_MAX, 0,                                   \
		    "%s must be at most " XSTR(ACT_CPUMASK_MAX) " cores, not %s" \
	}

/* Its keys: [resources] and [workload NAME] (configs/example.ini). */
static const struct res_key quota_keys[] = {
	RES_KEY(CFG_QUOTA, "quota", CFG_KEY_BOOL, RES_C(quota)),
	RES_KEY(CFG_QUOTA_STEP, "quota_step", CFG_KEY_REAL, RES_C(quota_step_mc),
		.rule = { CFG_KEY_ABOVE(0.01, false, "%s must be at least 0.01 cores, not %s"),
			  CORES_MAX },
		.scale = 1000, .def = 0.1),
	/* 0: every managed cpu (its cfg_resolve) */
	RES_KEY(CFG_QUOTA_TOTAL, "quota_total", CFG_KEY_REAL, RES_C(quota_total_mc),
		.rule = { CFG_KEY_ABOVE(0, false, "%s must be >= 0, not %s"), CORES_MAX },
		.scale = 1000),
	/* the CFS period every quota is written in: the kernel's default (what
	 * parties always used); it takes 1 ms to 1 s (min/max_cfs_quota_period,
	 * kernel/sched/core.c). A short period spreads a quota's throttling into
	 * short stalls instead of tens of ms. */
	RES_KEY(CFG_CFS_PERIOD_US, "cfs_period_us", CFG_KEY_WHOLE, RES_C(cfs_period_us), .lo = 1000,
		.hi = 1000000, .def = 100000),
	RES_WL_INITIAL(
	    CFG_WL_QUOTA, "quota", CFG_KEY_REAL, RES_W(quota_mc),
	    .rule = { CFG_KEY_ABOVE(0, true, "%s must be > 0 cores, not %s"), CORES_MAX },
	    .scale = 1000),
	/* not given: quota_step (its cfg_resolve) */
	RES_WL_KEY(CFG_WL_MIN_QUOTA, "min_quota", CFG_KEY_REAL, RES_W(min_quota_mc),
		   .rule = { CFG_KEY_ABOVE(0, true, "%s must be > 0 cores, not %s"), CORES_MAX },
		   .scale = 1000),
	/* 0: quota_total (its cfg_resolve) */
	RES_WL_KEY(CFG_WL_MAX_QUOTA, "max_quota", CFG_KEY_REAL, RES_W(max_quota_mc),
		   .rule = { CFG_KEY_ABOVE(0, false, "%s must be >= 0 cores, not %s"), CORES_MAX },
		   .scale = 1000),
};

static void quota_cfg_resolve(struct cfg *c)
{
	if (!c->quota_total_mc)
		c->quota_total_mc = 1000L * act_cpumask_count(&c->cpus);
	for (int i = 0; i < c->nwl; i++) {
		struct cfg_workload *w = &c->wl[i];

		if (!w->line_of[CFG_WL_MIN_QUOTA])
			w->min_quota_mc = c->quota_step_mc;
		if (!w->max_quota_mc)
			w->max_quota_mc = c->quota_total_mc;
	}
}

/* The smallest CFS quota the kernel accepts per period, in us. */
#define QUOTA_MIN_US 1000

/* Workload i's bounds, against each other, the period and its initial quota. */
static int quota_cfg_check_wl(const struct cfg *c, int i, char *err, size_t len, int *line)
{
	const struct cfg_workload *w = &c->wl[i];
	const int *at = w->line_of, *cat = c->line_of;
	long min_us = (w->min_quota_mc * c->cfs_period_us + 500) / 1000;

	if (!c->quota)
		return 0;
	if (w->min_quota_mc > w->max_quota_mc) {
		*line = at[CFG_WL_MAX_QUOTA] ? at[CFG_WL_MAX_QUOTA] : at[CFG_WL_MIN_QUOTA];
		return cfg_key_err(err, len, "workload %s: min_quota %g > max_quota %g", w->name,
				   w->min_quota_mc / 1000.0, w->max_quota_mc / 1000.0);
	}
	/* the kernel refuses a quota below 1 ms per period (EINVAL): say so now,
	 * not at the first downsize (min_cfs_quota_period, kernel/sched/core.c) */
	if (min_us < QUOTA_MIN_US) {
		*line = cat[CFG_CFS_PERIOD_US] ? cat[CFG_CFS_PERIOD_US]
			: at[CFG_WL_MIN_QUOTA] ? at[CFG_WL_MIN_QUOTA]
			: cat[CFG_QUOTA_STEP]  ? cat[CFG_QUOTA_STEP]
					       : w->line;
		return cfg_key_err(
		    err, len,
		    "cfs_period_us %ld gives workload %s's smallest quota (%g cores) "
		    "%ld us per period; the kernel takes at least %d us",
		    c->cfs_period_us, w->name, w->min_quota_mc / 1000.0, min_us, QUOTA_MIN_US);
	}
	if (at[CFG_WL_QUOTA] && (w->quota_mc < w->min_quota_mc || w->quota_mc > w->max_quota_mc)) {
		*line = at[CFG_WL_QUOTA];
		return cfg_key_err(err, len,
				   "workload %s: quota %g outside min_quota..max_quota (%g..%g)",
				   w->name, w->quota_mc / 1000.0, w->min_quota_mc / 1000.0,
				   w->max_quota_mc / 1000.0);
	}
	return 0;
}

/* The initial quotas (given, or the minimum) fit in quota_total. */
static int quota_cfg_check_all(const struct cfg *c, char *err, size_t len, int *line)
{
	long sum = 0;
	int last = 0; /* the line of the last initial quota given */

	if (!c->quota)
		return 0;
	for (int i = 0; i < c->nwl; i++) {
		const struct cfg_workload *w = &c->wl[i];

		if (w->line_of[CFG_WL_QUOTA]) {
			sum += w->quota_mc;
			last = w->line_of[CFG_WL_QUOTA];
		} else {
			sum += w->min_quota_mc;
		}
	}
	if (sum <= c->quota_total_mc)
		return 0;
	*line = c->line_of[CFG_QUOTA_TOTAL] ? c->line_of[CFG_QUOTA_TOTAL] : last;
	return cfg_key_err(err, len,
			   "the workloads' initial quotas add up to %g cores, quota_total is %g",
			   sum / 1000.0, c->quota_total_mc / 1000.0);
}

static int quota_limits(struct loop *l, char *err, size_t len)
{
	const struct cfg *c = l->cfg;
	const struct loop_caps *k = &l->caps;
	struct pol_res_info *r = &l->res[POL_RES_QUOTA];

	*r = (struct pol_res_info){ .pooled = true,
				    .step = c->quota_step_mc,
				    .total = c->quota_total_mc };
	if (c->quota) {
		if (!k->res[POL_RES_QUOTA]) {
			loop_msg(err, len,
				 "[resources] quota = true but cpu quota cannot be set here: %s",
				 k->why[POL_RES_QUOTA]);
			return -EOPNOTSUPP;
		}
		r->avail = true;
	}
	for (int i = 0; i < l->nwl; i++) {
		const struct cfg_workload *w = &c->wl[i];
		struct loop_wl *lw = &l->wl[i];

		/* bounds resolved by the config (cfg_resolve: a step .. the total) */
		lw->min[POL_RES_QUOTA] = r->avail ? w->min_quota_mc : 0;
		lw->max[POL_RES_QUOTA] = r->avail ? w->max_quota_mc : 0;
	}
	return 0;
}

static int initial_quota(struct loop *l, char *err, size_t len)
{
	const struct cfg *c = l->cfg;
	long step = l->res[POL_RES_QUOTA].step, rem = l->res[POL_RES_QUOTA].total;
	int nfair = 0;

	for (int i = 0; i < l->nwl; i++) {
		if (c->wl[i].quota_mc > 0) {
			l->wl[i].alloc[POL_RES_QUOTA] = c->wl[i].quota_mc;
			rem -= l->wl[i].alloc[POL_RES_QUOTA];
		} else {
			nfair++;
		}
	}
	for (int i = 0; i < l->nwl; i++) {
		long q;

		if (c->wl[i].quota_mc > 0)
			continue;
		q = nfair ? rem / nfair / step * step : 0;
		if (q < l->wl[i].min[POL_RES_QUOTA])
			q = l->wl[i].min[POL_RES_QUOTA];
		if (q > l->wl[i].max[POL_RES_QUOTA])
			q = l->wl[i].max[POL_RES_QUOTA];
		l->wl[i].alloc[POL_RES_QUOTA] = q;
	}
	return 0;
}

static bool quota_managed(const struct cfg *c)
{
	return c->quota;
}

static bool quota_can(const struct act_caps *c, const char **why)
{
	*why = c->quota_reason;
	return c->quota;
}

static void quota_add(struct act_workload_opts *o, long v)
{
	o->quota_mc = v;
}

static int quota_set(struct act *act, struct act_workload *wl, long v)
{
	return act_workload_set_quota(act, wl, v);
}

static void quota_sim(struct res_sim *s, long v)
{
	s->quota_mc = v;
}

const struct res_ops res_quota_ops = {
	.name = "quota",
	.keys = quota_keys,
	.nkeys = sizeof(quota_keys) / sizeof(quota_keys[0]),
	.cfg_resolve = quota_cfg_resolve,
	.cfg_check_wl = quota_cfg_check_wl,
	.cfg_check_all = quota_cfg_check_all,
	.shown_div = 1,
	.limits = quota_limits,
	.initial = initial_quota,
	.managed = quota_managed,
	.act_res = ACT_RES_QUOTA,
	.act_can = quota_can,
	.act_add = quota_add,
	.act_set = quota_set,
	.sim_set = quota_sim,
	.log_key = "quota",
	.log_div = 1000.0,
	.log_prec = 2,
	.prom_name = "parties_quota_cores",
	.prom_help = "CFS bandwidth limit of the workload, in cores.",
	.prom_scale = 1e-3,
};
