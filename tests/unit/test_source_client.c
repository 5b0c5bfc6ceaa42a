// SPDX-License-Identifier: MIT
/* The client metric source: last complete line of a feed file, staleness by
 * modification time, idle lines, unparseable lines. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "source.h"

static char path[64];

static int setup(void **state)
{
	int fd;

	snprintf(path, sizeof(path), "/tmp/test_source_feedXXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	unlink(path);
	return 0;
}

static void write_feed(const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_last_complete_line(void **state)
{
	struct src *s = src_client_open(path, 300);
	struct src_sample o;

	assert_non_null(s);
	write_feed("100 900.5 50\n200 1200 60\n300 77");
	assert_int_equal(src_read(s, 0, &o), 0);
	assert_int_equal(o.state, POL_LAT_FRESH);
	assert_true(o.p99_ns == 1200e3);
	assert_true(o.rps == 60);
	write_feed("100 900.5 50\n200 1200 60\n300 777 61\n");
	assert_int_equal(src_read(s, 0, &o), 0);
	assert_true(o.p99_ns == 777e3);
	src_close(s);
}

static void test_empty_and_garbage(void **state)
{
	struct src *s = src_client_open(path, 300);
	struct src_sample o;

	write_feed("");
	assert_int_equal(src_read(s, 0, &o), 0);
	assert_int_equal(o.state, POL_LAT_STALE);
	assert_non_null(strstr(o.why, "no complete line yet"));
	write_feed("hello world\n");
	src_read(s, 0, &o);
	assert_int_equal(o.state, POL_LAT_STALE);
	assert_non_null(strstr(o.why, "refused (not a decimal)"));
	assert_true(isnan(o.p99_ns));
	src_close(s);
}

static void test_idle(void **state)
{
	struct src *s = src_client_open(path, 300);
	struct src_sample o;

	write_feed("100 0 0\n");
	src_read(s, 0, &o);
	assert_int_equal(o.state, POL_LAT_IDLE);
	write_feed("100 500 0\n");
	src_read(s, 0, &o);
	assert_int_equal(o.state, POL_LAT_IDLE);
	src_close(s);
}

static void test_stale_by_mtime(void **state)
{
	struct src *s = src_client_open(path, 300);
	struct timespec ts[2];
	struct src_sample o;

	write_feed("100 900 50\n");
	clock_gettime(CLOCK_REALTIME, &ts[0]);
	ts[0].tv_sec -= 2;
	ts[1] = ts[0];
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
	src_read(s, 0, &o);
	assert_int_equal(o.state, POL_LAT_STALE);
	assert_non_null(strstr(o.why, "not written for"));
	assert_true(isnan(o.p99_ns));
	src_close(s);
}

static void test_missing_file(void **state)
{
	struct src *s;
	struct src_sample o;

	assert_null(src_client_open("/nonexistent/feed", 300));
	assert_int_equal(errno, ENOENT);
	s = src_client_open(path, 300);
	unlink(path);
	assert_int_equal(src_read(s, 0, &o), -ENOENT);
	assert_int_equal(o.state, POL_LAT_STALE);
	src_close(s);
}

/* The feed replaced by a FIFO (no writer): a read returns at once, stale, not blocked. */
static void test_fifo_does_not_block(void **state)
{
	struct src *s = src_client_open(path, 300);
	struct src_sample o;

	assert_non_null(s);
	unlink(path);
	assert_int_equal(mkfifo(path, 0600), 0);
	alarm(5); /* a blocking open would hang: SIGALRM ends the test as a failure */
	assert_int_equal(src_read(s, 0, &o), -EINVAL);
	alarm(0);
	assert_int_equal(o.state, POL_LAT_STALE);
	assert_non_null(strstr(o.why, "not a regular file"));
	src_close(s);
}

static void test_long_feed(void **state)
{
	struct src *s = src_client_open(path, 300);
	struct src_sample o;
	FILE *f = fopen(path, "w");

	for (int i = 0; i < 5000; i++)
		fprintf(f, "%d %d %d\n", i * 100, 1000 + i, 10);
	fclose(f);
	src_read(s, 0, &o);
	assert_int_equal(o.state, POL_LAT_FRESH);
	assert_true(o.p99_ns == (1000 + 4999) * 1e3);
	src_close(s);
}

static void write_bytes(const char *b, size_t n)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, n, f), n);
	fclose(f);
}

/* Each line is refused: the sample is STALE (never FRESH on the last good
 * line before it) with the reason in why. */
static void assert_refused(struct src *s, const char *b, size_t n)
{
	struct src_sample o;

	write_bytes(b, n);
	src_read(s, 0, &o);
	if (o.state != POL_LAT_STALE)
		fail_msg("accepted %zu bytes '%.*s' as state %d p99_ns %g", n, (int)n, b, o.state,
			 o.p99_ns);
	assert_true(isnan(o.p99_ns));
	assert_non_null(strstr(o.why, "refused"));
}

/* Decimal only, the whole field, finite, within the documented bounds. */
static void test_strict_values(void **state)
{
	static const char *const bad[] = {
		"100 0x1p40 50\n",   /* hex float */
		"100 90000abc 50\n", /* trailing garbage */
		"100 1e20 50\n",     /* exponent, and above the bound */
		"100 1e306 50\n",    /* inf after the us -> ns conversion */
		"100 9000 -5\n",     /* negative rate */
		"100 -9000 5\n",     /* negative p99 */
		"100 nan 50\n",		 "100 inf 50\n",   "100 9000 inf\n", "100 9000 nan\n",
		"100 +9000 50\n",	 /* signs are not decimal digits */
		"100 2000000000 50\n",	 /* p99 above 1e9 us */
		"100 9000 2000000000\n", /* rps above 1e9 */
		"100 9000 50 7\n",	 /* a fourth field */
		"100 9000 50x\n",	 "100 .5 50\n",	   "100 5. 50\n",    "100 9000\t\n",
		"abc 9000 50\n",	 "100 9000 50 \n", " 100 9000 50\n", "100  9000 50\n",
	};
	struct src *s = src_client_open(path, 300);
	struct src_sample o;

	assert_non_null(s);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char b[128];
		int n = snprintf(b, sizeof(b), "100 1000 10\n%s", bad[i]);

		assert_refused(s, b, n);
	}
	/* the bounds themselves and plain decimals are accepted */
	write_feed("100 1000 10\n12345.5 1000000000 1000000000\n");
	src_read(s, 0, &o);
	assert_int_equal(o.state, POL_LAT_FRESH);
	assert_true(o.p99_ns == 1e12);
	assert_true(o.rps == 1e9);
	write_feed("7 0.5\n");
	src_read(s, 0, &o);
	assert_int_equal(o.state, POL_LAT_FRESH);
	assert_true(o.p99_ns == 500);
	assert_true(isnan(o.rps));
	src_close(s);
}

/* A NUL byte in the last line: refused, not the line before it taken as fresh. */
static void test_nul_byte(void **state)
{
	static const char b1[] = "100 1000 10\n200 2000\0 10\n";
	static const char b2[] = "100 1000 10\n200 2000 10\0\n";
	static const char b3[] = "100 1000 10\n\0\n";
	struct src *s = src_client_open(path, 300);

	assert_non_null(s);
	assert_refused(s, b1, sizeof(b1) - 1);
	assert_refused(s, b2, sizeof(b2) - 1);
	assert_refused(s, b3, sizeof(b3) - 1);
	src_close(s);
}

/* The feed replaced by a symlink during the run is not followed, and a
 * symlink given at start is refused. */
static void test_symlink_not_followed(void **state)
{
	char secret[64];
	struct src *s = src_client_open(path, 300);
	struct src_sample o;
	int fd;

	assert_non_null(s);
	snprintf(secret, sizeof(secret), "/tmp/test_source_secretXXXXXX");
	fd = mkstemp(secret);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "1 4242 1\n", 9), 9);
	close(fd);
	unlink(path);
	assert_int_equal(symlink(secret, path), 0);
	assert_int_equal(src_read(s, 0, &o), -ELOOP);
	assert_int_equal(o.state, POL_LAT_STALE);
	assert_null(strstr(o.why, "4242"));
	src_close(s);
	errno = 0;
	assert_null(src_client_open(path, 300));
	assert_int_equal(errno, ELOOP);
	unlink(secret);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_last_complete_line, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_and_garbage, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_by_mtime, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_long_feed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fifo_does_not_block, setup, teardown),
		cmocka_unit_test_setup_teardown(test_strict_values, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nul_byte, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink_not_followed, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
