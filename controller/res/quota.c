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

/* Its settings: [resources] quota, quota_step, quota_total, cfs_period_us and
 * a workload's quota, min_quota, max_quota (configs/example.ini), in
 * milli-cores. */
struct quota_conf {
	bool on;
	long step_mc, total_mc;
	long cfs_period_us; /* the CFS period quotas are written in */
};
struct quota_wl_conf {
	long mc; /* initial cpu quota; 0 = fair share */
	long min_mc, max_mc;
};
RES_CONF_FITS(struct quota_conf);
RES_CONF_FITS(struct quota_wl_conf);

#define C(f) CFG_KEY_AT(struct quota_conf, f)
#define W(f) CFG_KEY_AT(struct quota_wl_conf, f)

enum { QUOTA_ON, QUOTA_STEP, QUOTA_TOTAL, QUOTA_PERIOD };
static const struct cfg_key quota_keys[] = {
	[QUOTA_ON] = { "quota", CFG_KEY_BOOL, C(on) },
	[QUOTA_STEP] = { "quota_step", CFG_KEY_REAL, C(step_mc),
			 .rule = { CFG_KEY_ABOVE(0.01, false,
						 "%s must be at least 0.01 cores, not %s"),
				   CORES_MAX },
			 .scale = 1000, .def = 0.1 },
	/* 0: every managed cpu (its resolve) */
	[QUOTA_TOTAL] = { "quota_total", CFG_KEY_REAL, C(total_mc),
			  .rule = { CFG_KEY_ABOVE(0, false, "%s must be >= 0, not %s"), CORES_MAX },
			  .scale = 1000 },
	/* the CFS period every quota is written in: the kernel's default (what
	 * parties always used); it takes 1 ms to 1 s (min/max_cfs_quota_period,
	 * kernel/sched/core.c). A short period spreads a quota's throttling into
	 * short stalls instead of tens of ms. */
	[QUOTA_PERIOD] = { "cfs_period_us", CFG_KEY_WHOLE, C(cfs_period_us), .lo = 1000,
			   .hi = 1000000, .def = 100000 },
};

enum { QUOTA_WL, QUOTA_WL_MIN, QUOTA_WL_MAX };
static const struct cfg_key quota_wl_keys[] = {
	[QUOTA_WL] = { "quota", CFG_KEY_REAL, W(mc),
		       .rule = { CFG_KEY_ABOVE(0, true, "%s must be > 0 cores, not %s"),
				 CORES_MAX },
		       .scale = 1000 },
	/* not given: quota_step (its resolve) */
	[QUOTA_WL_MIN] = { "min_quota", CFG_KEY_REAL, W(min_mc),
			   .rule = { CFG_KEY_ABOVE(0, true, "%s must be > 0 cores, not %s"),
				     CORES_MAX },
			   .scale = 1000 },
	/* 0: quota_total (its resolve) */
	[QUOTA_WL_MAX] = { "max_quota", CFG_KEY_REAL, W(max_mc),
			   .rule = { CFG_KEY_ABOVE(0, false, "%s must be >= 0 cores, not %s"),
				     CORES_MAX },
			   .scale = 1000 },
};

static const struct quota_conf *conf(const struct cfg *c)
{
	return res_conf(c, POL_RES_QUOTA);
}

static const struct quota_wl_conf *wl_conf(const struct cfg *c, int i)
{
	return res_wl_conf(c, i, POL_RES_QUOTA);
}

static void quota_cfg_resolve(struct cfg *c)
{
	struct quota_conf *q = (struct quota_conf *)c->res[POL_RES_QUOTA].conf;

	if (!q->total_mc)
		q->total_mc = 1000L * act_cpumask_count(&c->cpus);
	for (int i = 0; i < c->nwl; i++) {
		struct quota_wl_conf *w = (struct quota_wl_conf *)c->wl[i].res[POL_RES_QUOTA].conf;

		if (!res_wl_line(&c->wl[i], POL_RES_QUOTA, QUOTA_WL_MIN))
			w->min_mc = q->step_mc;
		if (!w->max_mc)
			w->max_mc = q->total_mc;
	}
}

/* The smallest CFS quota the kernel accepts per period, in us. */
#define QUOTA_MIN_US 1000

/* Workload i's bounds, against each other, the period and its initial quota. */
static int quota_cfg_check_wl(const struct cfg *c, int i, char *err, size_t len, int *line)
{
	const struct cfg_workload *cw = &c->wl[i];
	const struct quota_conf *q = conf(c);
	const struct quota_wl_conf *w = wl_conf(c, i);
	const int *at = cw->res[POL_RES_QUOTA].line_of, *cat = c->res[POL_RES_QUOTA].line_of;
	long min_us = (w->min_mc * q->cfs_period_us + 500) / 1000;

	if (!q->on)
		return 0;
	if (w->min_mc > w->max_mc) {
		*line = at[QUOTA_WL_MAX] ? at[QUOTA_WL_MAX] : at[QUOTA_WL_MIN];
		return cfg_key_err(err, len, "workload %s: min_quota %g > max_quota %g", cw->name,
				   w->min_mc / 1000.0, w->max_mc / 1000.0);
	}
	/* the kernel refuses a quota below 1 ms per period (EINVAL): say so now,
	 * not at the first downsize (min_cfs_quota_period, kernel/sched/core.c) */
	if (min_us < QUOTA_MIN_US) {
		*line = cat[QUOTA_PERIOD]  ? cat[QUOTA_PERIOD]
			: at[QUOTA_WL_MIN] ? at[QUOTA_WL_MIN]
			: cat[QUOTA_STEP]  ? cat[QUOTA_STEP]
					   : cw->line;
		return cfg_key_err(
		    err, len,
		    "cfs_period_us %ld gives workload %s's smallest quota (%g cores) "
		    "%ld us per period; the kernel takes at least %d us",
		    q->cfs_period_us, cw->name, w->min_mc / 1000.0, min_us, QUOTA_MIN_US);
	}
	if (at[QUOTA_WL] && (w->mc < w->min_mc || w->mc > w->max_mc)) {
		*line = at[QUOTA_WL];
		return cfg_key_err(
		    err, len, "workload %s: quota %g outside min_quota..max_quota (%g..%g)",
		    cw->name, w->mc / 1000.0, w->min_mc / 1000.0, w->max_mc / 1000.0);
	}
	return 0;
}

/* The initial quotas (given, or the minimum) fit in quota_total. */
static int quota_cfg_check_all(const struct cfg *c, char *err, size_t len, int *line)
{
	const struct quota_conf *q = conf(c);
	long sum = 0;
	int last = 0; /* the line of the last initial quota given */

	if (!q->on)
		return 0;
	for (int i = 0; i < c->nwl; i++) {
		const struct quota_wl_conf *w = wl_conf(c, i);
		int at = res_wl_line(&c->wl[i], POL_RES_QUOTA, QUOTA_WL);

		if (at) {
			sum += w->mc;
			last = at;
		} else {
			sum += w->min_mc;
		}
	}
	if (sum <= q->total_mc)
		return 0;
	*line = res_line(c, POL_RES_QUOTA, QUOTA_TOTAL) ? res_line(c, POL_RES_QUOTA, QUOTA_TOTAL)
							: last;
	return cfg_key_err(err, len,
			   "the workloads' initial quotas add up to %g cores, quota_total is %g",
			   sum / 1000.0, q->total_mc / 1000.0);
}

static int quota_limits(struct res_view *v, char *err, size_t len)
{
	const struct quota_conf *c = conf(v->cfg);
	const struct loop_caps *k = v->caps;
	struct pol_res_info *r = v->info;

	*r = (struct pol_res_info){ .pooled = true, .step = c->step_mc, .total = c->total_mc };
	if (c->on) {
		if (!k->res[POL_RES_QUOTA]) {
			loop_msg(err, len,
				 "[resources] quota = true but cpu quota cannot be set here: %s",
				 k->why[POL_RES_QUOTA]);
			return -EOPNOTSUPP;
		}
		r->avail = true;
	}
	for (int i = 0; i < v->nwl; i++) {
		const struct quota_wl_conf *w = wl_conf(v->cfg, i);

		/* bounds resolved by the config (resolve: a step .. the total) */
		*v->wl[i].min = r->avail ? w->min_mc : 0;
		*v->wl[i].max = r->avail ? w->max_mc : 0;
	}
	return 0;
}

static int initial_quota(struct res_view *v, char *err, size_t len)
{
	long step = v->info->step, rem = v->info->total;
	int nfair = 0;

	for (int i = 0; i < v->nwl; i++) {
		long want = wl_conf(v->cfg, i)->mc;

		if (want > 0) {
			*v->wl[i].alloc = want;
			rem -= want;
		} else {
			nfair++;
		}
	}
	for (int i = 0; i < v->nwl; i++) {
		long q;

		if (wl_conf(v->cfg, i)->mc > 0)
			continue;
		q = nfair ? rem / nfair / step * step : 0;
		if (q < *v->wl[i].min)
			q = *v->wl[i].min;
		if (q > *v->wl[i].max)
			q = *v->wl[i].max;
		*v->wl[i].alloc = q;
	}
	return 0;
}

/* Managed with quota = true; every quota is written in its period. */
static void quota_open(const struct cfg *c, struct act_opts *o)
{
	if (conf(c)->on)
		o->resources |= ACT_RES_QUOTA;
	o->quota_period_us = (unsigned int)conf(c)->cfs_period_us;
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
	.shown_div = 1,
	.cfg = { .keys = quota_keys,
		 .nkeys = sizeof(quota_keys) / sizeof(quota_keys[0]),
		 .wl_keys = quota_wl_keys,
		 .nwl_keys = sizeof(quota_wl_keys) / sizeof(quota_wl_keys[0]),
		 .wl_initial = 1u << QUOTA_WL,
		 .resolve = quota_cfg_resolve,
		 .check_wl = quota_cfg_check_wl,
		 .check_all = quota_cfg_check_all },
	.loop = { .limits = quota_limits, .initial = initial_quota },
	.act = { .open = quota_open, .can = quota_can, .add = quota_add, .set = quota_set },
	.sim = { .set = quota_sim },
	.log = { .key = "quota", .div = 1000.0, .prec = 2 },
	.prom = { .name = "parties_quota_cores",
		  .help = "CFS bandwidth limit of the workload, in cores.",
		  .scale = 1e-3 },
};
