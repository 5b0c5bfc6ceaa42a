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
	assert_non_null(strstr(o.why, "cannot parse"));
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
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
