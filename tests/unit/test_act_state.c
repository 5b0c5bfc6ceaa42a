// SPDX-License-Identifier: MIT
/*
 * The actuators' state file (actuators/records.c) on its own: every kind of
 * record survives a save and a load unchanged, a file that is not ours proves
 * nothing (-EPERM), a foreign header is refused, lines of unknown kinds (a
 * newer writer) are skipped, and the lock refuses a second holder naming the
 * first.
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

#include "../../actuators/act_records.h"

static char dir[64], path[128];

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/act-state-test-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/sub/unit.state", dir);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) ? -1 : 0;
}

static void put(const char *text, mode_t mode)
{
	FILE *f;

	snprintf(path, sizeof(path), "%s/unit.state", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

/* Field by field: padding bytes are not part of a record. */
static void same_origin(const struct act_origin *a, const struct act_origin *b)
{
	assert_string_equal(a->cpuset, b->cpuset);
	assert_string_equal(a->cpu, b->cpu);
}

static void same_wl(const struct act_rec_wl *a, const struct act_rec_wl *b)
{
	assert_string_equal(a->name, b->name);
	assert_int_equal(a->inplace, b->inplace);
	if (!a->inplace) {
		same_origin(&a->origin, &b->origin);
		return;
	}
	assert_string_equal(a->grp, b->grp);
	assert_int_equal(a->has_cpus, b->has_cpus);
	assert_true(act_cpumask_equal(&a->cpus, &b->cpus));
	assert_int_equal(a->has_quota, b->has_quota);
	assert_int_equal(a->quota_us, b->quota_us);
	assert_int_equal(a->period_us, b->period_us);
}

static void same_task(const struct act_rec_task *a, const struct act_rec_task *b)
{
	assert_int_equal(a->tid, b->tid);
	assert_int_equal(a->start, b->start);
	assert_string_equal(a->wl, b->wl);
	assert_int_equal(a->has_aff, b->has_aff);
	assert_true(act_cpumask_equal(&a->aff, &b->aff));
	same_origin(&a->origin, &b->origin);
}

/* One record of every kind, saved and loaded back field by field. */
static void test_round_trip(void **state)
{
	struct act_records r = { .owns_parent = true }, back = { 0 };
	struct act_rec_pgrp g = { .pgid = 4242, .start = 987654321ull, .wl = "web" };
	struct act_rec_wl w = { .name = "web" }, ip = { .name = "svc", .inplace = true };
	struct act_rec_wl ip2 = { .name = "bare", .inplace = true };
	struct act_rec_task t = { .tid = 4243, .start = 12345ull, .wl = "web", .has_aff = true };
	struct act_rec_task t2 = { .tid = 4244, .start = 1ull, .wl = "web" };
	struct act_rec_freq q = { .cpu = 3, .min_khz = 800000, .max_khz = 3456000 };
	struct stat st;

	snprintf(w.origin.cpuset, sizeof(w.origin.cpuset), "/system.slice/a b.service");
	snprintf(w.origin.cpu, sizeof(w.origin.cpu), "/");
	snprintf(ip.grp, sizeof(ip.grp), "system.slice/web.service");
	ip.has_cpus = ip.has_quota = true;
	assert_int_equal(act_cpumask_parse("0,2-3", &ip.cpus), 0);
	ip.quota_us = 40000;
	ip.period_us = 50000;
	snprintf(ip2.grp, sizeof(ip2.grp), "x");
	ip2.quota_us = -1;
	ip2.period_us = 100000;
	assert_int_equal(act_cpumask_parse("1,5-1023", &t.aff), 0);
	snprintf(t.origin.cpuset, sizeof(t.origin.cpuset), "/c");
	snprintf(t.origin.cpu, sizeof(t.origin.cpu), "/d");
	t2.origin = t.origin;
	assert_int_equal(act__rec_add_pgrp(&r, &g), 0);
	assert_int_equal(act__rec_add_wl(&r, &w), 0);
	assert_int_equal(act__rec_add_wl(&r, &ip), 0);
	assert_int_equal(act__rec_add_wl(&r, &ip2), 0);
	assert_int_equal(act__rec_add_task(&r, &t), 0);
	assert_int_equal(act__rec_add_task(&r, &t2), 0);
	assert_int_equal(act__rec_add_freq(&r, &q), 0);

	assert_int_equal(act__state_file_write(path, &r), 0); /* creates sub/ */
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(act__state_file_read(path, &back), 0);

	assert_true(back.owns_parent);
	assert_int_equal(back.npgrps, 1);
	assert_int_equal(back.pgrps[0].pgid, g.pgid);
	assert_int_equal(back.pgrps[0].start, g.start);
	assert_string_equal(back.pgrps[0].wl, g.wl);
	assert_int_equal(back.nwls, 3);
	same_wl(&back.wls[0], &w);
	same_wl(&back.wls[1], &ip);
	same_wl(&back.wls[2], &ip2);
	assert_int_equal(back.ntasks, 2);
	same_task(&back.tasks[0], &t);
	same_task(&back.tasks[1], &t2);
	assert_int_equal(back.nfreqs, 1);
	assert_int_equal(back.freqs[0].cpu, q.cpu);
	assert_int_equal(back.freqs[0].min_khz, q.min_khz);
	assert_int_equal(back.freqs[0].max_khz, q.max_khz);
	act__rec_free(&r);
	act__rec_free(&back);
}

static void test_refusals(void **state)
{
	struct act_records r = { 0 };

	assert_int_equal(act__state_file_read("/nonexistent/unit.state", &r), -ENOENT);
	/* writable by others: not a proof of anything */
	put("act-state 1\nowner\t-\n", 0622);
	assert_int_equal(act__state_file_read(path, &r), -EPERM);
	assert_false(r.owns_parent);
	put("something else\nowner\t-\n", 0600);
	assert_int_equal(act__state_file_read(path, &r), -EINVAL);
	/* a newer writer's kinds and a wrong field count are skipped; pgid 1 never */
	put("act-state 1\nowner\t-\nfuture\t1\t2\nfreq\t1\t2\npgrp\t1\t5\tw\nfreq\t1\t2\t3\n",
	    0600);
	assert_int_equal(act__state_file_read(path, &r), 0);
	assert_true(r.owns_parent);
	assert_int_equal(r.npgrps, 0);
	assert_int_equal(r.nfreqs, 1);
	assert_int_equal(r.freqs[0].cpu, 1);
	assert_int_equal(r.freqs[0].max_khz, 3);
	act__rec_free(&r);
}

/* One holder at a time; the second learns the first's pid. */
static void test_cmd_records(void **state)
{
	struct act_records r = { 0 }, back = { 0 };
	struct act_rec_cmd a = { .wl = "web", .kind = ACT_CMD_V2 };
	struct act_rec_cmd b = { .wl = "db", .kind = ACT_CMD_FREEZER };

	snprintf(a.mnt, sizeof(a.mnt), "/sys/fs/cgroup/unified");
	snprintf(b.mnt, sizeof(b.mnt), "/sys/fs/cgroup/freezer");
	assert_int_equal(act__rec_add_cmd(&r, &a), 0);
	assert_int_equal(act__rec_add_cmd(&r, &b), 0);
	b.kind = ACT_CMD_V2_SHARED; /* same workload: replaced */
	assert_int_equal(act__rec_add_cmd(&r, &b), 0);
	assert_int_equal(r.ncmds, 2);
	assert_int_equal(act__state_file_write(path, &r), 0);
	assert_int_equal(act__state_file_read(path, &back), 0);
	assert_int_equal(back.ncmds, 2);
	assert_string_equal(back.cmds[0].wl, "web");
	assert_int_equal(back.cmds[0].kind, ACT_CMD_V2);
	assert_string_equal(back.cmds[0].mnt, "/sys/fs/cgroup/unified");
	assert_string_equal(act__rec_find_cmd(&back, "db")->mnt, "/sys/fs/cgroup/freezer");
	assert_int_equal(act__rec_find_cmd(&back, "db")->kind, ACT_CMD_V2_SHARED);
	act__rec_drop_cmd(&back, "web");
	assert_int_equal(back.ncmds, 1);
	assert_null(act__rec_find_cmd(&back, "web"));
	act__rec_free(&back);
	/* an unknown kind or a relative mount is not ours to kill in */
	put("act-state 1\ncmd\tw\t9\t/x\ncmd\tw\t1\tx\ncmd\tw\t0\t/x\n", 0600);
	assert_int_equal(act__state_file_read(path, &back), 0);
	assert_int_equal(back.ncmds, 0);
	act__rec_free(&back);
	act__rec_free(&r);
}

static void test_lock(void **state)
{
	pid_t holder = 0;
	int fd = act__state_file_lock(path, &holder);

	assert_true(fd >= 0);
	assert_int_equal(act__state_file_lock(path, &holder), -EBUSY);
	assert_int_equal(holder, getpid());
	act__state_file_unlock(path, fd);
	fd = act__state_file_lock(path, &holder);
	assert_true(fd >= 0);
	act__state_file_unlock(path, fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cmd_records, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lock, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
