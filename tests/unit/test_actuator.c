// SPDX-License-Identifier: MIT
/*
 * The actuator front against fake backends (no root, no cgroup, no sysfs):
 * cpu lists, validation, overlap refusal, swaps, rollback of failed
 * multi-step changes, frequency rounding and caps, restore, and dry-run (which
 * must never reach the backend's write calls).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "actuator.h"
#include "act_backend.h"
#include "../lib/fake_topo.h"

/* ---------------------------------------------------------------- fakes */

#define MAXG 16
#define MAXM 256

struct fake {
	struct {
		char name[ACT_PATH_MAX];
		struct act_cpumask cpus;
		int64_t quota;
		uint64_t period;
		char mems[32];
		bool used;
	} g[MAXG];
	struct {
		pid_t tid;
		char path[ACT_PATH_MAX];
	} m[MAXM];
	int nm;
	unsigned long fmin[4], fmax[4];
	int writes;	   /* every write call */
	int fail_set_cpus; /* fail the n-th set_cpus (1-based), 0 = never */
	int fail_freq_set; /* fail the n-th freq set */
	int set_cpus_calls, freq_set_calls;
	bool cpuset, quota, cpufreq;
	char journal[1024]; /* cpuset writes and moves in order: "cpus G L;mems G L;attach G;" */
};

static void jot(struct fake *f, const char *what, const char *grp, const char *val)
{
	size_t n = strlen(f->journal);

	snprintf(f->journal + n, sizeof(f->journal) - n, "%s %s%s%s;", what, grp, val ? " " : "",
		 val ? val : "");
}

static struct fake F;

static int fopen_(const struct act_be_conf *conf, void **be)
{
	*be = conf->user;
	return 0;
}

static void fclose_(void *be)
{
}

static int gidx(struct fake *f, const char *grp)
{
	for (int i = 0; i < MAXG; i++)
		if (f->g[i].used && !strcmp(f->g[i].name, grp))
			return i;
	return -1;
}

static int f_probe(void *be, struct act_caps *c)
{
	struct fake *f = be;

	act_cpumask_parse("0-3", &c->cpus);
	c->nr_cpus = 4;
	c->cgroup_version = 1;
	c->cpuset = f->cpuset;
	c->quota = f->quota;
	if (!f->cpuset)
		snprintf(c->cpuset_reason, sizeof(c->cpuset_reason), "fake: no cpuset");
	c->quota_min_us = 1000;
	c->quota_max_mc = 4000;
	return 0;
}

static bool f_exists(void *be, const char *grp)
{
	return gidx(be, grp) >= 0;
}

static int f_create(void *be, const char *grp, const struct act_cpumask *cpus)
{
	struct fake *f = be;

	f->writes++;
	if (gidx(f, grp) >= 0)
		return -EEXIST;
	for (int i = 0; i < MAXG; i++)
		if (!f->g[i].used) {
			f->g[i].used = true;
			snprintf(f->g[i].name, sizeof(f->g[i].name), "%s", grp);
			if (cpus)
				f->g[i].cpus = *cpus;
			f->g[i].quota = -1;
			f->g[i].period = 100000;
			return 0;
		}
	return -ENOSPC;
}

static int f_remove(void *be, const char *grp)
{
	struct fake *f = be;
	int i = gidx(f, grp);

	f->writes++;
	if (i < 0)
		return -ENOENT;
	f->g[i].used = false;
	return 0;
}

static int f_set_cpus(void *be, const char *grp, const struct act_cpumask *cpus)
{
	struct fake *f = be;
	int i = gidx(f, grp);

	f->writes++;
	if (++f->set_cpus_calls == f->fail_set_cpus)
		return act_be_err(NULL, -EIO, "fake: injected set_cpus failure");
	if (i < 0)
		return -ENOENT;
	f->g[i].cpus = *cpus;
	{
		char list[64];

		act_cpumask_format(cpus, list, sizeof(list));
		jot(f, "cpus", grp, list);
	}
	return 0;
}

static int f_set_mems(void *be, const char *grp, const char *mems)
{
	struct fake *f = be;
	int i = gidx(f, grp);

	f->writes++;
	if (i < 0)
		return -ENOENT;
	snprintf(f->g[i].mems, sizeof(f->g[i].mems), "%s", mems);
	jot(f, "mems", grp, mems);
	return 0;
}

static int f_get_mems(void *be, const char *grp, char *mems, size_t len)
{
	int i = gidx(be, grp);

	if (i < 0)
		return -ENOENT;
	snprintf(mems, len, "%s", F.g[i].mems);
	return 0;
}

static int f_get_cpus(void *be, const char *grp, struct act_cpumask *cpus)
{
	int i = gidx(be, grp);

	if (i < 0)
		return -ENOENT;
	*cpus = F.g[i].cpus;
	return 0;
}

static int f_set_quota(void *be, const char *grp, int64_t q, uint64_t p)
{
	struct fake *f = be;
	int i = gidx(f, grp);

	f->writes++;
	if (i < 0)
		return -ENOENT;
	f->g[i].quota = q;
	f->g[i].period = p;
	return 0;
}

static int f_get_quota(void *be, const char *grp, int64_t *q, uint64_t *p)
{
	int i = gidx(be, grp);

	if (i < 0)
		return -ENOENT;
	*q = F.g[i].quota;
	*p = F.g[i].period;
	return 0;
}

static int f_where(void *be, pid_t tid, struct act_origin *o)
{
	struct fake *f = be;

	for (int i = 0; i < f->nm; i++)
		if (f->m[i].tid == tid) {
			snprintf(o->cpuset, sizeof(o->cpuset), "%s", f->m[i].path);
			snprintf(o->cpu, sizeof(o->cpu), "%s", f->m[i].path);
			return 0;
		}
	snprintf(o->cpuset, sizeof(o->cpuset), "/orig");
	snprintf(o->cpu, sizeof(o->cpu), "/orig");
	return 0;
}

static int f_attach(void *be, const struct act_origin *dst, pid_t tid)
{
	struct fake *f = be;
	int i;

	f->writes++;
	for (i = 0; i < f->nm; i++)
		if (f->m[i].tid == tid)
			break;
	if (i == f->nm) {
		if (f->nm == MAXM)
			return -ENOSPC;
		f->nm++;
	}
	f->m[i].tid = tid;
	snprintf(f->m[i].path, sizeof(f->m[i].path), "%s", dst->cpuset);
	jot(f, "attach", dst->cpuset, NULL);
	return 0;
}

static int f_tasks(void *be, const char *grp, pid_t *tids, size_t *n)
{
	struct fake *f = be;
	size_t cap = *n;

	*n = 0;
	for (int i = 0; i < f->nm; i++)
		if (f->m[i].path[0] == '/' && !strcmp(f->m[i].path + 1, grp)) {
			if (*n < cap)
				tids[*n] = f->m[i].tid;
			(*n)++;
		}
	return 0;
}

static int f_children(void *be, const char *grp, char (*names)[ACT_NAME_MAX], size_t *n)
{
	struct fake *f = be;
	size_t cap = *n, l = strlen(grp);

	*n = 0;
	for (int i = 0; i < MAXG; i++)
		if (f->g[i].used && !strncmp(f->g[i].name, grp, l) && f->g[i].name[l] == '/') {
			if (*n < cap)
				snprintf(names[*n], ACT_NAME_MAX, "%.63s", f->g[i].name + l + 1);
			(*n)++;
		}
	return 0;
}

static const struct act_cgroup_ops fake_cg = {
	.name = "fake",
	.open = fopen_,
	.close = fclose_,
	.probe = f_probe,
	.exists = f_exists,
	.create = f_create,
	.remove = f_remove,
	.set_cpus = f_set_cpus,
	.get_cpus = f_get_cpus,
	.set_mems = f_set_mems,
	.get_mems = f_get_mems,
	.set_quota = f_set_quota,
	.get_quota = f_get_quota,
	.where = f_where,
	.attach = f_attach,
	.tasks = f_tasks,
	.children = f_children,
};

static int q_probe(void *be, const struct act_cpumask *cpus, struct act_caps *c)
{
	struct fake *f = be;

	c->cpufreq = f->cpufreq;
	if (!f->cpufreq) {
		snprintf(c->cpufreq_reason, sizeof(c->cpufreq_reason), "fake: no cpufreq");
		return 0;
	}
	c->freq_min_khz = 800000;
	c->freq_max_khz = 3456000;
	return 0;
}

static int q_get(void *be, int cpu, unsigned long *mn, unsigned long *mx)
{
	struct fake *f = be;

	if (cpu < 0 || cpu > 3)
		return -ENODEV;
	*mn = f->fmin[cpu];
	*mx = f->fmax[cpu];
	return 0;
}

static int q_set(void *be, int cpu, unsigned long mn, unsigned long mx)
{
	struct fake *f = be;

	f->writes++;
	if (++f->freq_set_calls == f->fail_freq_set)
		return -EIO;
	if (cpu < 0 || cpu > 3 || mn > mx)
		return -EINVAL;
	f->fmin[cpu] = mn;
	f->fmax[cpu] = mx;
	return 0;
}

static const struct act_freq_ops fake_freq = {
	.name = "fake",
	.open = fopen_,
	.close = fclose_,
	.probe = q_probe,
	.get = q_get,
	.set = q_set,
};

/* ---------------------------------------------------------------- helpers */

static struct act *act;

static void quiet(enum act_log_level l, const char *msg, void *ctx)
{
}

static int setup(void **state)
{
	memset(&F, 0, sizeof(F));
	F.cpuset = F.quota = F.cpufreq = true;
	for (int i = 0; i < 4; i++) {
		F.fmin[i] = 800000;
		F.fmax[i] = 3456000;
	}
	return 0;
}

static int teardown(void **state)
{
	act_close(act);
	act = NULL;
	return 0;
}

static struct act *open_fake(bool dry_run)
{
	struct act_opts o = {
		.sz = sizeof(o),
		.parent = "unit",
		.dry_run = dry_run,
		.state_dir = "",
		.log = quiet,
		.cgroup_ops = &fake_cg,
		.freq_ops = &fake_freq,
		.backend_ctx = &F,
	};
	return act_open(&o);
}

static struct act_cpumask M(const char *s) {
	struct act_cpumask m;

	assert_int_equal(act_cpumask_parse(s, &m), 0);
	return m;
}

static struct act_workload *
add(const char *name, const char *cpus)
{
	struct act_cpumask m = M(cpus);
	struct act_workload_opts wo = { .sz = sizeof(wo), .cpus = &m };

	return act_workload_add(act, name, getpid(), &wo);
}

static const char *grp_cpus(const char *grp)
{
	static char buf[64];
	int i = gidx(&F, grp);

	if (i < 0)
		return "(none)";
	act_cpumask_format(&F.g[i].cpus, buf, sizeof(buf));
	return buf;
}

/* ---------------------------------------------------------------- tests */

static void test_cpulist(void **state)
{
	struct act_cpumask m;
	char buf[64];

	assert_int_equal(act_cpumask_parse("0-3,8,10-11\n", &m), 0);
	assert_int_equal(act_cpumask_count(&m), 7);
	assert_int_equal(act_cpumask_format(&m, buf, sizeof(buf)), 11);
	assert_string_equal(buf, "0-3,8,10-11");
	assert_int_equal(act_cpumask_nth(&m, 4), 8);
	assert_int_equal(act_cpumask_parse(" ", &m), 0);
	assert_true(act_cpumask_empty(&m));
	assert_int_equal(act_cpumask_format(&m, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	assert_int_equal(act_cpumask_parse("3-1", &m), -EINVAL);
	assert_int_equal(act_cpumask_parse("1,", &m), -EINVAL);
	assert_int_equal(act_cpumask_parse("a", &m), -EINVAL);
	assert_int_equal(act_cpumask_parse("1 2", &m), -EINVAL);
	assert_int_equal(act_cpumask_parse("1024", &m), -ERANGE);
	assert_int_equal(act_cpumask_parse("63-65,1023", &m), 0);
	assert_int_equal(act_cpumask_format(&m, buf, sizeof(buf)), 10);
	assert_string_equal(buf, "63-65,1023");
	assert_int_equal(act_cpumask_format(&m, buf, 4), -ENOSPC);
	assert_int_equal(act_cpumask_next(&m, 65), 1023);
	assert_int_equal(act_cpumask_next(&m, 1023), -1);
	act_cpumask_from_u64(&m, 0x5);
	assert_int_equal(act_cpumask_format(&m, buf, sizeof(buf)), 3);
	assert_string_equal(buf, "0,2");
}

static void test_open_caps(void **state)
{
	const struct act_caps *c;
	struct act_opts bad = { .sz = sizeof(bad), .parent = "a/b", .state_dir = "", .log = quiet };

	act = open_fake(false);
	assert_non_null(act);
	c = act_caps(act);
	assert_int_equal(c->resources, ACT_RES_ALL);
	assert_int_equal(c->nr_cpus, 4);
	assert_int_equal(c->freq_step_khz, 100000);
	assert_int_equal(c->quota_period_us, 100000);
	assert_true(f_exists(&F, "unit")); /* the parent */
	assert_null(act_open(&bad));
	assert_int_equal(errno, EINVAL);
	act_close(act);
	act = NULL;
	assert_false(f_exists(&F, "unit"));

	/* no cpufreq: reported, not an error */
	F.cpufreq = false;
	act = open_fake(false);
	assert_non_null(act);
	assert_false(act_caps(act)->resources & ACT_RES_CPUFREQ);
	assert_string_equal(act_caps(act)->cpufreq_reason, "fake: no cpufreq");
	assert_int_equal(act_set_freq(act, &act_caps(act)->cpus, 0, 2000000), -EOPNOTSUPP);
}

static void test_add_overlap_remove(void **state)
{
	struct act_workload *a, *b;
	struct act_cpumask m;
	struct act_current st;
	char want[64];

	act = open_fake(false);
	assert_non_null(act);
	a = add("a", "0-1");
	assert_non_null(a);
	assert_string_equal(grp_cpus("unit/a"), "0-1");
	/* every thread of the process was moved */
	snprintf(want, sizeof(want), "/unit/a");
	assert_true(F.nm >= 1);
	for (int i = 0; i < F.nm; i++)
		assert_string_equal(F.m[i].path, want);

	assert_null(add("b", "1-2"));
	assert_int_equal(errno, EBUSY);
	assert_non_null(strstr(act_last_error(act), "overlap workload a"));
	assert_false(f_exists(&F, "unit/b"));
	assert_null(add("a", "3"));
	assert_int_equal(errno, EEXIST);
	assert_null(add("bad/name", "3"));
	assert_int_equal(errno, EINVAL);
	assert_null(add("c", "4"));
	assert_int_equal(errno, ERANGE);
	assert_null(add("c", ""));
	assert_int_equal(errno, EINVAL);
	assert_null(act_workload_add(act, "c", 0x7ffffff0, NULL));
	assert_int_equal(errno, ESRCH);

	/* a process managed by a already cannot be taken by b */
	b = add("b", "2");
	assert_null(b);
	assert_int_equal(errno, EBUSY);
	assert_false(f_exists(&F, "unit/b"));

	m = M("0-3");
	assert_int_equal(act_set_cpus(act, a, &m), 0);
	assert_int_equal(act_get(act, a, &st), 0);
	assert_true(act_cpumask_equal(&st.cpus, &m));
	assert_int_equal(st.nr_tasks, F.nm);
	assert_ptr_equal(act_workload_find(act, "a"), a);
	assert_null(act_workload_find(act, "zz"));

	assert_int_equal(act_workload_remove(act, a), 0);
	assert_false(f_exists(&F, "unit/a"));
	for (int i = 0; i < F.nm; i++)
		assert_string_equal(F.m[i].path, "/orig");
}

static void test_swap_and_rollback(void **state)
{
	struct act_workload *a, *b;
	struct act_assign s[2];

	act = open_fake(false);
	assert_non_null(act);
	a = add("a", "0-1");
	assert_non_null(a);
	/* b: a workload whose process tree is empty by now is impossible; use
	 * a second workload with the same pid after a has been given up */
	b = NULL;
	{
		/* create b from a child process */
		pid_t p = fork();

		if (p == 0) {
			pause();
			_exit(0);
		}
		struct act_cpumask m = M("2-3");
		struct act_workload_opts wo = { .sz = sizeof(wo), .cpus = &m };

		b = act_workload_add(act, "b", p, &wo);
		assert_non_null(b);
		s[0].wl = a;
		s[0].cpus = M("2-3");
		s[1].wl = b;
		s[1].cpus = M("0-1");
		assert_int_equal(act_assign_cpus(act, s, 2), 0);
		assert_string_equal(grp_cpus("unit/a"), "2-3");
		assert_string_equal(grp_cpus("unit/b"), "0-1");

		/* fail the last write of a swap: everything rolls back */
		s[0].cpus = M("0");
		s[1].cpus = M("1-3");
		F.set_cpus_calls = 0;
		F.fail_set_cpus = 3; /* grow a, grow b, then shrink a fails */
		assert_int_equal(act_assign_cpus(act, s, 2), -EIO);
		F.fail_set_cpus = 0;
		assert_string_equal(grp_cpus("unit/a"), "2-3");
		assert_string_equal(grp_cpus("unit/b"), "0-1");
		assert_true(act_cpumask_equal(act_workload_cpus(a), &(struct act_cpumask){ 0 }) ==
			    false);
		/* duplicates and final overlaps are refused before any write */
		F.writes = 0;
		s[1].wl = a;
		assert_int_equal(act_assign_cpus(act, s, 2), -EINVAL);
		s[1].wl = b;
		s[0].cpus = M("0-2");
		s[1].cpus = M("2-3");
		assert_int_equal(act_assign_cpus(act, s, 2), -EBUSY);
		assert_int_equal(F.writes, 0);
		/* checked as a proposal: the other side is named with its proposed
		 * set, and the handles keep their cores */
		assert_string_equal(act_last_error(act),
				    "workload a: cpus 0-2 overlap workload b (cpus 2-3)");
		assert_string_equal(grp_cpus("unit/a"), "2-3");
		assert_string_equal(grp_cpus("unit/b"), "0-1");
		m = M("2-3");
		assert_true(act_cpumask_equal(act_workload_cpus(a), &m));
		m = M("0-1");
		assert_true(act_cpumask_equal(act_workload_cpus(b), &m));

		act_close(act);
		act = NULL;
		kill(p, 9);
		waitpid(p, NULL, 0);
	}
	assert_false(f_exists(&F, "unit"));
	for (int i = 0; i < F.nm; i++)
		assert_string_equal(F.m[i].path, "/orig");
}

static void test_quota(void **state)
{
	struct act_workload *a;
	struct act_current st;

	act = open_fake(false);
	a = add("a", "0");
	assert_non_null(a);
	assert_int_equal(act_workload_set_quota(act, a, 500), 0);
	assert_int_equal(act_get(act, a, &st), 0);
	assert_int_equal(st.quota_us, 50000);
	assert_int_equal(st.quota_mc, 500);
	assert_int_equal(act_workload_set_quota(act, a, 12), 0);
	assert_int_equal(F.g[gidx(&F, "unit/a")].quota, 1200);
	/* the kernel's minimum of 1000 us is 10 mc at the 100 ms period */
	assert_int_equal(act_workload_set_quota(act, a, 10), 0);
	assert_int_equal(F.g[gidx(&F, "unit/a")].quota, 1000);
	assert_int_equal(act_workload_set_quota(act, a, 9), -ERANGE);
	assert_int_equal(act_workload_set_quota(act, a, 5), -ERANGE);
	assert_int_equal(act_workload_set_quota(act, a, 4500), -ERANGE);
	assert_int_equal(act_workload_set_quota(act, a, 4001), -ERANGE);
	assert_int_equal(F.g[gidx(&F, "unit/a")].quota, 1000);
	assert_int_equal(act_workload_set_quota(act, a, 4000), 0);
	assert_int_equal(F.g[gidx(&F, "unit/a")].quota, 400000);
	assert_int_equal(act_workload_set_quota(act, a, -1), 0);
	assert_int_equal(F.g[gidx(&F, "unit/a")].quota, -1);
	assert_int_equal(act_get(act, a, &st), 0);
	assert_int_equal(st.quota_mc, 0);
}

/* The only conversions between milli-cores and the cgroup files' microseconds. */
static void test_quota_units(void **state)
{
	assert_int_equal(act_quota_mc_to_us(500, 100000), 50000);
	assert_int_equal(act_quota_mc_to_us(500, 50000), 25000);
	assert_int_equal(act_quota_mc_to_us(1500, 100000), 150000);
	assert_int_equal(act_quota_mc_to_us(1, 1500), 2); /* 1.5 us rounds up */
	assert_int_equal(act_quota_mc_to_us(0, 100000), -1);
	assert_int_equal(act_quota_mc_to_us(-1, 100000), -1);
	assert_int_equal(act_quota_us_to_mc(50000, 100000), 500);
	assert_int_equal(act_quota_us_to_mc(33333, 100000), 333);
	assert_int_equal(act_quota_us_to_mc(33350, 100000), 334); /* 333.5 rounds up */
	assert_int_equal(act_quota_us_to_mc(150000, 250000), 600);
	assert_int_equal(act_quota_us_to_mc(-1, 100000), 0);
	assert_int_equal(act_quota_us_to_mc(1000, 0), 0);
}

/* A workload managed in its own cgroup: values written, nothing moved, restored as found. */
static void test_inplace(void **state)
{
	struct act_cpumask m = M("0");
	struct act_workload_opts wo = { .sz = sizeof(wo), .cpus = &m, .quota_mc = 500 };
	struct act_workload *w;
	int i, nm;

	act = open_fake(false);
	assert_non_null(act);
	assert_int_equal(f_create(&F, "system.slice/web.service", NULL), 0);
	i = gidx(&F, "system.slice/web.service");
	F.g[i].cpus = M("2-3");
	F.g[i].quota = 30000;
	F.g[i].period = 50000;
	nm = F.nm;
	/* refused: the root, parties' parent and below, "..", a missing cgroup */
	assert_null(act_workload_add_inplace(act, "w", "/", &wo));
	assert_int_equal(errno, EINVAL);
	assert_null(act_workload_add_inplace(act, "w", "unit", &wo));
	assert_int_equal(errno, EINVAL);
	assert_null(act_workload_add_inplace(act, "w", "/unit/x", &wo));
	assert_int_equal(errno, EINVAL);
	assert_null(act_workload_add_inplace(act, "w", "a/../b", &wo));
	assert_int_equal(errno, EINVAL);
	assert_null(act_workload_add_inplace(act, "w", "system.slice/none.service", &wo));
	assert_int_equal(errno, ENOENT);

	w = act_workload_add_inplace(act, "w", "/system.slice/web.service", &wo);
	assert_non_null(w);
	assert_string_equal(grp_cpus("system.slice/web.service"), "0");
	assert_int_equal(F.g[i].quota, 50000);
	assert_int_equal(F.g[i].period, 100000);
	assert_int_equal(F.nm, nm); /* nothing moved */
	assert_int_equal(gidx(&F, "unit/w"), -1);
	assert_null(act_workload_add_inplace(act, "x", "system.slice/web.service", &wo));
	assert_int_equal(errno, EEXIST);
	m = M("0-1");
	assert_int_equal(act_set_cpus(act, w, &m), 0);
	assert_string_equal(grp_cpus("system.slice/web.service"), "0-1");
	assert_int_equal(act_workload_attach(act, w, getpid()), 0);
	assert_int_equal(F.nm, nm);

	assert_int_equal(act_workload_remove(act, w), 0);
	assert_true(gidx(&F, "system.slice/web.service") == i); /* never removed */
	assert_string_equal(grp_cpus("system.slice/web.service"), "2-3");
	assert_int_equal(F.g[i].quota, 30000);
	assert_int_equal(F.g[i].period, 50000);

	/* act_close() restores too */
	w = act_workload_add_inplace(act, "w", "system.slice/web.service", &wo);
	assert_non_null(w);
	act_close(act);
	act = NULL;
	assert_true(gidx(&F, "system.slice/web.service") == i);
	assert_string_equal(grp_cpus("system.slice/web.service"), "2-3");
	assert_int_equal(F.g[i].quota, 30000);
	assert_int_equal(F.g[i].period, 50000);
}

/* The values found go to the state file first; a cleanup after SIGKILL puts them back. */
static void test_inplace_state(void **state)
{
	char dir[] = "/tmp/act-inplace-XXXXXX", path[256], buf[1024];
	struct act_cpumask m = M("1");
	struct act_workload_opts wo = { .sz = sizeof(wo), .cpus = &m, .quota_mc = 250 };
	struct act_opts o = {
		.sz = sizeof(o),
		.parent = "unit",
		.log = quiet,
		.cgroup_ops = &fake_cg,
		.freq_ops = &fake_freq,
		.backend_ctx = &F,
	};
	FILE *f;
	size_t n;
	int i;

	assert_non_null(mkdtemp(dir));
	o.state_dir = dir;
	snprintf(path, sizeof(path), "%s/unit.state", dir);
	assert_int_equal(f_create(&F, "svc", NULL), 0);
	i = gidx(&F, "svc");
	F.g[i].cpus = M("0-3");
	F.g[i].quota = -1;
	F.g[i].period = 100000;
	act = act_open(&o);
	assert_non_null(act);
	assert_non_null(act_workload_add_inplace(act, "w", "svc", &wo));
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	assert_non_null(strstr(buf, "inplace\tw\tsvc\t0-3\t-1\t100000\n"));
	assert_int_equal(F.g[i].quota, 25000);
	act_close(act);
	act = NULL;
	assert_int_equal(F.g[i].quota, -1);
	assert_int_equal(access(path, F_OK), -1);

	/* as a killed daemon leaves it: the state file and changed values */
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "act-state 1\nowner\t-\ninplace\tw\tsvc\t2\t40000\t50000\n");
	fclose(f);
	chmod(path, 0600);
	F.g[i].cpus = M("0");
	assert_int_equal(act_cleanup(&o), 1);
	assert_string_equal(grp_cpus("svc"), "2");
	assert_int_equal(F.g[i].quota, 40000);
	assert_int_equal(F.g[i].period, 50000);
	assert_true(gidx(&F, "svc") == i);
	assert_int_equal(access(path, F_OK), -1);
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	assert_int_equal(system(path), 0);
}

static void test_freq(void **state)
{
	struct act_workload *a;
	struct act_cpumask m;
	unsigned long r;
	struct act_current st;

	act = open_fake(false);
	assert_non_null(act);
	assert_int_equal(act_freq_round(act, 2449999, &r), 0);
	assert_int_equal(r, 2400000);
	assert_int_equal(act_freq_round(act, 2450000, &r), 0);
	assert_int_equal(r, 2500000);
	assert_int_equal(act_freq_round(act, 3456000, &r), 0);
	assert_int_equal(r, 3456000);
	assert_int_equal(act_freq_round(act, 3440000, &r), 0);
	assert_int_equal(r, 3400000); /* nearest step below a non-step limit */
	assert_int_equal(act_freq_round(act, 3460000, &r), -ERANGE);
	assert_int_equal(act_freq_round(act, 799999, &r), -ERANGE);

	a = add("a", "0-1");
	assert_non_null(a);
	assert_int_equal(act_workload_set_freq(act, a, 2000000), 0);
	assert_int_equal(F.fmax[0], 2000000);
	assert_int_equal(F.fmax[1], 2000000);
	assert_int_equal(F.fmax[2], 3456000);
	/* a core it gains takes its cap */
	m = M("0-2");
	assert_int_equal(act_set_cpus(act, a, &m), 0);
	assert_int_equal(F.fmax[2], 2000000);
	assert_int_equal(act_get(act, a, &st), 0);
	assert_int_equal(st.freq_max_khz, 2000000);
	assert_false(st.freq_mixed);

	/* a failing write in a batch rolls the batch back */
	m = M("0-3");
	F.freq_set_calls = 0;
	F.fail_freq_set = 3;
	assert_int_equal(act_set_freq(act, &m, 0, 1500000), -EIO);
	F.fail_freq_set = 0;
	assert_int_equal(F.fmax[0], 2000000);
	assert_int_equal(F.fmax[1], 2000000);
	assert_int_equal(F.fmax[3], 3456000);

	/* min above a kept max is refused; min+max raise works */
	m = M("3");
	assert_int_equal(act_set_freq(act, &m, 1000000, 1200000), 0);
	assert_int_equal(act_set_freq(act, &m, 2000000, 0), -EINVAL);
	assert_int_equal(act_set_freq(act, &m, 2000000, 2500000), 0);
	assert_int_equal(F.fmin[3], 2000000);

	/* restore: every cpu back to what was found */
	assert_int_equal(act_restore(act), 0);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(F.fmin[i], 800000);
		assert_int_equal(F.fmax[i], 3456000);
	}
}

static void test_dry_run_no_writes(void **state)
{
	struct act_workload *a;
	struct act_current st;
	struct act_cpumask m;

	act = open_fake(true);
	assert_non_null(act);
	assert_true(act_caps(act)->dry_run);
	a = add("a", "0");
	assert_non_null(a);
	m = M("0-1");
	assert_int_equal(act_set_cpus(act, a, &m), 0);
	assert_int_equal(act_workload_set_quota(act, a, 1000), 0);
	assert_int_equal(act_workload_set_freq(act, a, 1800000), 0);
	assert_int_equal(act_get(act, a, &st), 0);
	assert_true(act_cpumask_equal(&st.cpus, &m));
	assert_int_equal(st.quota_us, 100000);
	assert_int_equal(st.freq_max_khz, 1800000);
	act_close(act);
	act = NULL;
	assert_int_equal(F.writes, 0);
	assert_int_equal(F.nm, 0);
	assert_int_equal(F.fmax[0], 3456000);
}

/* On a machine with two memory nodes (a fake tree: node 0 has cpus 0-1,
 * node 1 cpus 2-3) cpuset.mems follow the cores: set before any task joins,
 * widened before cpus grow onto a node, narrowed after they leave it; an
 * in-place cgroup's mems are put back. One node: mems are never written. */
static void test_mems_follow_cores(void **state)
{
	struct act_opts o = {
		.sz = sizeof(o),
		.parent = "unit",
		.state_dir = "",
		.log = quiet,
		.resources = ACT_RES_CPUSET,
		.cgroup_ops = &fake_cg,
		.freq_ops = &fake_freq,
		.backend_ctx = &F,
	};
	struct act_cpumask m;
	struct act_workload *w;
	char root[64];
	int i;

	assert_int_equal(ft_make(root, sizeof(root), 2, 1, 2, FT_ADJACENT, true), 0);
	o.topo_root = root;
	act = act_open(&o);
	assert_non_null(act);
	assert_int_equal(act_topology(act)->nnodes, 2);
	F.journal[0] = '\0';
	w = add("w", "0-1");
	assert_non_null(w);
	/* the mems are in place before the first task moves in */
	assert_non_null(strstr(F.journal, "mems unit/w 0;attach /unit/w;"));
	F.journal[0] = '\0';
	m = M("0-3");
	assert_int_equal(act_set_cpus(act, w, &m), 0);
	assert_string_equal(F.journal, "mems unit/w 0-1;cpus unit/w 0-3;");
	F.journal[0] = '\0';
	m = M("2-3");
	assert_int_equal(act_set_cpus(act, w, &m), 0);
	assert_string_equal(F.journal, "cpus unit/w 2-3;mems unit/w 1;");
	assert_int_equal(act_workload_remove(act, w), 0);

	/* in place: recorded, written with the cpus, put back */
	assert_int_equal(f_create(&F, "svc", NULL), 0);
	i = gidx(&F, "svc");
	F.g[i].cpus = M("0-3");
	snprintf(F.g[i].mems, sizeof(F.g[i].mems), "0-1");
	m = M("2");
	{
		struct act_workload_opts wo = { .sz = sizeof(wo), .cpus = &m };

		w = act_workload_add_inplace(act, "v", "svc", &wo);
	}
	assert_non_null(w);
	assert_string_equal(F.g[i].mems, "1");
	assert_int_equal(act_workload_remove(act, w), 0);
	assert_string_equal(F.g[i].mems, "0-1");
	assert_string_equal(grp_cpus("svc"), "0-3");
	act_close(act);
	act = NULL;

	/* the state file carries the mems; a cleanup after SIGKILL puts them back */
	{
		char dir[] = "/tmp/act-mems-XXXXXX", path[300], buf[1024];
		struct act_workload_opts wo = { .sz = sizeof(wo), .cpus = &m };
		FILE *sf;
		size_t n;

		assert_non_null(mkdtemp(dir));
		o.state_dir = dir;
		snprintf(path, sizeof(path), "%s/unit.state", dir);
		act = act_open(&o);
		assert_non_null(act);
		assert_non_null(act_workload_add_inplace(act, "v", "svc", &wo));
		sf = fopen(path, "r");
		assert_non_null(sf);
		n = fread(buf, 1, sizeof(buf) - 1, sf);
		buf[n] = '\0';
		fclose(sf);
		assert_non_null(strstr(buf, "inplace\tv\tsvc\t0-3\t-\t0\nmems\tv\t0-1\n"));
		act_close(act);
		act = NULL;
		assert_string_equal(F.g[i].mems, "0-1");
		/* as a killed daemon leaves it */
		sf = fopen(path, "w");
		assert_non_null(sf);
		fprintf(sf, "act-state 1\nowner\t-\ninplace\tv\tsvc\t0-3\t-\t0\nmems\tv\t0\n");
		fclose(sf);
		chmod(path, 0600);
		snprintf(F.g[i].mems, sizeof(F.g[i].mems), "1");
		assert_int_equal(act_cleanup(&o), 1);
		assert_string_equal(F.g[i].mems, "0");
		snprintf(path, sizeof(path), "rm -rf %s", dir);
		assert_int_equal(system(path), 0);
		o.state_dir = "";
	}
	ft_remove(root);

	/* one node: no mems write at all */
	assert_int_equal(ft_make(root, sizeof(root), 1, 2, 2, FT_ADJACENT, true), 0);
	act = act_open(&o);
	assert_non_null(act);
	F.journal[0] = '\0';
	w = add("w", "0-1");
	assert_non_null(w);
	m = M("0-3");
	assert_int_equal(act_set_cpus(act, w, &m), 0);
	assert_null(strstr(F.journal, "mems"));
	act_close(act);
	act = NULL;
	ft_remove(root);
}

/*
 * Options from a newer caller (a larger sz): read as libbpf reads its own
 * (common/opts.h): a tail this build does not know is fine while it is zero,
 * refused with E2BIG when it sets something this build would ignore.
 */
static void test_opts_newer_caller(void **state)
{
	struct {
		struct act_opts o;
		long newer;
	} big = { .o = {
		      .sz = sizeof(big),
		      .parent = "unit",
		      .state_dir = "",
		      .log = quiet,
		      .cgroup_ops = &fake_cg,
		      .freq_ops = &fake_freq,
		      .backend_ctx = &F,
		  } };
	struct {
		struct act_workload_opts wo;
		long newer;
	} wbig = { .wo = { .sz = sizeof(wbig) } };
	struct act_cpumask m = M("0");

	big.newer = 1;
	errno = 0;
	assert_null(act_open(&big.o));
	assert_int_equal(errno, E2BIG);
	assert_false(f_exists(&F, "unit"));
	big.newer = 0;
	act = act_open(&big.o);
	assert_non_null(act);

	wbig.wo.cpus = &m;
	wbig.newer = 1;
	errno = 0;
	assert_null(act_workload_add(act, "w", getpid(), &wbig.wo));
	assert_int_equal(errno, E2BIG);
	wbig.newer = 0;
	assert_non_null(act_workload_add(act, "w", getpid(), &wbig.wo));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpulist),
		cmocka_unit_test_setup_teardown(test_opts_newer_caller, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_caps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_add_overlap_remove, setup, teardown),
		cmocka_unit_test_setup_teardown(test_swap_and_rollback, setup, teardown),
		cmocka_unit_test_setup_teardown(test_quota, setup, teardown),
		cmocka_unit_test(test_quota_units),
		cmocka_unit_test_setup_teardown(test_inplace, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inplace_state, setup, teardown),
		cmocka_unit_test_setup_teardown(test_freq, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dry_run_no_writes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mems_follow_cores, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
