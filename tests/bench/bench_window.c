// SPDX-License-Identifier: MIT
/*
 * Benchmark of the request window (common/window.c) against the paper's
 * fallback for percentiles: keep a plain ring and, per query, copy it and
 * either sort it or quickselect the two neighbours (what np.percentile does
 * with np.partition).
 *
 * The window pays O(log n) per push to make every query O(log n); the fallback
 * pays nothing per push and O(n) or O(n log n) per query. The figures below
 * put both costs side by side so the trade can be judged for a given query
 * rate. Every query result is compared between the methods: a fast wrong
 * answer would not count.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../common/window.h"
#include "../lib/testutil.h"

#define CAP	 100000
#define N_PUSH	 2000000
#define N_QUERY	 1000000
#define N_SORT	 40
#define N_SELECT 400
#define LAT_SPAN 10000000 /* ns */

static uint64_t rng = 0x853c49e6748fea9bull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Mostly around a millisecond with a tail, as request latencies are. */
static uint64_t rnd_lat(void)
{
	uint64_t lat = 50000 + rnd() % 1000000;

	if (rnd() % 100 == 0)
		lat += rnd() % LAT_SPAN;
	return lat;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The fallback's state: the same records in a plain ring. */
static uint64_t ring[CAP];
static size_t ring_head;
static uint64_t scratch[CAP];

static void ring_push(uint64_t lat)
{
	ring[ring_head] = lat;
	if (++ring_head == CAP)
		ring_head = 0;
}

static double sort_percentile(double p)
{
	size_t n = CAP, lo;
	double h = (double)(n - 1) * (p / 100.0);

	memcpy(scratch, ring, sizeof(ring));
	qsort(scratch, n, sizeof(scratch[0]), tu_cmp_u64);
	if (h >= (double)(n - 1))
		return (double)scratch[n - 1];
	lo = (size_t)h;
	return tu_np_lerp(scratch[lo], scratch[lo + 1], h - (double)lo);
}

/* Hoare partition quickselect: afterwards x[k] is the k-th smallest, smaller
 * ones before it and larger ones after. */
static void nth_element(uint64_t *x, size_t n, size_t k)
{
	size_t l = 0, r = n - 1;

	while (l < r) {
		uint64_t pivot = x[l + rnd() % (r - l + 1)];
		size_t i = l, j = r;

		while (i <= j) {
			while (x[i] < pivot)
				i++;
			while (x[j] > pivot)
				j--;
			if (i <= j) {
				uint64_t t = x[i];

				x[i] = x[j];
				x[j] = t;
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (k <= j)
			r = j;
		else if (k >= i)
			l = i;
		else
			return;
	}
}

static double select_percentile(double p)
{
	size_t n = CAP, lo;
	double h = (double)(n - 1) * (p / 100.0);
	uint64_t a, b;

	memcpy(scratch, ring, sizeof(ring));
	lo = h >= (double)(n - 1) ? n - 1 : (size_t)h;
	nth_element(scratch, n, lo);
	a = scratch[lo];
	if (h >= (double)(n - 1))
		return (double)a;
	/* The upper neighbour is the smallest of what lies above lo. */
	b = scratch[lo + 1];
	for (size_t i = lo + 2; i < n; i++)
		if (scratch[i] < b)
			b = scratch[i];
	return tu_np_lerp(a, b, h - (double)lo);
}

static double rnd_p(void)
{
	/* Half the queries at the usual tail percentiles, half anywhere. */
	static const double tail[] = { 50, 90, 95, 99, 99.9, 99.99 };

	if (rnd() & 1)
		return tail[rnd() % (sizeof(tail) / sizeof(tail[0]))];
	return (double)(rnd() >> 11) / (double)(1ull << 53) * 100.0;
}

static void print_row(const char *what, const char *a, double a_ns, const char *b, double b_ns)
{
	const char *unit = a_ns < 1000 && b_ns < 1000 ? "ns" : "us";
	double div = unit[0] == 'n' ? 1 : 1000;
	double ratio = a_ns > b_ns ? a_ns / b_ns : b_ns / a_ns;

	printf("%-26s %s %10.3f %s   %-11s %10.3f %s   ratio %.0fx (%s faster)\n", what, a,
	       a_ns / div, unit, b, b_ns / div, unit, ratio, a_ns < b_ns ? a : b);
}

int main(void)
{
	static double ps[N_QUERY];
	struct ebee_window *w = ebee_window_new(CAP, 0);
	volatile double sink = 0;
	static const size_t every[] = { 1000, 10000, 100000, 1000000 };
	double t0, push_ns, ring_ns, q_ns, sort_ns, sel_ns, v, rebuild_ns, mixed_ns[4];
	uint64_t end = 0;
	size_t bad = 0;

	if (!w) {
		fprintf(stderr, "bench_window: ebee_window_new(%d): %s\n", CAP, strerror(errno));
		return 1;
	}
	for (size_t i = 0; i < CAP; i++) {
		uint64_t lat = rnd_lat();

		ebee_window_push(w, end += 1000, lat);
		ring_push(lat);
	}
	printf("window of %d records (full), latencies 50 us .. 11 ms, random\n", CAP);

	/* Pushes into a full window: each one also evicts the oldest. */
	{
		static uint64_t lats[N_PUSH];

		for (size_t i = 0; i < N_PUSH; i++)
			lats[i] = rnd_lat();
		t0 = now_ns();
		for (size_t i = 0; i < N_PUSH; i++)
			ebee_window_push(w, end += 1000, lats[i]);
		push_ns = (now_ns() - t0) / N_PUSH;
		t0 = now_ns();
		for (size_t i = 0; i < N_PUSH; i++)
			ring_push(lats[i]);
		ring_ns = (now_ns() - t0) / N_PUSH;
		for (size_t i = 0; i < CAP; i++)
			sink += (double)ring[i];
	}

	/* The pushes above went unread, so the tree was left stale: the first
	 * query rebuilds it. */
	t0 = now_ns();
	ebee_window_percentile(w, 99, &v);
	sink += v;
	rebuild_ns = now_ns() - t0;

	/* What a reader that queries every `every` pushes pays per push, its
	 * queries (and rebuilds) included. */
	for (size_t e = 0; e < sizeof(every) / sizeof(every[0]); e++) {
		static uint64_t lats[N_PUSH];

		for (size_t i = 0; i < N_PUSH; i++)
			lats[i] = rnd_lat();
		t0 = now_ns();
		for (size_t i = 0; i < N_PUSH; i++) {
			ebee_window_push(w, end += 1000, lats[i]);
			ring_push(lats[i]);
			if ((i + 1) % every[e] == 0) {
				ebee_window_percentile(w, 99, &v);
				sink += v;
			}
		}
		mixed_ns[e] = (now_ns() - t0) / N_PUSH;
	}

	for (size_t i = 0; i < N_QUERY; i++)
		ps[i] = rnd_p();
	t0 = now_ns();
	for (size_t i = 0; i < N_QUERY; i++) {
		ebee_window_percentile(w, ps[i], &v);
		sink += v;
	}
	q_ns = (now_ns() - t0) / N_QUERY;

	t0 = now_ns();
	for (size_t i = 0; i < N_SORT; i++)
		sink += sort_percentile(ps[i]);
	sort_ns = (now_ns() - t0) / N_SORT;

	t0 = now_ns();
	for (size_t i = 0; i < N_SELECT; i++)
		sink += select_percentile(ps[i]);
	sel_ns = (now_ns() - t0) / N_SELECT;

	/* Same answers, bit for bit, or the speed means nothing. */
	for (size_t i = 0; i < N_SORT; i++) {
		ebee_window_percentile(w, ps[i], &v);
		if (v != sort_percentile(ps[i]) || v != select_percentile(ps[i]))
			bad++;
	}

	print_row("push (window full):", "window", push_ns, "plain ring", ring_ns);
	printf("first query after %d unread pushes (rebuilds the tree): %.3f ms\n", N_PUSH,
	       rebuild_ns / 1e6);
	for (size_t e = 0; e < sizeof(every) / sizeof(every[0]); e++)
		printf("push, with a p99 query every %7zu pushes (included): %8.3f ns per push\n",
		       every[e], mixed_ns[e]);
	print_row("percentile query:", "window", q_ns, "copy+qsort", sort_ns);
	print_row("percentile query:", "window", q_ns, "copy+select", sel_ns);
	printf("break-even: the window's extra push cost equals one copy+select query every %.0f "
	       "pushes\n",
	       sel_ns / (push_ns - ring_ns > 0 ? push_ns - ring_ns : 1));
	printf("results: %zu of %d queries differ between window, sort and select\n", bad, N_SORT);
	ebee_window_free(w);
	(void)sink;
	return bad ? 1 : 0;
}
