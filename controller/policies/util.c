// SPDX-License-Identifier: MIT
/*
 * util: size each workload from what it uses, not from a latency search.
 *
 * PARTIES moves one unit of one resource per interval and learns from the
 * latency what the move did. util instead measures the CPU a workload used
 * over the last interval and its request rate, estimates the CPU it needs
 * per second of load (cpu_used scaled back to the maximum frequency), and
 * sets its cores in one step to what keeps utilisation at target_util:
 *
 *   demand  = cpu_used x freq / freq_max        (cores at full speed)
 *   cores   = ceil(demand / target_util)
 *
 * When a workload is saturated (cpu_used near its allocation) its use
 * understates its demand, so demand is taken from the request rate and the
 * CPU per request measured when it was not. Latency is a guard, not the
 * signal: a workload below guard_slack is never shrunk, and one whose p99 is
 * over target gets at least one more core. Shrinking waits for
 * down_intervals consecutive intervals that agree, then goes straight to the
 * size wanted. With frequency available, each workload then runs at the
 * lowest frequency that keeps its utilisation at or below freq_util (0 =
 * leave frequency at the maximum), lowering it one step per interval and only
 * above guard_slack; over target, frequency goes to maximum.
 * Cores in short supply go to the workloads with the least slack first.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_key.h"
#include "policy.h"

struct util_cfg {
	double target_util;
	double freq_util;
	double guard_slack;
	int down_intervals;
};

struct util_state {
	struct util_cfg c;
	int nwl;
	int down[POL_MAX_WORKLOADS];	       /* consecutive intervals wanting fewer */
	double cpu_per_req[POL_MAX_WORKLOADS]; /* full-speed core-seconds per request */
};

#define U(f) CFG_KEY_AT(struct util_cfg, f)

/* The settings of [policy util], with their defaults. */
static const struct cfg_key util_keys[] = {
	{ "target_util", CFG_KEY_REAL, U(target_util),
	  .rule = { { 0.05, 1, CFG_KEY_LO_OPEN, "%s: %s is not in (0.05, 1]" } }, .def = 0.7 },
	{ "freq_util", CFG_KEY_REAL, U(freq_util),
	  .rule = { { 0.05, 1, CFG_KEY_LO_OPEN | CFG_KEY_ZERO_OK,
		      "%s: %s is not 0 or in (0.05, 1]" } },
	  .def = 0.8 },
	{ "guard_slack", CFG_KEY_REAL, U(guard_slack),
	  .rule = { { -1, 1, CFG_KEY_HI_OPEN, "%s: %s is not in [-1, 1)" } }, .def = 0.1 },
	{ "down_intervals", CFG_KEY_REAL, U(down_intervals),
	  .rule = { { 1, 1000, CFG_KEY_INTEGRAL, "%s: %s is not a whole number in 1..1000" } },
	  .def = 2 },
};
#define UTIL_NKEYS ((int)(sizeof(util_keys) / sizeof(util_keys[0])))

static int util_param(void *c, const char *key, const char *val, char *err, size_t len)
{
	return pol_param_set(util_keys, UTIL_NKEYS, c, key, val, err, len);
}

static int util_check_param(const char *key, const char *val, char *err, size_t len)
{
	struct util_cfg c;

	return util_param(&c, key, val, err, len);
}

static int util_init(void **state, struct pol_init_args *a)
{
	struct util_state *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	cfg_key_defaults(util_keys, UTIL_NKEYS, &s->c);
	if (pol_parse_params(a, &s->c, util_param)) {
		free(s);
		return -EINVAL;
	}
	s->nwl = a->nwl;
	*state = s;
	return 0;
}

static void util_exit(void *state)
{
	free(state);
}

/* The pooled resource util sizes: cores, or quota where cores do not move. */
static int sized_res(const struct pol_observation *obs)
{
	if (obs->res[POL_RES_CORES].avail)
		return POL_RES_CORES;
	if (obs->res[POL_RES_QUOTA].avail)
		return POL_RES_QUOTA;
	return -1;
}

/* Capacity of an allocation of r in cpus' worth of CPU time, the unit of
 * cpu_used: under smt = whole a core is all its threads (workload i's own
 * threads per core, or the machine's most before it has any). Two busy
 * siblings do less work than two cores; cpu_used counts them as two, so
 * sizing in threads is what keeps utilisation at target_util. */
static double cores_of(const struct pol_observation *obs, int i, int r, long v)
{
	if (r == POL_RES_QUOTA)
		return (double)v / 1000.0;
	return (double)v * pol_threads_per_core(obs, i);
}

static long clampl(long v, long lo, long hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/*
 * What workload i wants of r: its demand (cores at full speed, NAN when its
 * CPU use is unknown) turned into units at target_util, at least one step
 * more when it is over target, kept while shrinking waits or the guard
 * holds. Fills the reason.
 */
static long want_of(struct util_state *s, const struct pol_observation *obs, int r, int i,
		    struct pol_decision *dec, double *demand)
{
	const struct pol_res_info *fr = &obs->res[POL_RES_FREQ];
	const struct pol_wl_obs *w = &obs->wl[i];
	long step = obs->res[r].step, cur = w->alloc[r], want;
	double fscale = fr->avail && w->max[POL_RES_FREQ] > 0
			    ? (double)w->alloc[POL_RES_FREQ] / (double)w->max[POL_RES_FREQ]
			    : 1.0;
	double cap = cores_of(obs, i, r, cur), d;
	bool over = w->state == POL_LAT_FRESH && w->slack < 0;
	bool guard = w->state == POL_LAT_FRESH && w->slack < s->c.guard_slack;

	*demand = NAN;
	if (!w->alive || isnan(w->cpu_used)) {
		snprintf(dec->wl[i].reason, sizeof(dec->wl[i].reason), "no cpu use yet");
		return cur;
	}
	d = w->cpu_used * fscale;
	/* cpu per request, learnt while not saturated */
	if (w->rps > 0 && w->cpu_used < 0.9 * cap)
		s->cpu_per_req[i] = d / w->rps;
	else if (w->rps > 0 && s->cpu_per_req[i] > 0 && s->cpu_per_req[i] * w->rps > d)
		d = s->cpu_per_req[i] * w->rps; /* saturated: use understates demand */
	*demand = d;
	/* (less a hair, so 4.2 / 0.7 is 6, not 7) */
	want = (long)ceil(d / s->c.target_util / cores_of(obs, i, r, step) - 1e-9) * step;
	if (over && want <= cur)
		want = cur + step;
	want = clampl(want, w->min[r], w->max[r]);
	if (want < cur) {
		if (guard || ++s->down[i] < s->c.down_intervals) {
			snprintf(dec->wl[i].reason, sizeof(dec->wl[i].reason),
				 "demand %.2f cores wants %ld, %s", d, want,
				 guard ? "slack below guard" : "waiting to shrink");
			want = cur;
		}
	} else {
		s->down[i] = 0;
	}
	if (!dec->wl[i].reason[0])
		snprintf(dec->wl[i].reason, sizeof(dec->wl[i].reason),
			 "demand %.2f cores at %.2f util -> %ld%s", d, s->c.target_util, want,
			 over ? " (over target)" : "");
	return want;
}

/* Frequency of workload i: the lowest that keeps utilisation <= freq_util. */
static long freq_of(const struct util_state *s, const struct pol_observation *obs, int r, int i,
		    const struct pol_decision *dec, double demand)
{
	const struct pol_res_info *fr = &obs->res[POL_RES_FREQ];
	const struct pol_wl_obs *w = &obs->wl[i];
	bool over = w->state == POL_LAT_FRESH && w->slack < 0;
	double cap = cores_of(obs, i, r, dec->wl[i].alloc[r]);
	long f = w->alloc[POL_RES_FREQ];

	if (over || s->c.freq_util == 0) {
		f = w->max[POL_RES_FREQ];
	} else if (cap > 0) {
		double need = demand / (cap * s->c.freq_util) * (double)w->max[POL_RES_FREQ];
		long st = fr->step > 0 ? fr->step : 100000; /* kHz */

		f = (long)ceil(need / (double)st) * st;
		/* lower only with slack to spare, one step at a time:
		 * a slower core stretches every request, the tail most */
		if (f < w->alloc[POL_RES_FREQ]) {
			bool guard = w->state == POL_LAT_FRESH && w->slack < s->c.guard_slack;

			f = guard ? w->alloc[POL_RES_FREQ] : w->alloc[POL_RES_FREQ] - st;
		}
	}
	return clampl(f, w->min[POL_RES_FREQ], w->max[POL_RES_FREQ]);
}

static int util_decide(void *state, const struct pol_observation *obs, struct pol_decision *dec)
{
	struct util_state *s = state;
	int r = sized_res(obs);
	long want[POL_MAX_WORKLOADS] = { 0 };
	double demand[POL_MAX_WORKLOADS];

	if (r < 0)
		return 0;
	for (int i = 0; i < obs->nwl; i++)
		want[i] = want_of(s, obs, r, i, dec, &demand[i]);
	pol_grant(obs, r, want, dec);
	for (int i = 0; i < obs->nwl; i++) {
		const struct pol_wl_obs *w = &obs->wl[i];
		long f = w->alloc[POL_RES_FREQ];

		if (!w->alive)
			continue;
		if (obs->res[POL_RES_FREQ].avail && !isnan(demand[i])) {
			f = freq_of(s, obs, r, i, dec, demand[i]);
			dec->wl[i].alloc[POL_RES_FREQ] = f;
		}
		if (dec->wl[i].alloc[r] > w->alloc[r])
			snprintf(dec->wl[i].action, sizeof(dec->wl[i].action), "up %s",
				 pol_res_str((enum pol_res)r));
		else if (dec->wl[i].alloc[r] < w->alloc[r])
			snprintf(dec->wl[i].action, sizeof(dec->wl[i].action), "down %s",
				 pol_res_str((enum pol_res)r));
		else if (f != w->alloc[POL_RES_FREQ])
			snprintf(dec->wl[i].action, sizeof(dec->wl[i].action), "%s freq",
				 f > w->alloc[POL_RES_FREQ] ? "up" : "down");
	}
	return 0;
}

const struct pol_ops pol_util_ops = {
	.name = "util",
	.desc = "size cores from measured CPU use and rate toward a target utilisation",
	.check_param = util_check_param,
	.keys = util_keys,
	.nkeys = UTIL_NKEYS,
	.init = util_init,
	.decide = util_decide,
	.exit = util_exit,
};
