// SPDX-License-Identifier: MIT
/* The real machine's cpu_used source: /proc/PID/stat, and the fallback from a
 * cgroup that does not exist to the process itself. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pid_usage_grows),
		cmocka_unit_test(test_fallback_and_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
