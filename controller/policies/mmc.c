// SPDX-License-Identifier: MIT
/*
 * mmc: size each workload's cores from an M/M/c queueing model of it,
 * fitted online, to its own latency target.
 *
 * PARTIES searches for an allocation one unit at a time, by the latency each
 * move produced; util sizes cores toward a fixed utilisation whatever the
 * target. mmc instead predicts the p99 response time each core count would
 * give and takes the smallest count whose prediction meets the target:
 *
 *   lambda = the workload's request rate, times (1 + rate_margin)
 *   s      = CPU per request at the maximum frequency (cpu_used x f / f_max
 *            / rps, an average over intervals in which it was not saturated)
 *   s(f)   = s x f_max / f               (all of it assumed to scale)
 *   T      = W + S of an M/M/c queue with service rate 1 / s(f): W is 0 with
 *            probability 1 - C (Erlang C) and else exponential with rate
 *            c / s(f) - lambda; S is exponential with mean s(f)
 *   p99(c) = k x the 99th percentile of T (solved numerically)
 *   cores  = the smallest c with p99(c) <= (1 - headroom) x target
 *
 * k corrects the model online: it is the ratio of the measured p99 to the
 * model's at the allocation in force, smoothed in log space, clamped to
 * [0.25, 50], so service-time variance, processor sharing, the network and
 * the feed's own window (what M/M/c leaves out) are learnt per workload
 * instead of assumed (correct = off keeps k = 1). With frequency available,
 * each workload then runs at the lowest frequency at which the model still
 * meets its bound on the cores granted, lowered one step per interval.
 *
 * Latency is the guard as well as the target: a workload over its target
 * gets at least one more core and the maximum frequency whatever the model
 * says; one below guard_slack is shrunk only as far as the model predicts no
 * worse p99 than now, and shrinking waits for down_intervals consecutive
 * intervals that agree. A target the model cannot reach at any count (the
 * service time's own tail is above it) gets the fewest cores within 2% of the
 * best p99, not every core: more would be hoarded from the others. Cores in short supply go
 * to the workloads with the least slack first (pol_grant).
 *
 * Assumptions. Poisson arrivals, one queue per workload in front of c
 * identical servers, service times that stretch with 1/f, and a constant k
 * between nearby allocations. Where it is known to be wrong: a workload with
 * fewer threads than cores cannot use them (memcached -t 4 on 8 cores), which
 * the model does not know and k learns only slowly; a bursty or self-similar
 * arrival process has a longer tail than Poisson at the same rate; and a
 * rate that changes within an interval is seen only at its end.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_key.h"
#include "policy.h"

struct mmc_cfg {
	double headroom;    /* aim at (1 - headroom) x target */
	double rate_margin; /* size for this much more load than measured */
	double guard_slack; /* never shrink below this slack */
	int down_intervals; /* consecutive intervals wanting fewer before shrinking */
	bool correct;	    /* fit k online (off: the bare model) */
};

struct mmc_state {
	struct mmc_cfg c;
	int nwl;
	int down[POL_MAX_WORKLOADS];
	double s_full[POL_MAX_WORKLOADS]; /* s, seconds per request at f_max; 0: unknown */
	double logk[POL_MAX_WORKLOADS];	  /* log of the correction */
};

#define M(f) CFG_KEY_AT(struct mmc_cfg, f)

static const struct cfg_key mmc_keys[] = {
	{ "headroom", CFG_KEY_REAL, M(headroom),
	  .rule = { { 0, 0.9, 0, "%s: %s is not in [0, 0.9]" } }, .def = 0.15 },
	{ "rate_margin", CFG_KEY_REAL, M(rate_margin),
	  .rule = { { 0, 10, 0, "%s: %s is not in [0, 10]" } }, .def = 0.1 },
	{ "guard_slack", CFG_KEY_REAL, M(guard_slack),
	  .rule = { { -1, 1, CFG_KEY_HI_OPEN, "%s: %s is not in [-1, 1)" } }, .def = 0.1 },
	{ "down_intervals", CFG_KEY_REAL, M(down_intervals),
	  .rule = { { 1, 1000, CFG_KEY_INTEGRAL, "%s: %s is not a whole number in 1..1000" } },
	  .def = 2 },
	{ "correct", CFG_KEY_CHOICE, M(correct),
	  .names = (const char *const[]){ "off", "on", NULL },
	  .msg = "%1$s must be on or off, not '%2$s'", .def = 1 },
};
#define MMC_NKEYS ((int)(sizeof(mmc_keys) / sizeof(mmc_keys[0])))

static int mmc_param(void *c, const char *key, const char *val, char *err, size_t len)
{
	return pol_param_set(mmc_keys, MMC_NKEYS, c, key, val, err, len);
}

static void mmc_defaults(struct mmc_cfg *c)
{
	memset(c, 0, sizeof(*c));
	cfg_key_defaults(mmc_keys, MMC_NKEYS, c);
}

static int mmc_check_param(const char *key, const char *val, char *err, size_t len)
{
	struct mmc_cfg c;

	mmc_defaults(&c);
	return mmc_param(&c, key, val, err, len);
}

static int mmc_init(void **state, struct pol_init_args *a)
{
	struct mmc_state *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	mmc_defaults(&s->c);
	if (pol_parse_params(a, &s->c, mmc_param)) {
		free(s);
		return -EINVAL;
	}
	s->nwl = a->nwl;
	*state = s;
	return 0;
}

static void mmc_exit(void *state)
{
	free(state);
}

/* Erlang C: the probability that an arrival waits, c servers, offered load a
 * = lambda x s (a < c), from the Erlang B recurrence (stable for large c). */
static double erlang_c(int c, double a)
{
	double b = 1.0, rho = a / c;

	for (int k = 1; k <= c; k++)
		b = a * b / (k + a * b);
	return b / (1.0 - rho * (1.0 - b));
}

/* P(T > t) of the M/M/c response time, service rate mu, wait rate theta. */
static double tail(double t, double C, double mu, double theta)
{
	double g = fabs(theta - mu) < 1e-9 * mu
		       ? (1.0 + mu * t) * exp(-mu * t)
		       : (theta * exp(-mu * t) - mu * exp(-theta * t)) / (theta - mu);

	return (1.0 - C) * exp(-mu * t) + C * g;
}

/*
 * The 99th percentile of the M/M/c response time, in seconds: c servers,
 * arrival rate lam (1/s), mean service time s (s). INFINITY when c servers
 * cannot keep up.
 */
static double mmc_p99_s(int c, double lam, double s)
{
	double mu = 1.0 / s, theta = c * mu - lam, C, lo = 0, hi;

	if (c < 1 || !(s > 0) || !(theta > 0))
		return INFINITY;
	if (!(lam > 0))
		return log(100.0) * s;
	C = erlang_c(c, lam * s);
	/* both exponentials are below 0.01 beyond this */
	hi = log(100.0 * (1.0 + C * mu / fabs(theta - mu + 1e-12 * mu))) / fmin(mu, theta) + s;
	while (tail(hi, C, mu, theta) > 0.01)
		hi *= 2;
	for (int k = 0; k < 100 && hi - lo > 1e-9 * hi; k++) {
		double mid = 0.5 * (lo + hi);

		if (tail(mid, C, mu, theta) > 0.01)
			lo = mid;
		else
			hi = mid;
	}
	return hi;
}

/* The M/M/c model's servers in c units of cores: threads under smt = whole,
 * where cpu_used (and so the service time learnt from it) counts each
 * thread's time as a cpu's. */
static int servers(const struct pol_observation *obs, int i, long c)
{
	return (int)lround((double)c * pol_threads_per_core(obs, i));
}

static long clampl(long v, long lo, long hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* Learn the service time at f_max from the interval's cpu use, but only while
 * not saturated: saturated, cpu_used says how many cores there are, not how
 * much work each request is. */
static void learn_service(struct mmc_state *st, const struct pol_observation *obs, int i, long cur,
			  double fscale)
{
	const struct pol_wl_obs *w = &obs->wl[i];

	if (w->cpu_used < 0.9 * (double)servers(obs, i, cur)) {
		double x = w->cpu_used * fscale / w->rps;

		st->s_full[i] = st->s_full[i] > 0 ? 0.7 * st->s_full[i] + 0.3 * x : x;
	}
}

/* Learn the correction k (kept as its log): the measured p99 over the
 * model's for the allocation in force, smoothed and held within [0.25, 50]
 * so one odd interval cannot make the model useless. */
static void learn_correction(struct mmc_state *st, const struct pol_observation *obs, int i,
			     long cur, double s)
{
	const struct pol_wl_obs *w = &obs->wl[i];
	bool fresh = w->state == POL_LAT_FRESH;
	double model = mmc_p99_s(servers(obs, i, cur), w->rps, s);

	if (st->c.correct && fresh && isfinite(model) && w->p99_ns > 0) {
		double lk = log(w->p99_ns / 1e9 / model);

		st->logk[i] = 0.7 * st->logk[i] + 0.3 * lk;
		st->logk[i] = fmin(fmax(st->logk[i], log(0.25)), log(50.0));
	}
}

/* The smallest count of cores at full speed whose corrected p99 meets the
 * bound: the frequency is then lowered as far as these cores allow. */
static long fewest_cores(const struct mmc_state *st, const struct pol_observation *obs, int i,
			 double lam, double k, double bound)
{
	const struct pol_wl_obs *w = &obs->wl[i];
	long want;

	for (want = w->min[POL_RES_CORES]; want < w->max[POL_RES_CORES]; want++)
		if (k * mmc_p99_s(servers(obs, i, want), lam, st->s_full[i]) <= bound)
			break;
	if (k * mmc_p99_s(servers(obs, i, want), lam, st->s_full[i]) > bound) {
		/* Out of reach (the service time's own tail is above the bound):
		 * more cores than where queueing has vanished would be hoarded,
		 * so take the fewest that are within 2% of the best. */
		double best = mmc_p99_s(servers(obs, i, w->max[POL_RES_CORES]), lam, st->s_full[i]);

		for (want = w->min[POL_RES_CORES]; want < w->max[POL_RES_CORES]; want++)
			if (mmc_p99_s(servers(obs, i, want), lam, st->s_full[i]) <= 1.02 * best)
				break;
	}
	return want;
}

/* Near the target: shrink from cur toward want only as far as the model
 * predicts no worse p99 than now (within 2%; k cancels out). cur when no
 * smaller count is safe. */
static long guarded_shrink(const struct pol_observation *obs, int i, long cur, long want,
			   double lam, double s)
{
	double now = mmc_p99_s(servers(obs, i, cur), lam, s);
	long safe = want;

	while (safe < cur && !(mmc_p99_s(servers(obs, i, safe), lam, s) <= 1.02 * now))
		safe++;
	return safe;
}

/* The decision's reason: the model's figures and what became of them. */
static void say_model(struct pol_decision *dec, int i, double lam, double s_full, double k,
		      long want, double bound, const char *why)
{
	snprintf(dec->wl[i].reason, sizeof(dec->wl[i].reason),
		 "M/M/c: %.0f rps x %.0f us, k %.2f: %ld cores meet %.1f ms%s", lam, s_full * 1e6,
		 k, want, bound * 1e3, why);
}

/* What workload i wants of cores; its p99 bound (s), the rate it is sized for
 * and the correction into *bound, *lam and *k. Fills the reason. */
static long want_cores(struct mmc_state *st, const struct pol_observation *obs, int i,
		       struct pol_decision *dec, double *bound, double *lam, double *k)
{
	const struct pol_wl_obs *w = &obs->wl[i];
	const struct pol_res_info *fr = &obs->res[POL_RES_FREQ];
	long cur = w->alloc[POL_RES_CORES], want;
	double fscale = fr->avail && w->max[POL_RES_FREQ] > 0
			    ? (double)w->alloc[POL_RES_FREQ] / (double)w->max[POL_RES_FREQ]
			    : 1.0;
	bool fresh = w->state == POL_LAT_FRESH;
	bool over = fresh && w->slack < 0, guard = fresh && w->slack < st->c.guard_slack;
	double s;

	*bound = (1.0 - st->c.headroom) * w->target_ns / 1e9;
	*lam = NAN;
	*k = exp(st->logk[i]);
	if (!w->alive || isnan(w->cpu_used) || isnan(w->rps) || !(w->rps > 0)) {
		snprintf(dec->wl[i].reason, sizeof(dec->wl[i].reason), "no rate or cpu use yet");
		return cur;
	}
	learn_service(st, obs, i, cur, fscale);
	if (!(st->s_full[i] > 0)) {
		snprintf(dec->wl[i].reason, sizeof(dec->wl[i].reason),
			 "saturated, no service time");
		return over ? clampl(cur + 1, w->min[POL_RES_CORES], w->max[POL_RES_CORES]) : cur;
	}
	s = st->s_full[i] / fscale;
	learn_correction(st, obs, i, cur, s);
	*k = exp(st->logk[i]);
	*lam = w->rps * (1.0 + st->c.rate_margin);
	want = fewest_cores(st, obs, i, *lam, *k, *bound);
	if (over && want <= cur)
		want = cur + 1;
	want = clampl(want, w->min[POL_RES_CORES], w->max[POL_RES_CORES]);
	if (want < cur && guard) {
		long safe = guarded_shrink(obs, i, cur, want, *lam, s);

		if (safe == cur) {
			say_model(dec, i, *lam, st->s_full[i], *k, want, *bound,
				  "; slack below guard");
			st->down[i] = 0;
			return cur;
		}
		want = safe;
	}
	if (want < cur && ++st->down[i] < st->c.down_intervals) {
		say_model(dec, i, *lam, st->s_full[i], *k, want, *bound, "; waiting to shrink");
		return cur;
	}
	if (want >= cur)
		st->down[i] = 0;
	say_model(dec, i, *lam, st->s_full[i], *k, want, *bound, over ? " (over target)" : "");
	return want;
}

/* The lowest frequency at which the model meets the bound on c cores, at
 * most one step below the current one (raised at once). */
static long want_freq(const struct mmc_state *st, const struct pol_observation *obs, int i, long c,
		      double bound, double lam, double k)
{
	const struct pol_wl_obs *w = &obs->wl[i];
	long step = obs->res[POL_RES_FREQ].step > 0 ? obs->res[POL_RES_FREQ].step : 100000;
	long fmax = w->max[POL_RES_FREQ], f = fmax, cur = w->alloc[POL_RES_FREQ];
	bool fresh = w->state == POL_LAT_FRESH;

	if ((fresh && w->slack < 0) || isnan(lam) || !(st->s_full[i] > 0))
		return fresh && w->slack < 0 ? fmax : cur;
	while (f - step >= w->min[POL_RES_FREQ] &&
	       k * mmc_p99_s(servers(obs, i, c), lam,
			     st->s_full[i] * (double)fmax / (double)(f - step)) <=
		   bound)
		f -= step;
	if (f < cur)
		f = fresh && w->slack < st->c.guard_slack ? cur : (f < cur - step ? cur - step : f);
	return clampl(f, w->min[POL_RES_FREQ], fmax);
}

static int mmc_decide(void *state, const struct pol_observation *obs, struct pol_decision *dec)
{
	struct mmc_state *st = state;
	long want[POL_MAX_WORKLOADS] = { 0 };
	double bound[POL_MAX_WORKLOADS], lam[POL_MAX_WORKLOADS], k[POL_MAX_WORKLOADS];

	if (!obs->res[POL_RES_CORES].avail) {
		for (int i = 0; i < obs->nwl; i++)
			snprintf(dec->wl[i].reason, sizeof(dec->wl[i].reason),
				 "mmc sizes cores, which this config does not manage");
		return 0;
	}
	for (int i = 0; i < obs->nwl; i++)
		want[i] = want_cores(st, obs, i, dec, &bound[i], &lam[i], &k[i]);
	pol_grant(obs, POL_RES_CORES, want, dec);
	for (int i = 0; i < obs->nwl; i++) {
		const struct pol_wl_obs *w = &obs->wl[i];
		long f = w->alloc[POL_RES_FREQ];

		if (!w->alive)
			continue;
		if (obs->res[POL_RES_FREQ].avail) {
			f = want_freq(st, obs, i, dec->wl[i].alloc[POL_RES_CORES], bound[i], lam[i],
				      k[i]);
			dec->wl[i].alloc[POL_RES_FREQ] = f;
		}
		if (dec->wl[i].alloc[POL_RES_CORES] > w->alloc[POL_RES_CORES])
			snprintf(dec->wl[i].action, sizeof(dec->wl[i].action), "up cores");
		else if (dec->wl[i].alloc[POL_RES_CORES] < w->alloc[POL_RES_CORES])
			snprintf(dec->wl[i].action, sizeof(dec->wl[i].action), "down cores");
		else if (f != w->alloc[POL_RES_FREQ])
			snprintf(dec->wl[i].action, sizeof(dec->wl[i].action), "%s freq",
				 f > w->alloc[POL_RES_FREQ] ? "up" : "down");
	}
	return 0;
}

const struct pol_ops pol_mmc_ops = {
	.name = "mmc",
	.desc = "size cores (then frequency) from an M/M/c model fitted online to each p99 target",
	.check_param = mmc_check_param,
	.keys = mmc_keys,
	.nkeys = MMC_NKEYS,
	.init = mmc_init,
	.decide = mmc_decide,
	.exit = mmc_exit,
};
