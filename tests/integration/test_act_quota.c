// SPDX-License-Identifier: MIT
/*
 * CPU quota on the real cgroup v1 cpu controller (root): fractional cores
 * written as cpu.cfs_quota_us / cpu.cfs_period_us, read back from the files,
 * refused below the kernel minimum or above the machine, and gone on close.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "actuator.h"

static char parent[64], state_dir[128];
static pid_t child;
static struct act *act;

static long read_long(const char *fmt, const char *wl, const char *file)
{
	char path[512], buf[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), fmt, parent, wl, file);
	f = fopen(path, "r");
	if (!f)
		return -99999;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return strtol(buf, NULL, 10);
}

#define CPU_FILE "/sys/fs/cgroup/cpu/%s/%s/%s"

/* Open the actuator into `act`, or SKIP when not root or when it has no cpu quota. */
static void open_quota_act(const struct act_opts *o)
{
	if (geteuid() != 0) {
		print_message("SKIP: needs root (cgroup writes)\n");
		skip();
	}
	act = act_open(o);
	assert_non_null(act);
	if (!act_caps(act)->quota) {
		print_message("SKIP: cpu quota unavailable: %s\n", act_caps(act)->quota_reason);
		skip();
	}
}

/* A child that only waits to be killed (by teardown), to be the workload. */
static void start_child(void)
{
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		for (;;)
			pause();
	}
}

static int setup(void **state)
{
	snprintf(parent, sizeof(parent), "parties-test-%d", getpid());
	snprintf(state_dir, sizeof(state_dir), "/tmp/act-test-%d", getpid());
	return 0;
}

static int teardown(void **state)
{
	char path[256];

	act_close(act);
	act = NULL;
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		child = 0;
	}
	/* last resort if the code under test did not clean up */
	snprintf(path, sizeof(path), "/sys/fs/cgroup/cpu/%s/q", parent);
	rmdir(path);
	snprintf(path, sizeof(path), "/sys/fs/cgroup/cpu/%s", parent);
	rmdir(path);
	snprintf(path, sizeof(path), "/sys/fs/cgroup/cpuset/%s/q", parent);
	rmdir(path);
	snprintf(path, sizeof(path), "/sys/fs/cgroup/cpuset/%s", parent);
	rmdir(path);
	rmdir(state_dir);
	return 0;
}

static void test_quota_v1(void **state)
{
	struct act_opts o = {
		.sz = sizeof(o),
		.parent = parent,
		.state_dir = state_dir,
		.cgroup_mode = ACT_CGROUP_V1,
	};
	struct act_workload_opts wo = { .sz = sizeof(wo), .quota_mc = 250 };
	struct act_cpumask m;
	struct act_workload *w;
	struct act_current st;
	const struct act_caps *c;
	struct stat sb;
	char path[256];

	open_quota_act(&o);
	c = act_caps(act);
	assert_int_equal(c->quota_period_us, 100000);
	assert_int_equal(c->quota_min_us, 1000);
	start_child();
	m = c->cpus;
	wo.cpus = &m;
	w = act_workload_add(act, "q", child, &wo);
	assert_non_null(w);
	assert_int_equal(read_long(CPU_FILE, "q", "cpu.cfs_quota_us"), 25000);
	assert_int_equal(read_long(CPU_FILE, "q", "cpu.cfs_period_us"), 100000);

	assert_int_equal(act_workload_set_quota(act, w, 1500), 0);
	assert_int_equal(read_long(CPU_FILE, "q", "cpu.cfs_quota_us"), 150000);
	assert_int_equal(act_get(act, w, &st), 0);
	assert_int_equal(st.quota_us, 150000);
	assert_int_equal(st.period_us, 100000);
	assert_int_equal(st.quota_mc, 1500);

	/* refused: below the kernel minimum, above the machine; nothing written */
	assert_int_equal(act_workload_set_quota(act, w, 1), -ERANGE);
	assert_int_equal(act_workload_set_quota(act, w, (c->nr_cpus + 1) * 1000L), -ERANGE);
	assert_int_equal(read_long(CPU_FILE, "q", "cpu.cfs_quota_us"), 150000);

	/* unlimited */
	assert_int_equal(act_workload_set_quota(act, w, 0), 0);
	assert_int_equal(read_long(CPU_FILE, "q", "cpu.cfs_quota_us"), -1);
	assert_int_equal(act_get(act, w, &st), 0);
	assert_int_equal(st.quota_us, -1);

	/* close: the task is back in the root cpu cgroup, the group is gone */
	act_close(act);
	act = NULL;
	snprintf(path, sizeof(path), "/sys/fs/cgroup/cpu/%s", parent);
	assert_int_not_equal(stat(path, &sb), 0);
}

/* A quota with a non-default period, on a cpu-only (no cpuset) actuator. */
static void test_quota_period_no_cpuset(void **state)
{
	struct act_opts o = {
		.sz = sizeof(o),
		.parent = parent,
		.state_dir = state_dir,
		.cgroup_mode = ACT_CGROUP_V1,
		.resources = ACT_RES_QUOTA,
		.quota_period_us = 50000,
	};
	struct act_workload_opts wo = { .sz = sizeof(wo), .quota_mc = 500 };
	struct act_workload *w;
	struct stat sb;
	char path[256];

	open_quota_act(&o);
	assert_false(act_caps(act)->cpuset);
	start_child();
	w = act_workload_add(act, "q", child, &wo);
	assert_non_null(w);
	assert_int_equal(read_long(CPU_FILE, "q", "cpu.cfs_period_us"), 50000);
	assert_int_equal(read_long(CPU_FILE, "q", "cpu.cfs_quota_us"), 25000);
	/* no cpuset cgroup was made */
	snprintf(path, sizeof(path), "/sys/fs/cgroup/cpuset/%s", parent);
	assert_int_not_equal(stat(path, &sb), 0);
	assert_int_equal(act_workload_remove(act, w), 0);
	snprintf(path, sizeof(path), "/sys/fs/cgroup/cpu/%s/q", parent);
	assert_int_not_equal(stat(path, &sb), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_quota_v1, setup, teardown),
		cmocka_unit_test_setup_teardown(test_quota_period_no_cpuset, setup, teardown),
	};

	alarm(60);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
