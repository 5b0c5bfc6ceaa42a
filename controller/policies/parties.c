// SPDX-License-Identifier: MIT
/*
 * parties: the PARTIES controller (Chen, Delimitrou, Martinez, ASPLOS'19).
 *
 * What it decides. Each decision it looks at the slack of every workload,
 * slack = (target - p99) / target. If the workload with the least slack is
 * below 0.05 it upsizes it by one unit of one resource; otherwise, if the one
 * with the most slack is above 0.20, it downsizes that one by one unit. Which
 * resource is taken from a per-workload "wheel" (cores -> freq -> quota ->
 * cores, only those this machine and config manage); the first resource is
 * picked at random from a seeded generator. An upsize takes the unit from the
 * free pool, else from the other workload with the most slack that is above
 * its minimum; if that donor's wheel points at the same resource it is
 * advanced so the two do not trade the same core back and forth. Each action
 * is watched for one decision (paper) or a majority vote over N samples
 * (original code, judge_samples = 5 at 100 ms): an upsize that did not lower
 * latency advances the wheel but is NOT undone (later downsizes reclaim it);
 * a downsize after which the workload (or, in the code, any workload) falls
 * below 0.05 is undone at once, the wheel advances and that workload may not
 * be downsized again for the cool-down (paper 30 s, code 10 s). A resource at
 * its limit for the workload is skipped. When QoS has not been met by every
 * workload for violation_alarm_s, an event is logged; the paper would then
 * migrate a workload away, which is out of scope here.
 *
 * Paper vs code. Defaults are the paper's: decide every interval (500 ms,
 * [controller] interval_ms), judge over 1 sample, use the latest slack only,
 * revert a downsize on the downsized workload's own slack, cool down 30 s.
 * `flavour = code` switches to the authors' released controller: 5-sample
 * majority votes, both the latest and the averaged ("long", 1 s) slack must
 * agree, a downsize is reverted when any workload falls below 0.05, and the
 * cool-down is 10 s; the interval is 100 ms (config.c forces it over
 * [controller] interval_ms; interval_ms in [policy parties] gives another), a
 * direction change re-picks the resource at random (repick), anti-ping-pong
 * compares the donor's whole state, direction and resource (pingpong), a
 * tied vote fails (tie), after a revert it waits 5 samples and 5 more if most
 * of them still had a workload below 0.05 (revert_wait = vote), while it
 * holds it takes two samples per decision (hold_samples), and an upsize of
 * frequency to its top counts as failed (freq_top). Each of these is also a
 * key of its own.
 *
 * Two settings belong to neither: downsize_fallback = on lets a downsize fall
 * to the next-most-slack workload when the one with the most slack is at its
 * limits (both paper and code then downsize nothing, which can starve
 * scale-down); settle_ms holds the judgement of an action (and so the next
 * decision) until the latency window is mostly post-action. Both are off by
 * default in both flavours.
 *
 * Assumptions. More of a resource never makes a workload slower; one action
 * at a time is enough (it is a hill climber with a dead band between 0.05
 * and 0.20); the latency source reflects the last interval. Workloads with
 * no fresh latency take no part: they are neither upsized, downsized nor used
 * as donors, because a missing p99 is not a low one (set idle = release to
 * treat a workload whose source saw no request at all as having full slack).
 *
 * Where it is known to be wrong. CLITE (HPCA'20) reports that on some mixes
 * PARTIES cycles between states without converging, and that its results
 * vary by more than 20% from run to run: a workload just above 0.20 slack is
 * downsized, lands below 0.05, is reverted, and after the cool-down the cycle
 * repeats. Upsizes that did not help are never undone, so a workload that is
 * bottlenecked elsewhere (network, locks) hoards units until its slack
 * exceeds 0.20. Donors are chosen by slack only, so a donor that is itself
 * near its target can be pushed into violation, and the next decision takes
 * the unit back (the anti-ping-pong rule only delays this). With whole cores
 * on a 2-CPU machine and a minimum of one core each, nothing can move between
 * two workloads; use cpu quota there.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cfg_key.h"
#include "policy.h"

enum pt_dir { PT_NONE = 0, PT_UP, PT_DOWN };
enum pt_slack_mode { PT_SLACK_LATEST, PT_SLACK_BOTH };
enum pt_revert { PT_REVERT_SELF, PT_REVERT_ANY };
enum pt_repick { PT_REPICK_NEXT, PT_REPICK_RANDOM };
enum pt_pingpong { PT_PP_RESOURCE, PT_PP_STATE };

struct pt_params {
	double slack_up;	    /* upsize below this slack (0.05) */
	double slack_down;	    /* downsize above this slack (0.20) */
	unsigned int judge_samples; /* samples per judgement: paper 1, code 5 */
	enum pt_slack_mode slack_mode;
	enum pt_revert revert_check;
	double cooldown_s;		 /* no downsize after a revert: paper 30, code 10 */
	double alarm_s;			 /* sustained-violation event after this long */
	bool idle_release;		 /* idle workloads count as having full slack */
	int first;			 /* first resource of every wheel, or -1: at random */
	enum pt_repick repick;		 /* resource after a direction change */
	enum pt_pingpong pingpong;	 /* when a donor's wheel is advanced */
	bool tie_fails;			 /* a tied vote judges the action failed */
	unsigned int wait_min, wait_max; /* samples to wait after a revert */
	bool wait_vote;			 /* the code's: judge_samples, again if still low */
	unsigned int hold_samples;	 /* samples per decision while holding: 1, code 2 */
	bool freq_top_fails;		 /* an upsize to the top frequency failed (code) */
	unsigned int interval_ms;	 /* read by config.c (interval for this policy) */
	bool down_fallback;		 /* most slack at its limits: try the next one */
	unsigned int settle_ms;		 /* judge an action only this long after it */
	int nwheel;
	enum pol_res wheel[POL_RES_COUNT];
};

struct pt_wl {
	enum pt_dir dir;  /* direction of the workload's current action */
	enum pol_res res; /* resource of its current action */
	bool started;	  /* res was picked (at random) */
	uint64_t cool_until_ms;
};

struct pt_pending {
	bool active;
	enum pt_dir dir;
	int wl;
	enum pol_res res;
	int donor;	   /* -1: the unit came from the free pool */
	double pre_p99_ns; /* p99 before the action */
	uint64_t tick;	   /* observation the action was decided on */
	uint64_t t_ms;	   /* when */
	unsigned int samples, bad, waited;
};

struct pt_state {
	struct pt_params p;
	int nwl;
	bool wheels_init;
	struct pt_wl wl[POL_MAX_WORKLOADS];
	struct pt_pending pend;
	unsigned int wait_left; /* decisions still skipped after a revert */
	int wait_wl;		/* the reverted workload */
	/* revert_wait = vote: which round of judge_samples, and its vote so far */
	unsigned int wait_round, wait_samples, wait_bad;
	unsigned int hold_left; /* samples still to take before deciding (holding) */
	uint64_t hold_until_ms; /* no decision before this (settling after a revert) */
	uint64_t rng;
	bool met_init;
	uint64_t last_all_met_ms;
	uint64_t last_alarm_ms;
	int note_wl; /* a judgement on this workload to carry into its reason */
	char note[128];
};

static int pt_param(struct pt_params *p, const char *key, const char *val, char *err, size_t len);

/*
 * flavour: the paper's settings or the released code's (see the top of the
 * file), each a list of this table's own settings; a later key overrides.
 */
static const struct {
	const char *name;
	const char *set[12][2];
} pt_flavours[] = {
	{ "paper",
	  { { "judge_samples", "1" },
	    { "slack", "latest" },
	    { "revert_check", "self" },
	    { "cooldown_s", "30" },
	    { "repick", "next" },
	    { "pingpong", "resource" },
	    { "tie", "pass" },
	    { "revert_wait", "0" },
	    { "hold_samples", "1" },
	    { "freq_top", "judge" } } },
	{ "code",
	  { { "judge_samples", "5" },
	    { "slack", "both" },
	    { "revert_check", "any" },
	    { "cooldown_s", "10" },
	    { "repick", "random" },
	    { "pingpong", "state" },
	    { "tie", "fail" },
	    { "revert_wait", "vote" },
	    { "hold_samples", "2" },
	    { "freq_top", "fail" } } },
};

static int pt_flavour(const struct cfg_key *k, void *base, const char *val, void *ctx, char *err,
		      size_t len)
{
	for (size_t f = 0; f < sizeof(pt_flavours) / sizeof(pt_flavours[0]); f++) {
		if (strcmp(val, pt_flavours[f].name))
			continue;
		for (int i = 0; i < 12 && pt_flavours[f].set[i][0]; i++)
			if (pt_param(base, pt_flavours[f].set[i][0], pt_flavours[f].set[i][1], err,
				     len))
				return -EINVAL;
		return 0;
	}
	snprintf(err, len, "flavour must be paper or code, not '%s'", val);
	return -EINVAL;
}

/*
 * revert_wait: samples, "N" or "MIN-MAX" (drawn at random per revert), or
 * "vote", the released code's: judge_samples samples, then as many again if
 * most of them still had a workload below slack_up (PARTIES.py makeDecision).
 */
static int pt_revert_wait(const struct cfg_key *k, void *base, const char *val, void *ctx,
			  char *err, size_t len)
{
	struct pt_params *p = base;
	unsigned long lo = 0, hi = 0;
	const char *q = val;
	char *end = NULL;
	bool ok = isdigit((unsigned char)*q);

	if (!strcmp(val, "vote")) {
		p->wait_vote = true;
		p->wait_min = p->wait_max = 0;
		return 0;
	}
	if (ok) {
		lo = hi = strtoul(q, &end, 10);
		if (*end == '-') {
			q = end + 1;
			ok = isdigit((unsigned char)*q);
			if (ok)
				hi = strtoul(q, &end, 10);
		}
	}
	if (!ok || *end || lo > hi || hi > 1000) {
		snprintf(
		    err, len,
		    "revert_wait must be N or MIN-MAX samples within 0..1000, or vote, not '%s'",
		    val);
		return -EINVAL;
	}
	p->wait_vote = false;
	p->wait_min = lo;
	p->wait_max = hi;
	return 0;
}

static int pt_first(const struct cfg_key *k, void *base, const char *val, void *ctx, char *err,
		    size_t len)
{
	struct pt_params *p = base;
	enum pol_res r;

	if (!strcmp(val, "random")) {
		p->first = -1;
	} else if (!pol_res_parse(val, &r)) {
		p->first = (int)r;
	} else {
		snprintf(err, len, "first must be random, cores, freq or quota, not '%s'", val);
		return -EINVAL;
	}
	return 0;
}

static int pt_wheel(const struct cfg_key *k, void *base, const char *val, void *ctx, char *err,
		    size_t len)
{
	struct pt_params *p = base;
	char buf[128], *save = NULL, *tok;
	int n = 0;

	snprintf(buf, sizeof(buf), "%s", val);
	for (tok = strtok_r(buf, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
		enum pol_res r;

		if (pol_res_parse(tok, &r)) {
			snprintf(err, len, "wheel: unknown resource '%s' (cores, freq, quota)",
				 tok);
			return -EINVAL;
		}
		for (int i = 0; i < n; i++) {
			if (p->wheel[i] == r) {
				snprintf(err, len, "wheel: '%s' listed twice", tok);
				return -EINVAL;
			}
		}
		p->wheel[n++] = r;
	}
	if (!n) {
		snprintf(err, len, "wheel: empty (give e.g. cores,freq,quota)");
		return -EINVAL;
	}
	p->nwheel = n;
	return 0;
}

#define P(f) CFG_KEY_AT(struct pt_params, f)
/* two-valued: the first value is the paper's (index 0, the default) */
#define TWO(key, f, a, b)                                                                   \
	{                                                                                   \
		key, CFG_KEY_CHOICE, P(f), .names = (const char *const[]){ a, b, NULL },    \
					   .msg = "%1$s must be " a " or " b ", not '%2$s'" \
	}
#define SLACK_RULE   .rule = { { -1, 1, 0, "%s must be within [-1, 1], not %s" } }
#define SECONDS_RULE .rule = { { 0, INFINITY, 0, "%s must be >= 0, not %s" } }

/* The settings of [policy parties], paper defaults. */
static const struct cfg_key pt_keys[] = {
	{ "flavour", CFG_KEY_CUSTOM, .parse = pt_flavour },
	{ "slack_up", CFG_KEY_REAL, P(slack_up), SLACK_RULE, .def = 0.05 },
	{ "slack_down", CFG_KEY_REAL, P(slack_down), SLACK_RULE, .def = 0.20 },
	{ "judge_samples", CFG_KEY_REAL, P(judge_samples),
	  .rule = { { 1, 100, CFG_KEY_INTEGRAL, "%s must be a whole number in 1..100, not %s" } },
	  .def = 1 },
	TWO("slack", slack_mode, "latest", "both"),
	TWO("revert_check", revert_check, "self", "any"),
	{ "cooldown_s", CFG_KEY_REAL, P(cooldown_s), SECONDS_RULE, .def = 30 },
	{ "violation_alarm_s", CFG_KEY_REAL, P(alarm_s), SECONDS_RULE, .def = 60 },
	{ "wheel", CFG_KEY_CUSTOM, .parse = pt_wheel },
	{ "first", CFG_KEY_CUSTOM, P(first), .def = -1, .parse = pt_first },
	TWO("idle", idle_release, "hold", "release"),
	TWO("repick", repick, "next", "random"),
	TWO("pingpong", pingpong, "resource", "state"),
	TWO("tie", tie_fails, "pass", "fail"),
	{ "revert_wait", CFG_KEY_CUSTOM, .parse = pt_revert_wait },
	{ "hold_samples", CFG_KEY_REAL, P(hold_samples),
	  .rule = { { 1, 100, CFG_KEY_INTEGRAL, "%s must be a whole number in 1..100, not %s" } },
	  .def = 1 },
	TWO("freq_top", freq_top_fails, "judge", "fail"),
	/* the decision interval for this policy, over [controller] interval_ms
	 * (pt_interval() hands it to the config; flavour = code otherwise
	 * forces 100 ms) */
	{ "interval_ms", CFG_KEY_REAL, P(interval_ms),
	  .rule = { { 10, 60000, CFG_KEY_INTEGRAL,
		      "%s must be a whole number in 10..60000, not %s" } } },
	TWO("downsize_fallback", down_fallback, "off", "on"),
	{ "settle_ms", CFG_KEY_REAL, P(settle_ms),
	  .rule = { { 0, 600000, CFG_KEY_INTEGRAL,
		      "%s must be a whole number in 0..600000, not %s" } } },
};
#define PT_NKEYS ((int)(sizeof(pt_keys) / sizeof(pt_keys[0])))

static void pt_defaults(struct pt_params *p)
{
	memset(p, 0, sizeof(*p));
	cfg_key_defaults(pt_keys, PT_NKEYS, p);
	p->nwheel = 3;
	p->wheel[0] = POL_RES_CORES;
	p->wheel[1] = POL_RES_FREQ;
	p->wheel[2] = POL_RES_QUOTA;
}

static int pt_param(struct pt_params *p, const char *key, const char *val, char *err, size_t len)
{
	int e = cfg_key_setting(pt_keys, PT_NKEYS, p, key, val, err, len);
	char names[256];

	if (e != -ENOENT)
		return e;
	cfg_key_list(pt_keys, PT_NKEYS, names, sizeof(names));
	snprintf(err, len, "unknown key '%s' for policy parties (%s)", key, names);
	return -EINVAL;
}

static int pt_check_param(const char *key, const char *val, char *err, size_t len)
{
	struct pt_params p;

	pt_defaults(&p);
	return pt_param(&p, key, val, err, len);
}

/* pt_param() as pol_parse_params() calls it */
static int pt_set(void *p, const char *key, const char *val, char *err, size_t len)
{
	return pt_param(p, key, val, err, len);
}

static int pt_init(void **state, struct pol_init_args *args)
{
	struct pt_state *st = calloc(1, sizeof(*st));
	int err;

	if (!st)
		return -ENOMEM;
	pt_defaults(&st->p);
	err = pol_parse_params(args, &st->p, pt_set);
	if (err) {
		free(st);
		return err;
	}
	if (st->p.slack_up >= st->p.slack_down) {
		snprintf(args->err, args->err_len, "slack_up (%g) must be below slack_down (%g)",
			 st->p.slack_up, st->p.slack_down);
		free(st);
		return -EINVAL;
	}
	st->nwl = args->nwl;
	/* splitmix64 state; never zero so a seed of 0 still works */
	st->rng = args->seed ^ 0x9e3779b97f4a7c15ULL;
	*state = st;
	return 0;
}

static void pt_exit(void *state)
{
	free(state);
}

static uint64_t pt_rand(struct pt_state *st)
{
	uint64_t z = (st->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static bool res_on(const struct pt_state *st, const struct pol_observation *obs, enum pol_res r)
{
	if (!obs->res[r].avail)
		return false;
	for (int i = 0; i < st->p.nwheel; i++)
		if (st->p.wheel[i] == r)
			return true;
	return false;
}

/* A managed resource of the wheel at random (the code's re-pick), or r if none is. */
static enum pol_res wheel_random(struct pt_state *st, const struct pol_observation *obs,
				 enum pol_res r)
{
	enum pol_res on[POL_RES_COUNT];
	int n = 0;

	for (int k = 0; k < st->p.nwheel; k++)
		if (obs->res[st->p.wheel[k]].avail)
			on[n++] = st->p.wheel[k];
	return n ? on[pt_rand(st) % (uint64_t)n] : r;
}

/* The next managed resource after r on the wheel (r itself if it is the only one). */
static enum pol_res wheel_next(const struct pt_state *st, const struct pol_observation *obs,
			       enum pol_res r)
{
	int pos = -1;

	for (int i = 0; i < st->p.nwheel; i++)
		if (st->p.wheel[i] == r)
			pos = i;
	for (int k = 1; k <= st->p.nwheel; k++) {
		enum pol_res n = st->p.wheel[(pos + k + st->p.nwheel) % st->p.nwheel];

		if (obs->res[n].avail)
			return n;
	}
	return r;
}

/* Does workload i take part in decisions, and with which slacks? */
static bool eligible(const struct pt_state *st, const struct pol_observation *obs, int i,
		     double *slack, double *slack_avg)
{
	const struct pol_wl_obs *w = &obs->wl[i];

	if (!w->alive)
		return false;
	if (w->state == POL_LAT_FRESH) {
		*slack = w->slack;
		*slack_avg = isfinite(w->slack_avg) ? w->slack_avg : w->slack;
		return true;
	}
	if (w->state == POL_LAT_IDLE && st->p.idle_release) {
		*slack = *slack_avg = 1.0;
		return true;
	}
	return false;
}

static double slack_of(const struct pt_state *st, const struct pol_observation *obs, int i)
{
	double s = NAN, a;

	eligible(st, obs, i, &s, &a);
	return s;
}

/* Can workload i move one step of r in direction dir? For a pooled upsize
 * with an empty pool, *donor receives the donor (else -1). */
static bool can_move(const struct pt_state *st, const struct pol_observation *obs,
		     const struct pol_decision *dec, int i, enum pol_res r, enum pt_dir dir,
		     int *donor)
{
	const struct pol_res_info *ri = &obs->res[r];
	const struct pol_wl_obs *w = &obs->wl[i];
	long cur = dec->wl[i].alloc[r];
	double best = -INFINITY;

	*donor = -1;
	if (!res_on(st, obs, r))
		return false;
	if (dir == PT_DOWN)
		return cur - ri->step >= w->min[r];
	if (cur + ri->step > w->max[r])
		return false;
	if (!ri->pooled || ri->free >= ri->step)
		return true;
	for (int j = 0; j < obs->nwl; j++) {
		double s, a;

		if (j == i || !eligible(st, obs, j, &s, &a))
			continue;
		if (dec->wl[j].alloc[r] - ri->step < obs->wl[j].min[r])
			continue;
		if (s > best) {
			best = s;
			*donor = j;
		}
	}
	return *donor >= 0;
}

static void set_reason(struct pol_decision *dec, int i, const char *action, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void set_reason(struct pol_decision *dec, int i, const char *action, const char *fmt, ...)
{
	va_list ap;

	if (action)
		snprintf(dec->wl[i].action, sizeof(dec->wl[i].action), "%s", action);
	va_start(ap, fmt);
	vsnprintf(dec->wl[i].reason, sizeof(dec->wl[i].reason), fmt, ap);
	va_end(ap);
}

/* Take one step of a resource in direction dir for workload i, walking the
 * wheel past resources at their limit. 0, or -ENOSPC if nothing can move. */
static int act(struct pt_state *st, const struct pol_observation *obs, struct pol_decision *dec,
	       int i, enum pt_dir dir, const char *why)
{
	struct pt_wl *w = &st->wl[i];
	const char *verb = dir == PT_UP ? "up" : "down";
	char action[POL_ACTION_LEN], skipped[64] = "";
	enum pol_res r;
	int donor = -1, k;
	long step;

	if (w->dir != dir) {
		/* "If A's current action is not an UP action, move to the next UP
		 * action" (paper); the released code re-picks the resource at
		 * random instead (repick = random). The very first action uses
		 * the random first resource. */
		if (w->started)
			w->res = st->p.repick == PT_REPICK_RANDOM ? wheel_random(st, obs, w->res)
								  : wheel_next(st, obs, w->res);
		w->dir = dir;
	}
	w->started = true;
	for (k = 0; k < st->p.nwheel; k++) {
		if (can_move(st, obs, dec, i, w->res, dir, &donor))
			break;
		if (res_on(st, obs, w->res)) {
			size_t n = strlen(skipped);

			snprintf(skipped + n, sizeof(skipped) - n, "%s%s", n ? "," : "",
				 pol_res_str(w->res));
		}
		w->res = wheel_next(st, obs, w->res);
	}
	if (k == st->p.nwheel) {
		set_reason(dec, i, dir == PT_UP ? "none (at limit)" : "hold",
			   "%s; every resource at its limit", why);
		return -ENOSPC;
	}
	r = w->res;
	step = obs->res[r].step;
	snprintf(action, sizeof(action), "%s %s", verb, pol_res_str(r));
	if (dir == PT_UP) {
		dec->wl[i].alloc[r] += step;
		if (donor >= 0) {
			/* paper: the donor's wheel points at r; code: the donor's
			 * whole state equals the receiver's new one, (UP, r) */
			bool pingpong =
			    st->wl[donor].res == r &&
			    (st->p.pingpong == PT_PP_RESOURCE || st->wl[donor].dir == PT_UP);

			dec->wl[donor].alloc[r] -= step;
			if (pingpong)
				st->wl[donor].res = wheel_next(st, obs, r);
			set_reason(dec, donor, "donate", "gives %ld %s to %s (most slack, %.3f)%s",
				   pol_res_shown(r, step), pol_res_str(r), obs->wl[i].name,
				   slack_of(st, obs, donor),
				   pingpong ? "; its wheel advanced (anti-ping-pong)" : "");
		}
		set_reason(dec, i, action, "%s; +%ld %s from %s%s%s", why, pol_res_shown(r, step),
			   pol_res_str(r), donor >= 0 ? obs->wl[donor].name : "free pool",
			   *skipped ? "; skipped at limit: " : "", skipped);
	} else {
		dec->wl[i].alloc[r] -= step;
		set_reason(dec, i, action, "%s; -%ld %s to %s%s%s", why, pol_res_shown(r, step),
			   pol_res_str(r), obs->res[r].pooled ? "free pool" : "nobody",
			   *skipped ? "; skipped at limit: " : "", skipped);
	}
	st->pend = (struct pt_pending){
		.active = true,
		.dir = dir,
		.wl = i,
		.res = r,
		.donor = donor,
		.pre_p99_ns = obs->wl[i].p99_ns,
		.tick = obs->tick,
		.t_ms = obs->now_ms,
	};
	return 0;
}

/* One sample of "did the downsize of workload wl hurt": below slack_up is
 * the workload itself (revert_check = self) or any workload (any). false if
 * the sample tells nothing (no fresh latency to judge by). */
static bool down_sample(const struct pt_state *st, const struct pol_observation *obs, int wl,
			bool *bad)
{
	double s, a;
	bool any = false;

	*bad = false;
	if (st->p.revert_check == PT_REVERT_SELF) {
		if (!eligible(st, obs, wl, &s, &a))
			return false;
		*bad = s < st->p.slack_up;
		return true;
	}
	for (int j = 0; j < obs->nwl; j++) {
		if (!eligible(st, obs, j, &s, &a))
			continue;
		any = true;
		if (s < st->p.slack_up)
			*bad = true;
	}
	return any;
}

/* Did a vote of `bad` out of `n` samples fail? A tie passes in the paper's
 * reading and fails in the released code (tie). */
static bool vote_failed(const struct pt_state *st, unsigned int bad, unsigned int n)
{
	return n && (st->p.tie_fails ? 2 * bad >= n : 2 * bad > n);
}

/* Count one sample for the pending action. true when it has enough. */
static bool judge_sample(struct pt_state *st, const struct pol_observation *obs)
{
	struct pt_pending *pd = &st->pend;
	const struct pol_wl_obs *w = &obs->wl[pd->wl];
	bool bad;

	/* Samples whose window is still mostly from before the action say
	 * little about it: they are neither counted nor a reason to give up. */
	if (obs->now_ms < pd->t_ms + st->p.settle_ms)
		return false;
	pd->waited++;
	if (pd->dir == PT_UP) {
		if (w->state == POL_LAT_FRESH) {
			pd->samples++;
			if (!(w->p99_ns < pd->pre_p99_ns))
				pd->bad++;
		}
	} else if (down_sample(st, obs, pd->wl, &bad)) {
		pd->samples++;
		pd->bad += bad;
	}
	return pd->samples >= st->p.judge_samples;
}

/* The end of a judged upsize: if it failed (or, in the code's flavour,
 * left the frequency at its top), workload i's wheel moves to the next
 * resource and the note says why. */
static void judged_up(struct pt_state *st, const struct pol_observation *obs,
		      struct pol_decision *dec, bool failed)
{
	const struct pt_pending *pd = &st->pend;
	int i = pd->wl;
	const char *rn = pol_res_str(pd->res);
	bool top;

	/* The code also fails an upsize of frequency that left it at its
	 * top, whatever the vote (`cnt <= 0 or (State[helpID] == 2 and
	 * FREQ[helpID] == 2300)`, after the same samples), so the wheel
	 * moves on at this judgement (freq_top = fail). */
	top = st->p.freq_top_fails && pd->res == POL_RES_FREQ &&
	      obs->wl[i].alloc[POL_RES_FREQ] + obs->res[POL_RES_FREQ].step >
		  obs->wl[i].max[POL_RES_FREQ];
	if (!failed && !top)
		return;
	/* Not undone: downsizing reclaims over-allocation later. */
	st->wl[i].res = wheel_next(st, obs, pd->res);
	if (top)
		snprintf(st->note, sizeof(st->note),
			 "up freq reached the top frequency (%ld MHz): counted as "
			 "failed, next: %s",
			 obs->wl[i].alloc[POL_RES_FREQ] / 1000, pol_res_str(st->wl[i].res));
	else
		snprintf(st->note, sizeof(st->note),
			 "up %s did not lower p99 (%.0f -> %.0f us), next: %s", rn,
			 pd->pre_p99_ns / 1e3, obs->wl[i].p99_ns / 1e3, pol_res_str(st->wl[i].res));
	st->note_wl = i;
	set_reason(dec, i, NULL, "%s", st->note);
}

/* After a revert the code waits before deciding anything (revert_wait =
 * vote: 5 samples, 5 more if most of them still had a workload below 0.05;
 * otherwise a random count in [wait_min, wait_max]), and with settle_ms no
 * decision is taken on a window still mostly from before the revert. */
static void start_wait(struct pt_state *st, const struct pol_observation *obs, int i)
{
	st->wait_round = 1;
	st->wait_samples = st->wait_bad = 0;
	st->wait_left =
	    st->p.wait_vote
		? st->p.judge_samples
		: st->p.wait_min +
		      (st->p.wait_max > st->p.wait_min
			   ? (unsigned int)(pt_rand(st) % (st->p.wait_max - st->p.wait_min + 1))
			   : 0);
	st->hold_until_ms = obs->now_ms + st->p.settle_ms;
	st->wait_wl = i;
}

/* A harmful downsize: undo it at once (if the unit is still free), advance
 * the wheel, cool down and wait. */
static void revert_down(struct pt_state *st, const struct pol_observation *obs,
			struct pol_decision *dec)
{
	const struct pt_pending *pd = &st->pend;
	int i = pd->wl;
	const char *rn = pol_res_str(pd->res);

	st->wl[i].res = wheel_next(st, obs, pd->res);
	st->wl[i].cool_until_ms = obs->now_ms + (uint64_t)(st->p.cooldown_s * 1000.0);
	start_wait(st, obs, i);
	if (obs->res[pd->res].pooled && obs->res[pd->res].free < obs->res[pd->res].step) {
		set_reason(dec, i, "revert failed",
			   "down %s hurt QoS but the unit is no longer free; cooling down %.0f s",
			   rn, st->p.cooldown_s);
		return;
	}
	dec->wl[i].alloc[pd->res] += obs->res[pd->res].step;
	set_reason(dec, i, "revert",
		   "down %s hurt QoS (slack %.3f < %.2f%s); undone, cooling down %.0f s", rn,
		   slack_of(st, obs, i), st->p.slack_up,
		   st->p.revert_check == PT_REVERT_ANY ? " somewhere" : "", st->p.cooldown_s);
}

/* Judge the pending action. Returns true if this decision is used up (a revert). */
static bool judge(struct pt_state *st, const struct pol_observation *obs, struct pol_decision *dec,
		  bool *watching)
{
	struct pt_pending *pd = &st->pend;
	int i = pd->wl;
	bool failed;

	*watching = false;
	if (!pd->active)
		return false;
	if (!obs->wl[i].alive) {
		pd->active = false;
		return false;
	}
	if (!judge_sample(st, obs)) {
		if (pd->waited <= 3 * st->p.judge_samples + 3) {
			set_reason(dec, i, "watch", "watching %s %s (%u/%u samples%s)",
				   pd->dir == PT_UP ? "up" : "down", pol_res_str(pd->res),
				   pd->samples, st->p.judge_samples,
				   obs->now_ms < pd->t_ms + st->p.settle_ms ? ", settling" : "");
			*watching = true;
			return false;
		}
		/* No fresh data for too long: the action can be judged neither way. */
		pd->active = false;
		return false;
	}
	failed = vote_failed(st, pd->bad, pd->samples);
	pd->active = false;
	if (pd->dir == PT_UP) {
		judged_up(st, obs, dec, failed);
		return false;
	}
	if (!failed)
		return false;
	revert_down(st, obs, dec);
	return true;
}

static void track_violation(struct pt_state *st, const struct pol_observation *obs,
			    struct pol_decision *dec)
{
	bool all_met = true;
	uint64_t span = (uint64_t)(st->p.alarm_s * 1000.0);

	for (int i = 0; i < obs->nwl; i++) {
		double s, a;

		if (eligible(st, obs, i, &s, &a) && s < 0)
			all_met = false;
	}
	if (all_met || !st->met_init) {
		st->met_init = true;
		st->last_all_met_ms = obs->now_ms;
		return;
	}
	if (span && obs->now_ms - st->last_all_met_ms >= span &&
	    (!st->last_alarm_ms || obs->now_ms - st->last_alarm_ms >= span)) {
		st->last_alarm_ms = obs->now_ms;
		snprintf(dec->event, sizeof(dec->event),
			 "sustained violation: QoS not met by every workload for %.0f s "
			 "(the paper would migrate one away; out of scope)",
			 (double)(obs->now_ms - st->last_all_met_ms) / 1000.0);
	}
}

/* Every wheel's first resource: `first`, or one at random (seeded). */
static void wheels_start(struct pt_state *st, const struct pol_observation *obs)
{
	for (int i = 0; i < POL_MAX_WORKLOADS; i++) {
		st->wl[i].res = wheel_random(st, obs, POL_RES_CORES);
		if (st->p.first >= 0 && obs->res[st->p.first].avail)
			st->wl[i].res = (enum pol_res)st->p.first;
	}
	st->wheels_init = true;
}

/* Each workload's reason before anything is decided: where it stands. */
static void say_state(const struct pt_state *st, const struct pol_observation *obs,
		      struct pol_decision *dec)
{
	for (int i = 0; i < obs->nwl; i++) {
		const struct pol_wl_obs *w = &obs->wl[i];

		if (!w->alive)
			set_reason(dec, i, "gone", "workload exited");
		else if (w->state == POL_LAT_FRESH)
			set_reason(dec, i, NULL, "slack %.3f (avg %.3f)", w->slack, w->slack_avg);
		else if (w->state == POL_LAT_IDLE && st->p.idle_release)
			set_reason(dec, i, NULL, "idle: counted as full slack");
		else
			set_reason(dec, i, NULL, "no fresh latency (%s): not judged",
				   w->state == POL_LAT_IDLE ? "idle" : "stale");
	}
}

/*
 * After a revert: the samples still to skip, or the window still settling.
 * true while waiting (this decision is used up). With revert_wait = vote this
 * sample counts towards the round's vote, and the last sample of a round
 * that passed (or of the second round) is decided on, as the code decides
 * on the sample of its last wait().
 */
static bool wait_after_revert(struct pt_state *st, const struct pol_observation *obs,
			      struct pol_decision *dec)
{
	int w = st->wait_wl;
	bool bad;

	if (!st->wait_left && obs->now_ms >= st->hold_until_ms)
		return false;
	if (st->wait_left && st->p.wait_vote) {
		if (down_sample(st, obs, w, &bad)) {
			st->wait_samples++;
			st->wait_bad += bad;
		}
		if (!--st->wait_left && st->wait_round == 1 &&
		    vote_failed(st, st->wait_bad, st->wait_samples)) {
			st->wait_round = 2;
			st->wait_left = st->p.judge_samples;
		}
		if (!st->wait_left && obs->now_ms >= st->hold_until_ms)
			return false;
	} else if (st->wait_left) {
		st->wait_left--;
	}
	if (w >= 0 && w < obs->nwl && obs->wl[w].alive)
		set_reason(dec, w, "wait", "after a revert: %u more samples%s%s", st->wait_left,
			   st->wait_round == 2 && st->p.wait_vote ? " (still below slack_up)" : "",
			   obs->now_ms < st->hold_until_ms ? ", settling" : "");
	return true;
}

/* Holding takes hold_samples samples per decision (the code: 2, the trailing
 * wait() of its hold branch and the leading one of the next decision). true
 * while still sampling (this decision is used up). */
static bool hold_sampling(struct pt_state *st, const struct pol_observation *obs,
			  struct pol_decision *dec)
{
	if (!st->hold_left)
		return false;
	st->hold_left--;
	for (int i = 0; i < obs->nwl; i++) {
		size_t n = strlen(dec->wl[i].reason);

		if (obs->wl[i].alive)
			snprintf(dec->wl[i].reason + n, sizeof(dec->wl[i].reason) - n,
				 "; holding: %u more sample(s) before deciding (hold_samples = %u)",
				 st->hold_left, st->p.hold_samples);
	}
	return true;
}

/* May workload i be downsized now (with slacks s and a)? */
static bool may_downsize(const struct pt_state *st, const struct pol_observation *obs, int i,
			 double a)
{
	return obs->now_ms >= st->wl[i].cool_until_ms &&
	       !(st->p.slack_mode == PT_SLACK_BOTH && a <= st->p.slack_down);
}

/* The upsize candidate S (least slack; with slack = both, both slacks below
 * slack_up) and the downsize candidate L (most slack, not cooling down). */
static void pick(const struct pt_state *st, const struct pol_observation *obs, int *S, double *sS,
		 int *L, double *sL)
{
	double aS = INFINITY;

	*S = *L = -1;
	*sS = INFINITY;
	*sL = -INFINITY;
	for (int i = 0; i < obs->nwl; i++) {
		double s, a;

		if (!eligible(st, obs, i, &s, &a))
			continue;
		if (st->p.slack_mode == PT_SLACK_LATEST) {
			if (s < *sS) {
				*sS = s;
				*S = i;
			}
		} else if (s < st->p.slack_up && a < st->p.slack_up && a < aS) {
			aS = a;
			*sS = s;
			*S = i;
		}
		if (may_downsize(st, obs, i, a) && s > *sL) {
			*sL = s;
			*L = i;
		}
	}
}

/* downsize_fallback = on: the most-slack workload L (slack sL) is at its
 * limits (paper and code stop there, which can starve scale-down); try the
 * next-most-slack one that qualifies, and so on. */
static void downsize_fallback(struct pt_state *st, const struct pol_observation *obs,
			      struct pol_decision *dec, int L, double sL)
{
	char why[192];

	for (;;) {
		int next = -1;
		double sn = -INFINITY;

		for (int i = 0; i < obs->nwl; i++) {
			double s, a;

			if (!eligible(st, obs, i, &s, &a) || !may_downsize(st, obs, i, a) ||
			    s <= st->p.slack_down)
				continue;
			/* below the last one tried (ties: after it in order) */
			if (s > sL || (s == sL && i <= L))
				continue;
			if (s > sn) {
				sn = s;
				next = i;
			}
		}
		if (next < 0)
			return;
		L = next;
		sL = sn;
		snprintf(why, sizeof(why),
			 "slack %.3f > %.2f; the ones with more are at their limits", sL,
			 st->p.slack_down);
		if (!act(st, obs, dec, L, PT_DOWN, why))
			return;
	}
}

static int pt_decide(void *state, const struct pol_observation *obs, struct pol_decision *dec)
{
	struct pt_state *st = state;
	int S, L;
	double sS, sL;
	bool watching;
	char why[192];

	if (obs->nwl > POL_MAX_WORKLOADS)
		return -EINVAL;
	if (!st->wheels_init)
		wheels_start(st, obs);
	say_state(st, obs, dec);
	track_violation(st, obs, dec);

	st->note_wl = -1;
	if (judge(st, obs, dec, &watching) || watching)
		return 0;
	if (wait_after_revert(st, obs, dec) || hold_sampling(st, obs, dec))
		return 0;
	pick(st, obs, &S, &sS, &L, &sL);
	if (S >= 0 && sS < st->p.slack_up) {
		snprintf(why, sizeof(why), "lowest slack %.3f < %.2f%s%s", sS, st->p.slack_up,
			 S == st->note_wl ? "; " : "", S == st->note_wl ? st->note : "");
		act(st, obs, dec, S, PT_UP, why);
		return 0;
	}
	if (L >= 0 && sL > st->p.slack_down) {
		snprintf(why, sizeof(why), "highest slack %.3f > %.2f", sL, st->p.slack_down);
		if (act(st, obs, dec, L, PT_DOWN, why) && st->p.down_fallback)
			downsize_fallback(st, obs, dec, L, sL);
		return 0;
	}
	/* nothing to do: a hold (an action that found every resource at its
	 * limit is not one; the code decides again on the next sample then) */
	st->hold_left = st->p.hold_samples - 1;
	return 0;
}

static void pt_reflect(void *state, const struct pol_observation *obs,
		       const struct pol_decision *dec, const struct pol_outcome *out)
{
	struct pt_state *st = state;

	/* An action the loop refused or could not apply did not happen: do not
	 * judge the machine by it. */
	if (!out->applied && st->pend.active && st->pend.tick == obs->tick)
		st->pend.active = false;
}

/*
 * PARTIES' released controller samples every 100 ms, and its 5-sample votes
 * and 10 s cool-down (100 samples) are counted in those samples: `flavour =
 * code` forces 100 ms over [controller] interval_ms, which a config shared
 * with the paper's flavour sets for 500 ms. Another interval for this policy
 * is `interval_ms` here. Either way round, what was not taken from the file
 * as written goes to note, said at start.
 */
static void pt_interval(const struct pol_param *params, int nparams, bool ctl_set,
			unsigned int *interval_ms, char *note, size_t note_len)
{
	const char *flavour = "paper", *own = NULL;
	unsigned int ctl = *interval_ms;
	bool code;

	for (int i = 0; i < nparams; i++) {
		if (!strcmp(params[i].key, "flavour"))
			flavour = params[i].val;
		else if (!strcmp(params[i].key, "interval_ms"))
			own = params[i].val;
	}
	code = !strcmp(flavour, "code");
	if (own) {
		*interval_ms = (unsigned int)strtod(own, NULL); /* checked by pt_check_param */
		snprintf(note, note_len,
			 "policy parties: interval %u ms from [policy parties] interval_ms%s%s",
			 *interval_ms,
			 code ? " (flavour = code; the released code samples every 100 ms)" : "",
			 ctl_set && ctl != *interval_ms ? ", not [controller] interval_ms" : "");
	} else if (code) {
		*interval_ms = 100;
		if (ctl_set && ctl != 100)
			snprintf(
			    note, note_len,
			    "policy parties: flavour = code samples every 100 ms, as the released "
			    "code; [controller] interval_ms = %u is not used (set interval_ms in "
			    "[policy parties] to run it at another interval)",
			    ctl);
	}
}

const struct pol_ops pol_parties_ops = {
	.name = "parties",
	.desc = "PARTIES (ASPLOS'19): slack thresholds, resource wheel, revert and cool-down",
	.check_param = pt_check_param,
	.keys = pt_keys,
	.nkeys = PT_NKEYS,
	.init = pt_init,
	.decide = pt_decide,
	.reflect = pt_reflect,
	.exit = pt_exit,
	.interval = pt_interval,
	.variants = (const char *const[]){ "flavour=paper", "flavour=code", NULL },
};
