// SPDX-License-Identifier: MIT
/*
 * SIGHUP's check: every [resources] key and every workload limit needs a
 * restart; a workload's initial allocation (cores, cpus, quota, freq_mhz)
 * does not.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "reload.h"

static char path[64];

/* The base file with res added to [resources] and wl to [workload a]. */
static void write_ini(const char *res, const char *wl)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fprintf(f,
		"[controller]\npolicy = static\n"
		"[resources]\ncpus = 0-3\nquota = true\n%s\n"
		"[workload a]\npid = %d\ntarget_ms = 1\nmin_cores = 1\nmax_cores = 3\n"
		"min_quota = 0.5\nmax_quota = 2\n%s\n",
		res, (int)getpid(), wl);
	fclose(f);
}

/* Load the base as the running config, then check the variant against it:
 * the return value, and msg naming what needs the restart. */
static int check(const char *res, const char *wl, char *msg, size_t len)
{
	static struct cfg cur, next;
	char err[256];

	write_ini("", "");
	assert_int_equal(cfg_load_file(&cur, path, err, sizeof(err)), 0);
	write_ini(res, wl);
	msg[0] = 0;
	return reload_check(path, &cur, &next, msg, len);
}

static void test_resources_need_restart(void **state)
{
	static const char *const keys[] = {
		"cores = false",       "freq = false",	      "freq = true",
		"freq_min_mhz = 1100", "freq_max_mhz = 3000", "freq_step_mhz = 200",
		"quota_step = 0.2",    "quota_total = 3",     "smt = shared",
		"smt = primary",
	};
	char msg[512];

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		int ret = check(keys[i], "", msg, sizeof(msg));

		if (ret != -EINVAL || !strstr(msg, "[resources] changed"))
			fail_msg("%s: %d '%s'", keys[i], ret, msg);
	}
}

/* The base file with from replaced by to: reload_check()'s return and msg. */
static int check_replace(const char *from, const char *to, char *msg, size_t len)
{
	static struct cfg cur, next;
	char err[256], text[1024];
	FILE *f;
	char *at;

	write_ini("", "");
	assert_int_equal(cfg_load_file(&cur, path, err, sizeof(err)), 0);
	f = fopen(path, "r");
	assert_non_null(f);
	text[fread(text, 1, sizeof(text) - 1, f)] = 0;
	fclose(f);
	at = strstr(text, from);
	assert_non_null(at);
	memmove(at + strlen(to), at + strlen(from), strlen(at + strlen(from)) + 1);
	memcpy(at, to, strlen(to));
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	msg[0] = 0;
	return reload_check(path, &cur, &next, msg, len);
}

static void test_quota_off_needs_restart(void **state)
{
	char msg[512];

	assert_int_equal(check_replace("quota = true", "quota = false", msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "[resources] changed"));
}

static void test_limits_need_restart(void **state)
{
	static const char *const from[] = { "min_cores = 1", "max_cores = 3", "min_quota = 0.5",
					    "max_quota = 2" };
	static const char *const to[] = { "min_cores = 2", "max_cores = 2", "min_quota = 0.6",
					  "max_quota = 1.5" };
	char msg[512];

	for (size_t i = 0; i < sizeof(from) / sizeof(from[0]); i++)
		if (check_replace(from[i], to[i], msg, sizeof(msg)) != -EINVAL ||
		    !strstr(msg, "the limits of workload a"))
			fail_msg("%s -> %s: '%s'", from[i], to[i], msg);
}

static void test_initial_taken(void **state)
{
	static const char *const wl[] = { "cores = 2", "cpus = 0-1", "quota = 1",
					  "freq_mhz = 1200" };
	char msg[512];

	for (size_t i = 0; i < sizeof(wl) / sizeof(wl[0]); i++) {
		int ret = check("", wl[i], msg, sizeof(msg));

		if (ret)
			fail_msg("%s: %d '%s'", wl[i], ret, msg);
	}
}

static int setup(void **state)
{
	snprintf(path, sizeof(path), "/tmp/test_reload.%d.ini", (int)getpid());
	return 0;
}

static int teardown(void **state)
{
	unlink(path);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resources_need_restart),
		cmocka_unit_test(test_quota_off_needs_restart),
		cmocka_unit_test(test_limits_need_restart),
		cmocka_unit_test(test_initial_taken),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
