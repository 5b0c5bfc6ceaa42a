// SPDX-License-Identifier: MIT
/* The real machine's cpu_used source: /proc/PID/stat, the fallback from a
 * cgroup that does not exist to the process itself, and the accounting files
 * of a fake tree in the layouts cgroupfs finds. */
#include <errno.h>
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

#include "cpu_usage.h"

static void burn_ms(int ms)
{
	struct timespec a, b;
	volatile uint64_t x = 0;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
	do {
		for (int i = 0; i < 100000; i++)
			x += (uint64_t)i;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
	} while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
}

static void test_pid_usage_grows(void **state)
{
	uint64_t a, b;

	assert_int_equal(cpu_usage_pid_ns(getpid(), &a), 0);
	burn_ms(200);
	assert_int_equal(cpu_usage_pid_ns(getpid(), &b), 0);
	/* clock ticks: 200 ms of CPU shows as at least 100 ms */
	assert_true(b - a >= 100000000ull);
	assert_true(b - a <= 1000000000ull);
}

static void test_fallback_and_errors(void **state)
{
	uint64_t a;

	assert_int_equal(cpu_usage_ns("parties-no-such-parent", "none", getpid(), &a), 0);
	assert_true(a > 0);
	assert_int_equal(cpu_usage_pid_ns(999999999, &a), -ENOENT);
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* v2: cpu.stat's usage_usec; v1: cpuacct.usage (ns); a cgroup in neither: the pid. */
static void test_cgroup_files(void **state)
{
	char tmp[] = "/tmp/cpu-usage-test-XXXXXX", p[256], cmd[300];
	struct cgfs fs = { .version = 2 };
	uint64_t ns = 0, self;

	assert_non_null(mkdtemp(tmp));
	snprintf(p, sizeof(p), "%s/par", tmp);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/par/web", tmp);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/par/web/cpu.stat", tmp);
	put(p, "usage_usec 1234\nuser_usec 1000\nsystem_usec 234\n");
	snprintf(fs.v2, sizeof(fs.v2), "%s", tmp);
	assert_int_equal(cpu_usage_cg_ns(&fs, "par", "web", getpid(), &ns), 0);
	assert_int_equal(ns, 1234000);

	memset(&fs, 0, sizeof(fs));
	fs.version = 1;
	snprintf(fs.v1_cpuacct, sizeof(fs.v1_cpuacct), "%s", tmp);
	snprintf(p, sizeof(p), "%s/par/web/cpuacct.usage", tmp);
	put(p, "5550000\n");
	assert_int_equal(cpu_usage_cg_ns(&fs, "par", "web", getpid(), &ns), 0);
	assert_int_equal(ns, 5550000);

	/* not in the hierarchy: the process's own */
	assert_int_equal(cpu_usage_cg_ns(&fs, "par", "db", getpid(), &ns), 0);
	assert_int_equal(cpu_usage_pid_ns(getpid(), &self), 0);
	assert_true(ns <= self && ns > 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pid_usage_grows),
		cmocka_unit_test(test_fallback_and_errors),
		cmocka_unit_test(test_cgroup_files),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
