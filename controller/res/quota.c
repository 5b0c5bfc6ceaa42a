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
