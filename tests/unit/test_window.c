// SPDX-License-Identifier: MIT
/*
 * Unit tests of the request window (common/window.c).
 *
 * The window is checked against a plain reference model: a second ring of the
 * same records whose percentiles come from qsort() and the same interpolation,
 * evaluated the same way in the same precision, so equality is asserted
 * exactly. A table produced by numpy 1.24 (np.percentile on u64, default
 * method) pins the interpolation itself, which a shared reference could not.
 *
 * window.c is compiled into this file with EBEE_WINDOW_CHECK, so every check
 * also runs the B+tree's invariant checker (win_check), and the tests at the
 * end drive the tree through its edge cases: splits, borrows, merges, a root
 * that grows and shrinks, minimal fill everywhere, long runs of equal keys.
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

/* The window's own code, with its test-only invariant checker. */
#define EBEE_WINDOW_CHECK
#include "../../common/window.c"
#include "../lib/testutil.h"

/* ---------------------------------------------------------------- helpers */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	rng_state = x;
	return x;
}

static double rnd_p(void)
{
	return (double)(rnd() >> 11) / (double)(1ull << 53) * 100.0;
}

/* The window under test's semantics, written the obvious way. */
struct ref {
	size_t cap, head, count;
	uint64_t max_age;
	uint64_t *end, *lat;
	uint64_t *sorted; /* scratch */
};

static void ref_init(struct ref *r, size_t cap, uint64_t max_age)
{
	memset(r, 0, sizeof(*r));
	r->cap = cap;
	r->max_age = max_age;
	r->end = calloc(cap, sizeof(uint64_t));
	r->lat = calloc(cap, sizeof(uint64_t));
	r->sorted = calloc(cap, sizeof(uint64_t));
	assert_non_null(r->end);
	assert_non_null(r->lat);
	assert_non_null(r->sorted);
}

static void ref_fini(struct ref *r)
{
	free(r->end);
	free(r->lat);
	free(r->sorted);
}

static uint64_t ref_end(const struct ref *r, size_t i)
{
	return r->end[(r->head + i) % r->cap];
}

static uint64_t ref_lat(const struct ref *r, size_t i)
{
	return r->lat[(r->head + i) % r->cap];
}

static void ref_expire(struct ref *r, uint64_t now)
{
	if (!r->max_age || now <= r->max_age)
		return;
	while (r->count && ref_end(r, 0) < now - r->max_age) {
		r->head = (r->head + 1) % r->cap;
		r->count--;
	}
}

static void ref_push(struct ref *r, uint64_t end, uint64_t lat)
{
	if (r->count == r->cap) {
		r->head = (r->head + 1) % r->cap;
		r->count--;
	}
	r->end[(r->head + r->count) % r->cap] = end;
	r->lat[(r->head + r->count) % r->cap] = lat;
	r->count++;
	ref_expire(r, end);
}

static void ref_sort(struct ref *r)
{
	for (size_t i = 0; i < r->count; i++)
		r->sorted[i] = ref_lat(r, i);
	qsort(r->sorted, r->count, sizeof(uint64_t), tu_cmp_u64);
}

static double ref_average(const struct ref *r)
{
	unsigned __int128 sum = 0;
	uint64_t q, rem;

	for (size_t i = 0; i < r->count; i++)
		sum += ref_lat(r, i);
	/* The correctly rounded mean where a double holds the sum exactly. */
	if (sum < (unsigned __int128)1 << 53)
		return (double)(uint64_t)sum / (double)r->count;
	q = (uint64_t)(sum / r->count);
	rem = (uint64_t)(sum % r->count);
	return (double)((long double)q + (long double)rem / (long double)r->count);
}

static const double fixed_p[] = { 0, 1, 50, 90, 99, 99.9, 100 };

static void check_tree(const struct ebee_window *w)
{
	const char *bad = win_check(w);

	if (bad)
		fail_msg("window invariant broken: %s", bad);
}

/* Every query of the window against the reference, exactly. */
static void check_same(const struct ebee_window *w, struct ref *r, int nrand)
{
	double v, want;
	uint64_t u;
	size_t n = r->count;

	check_tree(w);
	assert_int_equal(ebee_window_count(w), n);
	if (!n) {
		assert_int_equal(ebee_window_percentile(w, 50, &v), -ENODATA);
		assert_int_equal(ebee_window_latest(w, &u), -ENODATA);
		assert_int_equal(ebee_window_average(w, &v), -ENODATA);
		assert_int_equal(ebee_window_rps(w, &v), -ENODATA);
		assert_int_equal(ebee_window_span(w), 0);
		return;
	}
	ref_sort(r);
	for (size_t i = 0; i < sizeof(fixed_p) / sizeof(fixed_p[0]); i++) {
		assert_int_equal(ebee_window_percentile(w, fixed_p[i], &v), 0);
		want = tu_np_linear(r->sorted, n, fixed_p[i]);
		if (v != want)
			fail_msg("p%g of %zu: window %.17g, reference %.17g", fixed_p[i], n, v,
				 want);
	}
	for (int i = 0; i < nrand; i++) {
		double p = rnd_p();

		assert_int_equal(ebee_window_percentile(w, p, &v), 0);
		want = tu_np_linear(r->sorted, n, p);
		if (v != want)
			fail_msg("p%.17g of %zu: window %.17g, reference %.17g", p, n, v, want);
	}
	/*
	 * p = 100 k / (n - 1) aims at the k-th value itself; h may round to a hair
	 * below k (numpy's result then too), so only closeness is asked here.
	 */
	if (n > 1) {
		size_t k = rnd() % n;
		double p = 100.0 * (double)k / (double)(n - 1);

		assert_int_equal(ebee_window_percentile(w, p, &v), 0);
		assert_true(v == tu_np_linear(r->sorted, n, p));
		assert_true(fabs(v - (double)r->sorted[k]) <= 1e-9 * (double)r->sorted[n - 1]);
	}

	assert_int_equal(ebee_window_latest(w, &u), 0);
	assert_int_equal(u, ref_lat(r, n - 1));

	assert_int_equal(ebee_window_average(w, &v), 0);
	want = ref_average(r);
	if (v != want)
		fail_msg("average of %zu: window %.17g, reference %.17g", n, v, want);

	{
		uint64_t first = ref_end(r, 0), last = ref_end(r, n - 1);
		uint64_t span = n > 1 && last > first ? last - first : 0;

		assert_int_equal(ebee_window_span(w), span);
		if (span) {
			assert_int_equal(ebee_window_rps(w, &v), 0);
			assert_true(v == (double)n * 1e9 / (double)span);
		} else {
			assert_int_equal(ebee_window_rps(w, &v), -ENODATA);
		}
	}
}

/* ---------------------------------------------------------------- tests */

static void test_new_invalid(void **state)
{
	errno = 0;
	assert_null(ebee_window_new(0, 0));
	assert_int_equal(errno, EINVAL);
	ebee_window_free(NULL);
}

static void test_empty(void **state)
{
	struct ebee_window *w = ebee_window_new(100, 0);
	double v = -1;
	uint64_t u = 7;

	assert_non_null(w);
	assert_int_equal(ebee_window_count(w), 0);
	assert_int_equal(ebee_window_percentile(w, 0, &v), -ENODATA);
	assert_int_equal(ebee_window_percentile(w, 50, &v), -ENODATA);
	assert_int_equal(ebee_window_percentile(w, 100, &v), -ENODATA);
	assert_int_equal(ebee_window_latest(w, &u), -ENODATA);
	assert_int_equal(ebee_window_average(w, &v), -ENODATA);
	assert_int_equal(ebee_window_rps(w, &v), -ENODATA);
	assert_int_equal(ebee_window_span(w), 0);
	/* Outputs are left alone on error. */
	assert_true(v == -1);
	assert_int_equal(u, 7);
	/* Expiring an empty window is harmless. */
	ebee_window_expire(w, 123456789);
	assert_int_equal(ebee_window_count(w), 0);
	ebee_window_free(w);
}

static void test_one(void **state)
{
	struct ebee_window *w = ebee_window_new(100, 0);
	double v;
	uint64_t u;

	ebee_window_push(w, 5000, 1234);
	assert_int_equal(ebee_window_count(w), 1);
	for (size_t i = 0; i < sizeof(fixed_p) / sizeof(fixed_p[0]); i++) {
		assert_int_equal(ebee_window_percentile(w, fixed_p[i], &v), 0);
		assert_true(v == 1234.0);
	}
	assert_int_equal(ebee_window_latest(w, &u), 0);
	assert_int_equal(u, 1234);
	assert_int_equal(ebee_window_average(w, &v), 0);
	assert_true(v == 1234.0);
	/* One record has no span to divide by. */
	assert_int_equal(ebee_window_rps(w, &v), -ENODATA);
	assert_int_equal(ebee_window_span(w), 0);
	ebee_window_free(w);
}

static void test_p_out_of_range(void **state)
{
	struct ebee_window *w = ebee_window_new(10, 0);
	const double bad[] = { -1, -0.0001, 100.0001, 101, NAN, -NAN, INFINITY, -INFINITY };
	double v = 42;

	/* -EINVAL whether the window is empty or not. */
	for (int round = 0; round < 2; round++) {
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			assert_int_equal(ebee_window_percentile(w, bad[i], &v), -EINVAL);
		assert_true(v == 42);
		ebee_window_push(w, 1, 10);
		ebee_window_push(w, 2, 20);
	}
	/* The bounds themselves are valid. */
	assert_int_equal(ebee_window_percentile(w, 0, &v), 0);
	assert_true(v == 10);
	assert_int_equal(ebee_window_percentile(w, -0.0, &v), 0);
	assert_true(v == 10);
	assert_int_equal(ebee_window_percentile(w, 100, &v), 0);
	assert_true(v == 20);
	ebee_window_free(w);
}

/* Values from numpy 1.24: np.percentile(x, p) with x the u64 array below. */
static const struct {
	double p, want;
} np_table[] = {
	{ 0, 0x1.a840000000000p+10 },
	{ 1, 0x1.86fb0a3d70a3ep+13 },
	{ 2.5, 0x1.c0f3ccccccccdp+14 },
	{ 10, 0x1.98d3800000000p+16 },
	{ 33.3, 0x1.4aba104189374p+18 },
	{ 50, 0x1.ee66800000000p+18 },
	{ 66.6, 0x1.47d656b851eb8p+19 },
	{ 90, 0x1.b8c4666666667p+19 },
	{ 99, 0x1.e3d294ccccccdp+19 },
	{ 99.9, 0x1.e76438624dd30p+19 },
	{ 99.99, 0x1.e82a3f3d07c84p+19 },
	{ 100, 0x1.e840400000000p+19 },
	{ 32.38327648331624, 0x1.40c105284ba52p+18 },
	{ 15.084917392450192, 0x1.2a76b95ef6551p+17 },
	{ 65.09344730398537, 0x1.410d454740c88p+19 },
	{ 7.243628666754276, 0x1.360ba678680e4p+16 },
	{ 53.58820043066892, 0x1.07822fef341d5p+19 },
	{ 36.56889169125856, 0x1.6ba761c64d3cdp+18 },
	{ 5.799892477470681, 0x1.ed72520325288p+15 },
	{ 50.743573318942026, 0x1.f626d487b65bcp+18 },
	{ 3.749565844198488, 0x1.43f38fa84dbefp+15 },
	{ 43.364568366238586, 0x1.a8bb7213f7401p+18 },
	{ 6.985542357461894, 0x1.2d572bcc0a04ap+16 },
	{ 9.071301334386506, 0x1.79cd0b2d5c41cp+16 },
	{ 42.451918914251394, 0x1.9fee49d3b6aacp+18 },
	{ 82.68521246720381, 0x1.956114912042fp+19 },
	{ 12.380196114964559, 0x1.ed651491a334bp+16 },
	{ 22.323896460701455, 0x1.c30a02d65c3b1p+17 },
	{ 62.74332224055893, 0x1.3525d99e07ad2p+19 },
	{ 94.77089424570056, 0x1.d11cda0657979p+19 },
	{ 57.710294861749865, 0x1.1a7631483de10p+19 },
	{ 39.66804746507802, 0x1.87481c957220ap+18 },
	{ 0.1001001001001001, 0x1.b880000000000p+10 },
	{ 50.050050050050054, 0x1.ef42c00000000p+18 },
	{ 99.89989989989989, 0x1.e764000000000p+19 },
};

static void test_numpy_values(void **state)
{
	struct ebee_window *w = ebee_window_new(1000, 0);
	double v;

	/* Junk first, so the numpy data is what is left after 500 evictions. */
	for (uint64_t i = 0; i < 500; i++)
		ebee_window_push(w, i, 1u << 30);
	for (uint64_t i = 1; i <= 1000; i++)
		ebee_window_push(w, 1000 + i, (i * 2654435761u) % 1000003);
	assert_int_equal(ebee_window_count(w), 1000);
	for (size_t i = 0; i < sizeof(np_table) / sizeof(np_table[0]); i++) {
		assert_int_equal(ebee_window_percentile(w, np_table[i].p, &v), 0);
		if (v != np_table[i].want)
			fail_msg("p%.17g: window %a, numpy %a", np_table[i].p, v, np_table[i].want);
	}
	ebee_window_free(w);

	/* Small hand-checkable cases: np.percentile([1, 2, 3, 4], p). */
	w = ebee_window_new(4, 0);
	for (uint64_t i = 1; i <= 4; i++)
		ebee_window_push(w, i, 5 - i); /* pushed out of order on purpose */
	assert_int_equal(ebee_window_percentile(w, 25, &v), 0);
	assert_true(v == 1.75);
	assert_int_equal(ebee_window_percentile(w, 50, &v), 0);
	assert_true(v == 2.5);
	assert_int_equal(ebee_window_percentile(w, 75, &v), 0);
	assert_true(v == 3.25);
	assert_int_equal(ebee_window_percentile(w, 90, &v), 0);
	assert_true(v == 0x1.d99999999999ap+1); /* 3.7 as numpy rounds it */
	ebee_window_free(w);
}

/* Random data through many evictions, checked at many points. */
static void run_random(size_t cap, size_t pushes, uint64_t lat_mod, size_t every, int nrand)
{
	struct ebee_window *w = ebee_window_new(cap, 0);
	struct ref r;
	uint64_t t = 1000;

	assert_non_null(w);
	ref_init(&r, cap, 0);
	rng_state = 0x9e3779b97f4a7c15ull ^ cap ^ lat_mod;
	for (size_t i = 0; i < pushes; i++) {
		/* Mix of magnitudes, as real latencies: mostly small, some huge. */
		uint64_t lat = rnd() % lat_mod;

		if (lat_mod > 1000 && rnd() % 100 == 0)
			lat *= 1000;
		t += 1 + rnd() % 5000;
		ebee_window_push(w, t, lat);
		ref_push(&r, t, lat);
		if (i % every == 0 || i + 1 == pushes)
			check_same(w, &r, nrand);
	}
	ref_fini(&r);
	ebee_window_free(w);
}

static void test_random_vs_sorted(void **state)
{
	run_random(1000, 20000, 10000000, 37, 8);
}

static void test_duplicates(void **state)
{
	/* Four distinct values in a window of 1000: long runs of equal keys. */
	run_random(1000, 20000, 4, 41, 8);
	/* Every latency equal. */
	run_random(500, 3000, 1, 13, 4);
}

static void test_large_window(void **state)
{
	/* Deep tree, as in the default configuration. */
	run_random(100000, 300000, 1000000000, 50000, 50);
}

/* Sorted input is the worst case for an unbalanced tree; not for a treap. */
static void test_monotonic_latencies(void **state)
{
	struct ebee_window *w = ebee_window_new(5000, 0);
	struct ref r;

	ref_init(&r, 5000, 0);
	rng_state = 12345;
	for (uint64_t i = 0; i < 20000; i++) {
		uint64_t lat = i < 10000 ? i : 20000 - i;

		ebee_window_push(w, i * 10, lat);
		ref_push(&r, i * 10, lat);
		if (i % 997 == 0)
			check_same(w, &r, 8);
	}
	check_same(w, &r, 8);
	ref_fini(&r);
	ebee_window_free(w);
}

static void test_cap_one(void **state)
{
	struct ebee_window *w = ebee_window_new(1, 0);
	double v;
	uint64_t u;

	for (uint64_t i = 1; i <= 100; i++) {
		ebee_window_push(w, i * 1000, i * 7);
		check_tree(w);
		assert_int_equal(ebee_window_count(w), 1);
		assert_int_equal(ebee_window_latest(w, &u), 0);
		assert_int_equal(u, i * 7);
		assert_int_equal(ebee_window_percentile(w, 0, &v), 0);
		assert_true(v == (double)(i * 7));
		assert_int_equal(ebee_window_percentile(w, 99.9, &v), 0);
		assert_true(v == (double)(i * 7));
		assert_int_equal(ebee_window_average(w, &v), 0);
		assert_true(v == (double)(i * 7));
		assert_int_equal(ebee_window_rps(w, &v), -ENODATA);
	}
	ebee_window_free(w);
}

static void test_wraparound_rps_average(void **state)
{
	struct ebee_window *w = ebee_window_new(10, 0);
	double v;
	uint64_t u;

	/* Records i = 0..24 at end = 1 ms * i; the last ten (15..24) remain. */
	for (uint64_t i = 0; i < 25; i++)
		ebee_window_push(w, 1000000 * i, 100 + i);
	assert_int_equal(ebee_window_count(w), 10);
	assert_int_equal(ebee_window_span(w), 9000000);
	assert_int_equal(ebee_window_rps(w, &v), 0);
	assert_true(v == 10 * 1e9 / 9e6);
	assert_int_equal(ebee_window_average(w, &v), 0);
	assert_true(v == 119.5); /* mean of 115..124 */
	assert_int_equal(ebee_window_latest(w, &u), 0);
	assert_int_equal(u, 124);
	assert_int_equal(ebee_window_percentile(w, 0, &v), 0);
	assert_true(v == 115);
	assert_int_equal(ebee_window_percentile(w, 100, &v), 0);
	assert_true(v == 124);
	assert_int_equal(ebee_window_percentile(w, 50, &v), 0);
	assert_true(v == 119.5);

	/* Equal end times: no span, no rate. */
	for (int i = 0; i < 10; i++)
		ebee_window_push(w, 5, 1);
	assert_int_equal(ebee_window_span(w), 0);
	assert_int_equal(ebee_window_rps(w, &v), -ENODATA);
	ebee_window_free(w);
}

/* The running sum must not wrap where a u64 sum would, nor drift. */
static void test_average_exact(void **state)
{
	struct ebee_window *w = ebee_window_new(1000, 0);
	double v;

	for (int i = 0; i < 5000; i++)
		ebee_window_push(w, i, UINT64_MAX - (uint64_t)(i % 2));
	assert_int_equal(ebee_window_average(w, &v), 0);
	/* UINT64_MAX - 0.5, as near as a double gets; a u64 sum would have wrapped. */
	assert_true(v == 0x1p64);
	assert_int_equal(ebee_window_percentile(w, 100, &v), 0);
	assert_true(v == (double)UINT64_MAX);

	/* 1, 2 and 2 average to 5/3 whichever order they were summed in. */
	ebee_window_reset(w);
	ebee_window_push(w, 1, 1);
	ebee_window_push(w, 2, 2);
	ebee_window_push(w, 3, 2);
	assert_int_equal(ebee_window_average(w, &v), 0);
	assert_true(v == 5.0 / 3.0);

	/* A billion pushes would be slow; churn through 1e6 of mixed sizes. */
	ebee_window_reset(w);
	for (uint64_t i = 0; i < 1000000; i++)
		ebee_window_push(w, i, (i & 1) ? (uint64_t)1 << 62 : 3);
	assert_int_equal(ebee_window_average(w, &v), 0);
	/* 2^61 + 1.5 rounds to 2^61 in a double (ulp 512 there). */
	assert_true(v == 0x1p61);
	ebee_window_free(w);
}

static void test_age_on_push(void **state)
{
	struct ebee_window *w = ebee_window_new(1000, 1000);
	double v;

	/* end = 0, 100, ..., 2000. */
	for (uint64_t i = 0; i <= 20; i++)
		ebee_window_push(w, i * 100, i);
	/* Kept: end >= 2000 - 1000, i.e. 1000..2000 (the boundary stays). */
	assert_int_equal(ebee_window_count(w), 11);
	assert_int_equal(ebee_window_span(w), 1000);
	assert_int_equal(ebee_window_percentile(w, 0, &v), 0);
	assert_true(v == 10);
	assert_int_equal(ebee_window_average(w, &v), 0);
	assert_true(v == 15);

	/* A jump in time empties all but the new record. */
	ebee_window_push(w, 1000000, 77);
	assert_int_equal(ebee_window_count(w), 1);
	assert_int_equal(ebee_window_percentile(w, 50, &v), 0);
	assert_true(v == 77);

	/* The cap still applies under an age limit. */
	ebee_window_free(w);
	w = ebee_window_new(5, 1000000);
	for (uint64_t i = 0; i < 20; i++)
		ebee_window_push(w, i, i);
	assert_int_equal(ebee_window_count(w), 5);
	assert_int_equal(ebee_window_percentile(w, 0, &v), 0);
	assert_true(v == 15);
	ebee_window_free(w);
}

static void test_age_expire(void **state)
{
	struct ebee_window *w = ebee_window_new(1000, 1000);
	struct ebee_window *nolimit = ebee_window_new(1000, 0);
	double v;

	for (uint64_t i = 1; i <= 10; i++) {
		ebee_window_push(w, i * 100, i);
		ebee_window_push(nolimit, i * 100, i);
	}
	assert_int_equal(ebee_window_count(w), 10);

	/* now <= max_age: nothing can be older than now - max_age. */
	ebee_window_expire(w, 1000);
	assert_int_equal(ebee_window_count(w), 10);
	/* Cutoff 500: drops ends 100..400, keeps 500 (not older). */
	ebee_window_expire(w, 1500);
	assert_int_equal(ebee_window_count(w), 6);
	assert_int_equal(ebee_window_percentile(w, 0, &v), 0);
	assert_true(v == 5);
	assert_int_equal(ebee_window_average(w, &v), 0);
	assert_true(v == 7.5);
	/* Time going backwards drops nothing. */
	ebee_window_expire(w, 1200);
	assert_int_equal(ebee_window_count(w), 6);
	/* Traffic stopped long ago: empty. */
	ebee_window_expire(w, 1000000);
	assert_int_equal(ebee_window_count(w), 0);
	assert_int_equal(ebee_window_percentile(w, 50, &v), -ENODATA);
	assert_int_equal(ebee_window_average(w, &v), -ENODATA);
	/* And usable again afterwards. */
	ebee_window_push(w, 2000000, 9);
	assert_int_equal(ebee_window_percentile(w, 50, &v), 0);
	assert_true(v == 9);

	/* Without an age limit expire is a no-op. */
	ebee_window_expire(nolimit, UINT64_MAX);
	assert_int_equal(ebee_window_count(nolimit), 10);
	ebee_window_free(w);
	ebee_window_free(nolimit);
}

/* Random cap and age eviction together, with expire calls, against the model. */
static void test_random_age(void **state)
{
	const size_t cap = 700;
	const uint64_t age = 400000;
	struct ebee_window *w = ebee_window_new(cap, age);
	struct ref r;
	uint64_t t = 0;

	ref_init(&r, cap, age);
	rng_state = 0xdeadbeefcafef00dull;
	for (size_t i = 0; i < 30000; i++) {
		/* Bursts (many records per age) and gaps (window drains). */
		uint64_t dt = rnd() % 100 == 0 ? rnd() % 600000 : rnd() % 1500;
		uint64_t lat = rnd() % 5000;

		t += dt;
		ebee_window_push(w, t, lat);
		ref_push(&r, t, lat);
		if (rnd() % 50 == 0) {
			uint64_t now = t + rnd() % 500000;

			ebee_window_expire(w, now);
			ref_expire(&r, now);
		}
		if (i % 29 == 0)
			check_same(w, &r, 4);
	}
	ref_fini(&r);
	ebee_window_free(w);
}

static void test_reset(void **state)
{
	struct ebee_window *w = ebee_window_new(100, 0);
	struct ref r;
	double v;

	for (uint64_t i = 0; i < 250; i++)
		ebee_window_push(w, i, i * 3);
	ebee_window_reset(w);
	assert_int_equal(ebee_window_count(w), 0);
	assert_int_equal(ebee_window_percentile(w, 50, &v), -ENODATA);
	assert_int_equal(ebee_window_rps(w, &v), -ENODATA);
	assert_int_equal(ebee_window_span(w), 0);

	/* Stale nodes from before the reset must not leak into the new tree. */
	ref_init(&r, 100, 0);
	rng_state = 99;
	for (uint64_t i = 0; i < 350; i++) {
		uint64_t lat = rnd() % 1000;

		ebee_window_push(w, 10000 + i, lat);
		ref_push(&r, 10000 + i, lat);
		if (i % 7 == 0)
			check_same(w, &r, 4);
	}
	check_same(w, &r, 4);
	ref_fini(&r);
	ebee_window_free(w);
}

/* ------------------------------------------------- B+tree edge cases */

/* Caps around and between the node sizes: a lone root leaf, a root leaf that
 * is exactly full, one key more, and several inner levels with ragged ends. */
static void test_caps_off_node_size(void **state)
{
	static const size_t caps[] = { 2,
				       3,
				       WIN_LEAF_MIN - 1,
				       WIN_LEAF_MIN,
				       WIN_LEAF_MIN + 1,
				       WIN_LEAF_MAX - 1,
				       WIN_LEAF_MAX,
				       WIN_LEAF_MAX + 1,
				       2 * WIN_LEAF_MAX + 1,
				       1000,
				       WIN_LEAF_MAX * WIN_INNER_MAX + 1 };

	for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		/* Checked after every push while that is cheap. */
		size_t every = caps[i] < 300 ? 1 : 17;

		run_random(caps[i], 6 * caps[i] + 50, 1000000, every, 2);
		run_random(caps[i], 6 * caps[i] + 50, 3, every, 2);
	}
}

/* Sorted runs fill every leaf to exactly half (each split leaves a minimal
 * left half behind), the most nodes the pools must ever hold; then the
 * window slides through descending runs, emptying leaves from the far end. */
static void test_minimal_fill(void **state)
{
	const size_t cap = 20000;
	struct ebee_window *w = ebee_window_new(cap, 0);
	struct ref r;

	ref_init(&r, cap, 0);
	for (uint64_t i = 0; i < 5 * cap; i++) {
		uint64_t lat = (i / cap) % 2 ? 5 * cap - i : i;

		ebee_window_push(w, i, lat);
		ref_push(&r, i, lat);
		if (i % 1999 == 0)
			check_same(w, &r, 4);
	}
	check_same(w, &r, 4);
	ref_fini(&r);
	ebee_window_free(w);
}

/* Alternating tiny and huge values, and blocks of each, so that inserts land
 * at both ends while evictions take from both ends: splits at one side,
 * borrows and merges at the other, the boundary moving each time. */
static void test_alternating_extremes(void **state)
{
	const size_t cap = 3000;
	struct ebee_window *w = ebee_window_new(cap, 0);
	struct ref r;

	ref_init(&r, cap, 0);
	rng_state = 0x1234567;
	for (uint64_t i = 0; i < 12 * cap; i++) {
		uint64_t big = UINT64_MAX - rnd() % 100, small = rnd() % 100;
		uint64_t lat;

		if (i < 4 * cap)
			lat = i % 2 ? big : small;
		else if (i < 8 * cap)
			lat = (i / 700) % 2 ? big : small; /* blocks shorter than cap */
		else
			lat = (i / 5000) % 2 ? big : small; /* blocks longer than cap */
		ebee_window_push(w, i, lat);
		ref_push(&r, i, lat);
		if (i % 7 == 0)
			check_tree(w);
		if (i % 997 == 0)
			check_same(w, &r, 4);
	}
	check_same(w, &r, 8);
	ref_fini(&r);
	ebee_window_free(w);
}

/* Equal keys spanning many leaves: a delete must still find a copy, whichever
 * leaf its route leads to, and the minima must stay exact at run boundaries. */
static void test_duplicate_runs(void **state)
{
	const size_t cap = 5000;
	struct ebee_window *w = ebee_window_new(cap, 0);
	struct ref r;

	ref_init(&r, cap, 0);
	rng_state = 77;
	for (uint64_t i = 0; i < 10 * cap; i++) {
		/* Two values, then three, then one: runs of thousands. */
		uint64_t lat = i < 4 * cap ? 7 + 3 * (rnd() % 2) : i < 8 * cap ? rnd() % 3 : 10;

		ebee_window_push(w, i, lat);
		ref_push(&r, i, lat);
		if (i % 13 == 0)
			check_tree(w);
		if (i % 1013 == 0)
			check_same(w, &r, 8);
	}
	check_same(w, &r, 8);
	ref_fini(&r);
	ebee_window_free(w);
}

/* An age limit that empties a deep tree in one go, through push and through
 * expire, shrinking the root back to an empty leaf; then regrowing it. */
static void test_age_empties_tree(void **state)
{
	const size_t cap = 50000;
	const uint64_t age = 1000000;
	struct ebee_window *w = ebee_window_new(cap, age);
	struct ref r;
	uint64_t t = 0;

	ref_init(&r, cap, age);
	rng_state = 4242;
	for (int round = 0; round < 3; round++) {
		for (size_t i = 0; i < cap; i++) {
			uint64_t lat = rnd() % 100000;

			t += 10; /* cap records span half the age limit */
			ebee_window_push(w, t, lat);
			ref_push(&r, t, lat);
		}
		check_same(w, &r, 8);
		assert_int_equal(ebee_window_count(w), cap);
		assert_true(w->height >= 2);
		if (round == 1) {
			/* A push far in the future leaves only itself. */
			t += 10 * age;
			ebee_window_push(w, t, 5);
			ref_push(&r, t, 5);
			assert_int_equal(ebee_window_count(w), 1);
		} else {
			t += 10 * age;
			ebee_window_expire(w, t);
			ref_expire(&r, t);
			assert_int_equal(ebee_window_count(w), 0);
		}
		check_same(w, &r, 1);
		assert_int_equal(w->height, 0);
	}
	/* Every node went back to the pools. */
	assert_true(w->leaves.used - 1 <= cap / WIN_LEAF_MIN);
	ref_fini(&r);
	ebee_window_free(w);
}

/* Reset of a deep tree gives back every node; a regrown tree passes the check. */
static void test_reset_deep(void **state)
{
	const size_t cap = 30000;
	struct ebee_window *w = ebee_window_new(cap, 0);
	struct ref r;

	for (uint64_t i = 0; i < 2 * cap; i++)
		ebee_window_push(w, i, i * 2654435761u % 1000);
	check_tree(w);
	assert_true(w->height >= 2);
	ebee_window_reset(w);
	check_tree(w);
	assert_int_equal(w->height, 0);
	assert_int_equal(w->leaves.used, 1);
	assert_int_equal(w->inners.used, 0);

	ref_init(&r, cap, 0);
	rng_state = 5;
	for (uint64_t i = 0; i < 3 * cap; i++) {
		uint64_t lat = rnd() % 100;

		ebee_window_push(w, i, lat);
		ref_push(&r, i, lat);
		if (i % 4999 == 0)
			check_same(w, &r, 4);
	}
	check_same(w, &r, 4);
	ref_fini(&r);
	ebee_window_free(w);
}

/* Queries at irregular gaps, some longer than cap / 8 pushes (the tree is
 * then left stale and rebuilt by the query, and after two such gaps dropped
 * right at the next push), some short (kept push by push, including on a
 * freshly rebuilt tree): exact every time. The second pattern walks the
 * rent-or-buy choice through each of its states on purpose: long gaps, then
 * short ones (kept again only after two), a single short one between long
 * ones, and back-to-back queries with no push between. */
static void test_lazy_rebuild(void **state)
{
	static const size_t caps[] = { 1, 63, 64, 65, 200, 3000, 20000 };

	for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
		size_t cap = caps[c];
		struct ebee_window *w = ebee_window_new(cap, 0);
		struct ref r;
		uint64_t t = 0;

		assert_non_null(w);
		ref_init(&r, cap, 0);
		rng_state = 11 + c;
		for (int round = 0; round < 40; round++) {
			size_t gap = round % 3 ? rnd() % (cap / 2 + 2) : 1 + rnd() % (2 * cap + 1);

			for (size_t i = 0; i < gap; i++, t++) {
				uint64_t lat = round % 5 == 4 ? rnd() % 3 : rnd() % 1000000000;

				ebee_window_push(w, t, lat);
				ref_push(&r, t, lat);
			}
			check_same(w, &r, 2);
		}
		for (int round = 0; round < 24; round++) {
			static const char pattern[] = "LLSSSSLSLL0SS0LSSLL0S0SL";
			size_t gap = 0; /* '0': a query right after the last one */

			if (pattern[round] == 'L')
				gap = cap + 7;
			else if (pattern[round] == 'S')
				gap = 1 + rnd() % (cap / 8 + 1);

			for (size_t i = 0; i < gap; i++, t++) {
				uint64_t lat = rnd() % 1000;

				ebee_window_push(w, t, lat);
				ref_push(&r, t, lat);
			}
			check_same(w, &r, 1);
		}
		ref_fini(&r);
		ebee_window_free(w);
	}
}

/* The percentile over several windows at once equals the percentile of the
 * sorted union of their latencies, exactly: windows of different sizes and
 * value ranges (some empty, some of one value repeated, some with an age
 * limit, some left stale by unread pushes, others kept), against np_linear on
 * the concatenation. One window alone gives what ebee_window_percentile
 * gives. */
static void test_union_percentile(void **state)
{
	enum { NW = 7 };
	static const size_t caps[NW] = { 1, 64, 65, 300, 3000, 20000, 100 };
	struct ebee_window *ws[NW];
	struct ref refs[NW];
	uint64_t *all = malloc(30000 * sizeof(*all));
	double v, want, one;

	assert_non_null(all);
	rng_state = 77;
	for (int i = 0; i < NW; i++) {
		ws[i] = ebee_window_new(caps[i], i == 6 ? 500 : 0);
		assert_non_null(ws[i]);
		ref_init(&refs[i], caps[i], i == 6 ? 500 : 0);
	}
	assert_int_equal(ebee_window_percentile_union(ws, 0, 50, &v), -EINVAL);
	assert_int_equal(ebee_window_percentile_union(ws, NW, 50, &v), -ENODATA);
	for (int round = 0; round < 30; round++) {
		size_t n = 0;

		for (int i = 0; i < NW; i++) {
			/* window 3 stays empty in odd rounds' first half */
			size_t pushes =
			    i == 3 && round < 15 && round % 2 ? 0 : rnd() % (2 * caps[i] + 2);

			if (i == 3 && round < 15 && round % 2) {
				ebee_window_reset(ws[i]);
				ref_fini(&refs[i]);
				ref_init(&refs[i], caps[i], 0);
			}
			for (size_t k = 0; k < pushes; k++) {
				uint64_t t = (uint64_t)round * 1000 + k % 1000;
				uint64_t lat = rnd() % 5000;

				if (i == 2)
					lat = 42; /* one value repeated */
				else if (i == 4)
					lat = 1000000 + rnd() % 1000;
				else if (round % 3 == 0)
					lat = rnd() % 1000000000000ull;

				ebee_window_push(ws[i], t, lat);
				ref_push(&refs[i], t, lat);
			}
			for (size_t k = 0; k < refs[i].count; k++)
				all[n++] = ref_lat(&refs[i], k);
		}
		qsort(all, n, sizeof(*all), tu_cmp_u64);
		for (int j = 0; j < 12; j++) {
			double p = j < 7 ? fixed_p[j] : rnd_p();
			int rc = ebee_window_percentile_union(ws, NW, p, &v);

			if (!n) {
				assert_int_equal(rc, -ENODATA);
				continue;
			}
			assert_int_equal(rc, 0);
			want = tu_np_linear(all, n, p);
			if (v != want)
				fail_msg("round %d p%.17g of %zu: union %.17g, reference %.17g",
					 round, p, n, v, want);
			for (int i = 0; i < NW; i++) {
				if (!ebee_window_count(ws[i]))
					continue;
				assert_int_equal(ebee_window_percentile_union(&ws[i], 1, p, &one),
						 0);
				assert_int_equal(ebee_window_percentile(ws[i], p, &want), 0);
				assert_true(one == want);
			}
		}
		assert_int_equal(ebee_window_percentile_union(ws, NW, -1, &v), -EINVAL);
		assert_int_equal(ebee_window_percentile_union(ws, NW, NAN, &v), -EINVAL);
	}
	for (int i = 0; i < NW; i++) {
		check_tree(ws[i]);
		ebee_window_free(ws[i]);
		ref_fini(&refs[i]);
	}
	free(all);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_invalid),
		cmocka_unit_test(test_lazy_rebuild),
		cmocka_unit_test(test_union_percentile),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_one),
		cmocka_unit_test(test_p_out_of_range),
		cmocka_unit_test(test_numpy_values),
		cmocka_unit_test(test_random_vs_sorted),
		cmocka_unit_test(test_duplicates),
		cmocka_unit_test(test_large_window),
		cmocka_unit_test(test_monotonic_latencies),
		cmocka_unit_test(test_cap_one),
		cmocka_unit_test(test_wraparound_rps_average),
		cmocka_unit_test(test_average_exact),
		cmocka_unit_test(test_age_on_push),
		cmocka_unit_test(test_age_expire),
		cmocka_unit_test(test_random_age),
		cmocka_unit_test(test_reset),
		cmocka_unit_test(test_caps_off_node_size),
		cmocka_unit_test(test_minimal_fill),
		cmocka_unit_test(test_alternating_extremes),
		cmocka_unit_test(test_duplicate_runs),
		cmocka_unit_test(test_age_empties_tree),
		cmocka_unit_test(test_reset_deep),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
