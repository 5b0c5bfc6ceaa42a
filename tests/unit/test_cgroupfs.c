// SPDX-License-Identifier: MIT
/*
 * common/cgroupfs against fake mounts tables and fake trees in a temp dir: the
 * three layouts (this hybrid host: cpuset on v1, v2 at /sys/fs/cgroup/unified;
 * a pure v2 host; a pure v1 host), the version parties places workloads in,
 * the root put before every mount point, the whole v2 hierarchy's mount from a
 * fake mountinfo table (what libebee attaches to), paths, controller lists,
 * the ids a cgroup file lists, the processes of a cgroup and its
 * descendants, and what is parties' own.
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

#include "cgroupfs.h"
#include "../lib/fake_tree.h"

static char tmp[64];

static void put(const char *rel, const char *text)
{
	assert_int_equal(ftree_put(tmp, rel, text), 0);
}

/* mkdir -p below tmp */
static void dir(const char *rel)
{
	assert_int_equal(ftree_dir(tmp, rel, true), 0);
}

static int setup(void **state)
{
	assert_int_equal(ftree_make(tmp, sizeof(tmp), "cgroupfs-test"), 0);
	return 0;
}

static int teardown(void **state)
{
	return ftree_remove(tmp) ? -1 : 0;
}

/* The mounts table table, read with tmp as the root. */
static void find(struct cgfs *fs, const char *table)
{
	char path[600];

	put("mounts", table);
	snprintf(path, sizeof(path), "%s/mounts", tmp);
	assert_int_equal(cgfs_find(fs, path, tmp), 0);
}

static void expect(const char *got, const char *rel)
{
	char want[600];

	snprintf(want, sizeof(want), "%s%s", tmp, rel);
	assert_string_equal(got, want);
}

/* This host: systemd's hybrid layout, cpuset bound to v1. */
static const char hybrid[] =
    "sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0\n"
    "tmpfs /sys/fs/cgroup tmpfs ro,nosuid,nodev,noexec,mode=755 0 0\n"
    "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,nosuid,nodev,noexec,relatime 0 0\n"
    "cgroup /sys/fs/cgroup/systemd cgroup rw,nosuid,nodev,noexec,xattr,name=systemd 0 0\n"
    "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,nosuid,nodev,noexec,cpu,cpuacct 0 0\n"
    "cgroup /sys/fs/cgroup/cpuset cgroup rw,nosuid,nodev,noexec,cpuset 0 0\n"
    "cgroup /sys/fs/cgroup/freezer cgroup rw,nosuid,nodev,noexec,freezer 0 0\n"
    "cgroup /sys/fs/cgroup/cpuset cgroup rw,nosuid,nodev,noexec,cpuset 0 0\n";

static void test_hybrid(void **state)
{
	struct cgfs fs;

	dir("sys/fs/cgroup/unified");
	put("sys/fs/cgroup/unified/cgroup.controllers", "");
	find(&fs, hybrid);
	expect(fs.v2, "/sys/fs/cgroup/unified");
	expect(fs.v1_cpuset, "/sys/fs/cgroup/cpuset");
	expect(fs.v1_cpu, "/sys/fs/cgroup/cpu,cpuacct");
	expect(fs.v1_cpuacct, "/sys/fs/cgroup/cpu,cpuacct");
	expect(fs.v1_freezer, "/sys/fs/cgroup/freezer");
	expect(fs.v1_systemd, "/sys/fs/cgroup/systemd");
	assert_int_equal(fs.version, 1);
	assert_ptr_equal(cgfs_v1(&fs, "cpuset"), fs.v1_cpuset);
	assert_ptr_equal(cgfs_v1(&fs, "freezer"), fs.v1_freezer);
	assert_string_equal(cgfs_v1(&fs, "memory"), "");
	assert_ptr_equal(cgfs_home(&fs), fs.v1_cpuset);
}

/* Even when the v2 mount offers cpu, a v1 cpuset hierarchy decides v1. */
static void test_hybrid_v2_with_cpu(void **state)
{
	struct cgfs fs;

	dir("sys/fs/cgroup/unified");
	put("sys/fs/cgroup/unified/cgroup.controllers", "cpu io memory pids\n");
	find(&fs, hybrid);
	assert_int_equal(fs.version, 1);
}

static void test_pure_v2(void **state)
{
	struct cgfs fs;

	dir("sys/fs/cgroup");
	put("sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
	find(&fs,
	     "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n"
	     "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime,nsdelegate 0 0\n");
	expect(fs.v2, "/sys/fs/cgroup");
	assert_string_equal(fs.v1_cpuset, "");
	assert_string_equal(fs.v1_cpu, "");
	assert_string_equal(fs.v1_systemd, "");
	assert_int_equal(fs.version, 2);
	assert_ptr_equal(cgfs_home(&fs), fs.v2);
	assert_true(cgfs_listed(fs.v2, "cgroup.controllers", "cpuset"));
	assert_true(cgfs_listed(fs.v2, "cgroup.controllers", "misc"));
	assert_false(cgfs_listed(fs.v2, "cgroup.controllers", "cpus"));
	assert_false(cgfs_listed(fs.v2, "cgroup.subtree_control", "cpu")); /* no such file */
}

/* v2 without cpuset or cpu and only a v1 cpu hierarchy: v1, homed in the cpu one. */
static void test_v1_cpu_only(void **state)
{
	struct cgfs fs;

	dir("sys/fs/cgroup/unified");
	put("sys/fs/cgroup/unified/cgroup.controllers", "io memory\n");
	find(&fs, "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n"
		  "cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n");
	assert_int_equal(fs.version, 1);
	expect(cgfs_home(&fs), "/sys/fs/cgroup/cpu");
	assert_string_equal(fs.v1_cpuacct, "");
	/* "cpu" is an option of its own, not a prefix of "cpuset" */
	find(&fs, "cgroup /c cgroup rw,cpuset 0 0\n");
	assert_string_equal(fs.v1_cpu, "");
	expect(fs.v1_cpuset, "/c");
}

static void test_nothing_mounted(void **state)
{
	struct cgfs fs;

	find(&fs, "proc /proc proc rw 0 0\n");
	assert_int_equal(fs.version, 1);
	assert_string_equal(cgfs_home(&fs), "");
	assert_int_equal(cgfs_find(&fs, "/nonexistent/mounts", NULL), -ENOENT);
	assert_int_equal(fs.version, 1);
	assert_string_equal(fs.v2, "");
}

/* With no root, mount points are taken as they are. */
static void test_no_root(void **state)
{
	struct cgfs fs;
	char path[600];

	put("mounts", "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n");
	snprintf(path, sizeof(path), "%s/mounts", tmp);
	assert_int_equal(cgfs_find(&fs, path, NULL), 0);
	assert_string_equal(fs.v2, "/sys/fs/cgroup/unified");
	assert_int_equal(cgfs_find(&fs, path, ""), 0);
	assert_string_equal(fs.v2, "/sys/fs/cgroup/unified");
}

/* The mountinfo table mi, its whole v2 hierarchy's mount into buf. */
static int v2_mount(const char *mi, char *buf, size_t len)
{
	char path[600];

	put("mountinfo", mi);
	snprintf(path, sizeof(path), "%s/mountinfo", tmp);
	return cgfs_v2_mount(buf, len, path);
}

/* libebee's v2 mount: the first cgroup2 mount whose root is the hierarchy's. */
static void test_v2_mount(void **state)
{
	/* this host: hybrid, v1 controllers and v2 at .../unified */
	static const char hybrid_mi[] =
	    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
	    "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
	    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
	    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
	/* one cgroup of the hierarchy bind-mounted first (a container's view
	 * without a cgroup namespace): not the whole hierarchy */
	static const char bind_mi[] =
	    "500 400 0:38 /docker/abc /c/sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw\n"
	    "26 23 0:38 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
	    "27 23 0:38 / /mnt/again rw shared:4 - cgroup2 cgroup2 rw\n";
	char buf[64];
	struct cgfs fs;

	assert_int_equal(v2_mount(hybrid_mi, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/sys/fs/cgroup/unified");
	assert_int_equal(v2_mount(bind_mi, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/sys/fs/cgroup");
	/* parties' table takes the first cgroup2 mount, whatever its root */
	find(&fs,
	     "cgroup2 /c/sys/fs/cgroup cgroup2 ro 0 0\ncgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n");
	expect(fs.v2, "/c/sys/fs/cgroup");
	/* only a subtree, v1 only, or too long for buf: none */
	assert_int_equal(
	    v2_mount("500 400 0:38 /docker/abc /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n", buf,
		     sizeof(buf)),
	    -ENOENT);
	assert_int_equal(
	    v2_mount("34 31 0:31 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n", buf,
		     sizeof(buf)),
	    -ENOENT);
	assert_int_equal(v2_mount(hybrid_mi, buf, 8), -ENOENT);
	assert_int_equal(cgfs_v2_mount(buf, sizeof(buf), "/nonexistent/mountinfo"), -ENOENT);
}

static void test_path_and_files(void **state)
{
	char buf[32], path[600];

	assert_int_equal(cgfs_path(buf, sizeof(buf), "/m", "a/b", "cpu.max"), 0);
	assert_string_equal(buf, "/m/a/b/cpu.max");
	assert_int_equal(cgfs_path(buf, sizeof(buf), "/m", NULL, "cpu.max"), 0);
	assert_string_equal(buf, "/m/cpu.max");
	assert_int_equal(cgfs_path(buf, sizeof(buf), "/m", "", NULL), 0);
	assert_string_equal(buf, "/m");
	assert_int_equal(cgfs_path(buf, sizeof(buf), "/m", "a", NULL), 0);
	assert_string_equal(buf, "/m/a");
	assert_int_equal(cgfs_path(buf, 8, "/m", "a/b", "cpu.max"), -ENAMETOOLONG);

	put("f", "0-3 \n\n");
	snprintf(path, sizeof(path), "%s/f", tmp);
	assert_int_equal(cgfs_read_file(path, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0-3");
	put("g", ""); /* a cgroup file takes a write as a whole: no O_TRUNC needed there */
	snprintf(path, sizeof(path), "%s/g", tmp);
	assert_int_equal(cgfs_write_file(path, "1"), 0);
	assert_int_equal(cgfs_read_file(path, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "1");
	assert_int_equal(cgfs_read_file(path, buf, 0), -EINVAL);
	snprintf(path, sizeof(path), "%s/none", tmp);
	assert_int_equal(cgfs_read_file(path, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(cgfs_write_file(path, "1"), -ENOENT); /* never created */
}

static bool has(const pid_t *p, int n, pid_t pid)
{
	for (int i = 0; i < n; i++)
		if (p[i] == pid)
			return true;
	return false;
}

static void collect(pid_t id, void *arg)
{
	pid_t **p = arg;

	*(*p)++ = id;
}

/* What a cgroup file lists, as it lists it; whether a directory is a cgroup. */
static void test_each_pid(void **state)
{
	char cg[600];
	pid_t got[8], *p = got;

	dir("cg");
	put("cg/cgroup.procs", "10\n11\n");
	put("cg/cgroup.threads", "10\n12\n11\n10\n");
	snprintf(cg, sizeof(cg), "%s/cg", tmp);
	assert_true(cgfs_is_cgroup(cg));
	assert_int_equal(cgfs_each_pid(cg, "cgroup.threads", collect, &p), 4);
	assert_int_equal(p - got, 4);
	assert_int_equal(got[0], 10);
	assert_int_equal(got[1], 12);
	assert_int_equal(got[2], 11);
	assert_int_equal(got[3], 10); /* duplicates as listed: the caller's to drop */
	assert_int_equal(cgfs_each_pid(cg, "tasks", collect, &p), -ENOENT);
	assert_false(cgfs_is_cgroup(tmp)); /* a directory without cgroup.procs */
	snprintf(cg, sizeof(cg), "%s/nocg", tmp);
	assert_false(cgfs_is_cgroup(cg));
	assert_int_equal(cgfs_each_pid(cg, "cgroup.procs", collect, &p), -ENOENT);
	assert_int_equal(p - got, 4);
}

/* A cgroup's processes are its own and its descendants', each once. */
static void test_procs_recursive(void **state)
{
	char cg[600];
	pid_t p[16];
	int n;

	dir("cg/a/b");
	dir("cg/c");
	put("cg/cgroup.procs", "10\n11\n10\n");
	put("cg/a/cgroup.procs", "20\n");
	put("cg/a/b/cgroup.procs", "30\n11\n");
	put("cg/c/cgroup.procs", "");
	put("cg/cpu.max", "max 100000\n");
	snprintf(cg, sizeof(cg), "%s/cg", tmp);
	n = cgfs_procs(cg, p, 16);
	assert_int_equal(n, 4);
	assert_int_equal(p[0], 10); /* its own first */
	assert_int_equal(p[1], 11);
	assert_true(has(p, n, 20));
	assert_true(has(p, n, 30));
	/* more than fit: counted */
	assert_int_equal(cgfs_procs(cg, p, 2), 4);
	assert_int_equal(p[0], 10);
	assert_int_equal(p[1], 11);
	/* a descendant without cgroup.procs (removed meanwhile) is skipped */
	dir("cg/gone");
	assert_int_equal(cgfs_procs(cg, p, 16), 4);
	/* the cgroup itself gone */
	snprintf(cg, sizeof(cg), "%s/nocg", tmp);
	assert_int_equal(cgfs_procs(cg, p, 16), -ENOENT);
}

/* Descendants are followed CGFS_DEPTH_MAX levels down, no further. */
static void test_procs_depth(void **state)
{
	char rel[512] = "d", cg[600];
	pid_t p[64];

	for (int depth = 0; depth <= CGFS_DEPTH_MAX + 1; depth++) {
		char file[600];

		dir(rel);
		snprintf(file, sizeof(file), "%s/cgroup.procs", rel);
		put(file, depth == CGFS_DEPTH_MAX	? "100\n"
			  : depth == CGFS_DEPTH_MAX + 1 ? "200\n"
							: "");
		strcat(rel, "/x");
	}
	snprintf(cg, sizeof(cg), "%s/d", tmp);
	assert_int_equal(cgfs_procs(cg, p, 64), 1);
	assert_int_equal(p[0], 100);
}

static void test_within(void **state)
{
	assert_true(cgfs_within("parties", "parties"));
	assert_true(cgfs_within("parties/web", "parties"));
	assert_false(cgfs_within("parties2", "parties"));
	assert_false(cgfs_within("system.slice/parties", "parties"));
	assert_false(cgfs_within("part", "parties"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_hybrid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hybrid_v2_with_cpu, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pure_v2, setup, teardown),
		cmocka_unit_test_setup_teardown(test_v1_cpu_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nothing_mounted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_v2_mount, setup, teardown),
		cmocka_unit_test_setup_teardown(test_path_and_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_each_pid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_procs_recursive, setup, teardown),
		cmocka_unit_test_setup_teardown(test_procs_depth, setup, teardown),
		cmocka_unit_test(test_within),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
