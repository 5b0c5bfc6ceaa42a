// SPDX-License-Identifier: MIT
/*
 * Which hierarchy a launched command's own cgroup goes in (act__cmd_choose()):
 * on a v2-only machine the workloads' own hierarchy (and the kill then covers
 * the workload's group too), beside a v1 placement the v2 hierarchy of a
 * hybrid machine, else the v1 freezer, else none; and the names of the
 * cgroups it makes.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <cmocka.h>

#include "../../actuators/act_cmdcg.h"

static void test_choose(void **state)
{
	const char *v2 = "/sys/fs/cgroup", *uni = "/sys/fs/cgroup/unified";
	const char *fr = "/sys/fs/cgroup/freezer";

	/* pure v2: one hierarchy for placement and commands */
	assert_int_equal(act__cmd_choose(ACT_CMD_CGROUP_AUTO, 2, v2, ""), ACT_CMD_V2_SHARED);
	/* hybrid: v1 placement, the unified hierarchy beside it */
	assert_int_equal(act__cmd_choose(ACT_CMD_CGROUP_AUTO, 1, uni, fr), ACT_CMD_V2);
	/* nothing placed (no cgroup resource usable): v2 all the same */
	assert_int_equal(act__cmd_choose(ACT_CMD_CGROUP_AUTO, 0, uni, fr), ACT_CMD_V2);
	/* v1 only: the freezer */
	assert_int_equal(act__cmd_choose(ACT_CMD_CGROUP_AUTO, 1, "", fr), ACT_CMD_FREEZER);
	assert_int_equal(act__cmd_choose(ACT_CMD_CGROUP_AUTO, 1, NULL, fr), ACT_CMD_FREEZER);
	/* neither */
	assert_int_equal(act__cmd_choose(ACT_CMD_CGROUP_AUTO, 1, "", ""), ACT_CMD_NONE);
	/* pinned */
	assert_int_equal(act__cmd_choose(ACT_CMD_CGROUP_FREEZER, 1, uni, fr), ACT_CMD_FREEZER);
	assert_int_equal(act__cmd_choose(ACT_CMD_CGROUP_FREEZER, 2, v2, ""), ACT_CMD_NONE);
	assert_int_equal(act__cmd_choose(ACT_CMD_CGROUP_V2, 1, "", fr), ACT_CMD_NONE);
	assert_int_equal(act__cmd_choose(ACT_CMD_CGROUP_V2, 2, v2, fr), ACT_CMD_V2_SHARED);
}

static void test_dirs(void **state)
{
	struct act_cmdcg c = { ACT_CMD_V2, "/sys/fs/cgroup/unified", "parties", "web" };
	char buf[64];

	assert_int_equal(act__cmd_dir(&c, false, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/sys/fs/cgroup/unified/parties.cmd/web");
	assert_int_equal(act__cmd_dir(&c, true, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/sys/fs/cgroup/unified/parties.cmd");
	assert_int_equal(act__cmd_dir(&c, false, buf, 20), -ENAMETOOLONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_choose),
		cmocka_unit_test(test_dirs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
