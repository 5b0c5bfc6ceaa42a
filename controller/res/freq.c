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

/* Its settings: [resources] freq, freq_min_mhz, freq_max_mhz, freq_step_mhz
 * and a workload's freq_mhz (configs/example.ini), in kHz. */
struct freq_conf {
	enum cfg_tristate on; /* auto = where cpufreq exists */
	/* bounds of the frequency range; 0 = the hardware's */
	long min_khz, max_khz, step_khz;
};
struct freq_wl_conf {
	long khz; /* initial max frequency; 0 = the highest allowed */
};
RES_CONF_FITS(struct freq_conf);
RES_CONF_FITS(struct freq_wl_conf);

#define C(f) CFG_KEY_AT(struct freq_conf, f)
#define W(f) CFG_KEY_AT(struct freq_wl_conf, f)

enum { FREQ_ON, FREQ_MIN, FREQ_MAX, FREQ_STEP };
static const struct cfg_key freq_keys[] = {
	[FREQ_ON] = { "freq", CFG_KEY_TRISTATE, C(on), .def = CFG_AUTO },
	[FREQ_MIN] = { "freq_min_mhz", CFG_KEY_WHOLE, C(min_khz), .lo = 0, .hi = 100000,
		       .scale = 1000 },
	[FREQ_MAX] = { "freq_max_mhz", CFG_KEY_WHOLE, C(max_khz), .lo = 0, .hi = 100000,
		       .scale = 1000 },
	[FREQ_STEP] = { "freq_step_mhz", CFG_KEY_WHOLE, C(step_khz), .lo = 1, .hi = 10000,
			.scale = 1000, .def = 100 },
};
static const struct cfg_key freq_wl_keys[] = {
	{ "freq_mhz", CFG_KEY_WHOLE, W(khz), .lo = 0, .hi = 100000, .scale = 1000 },
};

static const struct freq_conf *conf(const struct cfg *c)
{
	return res_conf(c, POL_RES_FREQ);
}

/* The [resources] bounds, when both are given, in order. */
static int freq_cfg_check(const struct cfg *c, char *err, size_t len, int *line)
{
	const struct freq_conf *f = conf(c);

	if (!f->min_khz || !f->max_khz || f->min_khz <= f->max_khz)
		return 0;
	*line = res_line(c, POL_RES_FREQ, FREQ_MAX);
	return cfg_key_err(err, len, "[resources] freq_min_mhz %ld > freq_max_mhz %ld",
			   f->min_khz / 1000, f->max_khz / 1000);
}

static int freq_limits(struct res_view *v, char *err, size_t len)
{
	const struct freq_conf *c = conf(v->cfg);
	const struct loop_caps *k = v->caps;
	struct pol_res_info *r = v->info;
	long fmin = k->lo[POL_RES_FREQ], fmax = k->hi[POL_RES_FREQ];

	if (c->min_khz && c->min_khz > fmin)
		fmin = c->min_khz;
	if (c->max_khz && c->max_khz < fmax)
		fmax = c->max_khz;
	*r = (struct pol_res_info){ .step = c->step_khz };
	if (c->on == CFG_ON && !k->res[POL_RES_FREQ]) {
		loop_msg(err, len, "[resources] freq = true but cpufreq cannot be used here: %s",
			 k->why[POL_RES_FREQ]);
		return -EOPNOTSUPP;
	}
	if (c->on != CFG_OFF && k->res[POL_RES_FREQ] && fmin < fmax)
		r->avail = true;
	for (int i = 0; i < v->nwl; i++) {
		*v->wl[i].min = r->avail ? fmin : 0;
		*v->wl[i].max = r->avail ? fmax : 0;
	}
	return 0;
}

/* Initial frequency: the workload's own, else the highest, within the limits. */
static int initial_freq(struct res_view *v, char *err, size_t len)
{
	for (int i = 0; i < v->nwl; i++) {
		const struct freq_wl_conf *w = res_wl_conf(v->cfg, i, POL_RES_FREQ);
		long fmin = *v->wl[i].min, fmax = *v->wl[i].max;
		long f = w->khz ? w->khz : fmax;

		*v->wl[i].alloc = f < fmin ? fmin : f > fmax ? fmax : f;
	}
	return 0;
}

/* Managed unless freq = false; its step is the actuator's rounding. */
static void freq_open(const struct cfg *c, struct act_opts *o)
{
	if (conf(c)->on != CFG_OFF)
		o->resources |= ACT_RES_CPUFREQ;
	o->freq_step_khz = (unsigned int)conf(c)->step_khz;
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
	.shown_div = 1000, /* MHz */
	.cfg = { .keys = freq_keys,
		 .nkeys = sizeof(freq_keys) / sizeof(freq_keys[0]),
		 .wl_keys = freq_wl_keys,
		 .nwl_keys = sizeof(freq_wl_keys) / sizeof(freq_wl_keys[0]),
		 .wl_initial = 1u << 0,
		 .check = freq_cfg_check },
	.loop = { .limits = freq_limits, .initial = initial_freq },
	.act = { .open = freq_open,
		 .can = freq_can,
		 .range = freq_range,
		 .add = freq_add,
		 .set = freq_set },
	.sim = { .range = freq_sim_range, .set = freq_sim },
	.log = { .key = "freq_mhz", .div = 1000 /* kHz inside, MHz in the log */, .prec = 0 },
	.prom = { .name = "parties_frequency_hertz",
		  .help = "Maximum frequency of the workload's CPUs.",
		  .scale = 1e3 },
};
