// SPDX-License-Identifier: MIT
/*
 * The simulator's queueing model against queueing theory: M/M/c against
 * Erlang C, M/D/1 against Pollaczek-Khinchine, the network stage's delay and
 * its queue past the link rate, more cores lowering p99, and seeds.
 */
#include <math.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sim_model.h"

#define S_NS 1000000000ull

static struct sim_opts base(double rps, enum sim_dist d, double mean_us)
{
	struct sim_opts o = {
		.sz = sizeof(o),
		.seed = 7,
		.cores = 16,
		.freq_max_khz = 2000000,
		.window_ns = S_NS,
		.nwl = 1,
	};

	o.wl[0].npoints = 1;
	o.wl[0].rps[0] = rps;
	o.wl[0].dist = d;
	o.wl[0].mean_ns = mean_us * 1e3;
	o.wl[0].freq_frac = 1;
	return o;
}

/* One run of secs virtual seconds at a fixed allocation. */
static void run_alloc(const struct sim_opts *o, int cores, long quota_mc, long khz, uint64_t secs,
		      struct sim_wl_stats *st)
{
	struct sim *s = sim_new(o);

	assert_non_null(s);
	assert_int_equal(sim_set_alloc(s, 0, cores, quota_mc, khz), 0);
	sim_run_until(s, secs * S_NS);
	assert_int_equal(sim_stats(s, 0, st), 0);
	sim_free(s);
}

static void run(const struct sim_opts *o, int cores, uint64_t secs, struct sim_wl_stats *st)
{
	run_alloc(o, cores, 0, 0, secs, st);
}

/* Mean time in system over every completed request, in us. */
static double mean_sojourn(const struct sim_opts *o, int cores, uint64_t secs)
{
	struct sim_wl_stats st;

	run(o, cores, secs, &st);
	assert_true(st.completed > 0);
	return st.sum_sojourn_ns / 1e3 / (double)st.completed;
}

/* Erlang C: W = C(c, a) / (c mu - lambda) + 1 / mu. */
static double erlang_c_w(int c, double lambda, double mu)
{
	double a = lambda / mu, rho = a / c, term = 1, sum = 1, pc;

	for (int k = 1; k < c; k++) {
		term *= a / k;
		sum += term;
	}
	term *= a / c; /* a^c / c! */
	pc = term / (1 - rho) / (sum + term / (1 - rho));
	return pc / (c * mu - lambda) + 1 / mu;
}

static void test_mmc_erlang_c(void **state)
{
	/* 4 servers, 1 ms mean, rho 0.8 */
	struct sim_opts o = base(3200, SIM_DIST_EXP, 1000);
	double want = erlang_c_w(4, 3200, 1000) * 1e6, got = mean_sojourn(&o, 4, 600);

	printf("M/M/4 rho 0.8: simulated %.1f us, Erlang C %.1f us (%.2f%%)\n", got, want,
	       100 * (got - want) / want);
	assert_true(fabs(got - want) / want < 0.03);
}

static void test_md1_pollaczek_khinchine(void **state)
{
	/* one server, deterministic 1 ms, rho 0.7: W = D + rho D / (2 (1 - rho)) */
	struct sim_opts o = base(700, SIM_DIST_DET, 1000);
	double want = 1000 + 0.7 * 1000 / (2 * 0.3), got = mean_sojourn(&o, 1, 1200);

	printf("M/D/1 rho 0.7: simulated %.1f us, P-K %.1f us (%.2f%%)\n", got, want,
	       100 * (got - want) / want);
	assert_true(fabs(got - want) / want < 0.03);
}

static void test_processor_sharing(void **state)
{
	/* threads > cores: requests share the cores. M/D/1-PS: W = D / (1 - rho),
	 * whatever the distribution (unlike FCFS's P-K) */
	struct sim_opts o = base(700, SIM_DIST_DET, 1000);
	struct sim_wl_stats st;
	double want = 1000 / 0.3, got;

	o.wl[0].threads = 1000;
	got = mean_sojourn(&o, 1, 1200);
	printf("M/D/1-PS rho 0.7: simulated %.1f us, D / (1 - rho) %.1f us (%.2f%%)\n", got, want,
	       100 * (got - want) / want);
	assert_true(fabs(got - want) / want < 0.03);
	/* every request in service at once: service time == sojourn; CPU use is
	 * the offered load */
	run(&o, 1, 200, &st);
	assert_true(st.p99_service_ns == st.p99_sojourn_ns);
	assert_true(fabs((double)st.cpu_ns / 200e9 - 0.7) < 0.03);

	/* threads <= cores: plain FCFS with `threads` servers (M/M/4, Erlang C) */
	o = base(3200, SIM_DIST_EXP, 1000);
	o.wl[0].threads = 4;
	want = erlang_c_w(4, 3200, 1000) * 1e6;
	got = mean_sojourn(&o, 8, 600);
	printf("4 threads on 8 cores, rho 0.8: simulated %.1f us, Erlang C %.1f us (%.2f%%)\n", got,
	       want, 100 * (got - want) / want);
	assert_true(fabs(got - want) / want < 0.03);
}

static void test_network_delay_and_queue(void **state)
{
	struct sim_opts o = base(100, SIM_DIST_DET, 500);
	struct sim_wl_stats st;
	double extra;

	/* 1 Gbit/s, 50 us each way, 1000-byte requests and responses: every
	 * request pays 2 x (8 us + 50 us) on top of its sojourn */
	o.link_gbps = 1;
	o.prop_ns = 50e3;
	o.wl[0].req_bytes = 1000;
	o.wl[0].resp_bytes = 1000;
	run(&o, 1, 30, &st);
	extra = (st.sum_client_ns - st.sum_sojourn_ns) / 1e3 / (double)st.completed;
	printf("network: client - sojourn = %.2f us (expected 116)\n", extra);
	assert_true(fabs(extra - 116) < 0.5);
	/* a p99 includes it too */
	assert_true(st.p99_client_ns >= st.p99_sojourn_ns + (116 - 0.5) * 1e3);

	/* past the link's rate (125 kB responses = 1 ms each at 1 Gbit/s,
	 * 1200 rps) the downlink queues: far more than the fixed 116 us */
	o.wl[0].rps[0] = 1200;
	o.wl[0].mean_ns = 100e3;
	o.wl[0].resp_bytes = 125000;
	run(&o, 4, 10, &st);
	extra = (st.sum_client_ns - st.sum_sojourn_ns) / 1e3 / (double)st.completed;
	printf("network past its rate: client - sojourn = %.0f us\n", extra);
	assert_true(extra > 100000);
	assert_true(st.p99_client_ns > 10 * st.p99_sojourn_ns);
}

static void test_more_cores_lower_p99(void **state)
{
	struct sim_opts o = base(1800, SIM_DIST_EXP, 1000);
	struct sim_wl_stats two, four;

	run(&o, 2, 60, &two);
	run(&o, 4, 60, &four);
	printf("p99 sojourn: 2 cores %.0f us, 4 cores %.0f us\n", two.p99_sojourn_ns / 1e3,
	       four.p99_sojourn_ns / 1e3);
	assert_true(four.p99_sojourn_ns < two.p99_sojourn_ns);
	assert_true(four.p99_client_ns < two.p99_client_ns);
}

static void test_freq_and_quota_slow_service(void **state)
{
	struct sim_opts o = base(50, SIM_DIST_DET, 1000);
	struct sim_wl_stats st;

	o.wl[0].fixed_ns = 0;
	o.wl[0].freq_frac = 0.5;
	/* half the work scales: at 1000 of 2000 MHz, 0.5 + 0.5 x 2 = 1.5 ms;
	 * a quota of half a core on one server doubles it again */
	run_alloc(&o, 1, 500, 1000000, 20, &st);
	assert_true(fabs(st.p99_service_ns - 3000e3) < 1e3);
	/* CPU use: the service at half speed uses half its wall time */
	assert_true(fabs((double)st.cpu_ns / (double)st.arrived - 1.5e6) < 1.5e6 * 0.01);
}

static void test_schedule_rate(void **state)
{
	struct sim_opts o = base(0, SIM_DIST_DET, 10);
	struct sim *s;
	struct sim_wl_stats st;

	/* 0 -> 2000 rps over 10 s, then 2000 for 10 s: 10000 + 20000 arrivals */
	o.wl[0].npoints = 3;
	o.wl[0].t_s[1] = 10;
	o.wl[0].rps[1] = 2000;
	o.wl[0].t_s[2] = 20;
	o.wl[0].rps[2] = 2000;
	assert_true(fabs(sim_model_rate(&o.wl[0], 5) - 1000) < 1e-9);
	s = sim_new(&o);
	assert_non_null(s);
	assert_int_equal(sim_set_alloc(s, 0, 4, 0, 0), 0);
	sim_run_until(s, 20 * S_NS);
	assert_int_equal(sim_stats(s, 0, &st), 0);
	printf("arrivals over the ramp: %llu (expected 30000)\n", (unsigned long long)st.arrived);
	assert_true(fabs((double)st.arrived - 30000) < 4 * sqrt(30000));
	assert_true(fabs(st.rps - 1500) < 30); /* first read: mean over 20 s */
	sim_run_until(s, 21 * S_NS);
	assert_int_equal(sim_stats(s, 0, &st), 0);
	assert_true(fabs(st.rps - 2000) < 200); /* the last second */
	sim_free(s);
}

static void digest(uint64_t seed, double out[4])
{
	struct sim_opts o = base(2000, SIM_DIST_LOGNORMAL, 1000);
	struct sim *s;
	struct sim_wl_stats st;

	o.seed = seed;
	o.wl[0].cv = 2;
	s = sim_new(&o);
	assert_non_null(s);
	sim_set_alloc(s, 0, 3, 0, 0);
	sim_run_until(s, 5 * S_NS);
	sim_stats(s, 0, &st);
	sim_free(s);
	out[0] = st.p99_client_ns;
	out[1] = st.sum_sojourn_ns;
	out[2] = (double)st.arrived;
	out[3] = (double)st.cpu_ns;
}

static void test_seeds(void **state)
{
	double a[4], b[4], c[4];

	digest(1, a);
	digest(1, b);
	digest(2, c);
	assert_memory_equal(a, b, sizeof(a));
	assert_memory_not_equal(a, c, sizeof(a));
}

/* A load that steps up at 4 s and down at 8 s, over a 1 Gbit/s link with
 * 50 us each way, with the client feed reported over a window of win_ns,
 * lag_ns late (both 0: the client window itself). */
static struct sim *report_sim(uint64_t win_ns, uint64_t lag_ns)
{
	struct sim_opts o = base(500, SIM_DIST_EXP, 250);
	static const double t[] = { 0, 4, 4.5, 8, 8.5, 20 },
			    r[] = { 500, 500, 3500, 3500, 500, 500 };
	struct sim *s;

	o.wl[0].npoints = 6;
	memcpy(o.wl[0].t_s, t, sizeof(t));
	memcpy(o.wl[0].rps, r, sizeof(r));
	o.link_gbps = 1;
	o.prop_ns = 50e3;
	o.wl[0].req_bytes = 100;
	o.wl[0].resp_bytes = 1000;
	o.wl[0].client_window_ns = win_ns;
	o.wl[0].client_lag_ns = lag_ns;
	s = sim_new(&o);
	assert_non_null(s);
	assert_int_equal(sim_set_alloc(s, 0, 1, 0, 0), 0);
	return s;
}

static bool same(double a, double b)
{
	return (isnan(a) && isnan(b)) || a == b;
}

/* The client feed's reporting lag delays it by exactly the lag: the lagged
 * report at t + lag is the unlagged one at t, bit for bit, while what clients
 * see is unchanged; with neither key the report is the client window. */
static void test_client_report_lag(void **state)
{
	const uint64_t lag = 700000000ull, step = 250000000ull;
	struct sim *now = report_sim(S_NS, 0), *late = report_sim(0, lag),
		   *plain = report_sim(0, 0);
	struct sim_wl_stats a, b, c;
	bool checked = false;

	/* nothing reported before the first lag has passed */
	sim_run_until(late, lag - step);
	assert_int_equal(sim_stats(late, 0, &b), 0);
	assert_true(isnan(b.p99_report_ns));
	assert_false(isnan(b.p99_client_ns));
	for (uint64_t t = step; t <= 16 * S_NS; t += step) {
		sim_run_until(now, t);
		sim_run_until(late, t + lag);
		sim_run_until(plain, t + lag);
		assert_int_equal(sim_stats(now, 0, &a), 0);
		assert_int_equal(sim_stats(late, 0, &b), 0);
		assert_int_equal(sim_stats(plain, 0, &c), 0);
		if (!same(b.p99_report_ns, a.p99_report_ns))
			fail_msg("t = %.2f s: report %.0f ns, %.2f s late, was %.0f ns", t / 1e9,
				 b.p99_report_ns, lag / 1e9, a.p99_report_ns);
		/* the model is the same: clients see the same, now */
		assert_true(same(b.p99_client_ns, c.p99_client_ns));
		assert_true(same(c.p99_report_ns, c.p99_client_ns));
		/* the step up (4-4.5 s): clients see it at 4.95 s, the report not yet */
		if (t + lag == 4950000000ull) {
			printf("at 4.95 s: clients' p99 %.0f us, reported %.0f us\n",
			       b.p99_client_ns / 1e3, b.p99_report_ns / 1e3);
			assert_true(2 * b.p99_report_ns < b.p99_client_ns);
			checked = true;
		}
	}
	assert_true(checked);
	sim_free(now);
	sim_free(late);
	sim_free(plain);
}

static void test_bad_model(void **state)
{
	struct sim_opts o = base(100, SIM_DIST_EXP, 1000);

	o.wl[0].fixed_ns = 2000e3; /* above the mean */
	assert_null(sim_new(&o));
	o = base(100, SIM_DIST_EXP, 0);
	assert_null(sim_new(&o));
}

/* A newer caller's larger sim_opts: a zero tail is fine, a set byte is an
 * option this build would ignore and is refused (common/opts.h). */
static void test_opts_newer_caller(void **state)
{
	static struct {
		struct sim_opts o;
		long newer;
	} big;
	struct sim *s;

	big.o = base(100, SIM_DIST_EXP, 100);
	big.o.sz = sizeof(big);
	big.newer = 1;
	errno = 0;
	assert_null(sim_new(&big.o));
	assert_int_equal(errno, E2BIG);
	big.newer = 0;
	s = sim_new(&big.o);
	assert_non_null(s);
	sim_free(s);
	big.o.sz = offsetof(struct sim_opts, nwl); /* the workloads cut off */
	assert_null(sim_new(&big.o));
	assert_int_equal(errno, EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_opts_newer_caller),
		cmocka_unit_test(test_mmc_erlang_c),
		cmocka_unit_test(test_md1_pollaczek_khinchine),
		cmocka_unit_test(test_processor_sharing),
		cmocka_unit_test(test_network_delay_and_queue),
		cmocka_unit_test(test_more_cores_lower_p99),
		cmocka_unit_test(test_freq_and_quota_slow_service),
		cmocka_unit_test(test_schedule_rate),
		cmocka_unit_test(test_seeds),
		cmocka_unit_test(test_client_report_lag),
		cmocka_unit_test(test_bad_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
