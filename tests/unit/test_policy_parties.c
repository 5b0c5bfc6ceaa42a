// SPDX-License-Identifier: MIT
/*
 * The parties policy against scripted observations: every decision is checked
 * against the algorithm in docs/parties.md 2 (and 3 for flavour = code).
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "policy.h"

#define C POL_RES_CORES
#define F POL_RES_FREQ
#define Q POL_RES_QUOTA

struct fx {
	const struct pol_ops *ops;
	void *st;
	struct pol_observation obs;
	struct pol_decision dec;
};

/* The policy's seed; tests that sweep seeds change it before fx_setup. */
static uint64_t fx_seed = 42;

/* nwl workloads, `total` cores, quota (if on) 100 mc steps out of qtotal. */
static void fx_setup(struct fx *f, int nwl, long total, bool quota, long qtotal,
		     const struct pol_param *params, int nparams)
{
	char err[128] = "";
	struct pol_init_args a = {
		.sz = sizeof(a),
		.seed = fx_seed,
		.nwl = nwl,
		.params = params,
		.nparams = nparams,
		.err = err,
		.err_len = sizeof(err),
		.err_param = -1,
	};

	memset(f, 0, sizeof(*f));
	f->ops = pol_find("parties");
	assert_non_null(f->ops);
	assert_int_equal(f->ops->init(&f->st, &a), 0);
	f->obs.interval_ms = 500;
	f->obs.nwl = nwl;
	f->obs.res[C] =
	    (struct pol_res_info){ .avail = true, .pooled = true, .step = 1, .total = total };
	f->obs.res[F] = (struct pol_res_info){ .avail = false, .step = 100000 };
	f->obs.res[Q] =
	    (struct pol_res_info){ .avail = quota, .pooled = true, .step = 100, .total = qtotal };
	for (int i = 0; i < nwl; i++) {
		struct pol_wl_obs *w = &f->obs.wl[i];

		snprintf(w->name, sizeof(w->name), "w%d", i);
		w->alive = true;
		w->target_ns = 1000e3;
		w->min[C] = 1;
		w->max[C] = total;
		w->min[Q] = 100;
		w->max[Q] = qtotal;
		w->alloc[C] = 1;
		w->alloc[Q] = quota ? 100 : 0;
	}
}

static void fx_teardown(struct fx *f)
{
	f->ops->exit(f->st);
}

static void set_lat_ns(struct fx *f, int i, double p99)
{
	struct pol_wl_obs *w = &f->obs.wl[i];

	w->state = POL_LAT_FRESH;
	w->p99_ns = w->p99_avg_ns = p99;
	w->slack = w->slack_avg = (w->target_ns - p99) / w->target_ns;
}

/* p99 in us, as the log shows it */
static void set_lat(struct fx *f, int i, double p99_us)
{
	set_lat_ns(f, i, p99_us * 1e3);
}

static void set_slack(struct fx *f, int i, double slack)
{
	set_lat_ns(f, i, f->obs.wl[i].target_ns * (1 - slack));
}

/* One value per workload, in order: SLACKS(&f, 0.1, -0.2) sets w0 and w1. */
#define NVALS(type, ...)  (sizeof((const type[]){ __VA_ARGS__ }) / sizeof(type))
#define SLACKS(f, ...)	  set_slacks(f, (const double[]){ __VA_ARGS__ }, NVALS(double, __VA_ARGS__))
#define ALLOCS(f, r, ...) set_allocs(f, r, (const long[]){ __VA_ARGS__ }, NVALS(long, __VA_ARGS__))
#define ASSERT_ALLOCS(f, r, ...) \
	assert_allocs(f, r, (const long[]){ __VA_ARGS__ }, NVALS(long, __VA_ARGS__))

static void set_slacks(struct fx *f, const double *slack, size_t n)
{
	assert_int_equal(n, f->obs.nwl);
	for (size_t i = 0; i < n; i++)
		set_slack(f, (int)i, slack[i]);
}

static void set_allocs(struct fx *f, int r, const long *alloc, size_t n)
{
	assert_int_equal(n, f->obs.nwl);
	for (size_t i = 0; i < n; i++)
		f->obs.wl[i].alloc[r] = alloc[i];
}

static void assert_allocs(const struct fx *f, int r, const long *want, size_t n)
{
	assert_int_equal(n, f->obs.nwl);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(f->obs.wl[i].alloc[r], want[i]);
}

static void sync_free(struct fx *f)
{
	for (int r = 0; r < POL_RES_COUNT; r++) {
		long used = 0;

		for (int i = 0; i < f->obs.nwl; i++)
			if (f->obs.wl[i].alive)
				used += f->obs.wl[i].alloc[r];
		f->obs.res[r].free = f->obs.res[r].total - used;
	}
}

/* One decision; the plant applies it as the loop would and reflects. */
static void step(struct fx *f, uint64_t now_ms)
{
	struct pol_outcome out = { .applied = true };

	f->obs.now_ms = now_ms;
	sync_free(f);
	pol_decision_init(&f->dec, &f->obs);
	assert_int_equal(f->ops->decide(f->st, &f->obs, &f->dec), 0);
	for (int i = 0; i < f->obs.nwl; i++) {
		memcpy(f->obs.wl[i].alloc, f->dec.wl[i].alloc, sizeof(f->obs.wl[i].alloc));
		memcpy(out.alloc[i], f->dec.wl[i].alloc, sizeof(out.alloc[i]));
	}
	f->ops->reflect(f->st, &f->obs, &f->dec, &out);
	f->obs.tick++;
	sync_free(f);
}

static const struct pol_param cores_first[] = { { "first", "cores" } };

static void test_upsize_lowest_slack_from_free_pool(void **state)
{
	struct fx f;

	fx_setup(&f, 3, 6, false, 0, cores_first, 1);
	ALLOCS(&f, C, 2, 1, 2);
	SLACKS(&f, 0.02, -0.30 /* lowest */, 0.10);
	step(&f, 1000);
	ASSERT_ALLOCS(&f, C, 2, 2, 2);
	assert_string_equal(f.dec.wl[1].action, "up cores");
	assert_non_null(strstr(f.dec.wl[1].reason, "free pool"));
	assert_string_equal(f.dec.wl[0].action, "hold");
	fx_teardown(&f);
}

static void test_no_action_in_dead_band(void **state)
{
	struct fx f;

	fx_setup(&f, 2, 4, false, 0, NULL, 0);
	SLACKS(&f, 0.06, 0.19);
	step(&f, 1000);
	ASSERT_ALLOCS(&f, C, 1, 1);
	assert_string_equal(f.dec.wl[0].action, "hold");
	assert_string_equal(f.dec.wl[1].action, "hold");
	fx_teardown(&f);
}

static void test_downsize_highest_slack(void **state)
{
	struct fx f;

	fx_setup(&f, 2, 4, false, 0, cores_first, 1);
	ALLOCS(&f, C, 2, 2);
	SLACKS(&f, 0.30, 0.50);
	step(&f, 1000);
	ASSERT_ALLOCS(&f, C, 2, 1);
	assert_string_equal(f.dec.wl[1].action, "down cores");
	assert_int_equal(f.obs.res[C].free, 1);
	fx_teardown(&f);
}

static void test_donor_most_slack_above_minimum(void **state)
{
	struct fx f;

	fx_setup(&f, 3, 5, false, 0, cores_first, 1);
	ALLOCS(&f, C, 1, 1, 3);
	SLACKS(&f, -0.5, 0.90 /* most slack, but at its minimum */, 0.10);
	step(&f, 1000);
	ASSERT_ALLOCS(&f, C, 2, 1, 2);
	assert_string_equal(f.dec.wl[2].action, "donate");
	assert_non_null(strstr(f.dec.wl[0].reason, "from w2"));
	fx_teardown(&f);
}

/* The donor's wheel pointed at cores: it is advanced, so when the donor later
 * needs more it asks for quota, not for the core it just gave away. */
static void test_anti_ping_pong(void **state)
{
	struct fx f;

	fx_setup(&f, 2, 4, true, 1000, cores_first, 1);
	ALLOCS(&f, C, 2, 2);
	ALLOCS(&f, Q, 500, 500); /* quota pool empty too */
	SLACKS(&f, -0.2, 0.15);
	step(&f, 1000);
	ASSERT_ALLOCS(&f, C, 3, 1);
	assert_non_null(strstr(f.dec.wl[1].reason, "anti-ping-pong"));
	/* the upsize helped w0; now w1 violates */
	SLACKS(&f, 0.10, -0.1);
	step(&f, 1500);
	assert_string_equal(f.dec.wl[1].action, "up quota");
	ASSERT_ALLOCS(&f, Q, 400, 600);
	assert_int_equal(f.obs.wl[0].alloc[C], 3);
	fx_teardown(&f);
}

/* Without anti-ping-pong the donor would take its core straight back. */
static void test_pingpong_reason_absent_when_other_resource(void **state)
{
	static const struct pol_param p[] = { { "first", "quota" } };
	struct fx f;

	fx_setup(&f, 2, 4, true, 1000, p, 1);
	ALLOCS(&f, C, 2, 2);
	ALLOCS(&f, Q, 500, 500);
	SLACKS(&f, -0.2, 0.15);
	step(&f, 1000);
	assert_string_equal(f.dec.wl[0].action, "up quota");
	ASSERT_ALLOCS(&f, Q, 600, 400);
	assert_non_null(strstr(f.dec.wl[1].reason, "anti-ping-pong"));
	fx_teardown(&f);
}

static void test_failed_upsize_not_reverted(void **state)
{
	struct fx f;

	fx_setup(&f, 2, 6, true, 2000, cores_first, 1);
	ALLOCS(&f, Q, 500, 500);
	set_lat(&f, 0, 1500);
	set_slack(&f, 1, 0.1);
	step(&f, 1000);
	assert_string_equal(f.dec.wl[0].action, "up cores");
	assert_int_equal(f.obs.wl[0].alloc[C], 2);
	/* latency did not drop: keep the core, move the wheel to quota */
	set_lat(&f, 0, 1600);
	step(&f, 1500);
	assert_int_equal(f.obs.wl[0].alloc[C], 2);
	assert_non_null(strstr(f.dec.wl[0].reason, "did not lower"));
	assert_string_equal(f.dec.wl[0].action, "up quota");
	assert_int_equal(f.obs.wl[0].alloc[Q], 600);
	fx_teardown(&f);
}

static void test_successful_upsize_keeps_resource(void **state)
{
	struct fx f;

	fx_setup(&f, 2, 6, true, 2000, cores_first, 1);
	ALLOCS(&f, Q, 500, 500);
	set_lat(&f, 0, 1500);
	set_slack(&f, 1, 0.1);
	step(&f, 1000);
	set_lat(&f, 0, 1200); /* better, still violating */
	step(&f, 1500);
	assert_string_equal(f.dec.wl[0].action, "up cores");
	assert_int_equal(f.obs.wl[0].alloc[C], 3);
	assert_int_equal(f.obs.wl[0].alloc[Q], 500);
	fx_teardown(&f);
}

static void test_harmful_downsize_reverted_and_cooled(void **state)
{
	struct fx f;

	fx_setup(&f, 2, 4, true, 2000, cores_first, 1);
	ALLOCS(&f, C, 2, 2);
	ALLOCS(&f, Q, 500, 500);
	SLACKS(&f, 0.10, 0.50);
	step(&f, 1000);
	assert_string_equal(f.dec.wl[1].action, "down cores");
	assert_int_equal(f.obs.wl[1].alloc[C], 1);
	/* it hurt: undo at once */
	set_slack(&f, 1, 0.01);
	step(&f, 1500);
	assert_string_equal(f.dec.wl[1].action, "revert");
	assert_int_equal(f.obs.wl[1].alloc[C], 2);
	/* back to plenty of slack, but cooling down for 30 s */
	set_slack(&f, 1, 0.50);
	for (uint64_t t = 2000; t < 1500 + 30000; t += 500) {
		step(&f, t);
		assert_string_equal(f.dec.wl[1].action, "hold");
		assert_int_equal(f.obs.wl[1].alloc[C], 2);
		assert_int_equal(f.obs.wl[1].alloc[Q], 500);
	}
	/* after the cool-down: downsize again, on the next resource of the wheel */
	step(&f, 1500 + 30000);
	assert_string_equal(f.dec.wl[1].action, "down quota");
	assert_int_equal(f.obs.wl[1].alloc[Q], 400);
	assert_int_equal(f.obs.wl[1].alloc[C], 2);
	fx_teardown(&f);
}

static void test_code_flavour_cooldown_and_vote(void **state)
{
	static const struct pol_param p[] = { { "flavour", "code" }, { "first", "cores" } };
	struct fx f;

	fx_setup(&f, 2, 4, false, 0, p, 2);
	f.obs.interval_ms = 100;
	ALLOCS(&f, C, 2, 2);
	SLACKS(&f, 0.10, 0.50);
	step(&f, 1000);
	assert_string_equal(f.dec.wl[1].action, "down cores");
	/* five samples; w0 (not the downsized one) drops below 0.05 in 3 of 5 */
	double s0[] = { 0.01, 0.10, 0.02, 0.10, 0.00 };
	for (int k = 0; k < 5; k++) {
		set_slack(&f, 0, s0[k]);
		step(&f, 1100 + 100 * k);
		if (k < 4) {
			assert_string_equal(f.dec.wl[1].action, "watch");
			assert_int_equal(f.obs.wl[1].alloc[C], 1);
		}
	}
	assert_string_equal(f.dec.wl[1].action, "revert");
	assert_int_equal(f.obs.wl[1].alloc[C], 2);
	/* 10 s cool-down in the code (after its 5-sample wait); holding meanwhile, it
	 * decides on every second sample, so the downsize comes on the first or second
	 * sample after the cool-down */
	set_slack(&f, 0, 0.10);
	for (uint64_t t = 1600; t < 1500 + 10000; t += 100) {
		step(&f, t);
		assert_int_equal(f.obs.wl[1].alloc[C], 2);
	}
	step(&f, 1500 + 10000);
	if (!strcmp(f.dec.wl[1].action, "hold"))
		step(&f, 1500 + 10100);
	assert_string_equal(f.dec.wl[1].action, "down cores");
	fx_teardown(&f);
}

static void test_skip_exhausted_resource(void **state)
{
	struct fx f;

	/* cores: pool empty and the only other workload at its minimum */
	fx_setup(&f, 2, 2, true, 2000, cores_first, 1);
	ALLOCS(&f, Q, 1000, 500);
	SLACKS(&f, -0.3, 0.3);
	step(&f, 1000);
	assert_string_equal(f.dec.wl[0].action, "up quota");
	assert_non_null(strstr(f.dec.wl[0].reason, "skipped at limit: cores"));
	assert_int_equal(f.obs.wl[0].alloc[Q], 1100);
	assert_int_equal(f.obs.wl[0].alloc[C], 1);
	fx_teardown(&f);
}

/* Frequency is private: raised up to the hardware maximum, never taken from another
 * workload; at the maximum the wheel moves on to cores. */
static void test_frequency_private_and_skipped_at_max(void **state)
{
	static const struct pol_param p[] = { { "first", "freq" } };
	struct fx f;

	fx_setup(&f, 2, 4, false, 0, p, 1);
	f.obs.res[F] = (struct pol_res_info){ .avail = true, .step = 100000 };
	for (int i = 0; i < 2; i++) {
		f.obs.wl[i].min[F] = 1000000;
		f.obs.wl[i].max[F] = 2000000;
		f.obs.wl[i].alloc[F] = 1900000;
	}
	set_lat(&f, 0, 1500);
	set_slack(&f, 1, 0.10);
	step(&f, 1000);
	assert_string_equal(f.dec.wl[0].action, "up freq");
	assert_int_equal(f.obs.wl[0].alloc[F], 2000000);
	assert_int_equal(f.obs.wl[1].alloc[F], 1900000);
	set_lat(&f, 0, 1400); /* helped, still violating; freq is at its maximum */
	step(&f, 1500);
	assert_string_equal(f.dec.wl[0].action, "up cores");
	assert_non_null(strstr(f.dec.wl[0].reason, "skipped at limit: freq"));
	assert_int_equal(f.obs.wl[0].alloc[C], 2);
	assert_int_equal(f.obs.wl[0].alloc[F], 2000000);
	fx_teardown(&f);
}

static void test_every_resource_at_limit(void **state)
{
	struct fx f;

	fx_setup(&f, 2, 2, true, 1000, NULL, 0);
	ALLOCS(&f, Q, 900, 100);
	f.obs.wl[0].max[Q] = 900;
	SLACKS(&f, -0.3, 0.3);
	step(&f, 1000);
	assert_string_equal(f.dec.wl[0].action, "none (at limit)");
	assert_int_equal(f.obs.wl[0].alloc[C], 1);
	ASSERT_ALLOCS(&f, Q, 900, 100);
	fx_teardown(&f);
}

static void test_stale_workload_not_judged(void **state)
{
	struct fx f;

	fx_setup(&f, 2, 4, false, 0, cores_first, 1);
	f.obs.wl[1].alloc[C] = 2;
	SLACKS(&f, 0.10, 0.50);
	f.obs.wl[1].state = POL_LAT_STALE; /* its last p99 looked fine; it is not fresh */
	f.obs.wl[0].state = POL_LAT_STALE;
	f.obs.wl[0].p99_ns = 0; /* a missing p99 is not a low one */
	f.obs.wl[0].slack = 1;
	step(&f, 1000);
	ASSERT_ALLOCS(&f, C, 1, 2);
	assert_non_null(strstr(f.dec.wl[1].reason, "no fresh latency"));
	/* a violating fresh workload does not take from a stale one */
	set_slack(&f, 0, -0.5);
	f.obs.wl[1].alloc[C] = 3;
	step(&f, 1500);
	ASSERT_ALLOCS(&f, C, 1, 3);
	assert_string_equal(f.dec.wl[0].action, "none (at limit)");
	fx_teardown(&f);
}

static void test_idle_release(void **state)
{
	static const struct pol_param p[] = { { "idle", "release" }, { "first", "cores" } };
	struct fx f;

	fx_setup(&f, 2, 4, false, 0, p, 2);
	f.obs.wl[1].alloc[C] = 2;
	set_slack(&f, 0, 0.10);
	f.obs.wl[1].state = POL_LAT_IDLE;
	step(&f, 1000);
	assert_string_equal(f.dec.wl[1].action, "down cores");
	assert_int_equal(f.obs.wl[1].alloc[C], 1);
	fx_teardown(&f);
}

static void test_dead_workload_ignored(void **state)
{
	struct fx f;

	fx_setup(&f, 2, 4, false, 0, cores_first, 1);
	SLACKS(&f, 0.10, -0.9);
	f.obs.wl[1].alive = false;
	f.obs.wl[1].alloc[C] = 0;
	step(&f, 1000);
	assert_int_equal(f.obs.wl[1].alloc[C], 0);
	assert_string_equal(f.dec.wl[1].action, "gone");
	fx_teardown(&f);
}

static void test_refused_action_not_judged(void **state)
{
	struct fx f;
	struct pol_outcome out = { .applied = false };

	fx_setup(&f, 2, 4, false, 0, cores_first, 1);
	set_lat(&f, 0, 2000);
	set_slack(&f, 1, 0.1);
	f.obs.now_ms = 1000;
	sync_free(&f);
	pol_decision_init(&f.dec, &f.obs);
	f.ops->decide(f.st, &f.obs, &f.dec);
	assert_string_equal(f.dec.wl[0].action, "up cores");
	for (int i = 0; i < 2; i++)
		memcpy(out.alloc[i], f.obs.wl[i].alloc, sizeof(out.alloc[i]));
	f.ops->reflect(f.st, &f.obs, &f.dec, &out); /* the loop refused it */
	f.obs.tick++;
	/* same latency again: not counted as "upsize did not help" */
	step(&f, 1500);
	assert_string_equal(f.dec.wl[0].action, "up cores");
	assert_null(strstr(f.dec.wl[0].reason, "did not lower"));
	fx_teardown(&f);
}

static void test_sustained_violation_event(void **state)
{
	struct fx f;
	bool seen = false;

	fx_setup(&f, 2, 2, false, 0, NULL, 0);
	SLACKS(&f, -0.5, 0.1);
	for (uint64_t t = 0; t <= 61000; t += 500) {
		step(&f, t);
		if (f.dec.event[0]) {
			assert_true(t >= 60000);
			assert_non_null(strstr(f.dec.event, "sustained violation"));
			seen = true;
		}
	}
	assert_true(seen);
	fx_teardown(&f);
}

/* Plant: p99 = k / cores. A needs 5 cores (slack 0.16), B needs 3 (0.167);
 * both within the dead band there. 10 cores, start at one core each. */
static void plant(struct fx *f)
{
	set_lat(f, 0, 4200.0 / (double)f->obs.wl[0].alloc[C]);
	set_lat(f, 1, 2500.0 / (double)f->obs.wl[1].alloc[C]);
}

/* Run the plant for 400 intervals (200 s); how often the allocation changed from
 * interval `settled` on. The final allocation is left in f. */
static int run_plant(struct fx *f, int settled)
{
	int late = 0;

	for (int t = 0; t < 400; t++) {
		long a = f->obs.wl[0].alloc[C], b = f->obs.wl[1].alloc[C];

		plant(f);
		step(f, 1000 + 500 * (uint64_t)t);
		if (t >= settled && (f->obs.wl[0].alloc[C] != a || f->obs.wl[1].alloc[C] != b))
			late++;
		assert_true(f->obs.wl[0].alloc[C] + f->obs.wl[1].alloc[C] <= f->obs.res[C].total);
	}
	return late;
}

static void test_converges_without_oscillation(void **state)
{
	struct fx f;

	fx_setup(&f, 2, 10, false, 0, NULL, 0);
	assert_int_equal(run_plant(&f, 40), 0);
	ASSERT_ALLOCS(&f, C, 5, 3);
	plant(&f);
	assert_true(f.obs.wl[0].slack >= 0.05);
	assert_true(f.obs.wl[1].slack >= 0.05);
	fx_teardown(&f);
}

/* The same from an over-allocated start: downsizes reclaim cores, and a
 * downsize that hurts is reverted, so the result still meets QoS. */
static void test_converges_from_above(void **state)
{
	struct fx f;

	fx_setup(&f, 2, 10, false, 0, NULL, 0);
	ALLOCS(&f, C, 5, 5);
	assert_int_equal(run_plant(&f, 100), 0);
	ASSERT_ALLOCS(&f, C, 5, 3);
	fx_teardown(&f);
}

/* The known weakness (CLITE): with no allocation inside the dead band the
 * policy probes down and reverts forever, but no faster than the cool-down. */
static void test_known_cycle_bounded_by_cooldown(void **state)
{
	struct fx f;
	int reverts = 0;

	fx_setup(&f, 1, 10, false, 0, NULL, 0);
	f.obs.wl[0].alloc[C] = 6;
	for (int t = 0; t < 240; t++) { /* 120 s */
		/* 4 cores: slack 0.02 (< 0.05); 5 cores: 0.216 (> 0.20) */
		set_lat(&f, 0, 3920.0 / (double)f.obs.wl[0].alloc[C]);
		step(&f, 1000 + 500 * (uint64_t)t);
		if (!strcmp(f.dec.wl[0].action, "revert"))
			reverts++;
		assert_true(f.obs.wl[0].alloc[C] >= 4);
	}
	assert_true(reverts >= 2);
	assert_true(reverts <= 120 / 30 + 1);
	fx_teardown(&f);
}

static void test_seeded_first_resource_reproducible(void **state)
{
	struct fx f1, f2;

	for (int run = 0; run < 2; run++) {
		struct fx *f = run ? &f2 : &f1;

		fx_setup(f, 2, 4, true, 2000, NULL, 0);
		ALLOCS(f, Q, 500, 500);
		SLACKS(f, -0.3, 0.1);
		step(f, 1000);
	}
	assert_string_equal(f1.dec.wl[0].action, f2.dec.wl[0].action);
	fx_teardown(&f1);
	fx_teardown(&f2);
}

/* --- flavour = code: the released controller's behaviours (docs/parties.md 3) --- */

/* n decisions 100 ms apart from t; returns the time of the next one. */
static uint64_t steps(struct fx *f, uint64_t t, int n)
{
	for (int k = 0; k < n; k++, t += 100)
		step(f, t);
	return t;
}

/* After a downsize, the next upsize of the same workload is a direction change: the paper
 * moves to the next resource of the wheel, the code re-picks one at random. */
static const char *resource_after_direction_change(const char *flavour, uint64_t seed)
{
	const struct pol_param p[] = { { "flavour", flavour }, { "first", "cores" } };
	static char got[POL_ACTION_LEN];
	struct fx f;
	uint64_t t;

	fx_seed = seed;
	fx_setup(&f, 2, 4, true, 2000, p, 2);
	fx_seed = 42;
	ALLOCS(&f, C, 2, 2);
	ALLOCS(&f, Q, 500, 500);
	SLACKS(&f, 0.50, 0.10);
	step(&f, 1000);
	assert_string_equal(f.dec.wl[0].action, "down cores");
	SLACKS(&f, 0.10, 0.10); /* the dead band */
	t = steps(&f, 1100, 6); /* judged (not harmful), then nothing to do */
	assert_int_equal(f.obs.wl[0].alloc[C], 1);
	SLACKS(&f, -0.30, 0.10);
	step(&f, t);
	snprintf(got, sizeof(got), "%s", f.dec.wl[0].action);
	fx_teardown(&f);
	return got;
}

static void test_paper_next_resource_on_direction_change(void **state)
{
	for (uint64_t seed = 1; seed <= 12; seed++)
		assert_string_equal(resource_after_direction_change("paper", seed), "up quota");
}

static void test_code_random_repick_on_direction_change(void **state)
{
	int cores = 0, quota = 0;

	for (uint64_t seed = 1; seed <= 24; seed++) {
		const char *a = resource_after_direction_change("code", seed);

		cores += !strcmp(a, "up cores");
		quota += !strcmp(a, "up quota");
	}
	/* both outcomes occur (the paper's rule would give quota every time) */
	assert_int_equal(cores + quota, 24);
	assert_true(cores > 0);
	assert_true(quota > 0);
}

/* revert_wait = MIN-MAX (neither flavour's): after a revert, MIN to MAX decisions are
 * skipped, drawn at random per revert; the paper decides at the next interval. */
static void test_revert_wait_range(void **state)
{
	static const struct pol_param p[] = { { "flavour", "code" },
					      { "first", "cores" },
					      { "revert_wait", "5-10" } };
	int min_wait = 1000, max_wait = -1;

	for (uint64_t seed = 1; seed <= 16; seed++) {
		struct fx f;
		uint64_t t;
		int waits = 0;

		fx_seed = seed;
		fx_setup(&f, 2, 6, false, 0, p, 3);
		fx_seed = 42;
		ALLOCS(&f, C, 2, 2);
		SLACKS(&f, 0.10, 0.50);
		step(&f, 1000);
		assert_string_equal(f.dec.wl[1].action, "down cores");
		SLACKS(&f, 0.01, 0.50); /* w0 hurt in every sample: revert */
		t = steps(&f, 1100, 5);
		assert_string_equal(f.dec.wl[1].action, "revert");
		/* w0 still violating: the code would upsize it, but waits first */
		SLACKS(&f, -0.5, 0.10);
		for (;; t += 100) {
			step(&f, t);
			if (strcmp(f.dec.wl[1].action, "wait"))
				break;
			assert_non_null(strstr(f.dec.wl[1].reason, "after a revert"));
			ASSERT_ALLOCS(&f, C, 2, 2);
			waits++;
			assert_true(waits <= 10);
		}
		assert_string_equal(f.dec.wl[0].action, "up cores");
		min_wait = waits < min_wait ? waits : min_wait;
		max_wait = waits > max_wait ? waits : max_wait;
		fx_teardown(&f);
	}
	assert_true(min_wait >= 5);
	assert_true(max_wait <= 10);
	assert_true(max_wait > min_wait); /* drawn at random per revert */
}

static void test_paper_no_wait_after_revert(void **state)
{
	struct fx f;

	fx_setup(&f, 2, 6, false, 0, cores_first, 1);
	ALLOCS(&f, C, 2, 2);
	SLACKS(&f, 0.10, 0.50);
	step(&f, 1000);
	set_slack(&f, 1, 0.01);
	step(&f, 1500);
	assert_string_equal(f.dec.wl[1].action, "revert");
	SLACKS(&f, -0.5, 0.10);
	step(&f, 2000);
	assert_string_equal(f.dec.wl[0].action, "up cores");
	fx_teardown(&f);
}

/* --- flavour = code to the letter (manager/PARTIES.py makeDecision, docs/parties.md 3) --- */

/* Three workloads at 100 ms: w1 is downsized, w0 falls below 0.05 in every judging sample,
 * so the downsize is reverted; then `after[k]` is w0's slack in the k-th sample after the
 * revert while w2 has 0.30 (a downsize candidate). Returns how many decisions were spent
 * waiting before the next action, which is w2's downsize. */
static int waits_after_revert(uint64_t seed, const double *after, int nafter)
{
	static const struct pol_param p[] = { { "flavour", "code" }, { "first", "cores" } };
	struct fx f;
	uint64_t t;
	int waits = 0;

	fx_seed = seed;
	fx_setup(&f, 3, 9, false, 0, p, 2);
	fx_seed = 42;
	ALLOCS(&f, C, 3, 3, 3);
	SLACKS(&f, 0.10, 0.50, 0.10);
	step(&f, 1000);
	assert_string_equal(f.dec.wl[1].action, "down cores");
	SLACKS(&f, 0.01, 0.50, 0.10);
	t = steps(&f, 1100, 5);
	assert_string_equal(f.dec.wl[1].action, "revert");
	for (int k = 0;; k++, t += 100) {
		set_slack(&f, 0, k < nafter ? after[k] : 0.10);
		set_slack(&f, 2, 0.30);
		step(&f, t);
		if (strcmp(f.dec.wl[1].action, "wait"))
			break;
		ASSERT_ALLOCS(&f, C, 3, 3, 3);
		waits++;
		assert_true(waits < 30);
	}
	assert_string_equal(f.dec.wl[2].action, "down cores");
	fx_teardown(&f);
	return waits;
}

/* After a revert the code waits exactly 5 samples (TOLERANCE) and decides on the 5th, whatever
 * the seed; 2 of those 5 with a workload below 0.05 is a minority. */
static void test_code_revert_waits_five_samples(void **state)
{
	static const double two_bad[] = { 0.01, 0.10, 0.10, 0.02, 0.10 };

	for (uint64_t seed = 1; seed <= 8; seed++) {
		assert_int_equal(waits_after_revert(seed, NULL, 0), 4);
		assert_int_equal(waits_after_revert(seed, two_bad, 5), 4);
	}
}

/* ... and 5 more only if most of those 5 still had a workload below 0.05: it decides on the
 * 10th sample after the revert. */
static void test_code_revert_waits_five_more_if_still_low(void **state)
{
	static const double three_bad[] = { 0.01, 0.10, 0.02, 0.10, 0.00 };
	static const double nine_bad[] = { 0.01, 0.01, 0.01, 0.01, 0.01,
					   0.01, 0.01, 0.01, 0.01, 0.10 };

	for (uint64_t seed = 1; seed <= 8; seed++) {
		assert_int_equal(waits_after_revert(seed, three_bad, 5), 9);
		/* the second round is not voted on: never more than 10 samples */
		assert_int_equal(waits_after_revert(seed, nine_bad, 10), 9);
	}
}

/* While it holds (nothing to up- or downsize) the code takes two samples per decision: the
 * trailing wait() of makeDecision's hold branch and the leading one of the next call. The
 * paper decides on every sample. */
static const char *action_on_sample_after_hold(const char *flavour)
{
	const struct pol_param p[] = { { "flavour", flavour }, { "first", "cores" } };
	static char got[POL_ACTION_LEN];
	struct fx f;

	fx_setup(&f, 2, 4, false, 0, p, 2);
	SLACKS(&f, 0.10, 0.10);
	step(&f, 1000);
	assert_string_equal(f.dec.wl[0].action, "hold");
	assert_string_equal(f.dec.wl[1].action, "hold");
	SLACKS(&f, -0.30, 0.10);
	step(&f, 1100);
	snprintf(got, sizeof(got), "%s", f.dec.wl[0].action);
	if (!strcmp(flavour, "code")) {
		assert_int_equal(f.obs.wl[0].alloc[C], 1);
		assert_non_null(strstr(f.dec.wl[0].reason, "before deciding (hold_samples = 2)"));
		step(&f, 1200);
		assert_string_equal(f.dec.wl[0].action, "up cores");
		/* an action is not a hold: after it, every sample is a judging one */
		set_lat(&f, 0, 1200);
		for (uint64_t t = 1300; t <= 1700; t += 100) {
			step(&f, t);
			assert_int_equal(f.obs.wl[0].alloc[C], t < 1700 ? 2 : 3);
		}
	}
	fx_teardown(&f);
	return got;
}

static void test_code_two_samples_per_decision_while_holding(void **state)
{
	assert_string_equal(action_on_sample_after_hold("code"), "hold");
	assert_string_equal(action_on_sample_after_hold("paper"), "up cores");
}

/* An upsize of frequency that reaches the top frequency counts as failed whatever its vote
 * (PARTIES.py: `cnt <= 0 or (State[helpID] == 2 and FREQ[helpID] == 2300)`), so the wheel
 * moves on to cores at that judgement: the workload's state is then (UP, cores), and a
 * workload that takes a core from it advances its wheel (anti-ping-pong, pingpong = state).
 * The paper judges it by latency alone: the state stays (UP, freq). */
static const char *donor_after_freq_top(const char *flavour, char *judged, size_t len)
{
	const struct pol_param p[] = { { "flavour", flavour }, { "first", "freq" } };
	static char got[POL_REASON_LEN];
	struct fx f;
	uint64_t t;

	fx_setup(&f, 2, 4, false, 0, p, 2);
	f.obs.res[F] = (struct pol_res_info){ .avail = true, .step = 100000 };
	for (int i = 0; i < 2; i++) {
		f.obs.wl[i].min[F] = 1000000;
		f.obs.wl[i].max[F] = 2000000;
		f.obs.wl[i].alloc[F] = i ? 2000000 : 1900000;
	}
	ALLOCS(&f, C, 2, 2);
	set_lat(&f, 0, 1500);
	set_slack(&f, 1, 0.10);
	step(&f, 1000);
	assert_string_equal(f.dec.wl[0].action, "up freq");
	assert_int_equal(f.obs.wl[0].alloc[F], 2000000);
	set_slack(&f, 0, 0.15); /* latency dropped in every sample: the vote passes */
	t = steps(&f, 1100, 5);
	snprintf(judged, len, "%s", f.dec.wl[0].reason);
	/* w1 (frequency already at its top) now needs a core; the pool is empty */
	SLACKS(&f, 0.15, -0.30);
	for (int k = 0; k < 2 && strcmp(f.dec.wl[1].action, "up cores"); k++, t += 100)
		step(&f, t);
	assert_string_equal(f.dec.wl[1].action, "up cores");
	assert_string_equal(f.dec.wl[0].action, "donate");
	snprintf(got, sizeof(got), "%s", f.dec.wl[0].reason);
	fx_teardown(&f);
	return got;
}

static void test_code_upsize_to_top_frequency_fails(void **state)
{
	char judged[POL_REASON_LEN];

	assert_non_null(
	    strstr(donor_after_freq_top("code", judged, sizeof(judged)), "anti-ping-pong"));
	assert_non_null(strstr(judged, "top frequency"));
	assert_null(
	    strstr(donor_after_freq_top("paper", judged, sizeof(judged)), "anti-ping-pong"));
	assert_null(strstr(judged, "top frequency"));
}

/* A donor that is itself downsizing cores gives a core: the paper advances its wheel (same
 * resource), the code does not (its state, DOWN cores, differs from the receiver's UP cores). */
static const char *donor_reason_after_down(const char *flavour)
{
	const struct pol_param p[] = { { "flavour", flavour }, { "first", "cores" } };
	static char got[POL_REASON_LEN];
	struct fx f;
	uint64_t t;

	fx_setup(&f, 2, 5, true, 2000, p, 2);
	ALLOCS(&f, C, 2, 3);
	ALLOCS(&f, Q, 500, 500);
	SLACKS(&f, 0.10, 0.50);
	step(&f, 1000);
	assert_string_equal(f.dec.wl[1].action, "down cores");
	SLACKS(&f, 0.10, 0.15); /* the dead band */
	t = steps(&f, 1100, 6);
	ALLOCS(&f, C, 3, 2); /* the pool is empty again */
	SLACKS(&f, -0.30, 0.15);
	step(&f, t);
	assert_string_equal(f.dec.wl[0].action, "up cores");
	assert_string_equal(f.dec.wl[1].action, "donate");
	snprintf(got, sizeof(got), "%s", f.dec.wl[1].reason);
	fx_teardown(&f);
	return got;
}

static void test_pingpong_paper_compares_resource(void **state)
{
	assert_non_null(strstr(donor_reason_after_down("paper"), "anti-ping-pong"));
}

static void test_pingpong_code_compares_direction_and_resource(void **state)
{
	static const struct pol_param p[] = { { "flavour", "code" }, { "first", "cores" } };
	struct fx f;
	uint64_t t;

	assert_null(strstr(donor_reason_after_down("code"), "anti-ping-pong"));
	/* a donor whose own last action was UP cores is advanced */
	fx_setup(&f, 2, 4, true, 2000, p, 2);
	ALLOCS(&f, C, 1, 2);
	ALLOCS(&f, Q, 500, 500);
	SLACKS(&f, 0.10, -0.30);
	step(&f, 1000);
	assert_string_equal(f.dec.wl[1].action, "up cores");
	SLACKS(&f, 0.10, 0.10); /* it helped; now the dead band */
	t = steps(&f, 1100, 6);
	SLACKS(&f, -0.30, 0.15);
	step(&f, t);
	assert_string_equal(f.dec.wl[0].action, "up cores");
	assert_string_equal(f.dec.wl[1].action, "donate");
	assert_non_null(strstr(f.dec.wl[1].reason, "anti-ping-pong"));
	fx_teardown(&f);
}

/* With an even number of samples a vote can tie: the code counts a tie as a failure (the
 * downsize is reverted), the paper's reading as a pass. */
static const char *tie_outcome(const struct pol_param *p, int np)
{
	static char got[POL_ACTION_LEN];
	struct fx f;

	fx_setup(&f, 2, 4, false, 0, p, np);
	ALLOCS(&f, C, 2, 2);
	SLACKS(&f, 0.10, 0.50);
	step(&f, 1000);
	assert_string_equal(f.dec.wl[1].action, "down cores");
	SLACKS(&f, 0.01, 0.50); /* bad */
	step(&f, 1100);
	assert_string_equal(f.dec.wl[1].action, "watch");
	SLACKS(&f, 0.10, 0.50); /* good: 1 of 2 bad, a tie */
	step(&f, 1200);
	snprintf(got, sizeof(got), "%s", f.dec.wl[1].action);
	fx_teardown(&f);
	return got;
}

static void test_code_tie_counts_as_failure(void **state)
{
	static const struct pol_param code[] = { { "flavour", "code" },
						 { "first", "cores" },
						 { "judge_samples", "2" } };
	static const struct pol_param paper[] = { { "first", "cores" },
						  { "judge_samples", "2" },
						  { "revert_check", "any" } };

	assert_string_equal(tie_outcome(code, 3), "revert");
	assert_string_not_equal(tie_outcome(paper, 3), "revert");
}

/* downsize_fallback: the most-slack workload is at its limits; off (both flavours), nothing
 * is downsized; on, the next-most-slack one above slack_down is. */
static void fallback_case(struct fx *f, const struct pol_param *p, int np)
{
	fx_setup(f, 3, 6, true, 3000, p, np);
	ALLOCS(f, C, 1, 3, 2);
	ALLOCS(f, Q, 100, 800, 800);
	SLACKS(f, 0.90 /* at every minimum */, 0.50, 0.10);
	step(f, 1000);
}

static void test_downsize_fallback(void **state)
{
	static const struct pol_param off[] = { { "first", "cores" } };
	static const struct pol_param code[] = { { "flavour", "code" }, { "first", "cores" } };
	static const struct pol_param on[] = { { "first", "cores" },
					       { "downsize_fallback", "on" } };
	struct fx f;

	fallback_case(&f, off, 1);
	assert_non_null(strstr(f.dec.wl[0].reason, "every resource at its limit"));
	ASSERT_ALLOCS(&f, C, 1, 3, 2);
	ASSERT_ALLOCS(&f, Q, 100, 800, 800);
	fx_teardown(&f);
	fallback_case(&f, code, 2);
	ASSERT_ALLOCS(&f, C, 1, 3, 2);
	ASSERT_ALLOCS(&f, Q, 100, 800, 800);
	fx_teardown(&f);
	fallback_case(&f, on, 2);
	assert_string_equal(f.dec.wl[1].action, "down cores");
	assert_non_null(strstr(f.dec.wl[1].reason, "at their limits"));
	ASSERT_ALLOCS(&f, C, 1, 2, 2);
	assert_string_equal(f.dec.wl[2].action, "hold"); /* 0.10: not above slack_down */
	fx_teardown(&f);
}

/* settle_ms: samples taken before the action's window is mostly post-action are not
 * counted, whatever they say. */
static void test_settle_ms(void **state)
{
	static const struct pol_param p[] = { { "first", "cores" }, { "settle_ms", "1200" } };
	struct fx f;

	fx_setup(&f, 2, 6, true, 2000, p, 2);
	ALLOCS(&f, Q, 500, 500);
	set_lat(&f, 0, 1500);
	set_slack(&f, 1, 0.1);
	step(&f, 1000);
	assert_string_equal(f.dec.wl[0].action, "up cores");
	set_lat(&f, 0, 1700); /* worse, but the window is still mostly pre-action */
	step(&f, 1500);
	assert_string_equal(f.dec.wl[0].action, "watch");
	assert_non_null(strstr(f.dec.wl[0].reason, "settling"));
	step(&f, 2000);
	assert_string_equal(f.dec.wl[0].action, "watch");
	assert_int_equal(f.obs.wl[0].alloc[C], 2);
	set_lat(&f, 0, 1200); /* 1200 ms on: judged on this, it helped */
	step(&f, 2500);
	assert_null(strstr(f.dec.wl[0].reason, "did not lower"));
	assert_string_equal(f.dec.wl[0].action, "up cores");
	assert_int_equal(f.obs.wl[0].alloc[C], 3);
	fx_teardown(&f);
}

static void test_params(void **state)
{
	const struct pol_ops *ops = pol_find("parties");
	char err[256];

	assert_int_equal(ops->check_param("cooldown_s", "10", err, sizeof(err)), 0);
	assert_int_equal(ops->check_param("cooldown_s", "ten", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "cooldown_s: 'ten' is not a number");
	assert_int_equal(ops->check_param("wheel", "cores,llc", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "wheel: unknown resource 'llc' (cores, freq, quota)");
	assert_int_equal(ops->check_param("flavour", "code", err, sizeof(err)), 0);
	assert_int_equal(ops->check_param("judge_samples", "0", err, sizeof(err)), -EINVAL);
	assert_int_equal(ops->check_param("bogus", "1", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "unknown key 'bogus'"));
	assert_int_equal(ops->check_param("revert_wait", "5-10", err, sizeof(err)), 0);
	assert_int_equal(ops->check_param("revert_wait", "7", err, sizeof(err)), 0);
	assert_int_equal(ops->check_param("revert_wait", "vote", err, sizeof(err)), 0);
	assert_int_equal(ops->check_param("revert_wait", "votes", err, sizeof(err)), -EINVAL);
	assert_int_equal(ops->check_param("hold_samples", "2", err, sizeof(err)), 0);
	assert_int_equal(ops->check_param("hold_samples", "0", err, sizeof(err)), -EINVAL);
	assert_int_equal(ops->check_param("freq_top", "fail", err, sizeof(err)), 0);
	assert_int_equal(ops->check_param("freq_top", "always", err, sizeof(err)), -EINVAL);
	assert_int_equal(ops->check_param("interval_ms", "250", err, sizeof(err)), 0);
	assert_int_equal(ops->check_param("interval_ms", "5", err, sizeof(err)), -EINVAL);
	assert_int_equal(ops->check_param("revert_wait", "10-5", err, sizeof(err)), -EINVAL);
	assert_int_equal(ops->check_param("revert_wait", "5-", err, sizeof(err)), -EINVAL);
	assert_int_equal(ops->check_param("revert_wait", "-5", err, sizeof(err)), -EINVAL);
	assert_int_equal(ops->check_param("repick", "random", err, sizeof(err)), 0);
	assert_int_equal(ops->check_param("pingpong", "both", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "pingpong must be resource or state, not 'both'");
	assert_int_equal(ops->check_param("tie", "fail", err, sizeof(err)), 0);
	assert_int_equal(ops->check_param("downsize_fallback", "on", err, sizeof(err)), 0);
	assert_int_equal(ops->check_param("settle_ms", "1.5", err, sizeof(err)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_upsize_lowest_slack_from_free_pool),
		cmocka_unit_test(test_no_action_in_dead_band),
		cmocka_unit_test(test_downsize_highest_slack),
		cmocka_unit_test(test_donor_most_slack_above_minimum),
		cmocka_unit_test(test_anti_ping_pong),
		cmocka_unit_test(test_pingpong_reason_absent_when_other_resource),
		cmocka_unit_test(test_failed_upsize_not_reverted),
		cmocka_unit_test(test_successful_upsize_keeps_resource),
		cmocka_unit_test(test_harmful_downsize_reverted_and_cooled),
		cmocka_unit_test(test_code_flavour_cooldown_and_vote),
		cmocka_unit_test(test_skip_exhausted_resource),
		cmocka_unit_test(test_frequency_private_and_skipped_at_max),
		cmocka_unit_test(test_every_resource_at_limit),
		cmocka_unit_test(test_stale_workload_not_judged),
		cmocka_unit_test(test_idle_release),
		cmocka_unit_test(test_dead_workload_ignored),
		cmocka_unit_test(test_refused_action_not_judged),
		cmocka_unit_test(test_sustained_violation_event),
		cmocka_unit_test(test_converges_without_oscillation),
		cmocka_unit_test(test_converges_from_above),
		cmocka_unit_test(test_known_cycle_bounded_by_cooldown),
		cmocka_unit_test(test_seeded_first_resource_reproducible),
		cmocka_unit_test(test_paper_next_resource_on_direction_change),
		cmocka_unit_test(test_code_random_repick_on_direction_change),
		cmocka_unit_test(test_revert_wait_range),
		cmocka_unit_test(test_paper_no_wait_after_revert),
		cmocka_unit_test(test_code_revert_waits_five_samples),
		cmocka_unit_test(test_code_revert_waits_five_more_if_still_low),
		cmocka_unit_test(test_code_two_samples_per_decision_while_holding),
		cmocka_unit_test(test_code_upsize_to_top_frequency_fails),
		cmocka_unit_test(test_pingpong_paper_compares_resource),
		cmocka_unit_test(test_pingpong_code_compares_direction_and_resource),
		cmocka_unit_test(test_code_tie_counts_as_failure),
		cmocka_unit_test(test_downsize_fallback),
		cmocka_unit_test(test_settle_ms),
		cmocka_unit_test(test_params),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
