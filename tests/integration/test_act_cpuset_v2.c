// SPDX-License-Identifier: MIT
/*
 * The cpuset and cpu actuators against a real cgroup v2 hierarchy (root; the
 * v2 counterpart of test_act_cpuset, which drives v1): real multi-threaded
 * processes placed in leaves below the parent (which holds none: v2's
 * no-internal-processes rule), cores grown, shrunk and swapped, cpu.max set;
 * on close every process is back in the cgroup it came from, the parent is
 * gone and the root's cgroup.subtree_control reads as found. Killed midway
 * (a child actuates and dies without restoring), act_cleanup() repairs the
 * same from the state file. SKIPs where cgroup v2 has no cpuset (a v1 host).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "actuator.h"

#define CG2		    "/sys/fs/cgroup"
#define CGROUP2_SUPER_MAGIC 0x63677270

static char parent[64], state_dir[128], found_sc[256];
static pid_t workers[2];
static struct act *act;

static void *idle_thread(void *arg)
{
	for (;;)
		pause();
	return NULL;
}

/* A process with the calling test as parent and two extra threads. */
static pid_t spawn(void)
{
	int p[2];
	char c;
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pthread_t t;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (int i = 0; i < 2; i++)
			pthread_create(&t, NULL, idle_thread, NULL);
		if (write(p[1], "r", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(p[1]);
	assert_int_equal(read(p[0], &c, 1), 1);
	close(p[0]);
	return pid;
}

static void read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	buf[0] = '\0';
	if (f) {
		if (!fgets(buf, (int)len, f))
			buf[0] = '\0';
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = '\0';
}

static void file_of(const char *grp, const char *file, char *buf, size_t len)
{
	char path[512];

	snprintf(path, sizeof(path), CG2 "/%s%s%s", grp, grp[0] ? "/" : "", file);
	read_line(path, buf, len);
}

/* pid's v2 cgroup ("/a/b"). */
static void cgroup_of(pid_t pid, char *buf, size_t len)
{
	char path[64], line[512];
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(buf, len, "%s", line + 3);
		}
	fclose(f);
}

/* Every thread of pid has this Cpus_allowed_list: 0, else how many differ. */
static int threads_on(pid_t pid, const char *want)
{
	char path[128], line[256], v[256];
	int bad = 0;

	for (int tid = pid; tid < pid + 64; tid++) {
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
		f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "Cpus_allowed_list:", 18)) {
				sscanf(line + 18, "%255s", v);
				if (strcmp(v, want)) {
					print_message("thread %d of %d: cpus %s, want %s\n", tid,
						      pid, v, want);
					bad++;
				}
			}
		fclose(f);
	}
	return bad;
}

/* What a process outside any cpuset of ours may run on: every online cpu ("0-3"). */
static const char *all_cpus(void)
{
	static char buf[32];

	snprintf(buf, sizeof(buf), "0-%ld", sysconf(_SC_NPROCESSORS_ONLN) - 1);
	return buf;
}

static void log_cb(enum act_log_level level, const char *msg, void *ctx)
{
	print_message("  [%d] %s\n", level, msg);
}

static struct act_opts opts(void)
{
	struct act_opts o = {
		.sz = sizeof(o),
		.parent = parent,
		.state_dir = state_dir,
		.cgroup_mode = ACT_CGROUP_V2,
		.resources = ACT_RES_CPUSET | ACT_RES_QUOTA,
		.log = log_cb,
		.log_level = ACT_LOG_INFO,
	};
	return o;
}

static struct act_cpumask mask(const char *list)
{
	struct act_cpumask m;

	assert_int_equal(act_cpumask_parse(list, &m), 0);
	return m;
}

static int setup(void **state)
{
	struct statfs fs;
	char ctrls[256];

	snprintf(parent, sizeof(parent), "parties-test-v2-%d", getpid());
	snprintf(state_dir, sizeof(state_dir), "/tmp/act-test-v2-%d", getpid());
	if (geteuid() != 0) {
		print_message("SKIP: needs root (cgroup writes)\n");
		return 0;
	}
	if (statfs(CG2, &fs) || fs.f_type != CGROUP2_SUPER_MAGIC) {
		print_message("SKIP: %s is not a cgroup v2 mount (a v1 or hybrid host)\n", CG2);
		return 0;
	}
	file_of("", "cgroup.controllers", ctrls, sizeof(ctrls));
	if (!strstr(ctrls, "cpuset") || !strstr(ctrls, "cpu ")) {
		print_message("SKIP: the v2 root has no cpuset or cpu controller: '%s'\n", ctrls);
		return 0;
	}
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		print_message("SKIP: needs 2 cpus\n");
		return 0;
	}
	file_of("", "cgroup.subtree_control", found_sc, sizeof(found_sc));
	*state = (void *)1; /* runnable */
	return 0;
}

static int teardown(void **state)
{
	char path[256];

	act_close(act);
	act = NULL;
	for (int i = 0; i < 2; i++)
		if (workers[i] > 0) {
			kill(workers[i], SIGKILL);
			waitpid(workers[i], NULL, 0);
			workers[i] = 0;
		}
	/* last resort, so a failed test leaves nothing (empty groups only) */
	for (const char *w = "ab"; *w; w++) {
		snprintf(path, sizeof(path), CG2 "/%s/%c", parent, *w);
		rmdir(path);
	}
	snprintf(path, sizeof(path), CG2 "/%s", parent);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/%s.state", state_dir, parent);
	unlink(path);
	rmdir(state_dir);
	return 0;
}

#define NEED_V2()               \
	do {                    \
		if (!*state)    \
			skip(); \
	} while (0)

static void assert_as_found(const char *from_a, const char *from_b)
{
	char sc[256], cg[512], path[256];
	struct stat st;

	file_of("", "cgroup.subtree_control", sc, sizeof(sc));
	assert_string_equal(sc, found_sc);
	snprintf(path, sizeof(path), CG2 "/%s", parent);
	assert_int_equal(stat(path, &st), -1);
	cgroup_of(workers[0], cg, sizeof(cg));
	assert_string_equal(cg, from_a);
	cgroup_of(workers[1], cg, sizeof(cg));
	assert_string_equal(cg, from_b);
}

static void test_leaves_cores_quota_restore(void **state)
{
	struct act_opts o = opts();
	struct act_cpumask m0 = mask("0"), m1 = mask("1"), m01 = mask("0-1");
	struct act_workload_opts wo = { .sz = sizeof(wo) };
	struct act_workload *a, *b;
	char buf[512], grp[128], from_a[512], from_b[512];
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	NEED_V2();
	workers[0] = spawn();
	workers[1] = spawn();
	cgroup_of(workers[0], from_a, sizeof(from_a));
	cgroup_of(workers[1], from_b, sizeof(from_b));
	act = act_open(&o);
	assert_non_null(act);
	assert_int_equal(act_caps(act)->cgroup_version, 2);
	assert_true(act_caps(act)->cpuset);
	wo.cpus = &m0;
	a = act_workload_add(act, "a", workers[0], &wo);
	assert_non_null(a);
	wo.cpus = &m1;
	b = act_workload_add(act, "b", workers[1], &wo);
	assert_non_null(b);

	/* the parent: controllers for its children, no process of its own */
	file_of(parent, "cgroup.procs", buf, sizeof(buf));
	assert_string_equal(buf, "");
	file_of(parent, "cgroup.subtree_control", buf, sizeof(buf));
	assert_string_equal(buf, "cpuset cpu");
	/* the root: what it had, plus exactly cpuset and cpu */
	file_of("", "cgroup.subtree_control", buf, sizeof(buf));
	assert_non_null(strstr(buf, "cpuset"));
	assert_non_null(strstr(buf, "cpu "));
	snprintf(grp, sizeof(grp), "/%s/a", parent);
	cgroup_of(workers[0], buf, sizeof(buf));
	assert_string_equal(buf, grp);
	assert_int_equal(threads_on(workers[0], "0"), 0);
	assert_int_equal(threads_on(workers[1], "1"), 0);

	/* swap, grow, shrink */
	{
		struct act_assign as[2] = { { .wl = a, .cpus = m1 }, { .wl = b, .cpus = m0 } };

		assert_int_equal(act_assign_cpus(act, as, 2), 0);
	}
	assert_int_equal(threads_on(workers[0], "1"), 0);
	assert_int_equal(threads_on(workers[1], "0"), 0);
	assert_int_equal(act_workload_remove(act, b), 0);
	assert_int_equal(act_set_cpus(act, a, &m01), 0);
	snprintf(grp, sizeof(grp), "%s/a", parent);
	file_of(grp, "cpuset.cpus", buf, sizeof(buf));
	assert_string_equal(buf, "0-1");
	assert_int_equal(threads_on(workers[0], "0-1"), 0);
	cgroup_of(workers[1], buf, sizeof(buf));
	assert_string_equal(buf, from_b); /* removed: back where it was */

	/* cpu.max: half a core */
	assert_int_equal(act_workload_set_quota(act, a, 500), 0);
	file_of(grp, "cpu.max", buf, sizeof(buf));
	print_message("a's cpu.max: %s (of %ld cpus)\n", buf, n);
	assert_int_equal(strtol(buf, NULL, 10) * 2, strtol(strchr(buf, ' ') + 1, NULL, 10));

	act_close(act);
	act = NULL;
	assert_as_found(from_a, from_b);
	assert_int_equal(threads_on(workers[0], all_cpus()), 0); /* affinity as found */
}

static void test_killed_then_cleanup(void **state)
{
	struct act_opts o = opts();
	char from_a[512], from_b[512], buf[512];
	pid_t child;
	int st;

	NEED_V2();
	workers[0] = spawn();
	workers[1] = spawn();
	cgroup_of(workers[0], from_a, sizeof(from_a));
	cgroup_of(workers[1], from_b, sizeof(from_b));
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		struct act_cpumask m0 = mask("0"), m1 = mask("1");
		struct act_workload_opts wo = { .sz = sizeof(wo), .cpus = &m0 };
		struct act *x = act_open(&o);

		if (!x || !act_workload_add(x, "a", workers[0], &wo))
			_exit(1);
		wo.cpus = &m1;
		if (!act_workload_add(x, "b", workers[1], &wo))
			_exit(2);
		raise(SIGKILL); /* no restore */
	}
	assert_int_equal(waitpid(child, &st, 0), child);
	assert_true(WIFSIGNALED(st));
	cgroup_of(workers[0], buf, sizeof(buf));
	assert_non_null(strstr(buf, parent)); /* it did change things */
	assert_int_equal(act_cleanup(&o), 1);
	assert_as_found(from_a, from_b);
	assert_int_equal(threads_on(workers[0], all_cpus()), 0);
	assert_int_equal(threads_on(workers[1], all_cpus()), 0);
	assert_int_equal(act_cleanup(&o), 0); /* nothing left the second time */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_leaves_cores_quota_restore, setup, teardown),
		cmocka_unit_test_setup_teardown(test_killed_then_cleanup, setup, teardown),
	};

	alarm(120);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
