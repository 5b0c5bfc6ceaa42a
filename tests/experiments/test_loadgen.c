// SPDX-License-Identifier: MIT
/*
 * Unit tests of the load generator's pure pieces: the rate schedule and its time rescaling,
 * the Zipf sampler, percentiles and the trailing feed window. The Makefile links unit tests
 * against the libraries only, so the sources under test are included here.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../experiments/loadgen/schedule.c"
#include "../../experiments/loadgen/stats.c"
#include "../../experiments/loadgen/zipf.c"
#include "../../experiments/loadgen/proto.c"

/* cmocka 1.1.5 (Debian 12) has no assert_double_equal. */
#define assert_near(a, b, eps) near_((a), (b), (eps), __FILE__, __LINE__)

static void near_(double a, double b, double eps, const char *file, int line)
{
	if (!(fabs(a - b) <= eps)) {
		print_error("%.17g != %.17g (tolerance %g)\n", a, b, eps);
		_fail(file, line);
	}
}

static uint64_t rng = 88172645463325252ULL;

static double unit(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) * (1.0 / 9007199254740992.0);
}

/* ---------------------------------------------------------------- schedule */

static void test_sched_parse_errors(void **state)
{
	static const char *bad[] = {
		"",    "0:100",	  "5:100,10:1",	 "0:1,0:2", "0:1,1:-1",	 "0:1,1:1,",
		"abc", "0:1;1:1", "0:1,2:1,1:1", "0:x,1:1", "0:1,1:inf",
	};
	struct sched s;
	char err[160];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(sched_parse(&s, bad[i], err, sizeof(err)), -EINVAL);
		assert_true(err[0] != '\0');
	}
	assert_int_equal(sched_constant(&s, 10, 0), -EINVAL);
	assert_int_equal(sched_constant(&s, -1, 5), -EINVAL);
}

static void test_sched_rate(void **state)
{
	struct sched s;
	char err[160];

	assert_int_equal(sched_parse(&s, "0:100,30:1000,60:100", err, sizeof(err)), 0);
	assert_int_equal(s.n, 3);
	assert_near(sched_duration(&s), 60, 0);
	assert_near(sched_rate(&s, 0), 100, 1e-9);
	assert_near(sched_rate(&s, 15), 550, 1e-9);
	assert_near(sched_rate(&s, 30), 1000, 1e-9);
	assert_near(sched_rate(&s, 45), 550, 1e-9);
	assert_near(sched_rate(&s, 60), 100, 1e-9);
	assert_near(sched_rate(&s, -1), 0, 0);
	assert_near(sched_rate(&s, 61), 0, 0);
	/* Two trapezoids of (100 + 1000) / 2 * 30 each. */
	assert_near(sched_cum(&s, 60), 33000, 1e-6);
	assert_near(sched_cum(&s, 1000), 33000, 1e-6);
	assert_near(sched_cum(&s, 30), 16500, 1e-6);
	/* 100 * 10 + 30 * 10^2 / 2 */
	assert_near(sched_cum(&s, 10), 2500, 1e-6);

	sched_scale(&s, 0.5);
	assert_near(sched_rate(&s, 30), 500, 1e-9);
	assert_near(sched_cum(&s, 60), 16500, 1e-6);

	assert_int_equal(sched_constant(&s, 250, 4), 0);
	assert_near(sched_cum(&s, 3), 750, 1e-9);
	assert_near(sched_inverse(&s, 750), 3, 1e-9);
}

static void test_sched_inverse(void **state)
{
	static const char *cases[] = {
		"0:100,30:1000,60:100",
		"0:0,10:100",
		"0:100,10:0",
		"0:5,1:5,2:7000,2.5:3,10:3",
	};
	struct sched s;
	char err[160];

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		assert_int_equal(sched_parse(&s, cases[c], err, sizeof(err)), 0);
		for (double t = 0.001; t < sched_duration(&s); t += sched_duration(&s) / 997) {
			double u = sched_cum(&s, t);

			assert_near(sched_inverse(&s, u), t, 1e-6);
		}
		assert_near(sched_inverse(&s, sched_cum(&s, sched_duration(&s))),
			    sched_duration(&s), 1e-6);
		assert_true(sched_inverse(&s, sched_cum(&s, sched_duration(&s)) + 1e-6) < 0);
	}
	/* 0:0,10:100 has cum 5 t^2. */
	assert_near(sched_cum(&s, 0), 0, 0);
	assert_int_equal(sched_parse(&s, "0:0,10:100", err, sizeof(err)), 0);
	assert_near(sched_cum(&s, 4), 80, 1e-9);
	assert_near(sched_inverse(&s, 80), 4, 1e-9);
}

static void test_sched_zero_rate_gap(void **state)
{
	struct sched s;
	char err[160];

	/* No arrivals between 1 s and 2 s: the next one after the first segment is past 2 s. */
	assert_int_equal(sched_parse(&s, "0:100,1:0,2:0,3:100", err, sizeof(err)), 0);
	assert_near(sched_cum(&s, 1.5), 50, 1e-9);
	assert_near(sched_inverse(&s, 50), 1, 1e-9);
	assert_true(sched_inverse(&s, 50.001) > 2);
	assert_true(sched_inverse(&s, 50.001) < 2.01);
}

/* Time rescaling: arrival counts per interval follow the schedule (Poisson, so +-5 sigma). */
static void test_sched_poisson_counts(void **state)
{
	struct sched s;
	char err[160];
	long count[10] = { 0 };
	double u = 0, t;

	assert_int_equal(sched_parse(&s, "0:1000,5:20000,10:1000", err, sizeof(err)), 0);
	for (;;) {
		u += -log1p(-unit());
		t = sched_inverse(&s, u);
		if (t < 0)
			break;
		count[(int)t < 10 ? (int)t : 9]++;
	}
	for (int i = 0; i < 10; i++) {
		double expect = sched_cum(&s, i + 1) - sched_cum(&s, i);

		assert_true(fabs(count[i] - expect) < 5 * sqrt(expect));
	}
}

/* ---------------------------------------------------------------- zipf */

static void test_zipf(void **state)
{
	struct zipf z;
	double sum = 0;
	long hits0 = 0, hits9 = 0, n = 400000;

	assert_int_equal(zipf_init(&z, 0, 1), -EINVAL);
	assert_int_equal(zipf_init(&z, 10, -1), -EINVAL);
	assert_int_equal(zipf_init(&z, 1000, 0.915), 0);
	for (size_t k = 0; k < 1000; k++)
		sum += zipf_pmf(&z, k);
	assert_near(sum, 1, 1e-9);
	/* P(k) / P(j) = ((j + 1) / (k + 1))^alpha */
	assert_near(zipf_pmf(&z, 0) / zipf_pmf(&z, 1), pow(2, 0.915), 1e-9);
	assert_near(zipf_pmf(&z, 9) / zipf_pmf(&z, 99), pow(10, 0.915), 1e-9);
	assert_int_equal(zipf_sample(&z, 0), 0);
	assert_int_equal(zipf_sample(&z, z.cdf[0] - 1e-12), 0);
	assert_int_equal(zipf_sample(&z, z.cdf[0]), 1);
	assert_int_equal(zipf_sample(&z, z.cdf[41]), 42);
	assert_int_equal(zipf_sample(&z, 0.9999999999), 999);
	for (long i = 0; i < n; i++) {
		size_t k = zipf_sample(&z, unit());

		assert_true(k < 1000);
		hits0 += k == 0;
		hits9 += k == 9;
	}
	assert_true(fabs(hits0 - n * zipf_pmf(&z, 0)) < 5 * sqrt(n * zipf_pmf(&z, 0)));
	assert_true(fabs(hits9 - n * zipf_pmf(&z, 9)) < 5 * sqrt(n * zipf_pmf(&z, 9)));
	zipf_free(&z);

	/* alpha 0 is uniform */
	assert_int_equal(zipf_init(&z, 4, 0), 0);
	for (size_t k = 0; k < 4; k++)
		assert_near(zipf_pmf(&z, k), 0.25, 1e-12);
	assert_int_equal(zipf_sample(&z, 0.49), 1);
	assert_int_equal(zipf_sample(&z, 0.5), 2);
	zipf_free(&z);
}

/* ---------------------------------------------------------------- percentiles */

static void test_percentile_numpy(void **state)
{
	/* Expected values from numpy.percentile (default "linear"). */
	double a[] = { 4, 1, 3, 2 };
	double b[] = { 50, 15, 40, 20, 35 };
	double c[100], one[] = { 7 };

	assert_near(lg_percentile(a, 4, 50), 2.5, 1e-12);
	assert_near(lg_percentile_sorted(a, 4, 90), 3.7, 1e-12);
	assert_near(lg_percentile_sorted(a, 4, 0), 1, 0);
	assert_near(lg_percentile_sorted(a, 4, 100), 4, 0);
	assert_near(lg_percentile(b, 5, 40), 29, 1e-12);
	assert_near(lg_percentile_sorted(b, 5, 99), 49.6, 1e-12);
	for (int i = 0; i < 100; i++)
		c[i] = 100 - i; /* 1..100, reversed */
	assert_near(lg_percentile(c, 100, 99), 99.01, 1e-9);
	assert_near(lg_percentile_sorted(c, 100, 99.9), 99.901, 1e-9);
	assert_near(lg_percentile_sorted(c, 100, 50), 50.5, 1e-9);
	assert_near(lg_percentile(one, 1, 99), 7, 0);
	assert_near(lg_percentile(NULL, 0, 99), 0, 0);
}

static void test_window_start(void **state)
{
	int64_t t[10];

	for (int i = 0; i < 10; i++)
		t[i] = i * 100; /* 0, 100, ..., 900 */
	/* now 1000, span 500: samples newer than 500 are 600..900 */
	assert_int_equal(lg_window_start(t, 10, 1000, 500, 1), 6);
	/* at least 6 samples: reach back further */
	assert_int_equal(lg_window_start(t, 10, 1000, 500, 6), 4);
	assert_int_equal(lg_window_start(t, 10, 1000, 500, 200), 0);
	/* everything is old, but min_count keeps the last ones */
	assert_int_equal(lg_window_start(t, 10, 100000, 500, 3), 7);
	assert_int_equal(lg_window_start(t, 10, 100000, 500, 0), 10);
	assert_int_equal(lg_window_start(t, 0, 1000, 500, 5), 0);
}

static void test_window_query(void **state)
{
	const int64_t s = 1000000000LL;
	struct lg_window w = { 0 };
	double p99, rps;
	size_t n;

	/* 100 samples per second for 3 s, latency = index */
	for (int i = 0; i < 300; i++)
		assert_int_equal(lg_window_add(&w, (i + 1) * s / 100, i), 0);
	/* 1 s holds 100 samples; min 200 reaches back 2 s: samples 100..299 */
	n = lg_window_query(&w, 0, 3 * s, s, 200, 99, &p99, &rps);
	assert_int_equal(n, 200);
	assert_near(p99, 100 + 0.99 * 199, 1e-9);
	assert_near(rps, 200 / 1.99, 1e-9);
	/* min 50: the last second only, 100 samples (t > 2 s): 200..299 */
	n = lg_window_query(&w, 0, 3 * s, s, 50, 50, &p99, &rps);
	assert_int_equal(n, 100);
	assert_near(p99, 249.5, 1e-9);
	assert_near(rps, 100, 1e-9);
	/* much later: only min_count samples are kept */
	n = lg_window_query(&w, 0, 100 * s, s, 10, 100, &p99, &rps);
	assert_int_equal(n, 10);
	assert_near(p99, 299, 0);
	lg_window_free(&w);

	/* young run: the rate is over the time since start, not a full span */
	for (int i = 0; i < 50; i++)
		assert_int_equal(lg_window_add(&w, 10 * s + i * s / 1000, 1), 0);
	n = lg_window_query(&w, 10 * s, 10 * s + s / 10, s, 200, 99, &p99, &rps);
	assert_int_equal(n, 50);
	assert_near(rps, 500, 1e-9);
	lg_window_free(&w);
	n = lg_window_query(&w, 0, s, s, 200, 99, &p99, &rps);
	assert_int_equal(n, 0);
	assert_near(p99, 0, 0);
}

/* ---------------------------------------------------------------- protocols */

static void test_proto_http(void **state)
{
	const char *r = "HTTP/1.1 200 OK\r\ncontent-length: 3\r\nX: y\r\n\r\nok\n";
	size_t consumed = 0, len = strlen(r);
	volatile size_t small = 10;
	int status = 0;
	char buf[256];

	for (size_t i = 0; i < len; i++)
		assert_int_equal(http_parse_response(r, i, &consumed, &status), LG_MORE);
	assert_int_equal(http_parse_response(r, len, &consumed, &status), LG_DONE);
	assert_int_equal(consumed, len);
	assert_int_equal(status, 200);
	assert_int_equal(
	    http_parse_response("HTTP/1.1 404 Not Found\r\n\r\n", 26, &consumed, &status), LG_BAD);
	assert_int_equal(http_parse_response("SSH-2.0\r\n\r\n", 11, &consumed, &status), LG_BAD);
	assert_true(http_build_get(buf, sizeof(buf), "/x", 80, false) > 0);
	assert_non_null(strstr(buf, "Connection: close\r\n\r\n"));
	assert_true(http_build_get(buf, sizeof(buf), "/x", 80, true) > 0);
	assert_null(strstr(buf, "Connection"));
	/* volatile: the compiler must not see the truncation coming */
	assert_int_equal(http_build_get(buf, small, "/x", 80, true), -1);
}

static void test_proto_memcached(void **state)
{
	const char *v = "VALUE lg:1 0 5\r\nhello\r\nEND\r\n";
	size_t consumed = 0, len = strlen(v);
	bool ok, hit;
	char buf[64];

	for (size_t i = 0; i < len; i++)
		assert_int_equal(mc_parse_reply(v, i, true, &consumed, &ok, &hit), LG_MORE);
	assert_int_equal(mc_parse_reply(v, len, true, &consumed, &ok, &hit), LG_DONE);
	assert_int_equal(consumed, len);
	assert_true(ok && hit);
	assert_int_equal(mc_parse_reply("END\r\n", 5, true, &consumed, &ok, &hit), LG_DONE);
	assert_true(ok && !hit);
	assert_int_equal(mc_parse_reply("STORED\r\n", 8, false, &consumed, &ok, &hit), LG_DONE);
	assert_true(ok);
	assert_int_equal(
	    mc_parse_reply("SERVER_ERROR out of memory\r\n", 28, false, &consumed, &ok, &hit),
	    LG_DONE);
	assert_false(ok);
	assert_int_equal(
	    mc_parse_reply("VALUE k 0 2\r\nabXXEND\r\n", 22, true, &consumed, &ok, &hit), LG_BAD);
	assert_int_equal(mc_build_set(buf, sizeof(buf), "k", "abc", 3), 18);
	assert_memory_equal(buf, "set k 0 0 3\r\nabc\r\n", 18);
	assert_int_equal(mc_build_set(buf, 10, "k", "abc", 3), -1);
	assert_int_equal(mc_build_get(buf, sizeof(buf), "k"), 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sched_parse_errors),
		cmocka_unit_test(test_sched_rate),
		cmocka_unit_test(test_sched_inverse),
		cmocka_unit_test(test_sched_zero_rate_gap),
		cmocka_unit_test(test_sched_poisson_counts),
		cmocka_unit_test(test_zipf),
		cmocka_unit_test(test_percentile_numpy),
		cmocka_unit_test(test_window_start),
		cmocka_unit_test(test_window_query),
		cmocka_unit_test(test_proto_http),
		cmocka_unit_test(test_proto_memcached),
	};

	return cmocka_run_group_tests_name("loadgen", tests, NULL, NULL);
}
