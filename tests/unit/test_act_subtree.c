// SPDX-License-Identifier: MIT
/*
 * cgroup v2's subtree_control through the actuator front, against a fake v2
 * tree that keeps the kernel's rules: a group's controller files exist only
 * if its parent enabled them, a group with controllers enabled for its
 * children holds no process, and a controller a child still enables for its
 * own children cannot be disabled (EBUSY). Checked: only the missing
 * controllers are enabled, only on the path to the group's parent; each is
 * put back on close, after a crash by act_cleanup(), and a foreign one is
 * never touched.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "actuator.h"
#include "act_backend.h"

#define MAXG	8
#define MANAGED (ACT_RES_CPUSET | ACT_RES_QUOTA)

/* Shared, so that a forked child that "crashes" leaves its changes for the parent. */
struct tree {
	struct {
		char name[ACT_PATH_MAX]; /* "" = the root (always g[0]) */
		unsigned int subtree;	 /* its cgroup.subtree_control, of MANAGED */
		unsigned int has;	 /* the controllers whose files it has */
		bool used;
	} g[MAXG];
	char writes[32][64]; /* subtree_control writes, in order: "+grp:res" */
	int nwrites;
	bool attach_internal;	    /* a process was put into a group with a subtree */
	char cur[ACT_PATH_MAX - 8]; /* where the test process is ("" = the root) */
};

static struct tree *T;
static char state_dir[64];

static int gi(const char *grp)
{
	for (int i = 0; i < MAXG; i++)
		if (T->g[i].used && !strcmp(T->g[i].name, grp))
			return i;
	return -1;
}

static int parent_idx(const char *grp)
{
	const char *s = strrchr(grp, '/');
	char p[ACT_PATH_MAX];

	snprintf(p, sizeof(p), "%.*s", s ? (int)(s - grp) : 0, grp);
	return gi(p);
}

static int t_open(const struct act_be_conf *conf, void **be)
{
	*be = NULL;
	return 0;
}

static void t_close(void *be)
{
}

static int t_probe(void *be, struct act_caps *c)
{
	act_cpumask_parse("0-3", &c->cpus);
	c->nr_cpus = 4;
	c->cgroup_version = 2;
	c->cpuset = c->quota = true;
	c->quota_min_us = 1000;
	c->quota_max_mc = 4000;
	return 0;
}

static bool t_exists(void *be, const char *grp)
{
	return gi(grp) >= 0;
}

static int t_create(void *be, const char *grp, const struct act_cpumask *cpus)
{
	int p = parent_idx(grp);

	if (gi(grp) >= 0)
		return -EEXIST;
	if (p < 0)
		return -ENOENT;
	for (int i = 1; i < MAXG; i++)
		if (!T->g[i].used) {
			memset(&T->g[i], 0, sizeof(T->g[i]));
			T->g[i].used = true;
			snprintf(T->g[i].name, sizeof(T->g[i].name), "%s", grp);
			T->g[i].has = T->g[p].subtree;
			/* the real backend writes cpuset.cpus at once: no file, no group */
			return (T->g[i].has & ACT_RES_CPUSET) ? 0 : (T->g[i].used = false, -EACCES);
		}
	return -ENOSPC;
}

static int t_remove(void *be, const char *grp)
{
	int i = gi(grp);

	if (i <= 0)
		return -ENOENT;
	if (!strcmp(T->cur, grp))
		return -EBUSY;
	T->g[i].used = false;
	return 0;
}

static int t_set_cpus(void *be, const char *grp, const struct act_cpumask *cpus)
{
	int i = gi(grp);

	return i < 0 ? -ENOENT : (T->g[i].has & ACT_RES_CPUSET) ? 0 : -ENOENT;
}

static int t_get_cpus(void *be, const char *grp, struct act_cpumask *cpus)
{
	return act_cpumask_parse("0-3", cpus);
}

static int t_set_quota(void *be, const char *grp, int64_t q, uint64_t p)
{
	int i = gi(grp);

	return i < 0 ? -ENOENT : (T->g[i].has & ACT_RES_QUOTA) ? 0 : -ENOENT;
}

static int t_get_quota(void *be, const char *grp, int64_t *q, uint64_t *p)
{
	*q = -1;
	*p = 100000;
	return 0;
}

static int t_where(void *be, pid_t tid, struct act_origin *o)
{
	snprintf(o->cpuset, sizeof(o->cpuset), "/%s", T->cur);
	snprintf(o->cpu, sizeof(o->cpu), "/%s", T->cur);
	return 0;
}

/* The test process moves as a whole (v2: cgroup.procs), whichever thread is named. */
static int t_attach(void *be, const struct act_origin *dst, pid_t tid)
{
	const char *grp = dst->cpuset[0] == '/' ? dst->cpuset + 1 : dst->cpuset;
	int i = gi(grp);

	if (i < 0)
		return -ENOENT;
	if (i > 0 && T->g[i].subtree) {
		T->attach_internal = true;
		return -EBUSY;
	}
	snprintf(T->cur, sizeof(T->cur), "%.500s", grp);
	return 0;
}

static int t_tasks(void *be, const char *grp, pid_t *tids, size_t *n)
{
	size_t cap = *n;

	*n = 0;
	if (grp[0] && !strcmp(T->cur, grp) && cap)
		tids[(*n)++] = getpid();
	return 0;
}

static int t_children(void *be, const char *grp, char (*names)[ACT_NAME_MAX], size_t *n)
{
	size_t cap = *n, l = strlen(grp);

	*n = 0;
	for (int i = 1; i < MAXG; i++)
		if (T->g[i].used && !strncmp(T->g[i].name, grp, l) && T->g[i].name[l] == '/' &&
		    !strchr(T->g[i].name + l + 1, '/')) {
			if (*n < cap)
				snprintf(names[*n], ACT_NAME_MAX, "%.63s", T->g[i].name + l + 1);
			(*n)++;
		}
	return 0;
}

static int t_subtree_missing(void *be, const char *grp, unsigned int *res)
{
	int i = gi(grp);

	if (i < 0)
		return -ENOENT;
	*res = MANAGED & ~T->g[i].subtree;
	return 0;
}

/* One controller at a time, as the kernel takes them. */
static int t_subtree_set(void *be, const char *grp, unsigned int res, bool on)
{
	int i = gi(grp), p = parent_idx(grp);

	if (i < 0)
		return -ENOENT;
	for (unsigned int r = ACT_RES_CPUSET; r <= ACT_RES_QUOTA; r <<= 1) {
		if (!(res & r))
			continue;
		if (on && i > 0 && (!strcmp(T->cur, grp) || !(T->g[p].subtree & r)))
			return -EBUSY; /* no internal processes; the parent must have it */
		if (!on)
			for (int j = 1; j < MAXG; j++)
				if (T->g[j].used && parent_idx(T->g[j].name) == i &&
				    (T->g[j].subtree & r))
					return -EBUSY;
		if (T->nwrites < 32)
			snprintf(T->writes[T->nwrites++], 64, "%c%s:%s", on ? '+' : '-',
				 grp[0] ? grp : "/", r == ACT_RES_CPUSET ? "cpuset" : "cpu");
		if (on)
			T->g[i].subtree |= r;
		else
			T->g[i].subtree &= ~r;
		for (int j = 1; j < MAXG; j++)
			if (T->g[j].used && parent_idx(T->g[j].name) == i)
				T->g[j].has = T->g[i].subtree;
	}
	return 0;
}

static const struct act_cgroup_ops tree_cg = {
	.name = "fake-v2",
	.open = t_open,
	.close = t_close,
	.probe = t_probe,
	.exists = t_exists,
	.create = t_create,
	.remove = t_remove,
	.set_cpus = t_set_cpus,
	.get_cpus = t_get_cpus,
	.set_quota = t_set_quota,
	.get_quota = t_get_quota,
	.where = t_where,
	.attach = t_attach,
	.tasks = t_tasks,
	.children = t_children,
	.subtree_missing = t_subtree_missing,
	.subtree_set = t_subtree_set,
};

static void quiet(enum act_log_level l, const char *msg, void *ctx)
{
	if (getenv("TEST_VERBOSE"))
		fprintf(stderr, "act: %s\n", msg);
}

static struct act_opts opts(void)
{
	struct act_opts o = {
		.sz = sizeof(o),
		.parent = "unit",
		.state_dir = state_dir,
		.resources = ACT_RES_CPUSET | ACT_RES_QUOTA,
		.log = quiet,
		.cgroup_ops = &tree_cg,
	};
	return o;
}

static struct act_workload *add(struct act *act, const char *name, const char *cpus)
{
	struct act_cpumask m;
	struct act_workload_opts wo = { .sz = sizeof(wo), .cpus = &m };

	assert_int_equal(act_cpumask_parse(cpus, &m), 0);
	return act_workload_add(act, name, getpid(), &wo);
}

static int setup(void **state)
{
	memset(T, 0, sizeof(*T));
	T->g[0].used = true; /* the root: "memory pids", none of ours */
	snprintf(state_dir, sizeof(state_dir), "/tmp/test_act_subtree.%d", (int)getpid());
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", state_dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_path_enabled_and_put_back(void **state)
{
	struct act_opts o = opts();
	struct act *act = act_open(&o);

	assert_non_null(act);
	/* the parent needs cpuset and cpu at the root; nothing below it yet */
	assert_int_equal(T->g[0].subtree, MANAGED);
	assert_non_null(add(act, "a", "0-1"));
	assert_int_equal(T->g[gi("unit")].subtree, MANAGED);
	assert_int_equal(T->g[gi("unit/a")].subtree, 0); /* leaves stay leaves */
	assert_false(T->attach_internal);
	assert_int_equal(T->nwrites, 4); /* root and the parent, once each */
	act_close(act);
	assert_int_equal(gi("unit"), -1);
	assert_int_equal(T->g[0].subtree, 0);
	assert_string_equal(T->writes[T->nwrites - 2], "-/:cpuset");
	assert_string_equal(T->writes[T->nwrites - 1], "-/:cpu");
}

static void test_foreign_controller_untouched(void **state)
{
	struct act_opts o = opts();
	struct act *act;

	T->g[0].subtree = ACT_RES_CPUSET; /* systemd enabled cpuset for a unit of its own */
	act = act_open(&o);
	assert_non_null(act);
	assert_non_null(add(act, "a", "0"));
	assert_string_equal(T->writes[0], "+/:cpu");
	act_close(act);
	assert_int_equal(T->g[0].subtree, ACT_RES_CPUSET);
	for (int i = 0; i < T->nwrites; i++)
		assert_null(strstr(T->writes[i], "/:cpuset"));
}

static void test_in_use_left_enabled(void **state)
{
	struct act_opts o = opts();
	struct act *act = act_open(&o);

	assert_non_null(act);
	assert_non_null(add(act, "a", "0"));
	/* someone enables cpu for the children of a group of theirs meanwhile */
	T->g[5].used = true;
	snprintf(T->g[5].name, sizeof(T->g[5].name), "other");
	T->g[5].subtree = ACT_RES_QUOTA;
	assert_int_equal(act_restore(act), 0);
	assert_int_equal(T->g[0].subtree, ACT_RES_QUOTA); /* cpuset back, cpu in use */
	act_close(act);
}

static void test_crash_repaired_by_cleanup(void **state)
{
	struct act_opts o = opts();
	char path[128], line[256];
	bool seen = false;
	pid_t child;
	int st;
	FILE *f;

	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		struct act *act = act_open(&o);

		_exit(act && add(act, "a", "0-1") ? 0 : 1); /* as if SIGKILLed: no restore */
	}
	assert_int_equal(waitpid(child, &st, 0), child);
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(T->g[0].subtree, MANAGED);
	snprintf(path, sizeof(path), "%s/unit.state", state_dir);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		seen |= !strcmp(line, "subtree\t/\tcpuset,cpu\n");
	fclose(f);
	assert_true(seen);
	/* the child's process left the group when it died */
	T->cur[0] = '\0';
	assert_int_equal(act_cleanup(&o), 1);
	assert_int_equal(gi("unit"), -1);
	assert_int_equal(T->g[0].subtree, 0);
	assert_int_equal(act_cleanup(&o), 0); /* nothing left the second time */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_path_enabled_and_put_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_foreign_controller_untouched, setup, teardown),
		cmocka_unit_test_setup_teardown(test_in_use_left_enabled, setup, teardown),
		cmocka_unit_test_setup_teardown(test_crash_repaired_by_cleanup, setup, teardown),
	};

	T = mmap(NULL, sizeof(*T), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (T == MAP_FAILED)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
