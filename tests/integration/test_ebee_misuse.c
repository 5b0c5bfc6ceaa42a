// SPDX-License-Identifier: MIT
/*
 * libebee misuse (root): NULL result pointers, options structs from a newer
 * ebee.h with bytes this build does not know, and the pids the CLI refuses
 * (pid 1 without the opt-in, kernel threads). Each is refused with an errno,
 * never a crash and never silently accepted.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "ebee.h"
#include "../lib/testutil.h"
#include "../lib/ebee_paths.h"

static struct ebee *eb;
static char logbuf[4096];

static void log_cb(enum ebee_log_level lvl, const char *msg, void *ctx)
{
	size_t off = strlen(logbuf);

	snprintf(logbuf + off, sizeof(logbuf) - off, "%s\n", msg);
}

static int group_setup(void **state)
{
	struct ebee_opts o = { .sz = sizeof(o), .log = log_cb };

	return tp_setup(&eb, &o);
}

static int group_teardown(void **state)
{
	return tp_teardown(&eb);
}

static void check_null_results(pid_t pid)
{
	assert_int_equal(ebee_get_rps(eb, pid, NULL), -EINVAL);
	assert_int_equal(ebee_get_latest_latency(eb, pid, NULL), -EINVAL);
	assert_int_equal(ebee_get_average_latency(eb, pid, NULL), -EINVAL);
	assert_int_equal(ebee_get_latency_percentile(eb, pid, 99, NULL), -EINVAL);
	assert_int_equal(ebee_get_latest_latency_of(eb, pid, EBEE_LAT_SOJOURN, NULL), -EINVAL);
	assert_int_equal(ebee_get_average_latency_of(eb, pid, EBEE_LAT_SOJOURN, NULL), -EINVAL);
	assert_int_equal(ebee_get_latency_percentile_of(eb, pid, EBEE_LAT_SERVICE, 50, NULL),
			 -EINVAL);
	assert_int_equal(ebee_get_latency_percentile_joint(eb, &pid, 1, EBEE_LAT_SERVICE, 99, NULL),
			 -EINVAL);
}

/* A NULL result pointer is -EINVAL, whether the pid is traced or not. */
static void test_null_result_pointers(void **state)
{
	struct ebee_trace_opts to = { .sz = sizeof(to) };

	NEED_ROOT();
	check_null_results(getpid());
	assert_int_equal(ebee_start_tracing(eb, getpid(), &to), 0);
	check_null_results(getpid());
	assert_int_equal(ebee_stop_tracing(eb, getpid()), 0);
}

/* A struct from a newer ebee.h: a larger sz is fine while the bytes this
 * build does not know are zero; a non-zero one is -E2BIG (libbpf's
 * OPTS_VALID), never silently ignored. */
static void test_opts_unknown_tail(void **state)
{
	struct {
		struct ebee_opts o;
		char tail[16];
	} big = { .o.sz = sizeof(big), .o.path = tp_path };
	struct {
		struct ebee_trace_opts o;
		char tail[16];
	} tbig = { .o.sz = sizeof(tbig) };
	char msg[256];
	struct ebee *e;

	NEED_ROOT();
	e = ebee_open(&big.o, msg, sizeof(msg));
	if (!e)
		fail_msg("larger sz, zero tail refused: %s", msg);
	ebee_close(e);
	big.tail[7] = 1;
	errno = 0;
	e = ebee_open(&big.o, msg, sizeof(msg));
	if (e)
		ebee_close(e);
	assert_null(e);
	assert_int_equal(errno, E2BIG);
	printf("  ebee_open: %s\n", msg);
	assert_non_null(strstr(msg, "unknown"));

	assert_int_equal(ebee_start_tracing(eb, getpid(), &tbig.o), 0);
	assert_int_equal(ebee_stop_tracing(eb, getpid()), 0);
	tbig.tail[15] = 0x7f;
	assert_int_equal(ebee_start_tracing(eb, getpid(), &tbig.o), -E2BIG);
	assert_int_equal(ebee_get_rps(eb, getpid(), &(double){ 0 }), -ENOENT);
}

/* pid 1 is every process on the host: refused unless allow_init (what the
 * CLI's --all sets); kthreadd and other kernel threads make no system calls
 * to trace: refused. The refusal is logged. */
static void test_init_and_kthreads_refused(void **state)
{
	struct ebee_trace_opts to = { .sz = sizeof(to) };
	struct ebee_trace_opts all = { .sz = sizeof(all), .allow_init = true };

	NEED_ROOT();
	logbuf[0] = 0;
	assert_int_equal(ebee_start_tracing(eb, 1, &to), -EPERM);
	assert_non_null(strstr(logbuf, "pid 1"));
	assert_int_equal(ebee_start_tracing(eb, 1, NULL), -EPERM);
	assert_int_equal(ebee_get_rps(eb, 1, &(double){ 0 }), -ENOENT);
	logbuf[0] = 0;
	assert_int_equal(ebee_start_tracing(eb, 2, &all), -EINVAL);
	assert_non_null(strstr(logbuf, "kernel thread"));
	assert_int_equal(ebee_start_tracing(eb, 1, &all), 0);
	assert_int_equal(ebee_stop_tracing(eb, 1), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_null_result_pointers),
		cmocka_unit_test(test_opts_unknown_tail),
		cmocka_unit_test(test_init_and_kthreads_refused),
	};

	return TP_RUN_BOTH(tests, group_setup, group_teardown);
}
