// SPDX-License-Identifier: MIT
/*
 * The kernel's request counters as user space samples them (metrics/src/kcount.c):
 * the share of a span's requests whose records arrived, the untrusted threshold, and the
 * counts over a span interpolated between readings, from synthetic readings (no root).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "../../metrics/src/kcount.h"

#define MS 1000000ull

/* A workload at rate req_per_ms of pattern io, losing lost_per_ms of them, read every
 * 100 ms from t0 for n readings. */
static void feed(struct ebee_kc *h, uint64_t t0, unsigned int n, uint64_t req_per_ms,
		 uint64_t lost_per_ms)
{
	for (unsigned int i = 1; i <= n; i++) {
		struct ebee_kcount c = {};
		uint64_t ms = i * 100ull;

		c.req[EBEE_KC_IO] = req_per_ms * ms;
		c.lost[EBEE_KC_IO] = lost_per_ms * ms;
		ebee_kc_update(h, t0 + ms * MS, &c);
	}
}

static void test_covered(void **state)
{
	(void)state;
	assert_true(ebee_kc_covered(0, 0) == 1); /* no request: nothing missing */
	assert_true(ebee_kc_covered(100, 0) == 1);
	assert_true(ebee_kc_covered(100, 25) == 0.75);
	assert_true(ebee_kc_covered(100, 100) == 0);
	assert_true(ebee_kc_covered(100, 150) == 0); /* clamped */
}

static void test_lossy_threshold(void **state)
{
	(void)state;
	assert_false(ebee_kc_lossy(0, 0));
	assert_false(ebee_kc_lossy(10000, 0));
	assert_false(ebee_kc_lossy(10000, 100)); /* exactly 1%: still trusted */
	assert_true(ebee_kc_lossy(10000, 101));
	assert_true(ebee_kc_lossy(10, 1));
}

/* A steady rate: the span's requests are the rate times the span, whatever the
 * readings' grid, and with nothing lost the share is exactly 1. */
static void test_between_steady(void **state)
{
	struct ebee_kc h;
	struct ebee_kc_span sp;

	(void)state;
	ebee_kc_init(&h, 1000 * MS);
	feed(&h, 1000 * MS, 50, 10, 0); /* 10 per ms for 5 s */
	ebee_kc_between(&h, EBEE_KC_IO, 1234 * MS, 3456 * MS, &sp);
	assert_true(sp.requests > 22220 - 1e-6 && sp.requests < 22220 + 1e-6);
	assert_true(sp.lost == 0);
	assert_true(sp.covered == 1);
	/* Other patterns counted nothing. */
	ebee_kc_between(&h, EBEE_KC_CONN, 1234 * MS, 3456 * MS, &sp);
	assert_true(sp.requests == 0 && sp.covered == 1);
}

/* Losses in part of the history only: a span before them is fully covered, a span over
 * them is not, and more than 1% lost is lossy. */
static void test_between_losses(void **state)
{
	struct ebee_kc h;
	struct ebee_kc_span sp;
	struct ebee_kcount c = {};

	(void)state;
	ebee_kc_init(&h, 0);
	feed(&h, 0, 10, 10, 0);			  /* 0..1 s: 10000 requests, none lost */
	for (unsigned int i = 11; i <= 20; i++) { /* 1..2 s: 10 per ms, 2 of them lost */
		c.req[EBEE_KC_IO] = 10 * i * 100;
		c.lost[EBEE_KC_IO] = 2 * (i - 10) * 100;
		ebee_kc_update(&h, i * 100 * MS, &c);
	}
	ebee_kc_between(&h, EBEE_KC_IO, 200 * MS, 900 * MS, &sp);
	assert_true(sp.covered == 1);
	assert_false(ebee_kc_lossy(sp.requests, sp.lost));
	ebee_kc_between(&h, EBEE_KC_IO, 1000 * MS, 2000 * MS, &sp);
	assert_true(sp.requests == 10000 && sp.lost == 2000);
	assert_true(sp.covered > 0.8 - 1e-9 && sp.covered < 0.8 + 1e-9);
	assert_true(ebee_kc_lossy(sp.requests, sp.lost));
	/* Half of it at an interpolated end. */
	ebee_kc_between(&h, EBEE_KC_IO, 500 * MS, 1500 * MS, &sp);
	assert_true(sp.requests == 10000 && sp.lost == 1000);
}

/* The window's requests: its records plus the lost ones over its span, so without a
 * loss they are the records exactly, however the readings fall around a burst. */
static void test_window_count(void **state)
{
	struct ebee_kc h;
	struct ebee_kc_span sp;
	struct ebee_kcount c = {};

	(void)state;
	ebee_kc_init(&h, 0);
	c.req[EBEE_KC_IO] = 200; /* a burst of 200 early in the second 100 ms */
	ebee_kc_update(&h, 100 * MS, &(struct ebee_kcount){ 0 });
	ebee_kc_update(&h, 200 * MS, &c);
	ebee_kc_window(&h, EBEE_KC_IO, 100 * MS, 125 * MS, 200, &sp);
	assert_true(sp.requests == 200 && sp.lost == 0 && sp.covered == 1);
	/* 0.2 .. 0.3 s: 200 more, 200 lost, evenly; a window over its first half. */
	c.req[EBEE_KC_IO] = 400;
	c.lost[EBEE_KC_IO] = 200;
	ebee_kc_update(&h, 300 * MS, &c);
	ebee_kc_window(&h, EBEE_KC_IO, 200 * MS, 250 * MS, 100, &sp);
	assert_true(sp.lost > 100 - 1e-6 && sp.lost < 100 + 1e-6);
	assert_true(sp.requests > 200 - 1e-6 && sp.requests < 200 + 1e-6);
	assert_true(sp.covered > 0.5 - 1e-9 && sp.covered < 0.5 + 1e-9);
	assert_true(ebee_kc_lossy(sp.requests, sp.lost));
}

/* A reading older than the latest is ignored; past the latest, the latest holds. */
static void test_update_order(void **state)
{
	struct ebee_kc h;
	struct ebee_kcount a = {}, b = {};
	struct ebee_kc_span sp;

	(void)state;
	ebee_kc_init(&h, 0);
	a.req[EBEE_KC_GRPC] = 500;
	b.req[EBEE_KC_GRPC] = 100;
	ebee_kc_update(&h, 1000 * MS, &a);
	ebee_kc_update(&h, 900 * MS, &b);
	assert_true(h.last.c.req[EBEE_KC_GRPC] == 500);
	ebee_kc_between(&h, EBEE_KC_GRPC, 0, 5000 * MS, &sp);
	assert_true(sp.requests == 500);
}

/* Spans older than the fine level (12.8 s) come from the coarse one, and older than
 * both from the start; an hour of readings keeps memory bounded. */
static void test_long_history(void **state)
{
	struct ebee_kc h;
	struct ebee_kc_span sp;

	(void)state;
	ebee_kc_init(&h, 0);
	feed(&h, 0, 36000, 1, 0); /* 1 per ms for an hour */
	for (int l = 0; l < EBEE_KC_LEVELS; l++)
		assert_true(h.lv[l].n <= EBEE_KC_RING);
	ebee_kc_between(&h, EBEE_KC_IO, 3590000 * MS, 3600000 * MS, &sp); /* fine */
	assert_true(sp.requests > 10000 - 1e-6 && sp.requests < 10000 + 1e-6);
	ebee_kc_between(&h, EBEE_KC_IO, 3500000 * MS, 3600000 * MS, &sp); /* coarse */
	assert_true(sp.requests > 100000 - 1e-6 && sp.requests < 100000 + 1e-6);
	ebee_kc_between(&h, EBEE_KC_IO, 0, 3600000 * MS, &sp); /* the start */
	assert_true(sp.requests > 3600000 - 1e-6 && sp.requests < 3600000 + 1e-6);
}

/* The I/O counters over a span, beside the requests of every pattern: a
 * quiet span is told from one that moved bytes and completed nothing. */
static void test_io_between(void **state)
{
	struct ebee_kc h;
	struct ebee_kcount c = {};
	struct ebee_kc_io io;

	ebee_kc_init(&h, 0);
	for (int i = 1; i <= 10; i++) {
		/* 1 s of requests, then 1 s of bytes and none. */
		if (i <= 5)
			c.req[EBEE_KC_CONN] += 10;
		else
			c.io_bytes += 100, c.io_calls += 2;
		ebee_kc_update(&h, i * 200 * MS, &c);
	}
	ebee_kc_io_between(&h, 0, 1000 * MS, &io);
	assert_true(io.requests > 49.5 && io.requests < 50.5);
	assert_int_equal(io.bytes, 0);
	/* From 1.1 s: the requests of the reading at 1 s on (none), the bytes
	 * of the readings from 1.2 s on. */
	ebee_kc_io_between(&h, 1100 * MS, 2000 * MS, &io);
	assert_true(io.requests < 0.5);
	assert_int_equal(io.bytes, 400);
	assert_int_equal(io.calls, 8);
	/* From 0.9 s: the reading at 0.8 s is the widened start, and the
	 * requests of 0.8-1 s are counted (a request and its bytes in one
	 * reading interval are never split). */
	ebee_kc_io_between(&h, 900 * MS, 2000 * MS, &io);
	assert_true(io.requests > 9.5 && io.requests < 10.5);
	/* No reading inside the span: no bytes said, whatever came by. */
	ebee_kc_io_between(&h, 1900 * MS, 2000 * MS, &io);
	assert_int_equal(io.bytes, 0);
	ebee_kc_io_between(&h, 1850 * MS, 1950 * MS, &io);
	assert_int_equal(io.bytes, 0);
	ebee_kc_io_between(&h, 2000 * MS, 1000 * MS, &io);
	assert_int_equal(io.bytes, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_covered),	       cmocka_unit_test(test_lossy_threshold),
		cmocka_unit_test(test_between_steady), cmocka_unit_test(test_between_losses),
		cmocka_unit_test(test_window_count),   cmocka_unit_test(test_update_order),
		cmocka_unit_test(test_long_history),   cmocka_unit_test(test_io_between),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
