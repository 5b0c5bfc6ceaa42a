// SPDX-License-Identifier: MIT
/*
 * The Prometheus exposition writer (common/prom.c) and the latency bucket
 * table: escaping, family ordering rules, types, cumulative histogram
 * buckets, value spellings, and a page promtool accepts.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "latbuckets.h"
#include "prom.h"

static const struct prom_label wl_web[] = { { "workload", "web" } };

static void test_escaping(void **state)
{
	struct prom_buf b;
	struct prom_label l[] = { { "workload", "a\\b\"c\nd" } };

	prom_init(&b);
	assert_int_equal(
	    prom_family(&b, "x_total", PROM_COUNTER, "help with \\ and\nnewline \"q\""), 0);
	assert_int_equal(prom_sample(&b, l, 1, 3), 0);
	assert_string_equal(b.p, "# HELP x_total help with \\\\ and\\nnewline \"q\"\n"
				 "# TYPE x_total counter\n"
				 "x_total{workload=\"a\\\\b\\\"c\\nd\"} 3\n");
	prom_free(&b);
}

/* Every label value and help text written is valid UTF-8: each byte that is
 * not part of a well-formed sequence becomes U+FFFD; valid text is kept. */
static void test_utf8(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "\xff\xfe"
		  "A",
		  "\xef\xbf\xbd\xef\xbf\xbd"
		  "A" },						    /* the prctl name */
		{ "caf\xc3\xa9", "caf\xc3\xa9" },			    /* valid 2 bytes */
		{ "\xe6\x97\xa5", "\xe6\x97\xa5" },			    /* valid 3 bytes */
		{ "\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80" },		    /* valid 4 bytes */
		{ "a\xc3", "a\xef\xbf\xbd" },				    /* truncated */
		{ "\xc3(", "\xef\xbf\xbd(" },				    /* bad continuation */
		{ "\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd" },		    /* overlong '/' */
		{ "\xe0\x80\xaf", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" }, /* overlong */
		{ "\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" }, /* surrogate */
		{ "\xf4\x90\x80\x80",
		  "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" }, /* above U+10FFFF */
		{ "\x80x", "\xef\xbf\xbdx" },				/* lone continuation */
		{ "\xef\xbf\xbd", "\xef\xbf\xbd" },			/* U+FFFD itself */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct prom_label l[] = { { "workload", cases[i].in } };
		char want[256];
		struct prom_buf b;

		prom_init(&b);
		assert_int_equal(prom_family(&b, "x_total", PROM_COUNTER, cases[i].in), 0);
		assert_int_equal(prom_sample(&b, l, 1, 1), 0);
		snprintf(want, sizeof(want),
			 "# HELP x_total %s\n# TYPE x_total counter\nx_total{workload=\"%s\"} 1\n",
			 cases[i].out, cases[i].out);
		if (strcmp(b.p, want))
			fail_msg("case %zu: got '%s', want '%s'", i, b.p, want);
		prom_free(&b);
	}
}

static void test_values(void **state)
{
	struct prom_buf b;

	prom_init(&b);
	prom_family(&b, "g", PROM_GAUGE, "");
	prom_sample(&b, NULL, 0, NAN);
	prom_sample(&b, NULL, 0, INFINITY);
	prom_sample(&b, NULL, 0, -INFINITY);
	prom_sample(&b, NULL, 0, 0.0022);
	prom_sample(&b, NULL, 0, 12345678901234.0);
	prom_sample(&b, NULL, 0, -1.5e-9);
	assert_int_equal(b.err, 0);
	assert_string_equal(b.p, "# HELP g \n# TYPE g gauge\n"
				 "g NaN\ng +Inf\ng -Inf\ng 0.0022\ng 12345678901234\ng -1.5e-09\n");
	prom_free(&b);
}

static void test_ordering(void **state)
{
	struct prom_buf b;

	/* a sample needs a family first */
	prom_init(&b);
	assert_int_equal(prom_sample(&b, NULL, 0, 1), -EINVAL);
	assert_string_equal(b.errmsg, "sample before any family");
	prom_free(&b);

	/* a family cannot come back once another started: its samples would
	 * not be contiguous */
	prom_init(&b);
	assert_int_equal(prom_family(&b, "a_total", PROM_COUNTER, "a"), 0);
	assert_int_equal(prom_family(&b, "b", PROM_GAUGE, "b"), 0);
	assert_int_equal(prom_family(&b, "a_total", PROM_COUNTER, "a"), -EEXIST);
	/* the error is sticky: nothing more is written */
	{
		size_t len = b.len;

		assert_int_equal(prom_family(&b, "c", PROM_GAUGE, "c"), -EEXIST);
		assert_int_equal(b.len, len);
	}
	prom_free(&b);

	/* samples must match the family's type */
	prom_init(&b);
	prom_family(&b, "h_seconds", PROM_HISTOGRAM, "");
	assert_int_equal(prom_sample(&b, NULL, 0, 1), -EINVAL);
	prom_free(&b);
	prom_init(&b);
	prom_family(&b, "c_total", PROM_COUNTER, "");
	assert_int_equal(prom_summary(&b, NULL, 0, NULL, NULL, 0, 0, 0), -EINVAL);
	prom_free(&b);
	/* counters do not go negative */
	prom_init(&b);
	prom_family(&b, "c_total", PROM_COUNTER, "");
	assert_int_equal(prom_sample(&b, NULL, 0, -1), -EINVAL);
	prom_free(&b);
	/* reset forgets the families */
	prom_init(&b);
	prom_family(&b, "a", PROM_GAUGE, "");
	prom_reset(&b);
	assert_int_equal(b.len, 0);
	assert_int_equal(prom_family(&b, "a", PROM_GAUGE, ""), 0);
	prom_free(&b);
}

static void test_names(void **state)
{
	struct prom_buf b;
	struct prom_label dup[] = { { "a", "1" }, { "a", "2" } };
	struct prom_label le[] = { { "le", "1" } };
	struct prom_label bad[] = { { "1a", "1" } };
	double bounds[] = { 1 };
	uint64_t counts[] = { 0, 0 };

	assert_true(prom_valid_metric_name("ebee_request_duration_seconds"));
	assert_true(prom_valid_metric_name("ns:rule_total"));
	assert_false(prom_valid_metric_name("9x"));
	assert_false(prom_valid_metric_name("a-b"));
	assert_false(prom_valid_metric_name(""));
	assert_true(prom_valid_label_name("workload"));
	assert_false(prom_valid_label_name("__name__"));
	assert_false(prom_valid_label_name("a:b"));

	prom_init(&b);
	assert_int_equal(prom_family(&b, "bad-name", PROM_GAUGE, ""), -EINVAL);
	prom_free(&b);
	prom_init(&b);
	prom_family(&b, "g", PROM_GAUGE, "");
	assert_int_equal(prom_sample(&b, dup, 2, 1), -EINVAL);
	prom_free(&b);
	prom_init(&b);
	prom_family(&b, "g", PROM_GAUGE, "");
	assert_int_equal(prom_sample(&b, bad, 1, 1), -EINVAL);
	prom_free(&b);
	prom_init(&b);
	prom_family(&b, "h", PROM_HISTOGRAM, "");
	assert_int_equal(prom_histogram(&b, le, 1, bounds, counts, 1, 0), -EINVAL);
	prom_free(&b);
}

static void test_histogram(void **state)
{
	struct prom_buf b;
	double bounds[] = { 0.001, 0.0025, 0.01 };
	uint64_t counts[] = { 3, 0, 5, 2 }; /* per bucket, the last above 0.01 */
	double bad_bounds[] = { 0.01, 0.001 };

	prom_init(&b);
	assert_int_equal(prom_family(&b, "lat_seconds", PROM_HISTOGRAM, "h"), 0);
	assert_int_equal(prom_histogram(&b, wl_web, 1, bounds, counts, 3, 0.125), 0);
	assert_string_equal(b.p, "# HELP lat_seconds h\n# TYPE lat_seconds histogram\n"
				 "lat_seconds_bucket{workload=\"web\",le=\"0.001\"} 3\n"
				 "lat_seconds_bucket{workload=\"web\",le=\"0.0025\"} 3\n"
				 "lat_seconds_bucket{workload=\"web\",le=\"0.01\"} 8\n"
				 "lat_seconds_bucket{workload=\"web\",le=\"+Inf\"} 10\n"
				 "lat_seconds_sum{workload=\"web\"} 0.125\n"
				 "lat_seconds_count{workload=\"web\"} 10\n");
	assert_int_equal(prom_histogram(&b, wl_web, 1, bad_bounds, counts, 2, 0), -EINVAL);
	prom_free(&b);
}

static void test_summary(void **state)
{
	struct prom_buf b;
	double q[] = { 0.5, 0.99 }, v[] = { 0.001, NAN };
	double qbad[] = { 0.99, 0.5 };

	prom_init(&b);
	prom_family(&b, "w_seconds", PROM_SUMMARY, "s");
	assert_int_equal(prom_summary(&b, wl_web, 1, q, v, 2, 1.5, 7), 0);
	assert_string_equal(b.p, "# HELP w_seconds s\n# TYPE w_seconds summary\n"
				 "w_seconds{workload=\"web\",quantile=\"0.5\"} 0.001\n"
				 "w_seconds{workload=\"web\",quantile=\"0.99\"} NaN\n"
				 "w_seconds_sum{workload=\"web\"} 1.5\n"
				 "w_seconds_count{workload=\"web\"} 7\n");
	assert_int_equal(prom_summary(&b, wl_web, 1, qbad, v, 2, 0, 0), -EINVAL);
	prom_free(&b);
}

static void test_buckets(void **state)
{
	for (int i = 0; i < LATB_COUNT; i++) {
		assert_true(fabs(latb_bound_s[i] * 1e9 - (double)latb_bound_ns[i]) <
			    1e-6 * (double)latb_bound_ns[i]);
		if (i) {
			assert_true(latb_bound_ns[i] > latb_bound_ns[i - 1]);
			/* about 10% apart: fine enough for 1 ms and 25 ms targets */
			assert_true((double)latb_bound_ns[i] / (double)latb_bound_ns[i - 1] < 1.16);
		}
	}
	assert_int_equal(latb_bound_ns[0], 1000);
	assert_int_equal(latb_bound_ns[LATB_COUNT - 1], 10000000000ull);
	/* 1 ms is an edge */
	assert_int_equal(latb_bound_ns[latb_index(1000000)], 1000000);
	assert_int_equal(latb_index(0), 0);
	assert_int_equal(latb_index(1000), 0);
	assert_int_equal(latb_index(1001), 1);
	assert_int_equal(latb_bound_ns[latb_index(25000000)], 27000000);
	assert_int_equal(latb_index(10000000000ull), LATB_COUNT - 1);
	assert_int_equal(latb_index(10000000001ull), LATB_COUNT);
}

/* A page with every type, checked by Prometheus' own linter. */
static void test_promtool(void **state)
{
	struct prom_buf b;
	char path[] = "/tmp/test_prom.XXXXXX", cmd[128];
	uint64_t counts[LATB_COUNT + 1] = { 0 };
	double q[] = { 0.5, 0.9, 0.99 }, v[] = { 0.001, 0.002, 0.003 };
	struct prom_label two[] = { { "workload", "web" }, { "kind", "up cores" } };
	struct prom_label raw[] = { { "workload", "\xff\xfe"
						  "A" } }; /* a prctl name */
	FILE *f;
	int fd, rc;

	if (system("command -v promtool >/dev/null 2>&1")) {
		skip(); /* SKIP: promtool (Debian package prometheus) is not installed */
		return;
	}
	counts[latb_index(2100000)] = 40;
	counts[latb_index(900000)] = 60;
	prom_init(&b);
	prom_family(&b, "demo_request_duration_seconds", PROM_HISTOGRAM, "Latency.");
	prom_histogram(&b, wl_web, 1, latb_bound_s, counts, LATB_COUNT, 0.12);
	prom_family(&b, "demo_request_duration_window_seconds", PROM_SUMMARY, "Window.");
	prom_summary(&b, wl_web, 1, q, v, 3, 0.12, 100);
	prom_family(&b, "demo_actions_total", PROM_COUNTER, "Actions.");
	prom_sample(&b, two, 2, 4);
	prom_family(&b, "demo_slack_ratio", PROM_GAUGE, "Slack.");
	prom_sample(&b, wl_web, 1, -0.25);
	prom_sample(&b, raw, 1, 0.5);
	assert_int_equal(b.err, 0);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fputs(b.p, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "promtool check metrics < %s", path);
	rc = system(cmd);
	unlink(path);
	prom_free(&b);
	assert_int_equal(rc, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escaping), cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_values),	 cmocka_unit_test(test_ordering),
		cmocka_unit_test(test_names),	 cmocka_unit_test(test_histogram),
		cmocka_unit_test(test_summary),	 cmocka_unit_test(test_buckets),
		cmocka_unit_test(test_promtool),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
