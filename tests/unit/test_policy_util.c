// SPDX-License-Identifier: MIT
/*
 * The util policy on synthetic observations: sizing from CPU use in one step,
 * waiting before shrinking, the latency guard, saturation, scarce cores by
 * least slack, frequency from utilisation, and its settings.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "policy.h"

static const struct pol_ops *ops(void)
{
	const struct pol_ops *o = pol_find("util");

	assert_non_null(o);
	return o;
}

static void *init(const struct pol_param *p, int n)
{
	char err[128] = "";
	struct pol_init_args a = { .sz = sizeof(a),
				   .nwl = 2,
				   .params = p,
				   .nparams = n,
				   .err = err,
				   .err_len = sizeof(err),
				   .err_param = -1 };
	void *st = NULL;

	assert_int_equal(ops()->init(&st, &a), 0);
	return st;
}

/* Two workloads on 16 cores, 1.2-2.3 GHz, both at max frequency. */
static void obs_init(struct pol_observation *o, long c0, long c1)
{
	memset(o, 0, sizeof(*o));
	o->nwl = 2;
	o->res[POL_RES_CORES] = (struct pol_res_info){
		.avail = true, .pooled = true, .step = 1, .total = 16, .free = 16 - c0 - c1
	};
	o->res[POL_RES_FREQ] = (struct pol_res_info){ .avail = true, .step = 100000 };
	for (int i = 0; i < 2; i++) {
		struct pol_wl_obs *w = &o->wl[i];

		w->alive = true;
		w->state = POL_LAT_FRESH;
		w->target_ns = 1000e3;
		w->slack = 0.5;
		w->alloc[POL_RES_CORES] = i ? c1 : c0;
		w->min[POL_RES_CORES] = 1;
		w->max[POL_RES_CORES] = 16;
		w->alloc[POL_RES_FREQ] = 2300000;
		w->min[POL_RES_FREQ] = 1200000;
		w->max[POL_RES_FREQ] = 2300000;
		w->cpu_used = 0.5;
		w->rps = 1000;
	}
}

static void decide(void *st, const struct pol_observation *o, struct pol_decision *d)
{
	pol_decision_init(d, o);
	assert_int_equal(ops()->decide(st, o, d), 0);
}

static void test_grows_in_one_step(void **state)
{
	struct pol_param p[] = { { "freq_util", "0" } };
	void *st = init(p, 1);
	struct pol_observation o;
	struct pol_decision d;

	obs_init(&o, 6, 2);
	o.res[POL_RES_CORES].free = 8;
	o.wl[0].cpu_used = 3.5; /* 3.5 / 0.7 = 5 of its 6: a shrink, which waits */
	o.wl[1].cpu_used = 1.2; /* 2: holds */
	decide(st, &o, &d);
	assert_int_equal(d.wl[0].alloc[POL_RES_CORES], 6);
	o.wl[0].cpu_used = 5.5; /* 5.5 / 0.7 -> 8 cores: +2 at once */
	decide(st, &o, &d);
	assert_int_equal(d.wl[0].alloc[POL_RES_CORES], 8);
	assert_string_equal(d.wl[0].action, "up cores");
	assert_int_equal(d.wl[1].alloc[POL_RES_CORES], 2);
	assert_int_equal(d.wl[0].alloc[POL_RES_FREQ], 2300000); /* freq_util 0: max */
	ops()->exit(st);
}

/* Under smt = whole a core is its threads: cpu_used (thread-seconds) is
 * sized against 2 threads per core, not 1. */
static void test_whole_cores_count_threads(void **state)
{
	struct pol_param p[] = { { "freq_util", "0" } };
	void *st = init(p, 1);
	struct pol_observation o;
	struct pol_decision d;

	obs_init(&o, 2, 2);
	o.topo.smt = POL_SMT_WHOLE;
	o.wl[0].threads = 4; /* 2 cores of 2 threads */
	o.wl[1].threads = 4;
	o.wl[0].cpu_used = 5.5; /* 5.5 / 0.7 = 7.9 threads: 4 cores, not 8 */
	decide(st, &o, &d);
	assert_int_equal(d.wl[0].alloc[POL_RES_CORES], 4);
	o.topo.smt = POL_SMT_SHARED; /* a unit is one cpu: 8 */
	decide(st, &o, &d);
	assert_int_equal(d.wl[0].alloc[POL_RES_CORES], 8);
	ops()->exit(st);
}

static void test_shrink_waits_and_guard(void **state)
{
	void *st = init(NULL, 0);
	struct pol_observation o;
	struct pol_decision d;

	obs_init(&o, 8, 2);
	o.wl[0].cpu_used = 1.0; /* wants 2 of its 8 */
	decide(st, &o, &d);
	assert_int_equal(d.wl[0].alloc[POL_RES_CORES], 8);
	decide(st, &o, &d);
	assert_int_equal(d.wl[0].alloc[POL_RES_CORES], 2); /* straight to 2 */
	assert_string_equal(d.wl[0].action, "down cores");
	/* slack under the guard: no shrink however idle */
	o.wl[0].slack = 0.05;
	decide(st, &o, &d);
	decide(st, &o, &d);
	assert_int_equal(d.wl[0].alloc[POL_RES_CORES], 8);
	ops()->exit(st);
}

static void test_over_target_gets_more(void **state)
{
	void *st = init(NULL, 0);
	struct pol_observation o;
	struct pol_decision d;

	obs_init(&o, 4, 2);
	o.wl[0].cpu_used = 1.0; /* use says 2 cores ... */
	o.wl[0].slack = -0.3;	/* ... but p99 is over target */
	o.wl[0].alloc[POL_RES_FREQ] = 1500000;
	decide(st, &o, &d);
	assert_int_equal(d.wl[0].alloc[POL_RES_CORES], 5);
	assert_int_equal(d.wl[0].alloc[POL_RES_FREQ], 2300000);
	ops()->exit(st);
}

static void test_saturated_uses_rate(void **state)
{
	struct pol_param p[] = { { "freq_util", "0" } };
	void *st = init(p, 1);
	struct pol_observation o;
	struct pol_decision d;

	obs_init(&o, 4, 2);
	o.wl[0].cpu_used = 1.4; /* 1.4 ms per request at 1000 rps */
	decide(st, &o, &d);
	/* saturated at 4 cores while the rate tripled: demand 3 x 1.4 */
	o.wl[0].cpu_used = 3.95;
	o.wl[0].rps = 3000;
	decide(st, &o, &d);
	assert_int_equal(d.wl[0].alloc[POL_RES_CORES], 6); /* ceil(4.2 / 0.7) */
	ops()->exit(st);
}

static void test_scarce_cores_to_least_slack(void **state)
{
	struct pol_param p[] = { { "freq_util", "0" } };
	void *st = init(p, 1);
	struct pol_observation o;
	struct pol_decision d;

	obs_init(&o, 7, 7);
	o.res[POL_RES_CORES].free = 2;
	o.wl[0].cpu_used = 6.3; /* wants 9: +2 */
	o.wl[1].cpu_used = 6.3;
	o.wl[0].slack = 0.15;
	o.wl[1].slack = -0.2; /* worse: served first */
	decide(st, &o, &d);
	assert_int_equal(d.wl[1].alloc[POL_RES_CORES], 9);
	assert_int_equal(d.wl[0].alloc[POL_RES_CORES], 7);
	ops()->exit(st);
}

static void test_frequency_from_utilisation(void **state)
{
	struct pol_param p[] = { { "down_intervals", "100" } }; /* cores stay */
	void *st = init(p, 1);
	struct pol_observation o;
	struct pol_decision d;

	obs_init(&o, 4, 4);
	/* 4 cores, demand 1.4 at full speed: 1.4 / 0.7 = 2 cores wanted, but
	 * shrinking waits; at 4 cores utilisation 0.8 needs 1.4 / (4 x 0.8)
	 * x 2300 = 1006 MHz -> the minimum, 1200 */
	o.wl[0].cpu_used = 1.4;
	decide(st, &o, &d);
	assert_int_equal(d.wl[0].alloc[POL_RES_CORES], 4);
	assert_int_equal(d.wl[0].alloc[POL_RES_FREQ], 2200000); /* one step down */
	assert_string_equal(d.wl[0].action, "down freq");
	o.wl[0].alloc[POL_RES_FREQ] = 1300000;
	o.wl[0].cpu_used = 1.4 * 2300 / 1300;
	decide(st, &o, &d);
	assert_int_equal(d.wl[0].alloc[POL_RES_FREQ], 1200000);
	/* not below guard_slack */
	o.wl[0].slack = 0.05;
	decide(st, &o, &d);
	assert_int_equal(d.wl[0].alloc[POL_RES_FREQ], 1300000);
	o.wl[0].slack = 0.5;
	o.wl[0].alloc[POL_RES_FREQ] = 2300000;
	/* demand 2.5 on 4 cores (ceil(2.5 / 0.7) = 4: they stay) needs
	 * 2.5 / 3.2 x 2300 = 1797 MHz: from 1500 up to 1800 at once */
	o.wl[0].alloc[POL_RES_FREQ] = 1500000;
	o.wl[0].cpu_used = 2.5 * 2300 / 1500;
	decide(st, &o, &d);
	assert_int_equal(d.wl[0].alloc[POL_RES_CORES], 4);
	assert_int_equal(d.wl[0].alloc[POL_RES_FREQ], 1800000);
	assert_string_equal(d.wl[0].action, "up freq");
	ops()->exit(st);
}

static void test_no_cpu_use_holds(void **state)
{
	void *st = init(NULL, 0);
	struct pol_observation o;
	struct pol_decision d;

	obs_init(&o, 3, 3);
	o.wl[0].cpu_used = NAN;
	o.wl[1].cpu_used = NAN;
	decide(st, &o, &d);
	for (int i = 0; i < 2; i++) {
		assert_memory_equal(d.wl[i].alloc, o.wl[i].alloc, sizeof(o.wl[i].alloc));
		assert_string_equal(d.wl[i].action, "hold");
	}
	ops()->exit(st);
}

static void test_params(void **state)
{
	char err[128];
	struct pol_param bad[] = { { "target_util", "0.7" }, { "down_intervals", "1.5" } };
	struct pol_init_args a = { .sz = sizeof(a),
				   .nwl = 2,
				   .params = bad,
				   .nparams = 2,
				   .err = err,
				   .err_len = sizeof(err),
				   .err_param = -1 };
	void *st = NULL;

	assert_int_equal(ops()->check_param("target_util", "0.6", err, sizeof(err)), 0);
	assert_int_not_equal(ops()->check_param("target_util", "2", err, sizeof(err)), 0);
	assert_int_not_equal(ops()->check_param("freq_util", "x", err, sizeof(err)), 0);
	assert_int_not_equal(ops()->check_param("bogus", "1", err, sizeof(err)), 0);
	assert_int_not_equal(ops()->init(&st, &a), 0);
	assert_int_equal(a.err_param, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grows_in_one_step),
		cmocka_unit_test(test_shrink_waits_and_guard),
		cmocka_unit_test(test_over_target_gets_more),
		cmocka_unit_test(test_saturated_uses_rate),
		cmocka_unit_test(test_scarce_cores_to_least_slack),
		cmocka_unit_test(test_frequency_from_utilisation),
		cmocka_unit_test(test_no_cpu_use_holds),
		cmocka_unit_test(test_params),
		cmocka_unit_test(test_whole_cores_count_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
