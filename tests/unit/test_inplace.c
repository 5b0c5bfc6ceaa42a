// SPDX-License-Identifier: MIT
/*
 * Workloads named where they live, against fake cgroup trees in a temp dir:
 * a v2 tree (one unified directory with cpuset.cpus and cpu.max) and a v1
 * tree (separate cpuset and cpu hierarchies), their mounts read by
 * cgfs_find() from a fake mounts table. Resolution of cgroup = and
 * unit =, the refusals of the live check, the process list, and the v2 cpu.max
 * reader the actuators record the found quota with.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "inplace.h"
#include "../../actuators/act_cgroup.h"
#include "../lib/fake_tree.h"

static char tmp[64];

static void put(const char *rel, const char *text)
{
	assert_int_equal(ftree_put(tmp, rel, text), 0);
}

/* mkdir, its parent made before */
static void dir(const char *rel)
{
	assert_int_equal(ftree_dir(tmp, rel, false), 0);
}

static int setup(void **state)
{
	assert_int_equal(ftree_make(tmp, sizeof(tmp), "inplace-test"), 0);
	return 0;
}

static int teardown(void **state)
{
	return ftree_remove(tmp) ? -1 : 0;
}

static struct cfg_workload wl(enum cfg_find find, const char *val)
{
	struct cfg_workload w = { .find = find };

	snprintf(w.name, sizeof(w.name), "web");
	snprintf(w.cgroup, sizeof(w.cgroup), "%s", val);
	return w;
}

/* The mounts as cgfs_find() reads them from a fake mounts table (tmp.mounts). */
static void find(struct cgfs *r, const char *table)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s.mounts", tmp);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(table, f);
	fclose(f);
	assert_int_equal(cgfs_find(r, path, NULL), 0);
	unlink(path);
}

/* A v2 tree: <tmp>/system.slice/web.service with cpuset.cpus, cpu.max, two processes. */
static void v2_tree(struct cgfs *r)
{
	char table[256];

	put("cgroup.controllers", "cpuset cpu io memory pids\n");
	dir("system.slice");
	dir("system.slice/web.service");
	put("system.slice/web.service/cpuset.cpus", "2-3\n");
	put("system.slice/web.service/cpu.max", "50000 100000\n");
	put("system.slice/web.service/cgroup.procs", "4242\n4243\n");
	dir("system.slice/nocpu.service");
	put("system.slice/nocpu.service/cpuset.cpus", "\n");
	dir("parties");
	put("parties/cpuset.cpus", "0-3\n");
	put("parties/cpu.max", "max 100000\n");
	snprintf(table, sizeof(table), "cgroup2 %s cgroup2 rw,nosuid,nodev,noexec 0 0\n", tmp);
	find(r, table);
	assert_int_equal(r->version, 2);
	assert_string_equal(r->v2, tmp);
}

static void test_v2_resolve(void **state)
{
	struct cgfs r;
	struct cfg_workload w;
	char grp[INPLACE_PATH_MAX], msg[512];
	pid_t pids[4];

	v2_tree(&r);
	w = wl(CFG_FIND_UNIT, "web.service");
	assert_int_equal(inplace_resolve(&r, &w, grp, sizeof(grp), msg, sizeof(msg)), 0);
	assert_string_equal(grp, "system.slice/web.service");
	w = wl(CFG_FIND_CGROUP, "//system.slice/web.service");
	assert_int_equal(inplace_resolve(&r, &w, grp, sizeof(grp), msg, sizeof(msg)), 0);
	assert_string_equal(grp, "system.slice/web.service");
	assert_int_equal(inplace_may_manage(&r, grp, "parties", 1, msg, sizeof(msg)), 0);
	assert_int_equal(inplace_pids(&r, grp, pids, 4), 2);
	assert_int_equal(pids[0], 4242);
	assert_int_equal(pids[1], 4243);
	assert_int_equal(inplace_pids(&r, grp, pids, 1), 2); /* the count, not the capacity */
	/* a process in a child cgroup is the workload's too (what ebee traces) */
	dir("system.slice/web.service/worker");
	put("system.slice/web.service/worker/cgroup.procs", "4250\n");
	assert_int_equal(inplace_pids(&r, grp, pids, 4), 3);
	assert_int_equal(pids[2], 4250);

	w = wl(CFG_FIND_UNIT, "gone.service");
	assert_int_equal(inplace_resolve(&r, &w, grp, sizeof(grp), msg, sizeof(msg)), -ENOENT);
	assert_non_null(strstr(msg, "unit gone.service has no cgroup"));
	assert_non_null(strstr(msg, "/system.slice/gone.service"));
}

static void test_v2_refusals(void **state)
{
	struct cgfs r;
	char msg[512];

	v2_tree(&r);
	assert_int_equal(inplace_may_manage(&r, "", "parties", 1, msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "the root cgroup"));
	assert_int_equal(inplace_may_manage(&r, "parties", "parties", 1, msg, sizeof(msg)),
			 -EINVAL);
	assert_non_null(strstr(msg, "parties' own cgroup_parent"));
	assert_int_equal(inplace_may_manage(&r, "parties/web", "parties", 1, msg, sizeof(msg)),
			 -EINVAL);
	/* a sibling whose name starts like the parent is fine */
	dir("parties2");
	put("parties2/cpuset.cpus", "0\n");
	put("parties2/cpu.max", "max 100000\n");
	assert_int_equal(inplace_may_manage(&r, "parties2", "parties", 1, msg, sizeof(msg)), 0);
	/* the daemon's own cgroup */
	assert_int_equal(
	    inplace_may_manage(&r, "system.slice/web.service", "parties", 4243, msg, sizeof(msg)),
	    -EINVAL);
	assert_non_null(strstr(msg, "holds parties itself (pid 4243)"));
	/* no cpu controller enabled for it */
	assert_int_equal(
	    inplace_may_manage(&r, "system.slice/nocpu.service", "parties", 1, msg, sizeof(msg)),
	    -ENOENT);
	assert_non_null(strstr(msg, "lacks cpuset.cpus or cpu.max"));
}

/* The actuators record a v2 workload's quota as found from cpu.max. */
static void test_v2_cpu_max(void **state)
{
	struct cgfs r;
	int64_t q;
	uint64_t p;

	v2_tree(&r);
	assert_int_equal(act__quota_get(2, tmp, "system.slice/web.service", &q, &p), 0);
	assert_int_equal(q, 50000);
	assert_int_equal(p, 100000);
	assert_int_equal(act__quota_get(2, tmp, "parties", &q, &p), 0);
	assert_int_equal(q, -1);
	assert_int_equal(p, 100000);
	assert_int_equal(act__quota_get(2, tmp, "system.slice/none", &q, &p), -ENOENT);
}

/* v1: the unit must exist below the cpuset hierarchy; the cpu hierarchy needs it too. */
static void test_v1_tree(void **state)
{
	struct cfg_workload w = wl(CFG_FIND_UNIT, "web.service");
	char grp[INPLACE_PATH_MAX], msg[512], table[512];
	struct cgfs r;

	snprintf(table, sizeof(table),
		 "cgroup %s/cpuset cgroup rw,nosuid,nodev,noexec,cpuset 0 0\n"
		 "cgroup %s/cpu cgroup rw,nosuid,nodev,noexec,cpu,cpuacct 0 0\n",
		 tmp, tmp);
	find(&r, table);
	assert_int_equal(r.version, 1);
	dir("cpuset");
	dir("cpu");
	assert_int_equal(inplace_resolve(&r, &w, grp, sizeof(grp), msg, sizeof(msg)), -ENOENT);
	assert_non_null(strstr(msg, "cgroup v1 cpuset hierarchy"));
	dir("cpuset/system.slice");
	dir("cpuset/system.slice/web.service");
	put("cpuset/system.slice/web.service/cpuset.cpus", "1\n");
	put("cpuset/system.slice/web.service/cgroup.procs", "77\n");
	assert_int_equal(inplace_resolve(&r, &w, grp, sizeof(grp), msg, sizeof(msg)), 0);
	assert_string_equal(grp, "system.slice/web.service");
	assert_int_equal(inplace_may_manage(&r, grp, "parties", 1, msg, sizeof(msg)), -ENOENT);
	assert_non_null(strstr(msg, "not in the cpu hierarchy"));
	dir("cpu/system.slice");
	dir("cpu/system.slice/web.service");
	put("cpu/system.slice/web.service/cpu.cfs_quota_us", "-1\n");
	assert_int_equal(inplace_may_manage(&r, grp, "parties", 1, msg, sizeof(msg)), 0);
	assert_int_equal(inplace_may_manage(&r, grp, "parties", 77, msg, sizeof(msg)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_v2_resolve, setup, teardown),
		cmocka_unit_test_setup_teardown(test_v2_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_v2_cpu_max, setup, teardown),
		cmocka_unit_test_setup_teardown(test_v1_tree, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
