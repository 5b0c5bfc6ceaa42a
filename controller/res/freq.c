// SPDX-License-Identifier: MIT
/*
 * Frequency: a private value per workload, the maximum frequency of its
 * cpus in kHz ([resources] freq, freq_min_mhz, freq_max_mhz, freq_step_mhz;
 * a workload's freq_mhz), through cpufreq's scaling_max_freq.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "res.h"

/* Its keys: [resources] and [workload NAME] (configs/example.ini). */
static const struct res_key freq_keys[] = {
	RES_KEY(CFG_FREQ, "freq", CFG_KEY_TRISTATE, RES_C(freq), .def = CFG_AUTO),
	RES_KEY(CFG_FREQ_MIN_MHZ, "freq_min_mhz", CFG_KEY_WHOLE, RES_C(freq_min_khz), .lo = 0,
		.hi = 100000, .scale = 1000),
	RES_KEY(CFG_FREQ_MAX_MHZ, "freq_max_mhz", CFG_KEY_WHOLE, RES_C(freq_max_khz), .lo = 0,
		.hi = 100000, .scale = 1000),
	RES_KEY(CFG_FREQ_STEP_MHZ, "freq_step_mhz", CFG_KEY_WHOLE, RES_C(freq_step_khz), .lo = 1,
		.hi = 10000, .scale = 1000, .def = 100),
	RES_WL_INITIAL(CFG_WL_FREQ_MHZ, "freq_mhz", CFG_KEY_WHOLE, RES_W(freq_khz), .lo = 0,
		       .hi = 100000, .scale = 1000),
};

/* The [resources] bounds, when both are given, in order. */
static int freq_cfg_check(const struct cfg *c, char *err, size_t len, int *line)
{
	if (!c->freq_min_khz || !c->freq_max_khz || c->freq_min_khz <= c->freq_max_khz)
		return 0;
	*line = c->line_of[CFG_FREQ_MAX_MHZ];
	return cfg_key_err(err, len, "[resources] freq_min_mhz %ld > freq_max_mhz %ld",
			   c->freq_min_khz / 1000, c->freq_max_khz / 1000);
}

static int freq_limits(struct loop *l, char *err, size_t len)
{
	const struct cfg *c = l->cfg;
	const struct loop_caps *k = &l->caps;
	struct pol_res_info *r = &l->res[POL_RES_FREQ];
	long fmin = k->lo[POL_RES_FREQ], fmax = k->hi[POL_RES_FREQ];

	if (c->freq_min_khz && c->freq_min_khz > fmin)
		fmin = c->freq_min_khz;
	if (c->freq_max_khz && c->freq_max_khz < fmax)
		fmax = c->freq_max_khz;
	*r = (struct pol_res_info){ .step = c->freq_step_khz };
	if (c->freq == CFG_ON && !k->res[POL_RES_FREQ]) {
		loop_msg(err, len, "[resources] freq = true but cpufreq cannot be used here: %s",
			 k->why[POL_RES_FREQ]);
		return -EOPNOTSUPP;
	}
	if (c->freq != CFG_OFF && k->res[POL_RES_FREQ] && fmin < fmax)
		r->avail = true;
	for (int i = 0; i < l->nwl; i++) {
		l->wl[i].min[POL_RES_FREQ] = r->avail ? fmin : 0;
		l->wl[i].max[POL_RES_FREQ] = r->avail ? fmax : 0;
	}
	return 0;
}

/* Initial frequency: the workload's own, else the highest, within the limits. */
static int initial_freq(struct loop *l, char *err, size_t len)
{
	for (int i = 0; i < l->nwl; i++) {
		struct loop_wl *lw = &l->wl[i];
		long fmin = lw->min[POL_RES_FREQ], fmax = lw->max[POL_RES_FREQ];
		long f = l->cfg->wl[i].freq_khz ? l->cfg->wl[i].freq_khz : fmax;

		lw->alloc[POL_RES_FREQ] = f < fmin ? fmin : f > fmax ? fmax : f;
	}
	return 0;
}

static bool freq_managed(const struct cfg *c)
{
	return c->freq != CFG_OFF;
}

static bool freq_can(const struct act_caps *c, const char **why)
{
	*why = c->cpufreq_reason;
	return c->cpufreq;
}

/* whole MHz, the unit of the config's steps and of the log */
static void freq_range(const struct act_caps *c, long *lo, long *hi)
{
	*lo = (long)(c->freq_min_khz / 1000 * 1000);
	*hi = (long)(c->freq_max_khz / 1000 * 1000);
}

static void freq_sim_range(const struct cfg_sim *s, long *lo, long *hi)
{
	*lo = s->freq_min_khz;
	*hi = s->freq_max_khz;
}

static void freq_add(struct act_workload_opts *o, long v)
{
	o->freq_max_khz = (unsigned long)v;
}

static int freq_set(struct act *act, struct act_workload *wl, long v)
{
	return act_workload_set_freq(act, wl, (unsigned long)v);
}

/* A frequency limit is a cap, as scaling_max_freq: the cores run at the
 * highest step of the modelled machine at or below it. */
static void freq_sim(struct res_sim *s, long f)
{
	if (f > 0 && s->fstep_khz > 0)
		f = f < s->fmin_khz ? s->fmin_khz
				    : s->fmin_khz + (f - s->fmin_khz) / s->fstep_khz * s->fstep_khz;
	s->freq_khz = f;
}

const struct res_ops res_freq_ops = {
	.name = "freq",
	.keys = freq_keys,
	.nkeys = sizeof(freq_keys) / sizeof(freq_keys[0]),
	.cfg_check = freq_cfg_check,
	.shown_div = 1000, /* MHz */
	.limits = freq_limits,
	.initial = initial_freq,
	.managed = freq_managed,
	.act_res = ACT_RES_CPUFREQ,
	.act_can = freq_can,
	.act_range = freq_range,
	.act_add = freq_add,
	.act_set = freq_set,
	.sim_range = freq_sim_range,
	.sim_set = freq_sim,
	.log_key = "freq_mhz",
	.log_div = 1000, /* kHz inside, MHz in the log */
	.log_prec = 0,
	.prom_name = "parties_frequency_hertz",
	.prom_help = "Maximum frequency of the workload's CPUs.",
	.prom_scale = 1e3,
};
