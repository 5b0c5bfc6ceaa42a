// SPDX-License-Identifier: MIT
/*
 * Actuators against the real cgroup v1 cpuset and cpu controllers (root):
 * real processes (multi-threaded, one that forks and one that starts a thread
 * after placement), core reassignment (grow/shrink, refused overlap, swap),
 * restore on close (cgroups and affinity), repair after the actuating process
 * is SIGKILLed mid-change, dry-run, and the v2 path where v2 cpuset exists.
 *
 * Every test uses a throwaway parent "parties-test-<pid>" and a private state
 * directory, and its teardown removes processes and cgroups whatever happened.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "actuator.h"

#define MAXW 4

struct worker {
	pid_t pid;
	int cmd, resp; /* pipes to / from the worker */
};

static char parent[64], state_dir[128];
static struct worker workers[MAXW];
static struct act *act;

/* ---------------------------------------------------------------- workers */

static void *idle_thread(void *arg)
{
	for (;;)
		pause();
	return NULL;
}

static void worker_main(int nthreads, int cmd, int resp)
{
	pthread_t t;
	char c;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (int i = 0; i < nthreads; i++)
		pthread_create(&t, NULL, idle_thread, NULL);
	c = 'r';
	if (write(resp, &c, 1) != 1)
		_exit(1);
	while (read(cmd, &c, 1) == 1) {
		int v = 0;

		if (c == 'f') { /* fork a child that also starts a thread */
			pid_t p = fork();

			if (p == 0) {
				prctl(PR_SET_PDEATHSIG, SIGKILL);
				pthread_create(&t, NULL, idle_thread, NULL);
				for (;;)
					pause();
			}
			v = p;
		} else if (c == 't') { /* start another thread */
			pthread_create(&t, NULL, idle_thread, NULL);
			v = 1;
		}
		if (write(resp, &v, sizeof(v)) != sizeof(v))
			_exit(1);
	}
	_exit(0);
}

static pid_t spawn(int slot, int nthreads)
{
	int c[2], r[2];
	char ch;
	pid_t p;

	assert_int_equal(pipe(c), 0);
	assert_int_equal(pipe(r), 0);
	p = fork();
	assert_true(p >= 0);
	if (p == 0) {
		close(c[1]);
		close(r[0]);
		worker_main(nthreads, c[0], r[1]);
	}
	close(c[0]);
	close(r[1]);
	workers[slot].pid = p;
	workers[slot].cmd = c[1];
	workers[slot].resp = r[0];
	assert_int_equal(read(r[0], &ch, 1), 1);
	return p;
}

static int ask(int slot, char c)
{
	int v = -1;

	assert_int_equal(write(workers[slot].cmd, &c, 1), 1);
	assert_int_equal(read(workers[slot].resp, &v, sizeof(v)), sizeof(v));
	return v;
}

static void kill_workers(void)
{
	for (int i = 0; i < MAXW; i++) {
		if (workers[i].pid <= 0)
			continue;
		kill(workers[i].pid, SIGKILL);
		waitpid(workers[i].pid, NULL, 0);
		close(workers[i].cmd);
		close(workers[i].resp);
		workers[i].pid = 0;
	}
}

/* ---------------------------------------------------------------- checks */

/* Every thread of pid (and of its children, one level) has this Cpus_allowed_list. */
static int check_tree_cpus(pid_t pid, const char *want, int depth)
{
	char path[512], line[256];
	struct dirent *de;
	int bad = 0, n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/status", pid, de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "Cpus_allowed_list:", 18)) {
				char *v = line + 18;

				v += strspn(v, " \t");
				v[strcspn(v, "\n")] = '\0';
				n++;
				if (strcmp(v, want)) {
					print_message(
					    "thread %s of %d: Cpus_allowed_list %s, want %s\n",
					    de->d_name, pid, v, want);
					bad++;
				}
			}
		fclose(f);
		if (depth > 0) {
			/* children of this thread */
			FILE *cf;
			int child;

			snprintf(path, sizeof(path), "/proc/%d/task/%s/children", pid, de->d_name);
			cf = fopen(path, "r");
			while (cf && fscanf(cf, "%d", &child) == 1) {
				int r = check_tree_cpus(child, want, depth - 1);

				bad += r < 0 ? 1 : r;
			}
			if (cf)
				fclose(cf);
		}
	}
	closedir(d);
	return n ? bad : -1;
}

/* The cgroup path of pid in controller ctrl ("cpuset", "cpu"). */
static void cgroup_of(pid_t pid, const char *ctrl, char *out, size_t len)
{
	char path[64], line[512];
	FILE *f;

	out[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL, *tok, *save;

		if (!b)
			continue;
		*b = '\0';
		for (tok = strtok_r(a + 1, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
			if (!strcmp(tok, ctrl)) {
				b[1 + strcspn(b + 1, "\n")] = '\0';
				snprintf(out, len, "%s", b + 1);
			}
	}
	fclose(f);
}

static bool dir_exists(const char *fmt, ...)
{
	char path[512];
	struct stat st;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static void read_str(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	buf[0] = '\0';
	if (f) {
		if (fgets(buf, (int)len, f))
			buf[strcspn(buf, "\n")] = '\0';
		fclose(f);
	}
}

/* Last resort, if the code under test failed to clean up: move every task to the
 * root and rmdir, depth first, in both controllers. */
static void force_clean_dir(const char *dir)
{
	char path[512], root_tasks[512];
	struct dirent *de;
	DIR *d = opendir(dir);
	FILE *f;
	int tid;

	if (!d)
		return;
	while ((de = readdir(d)))
		if (de->d_type == DT_DIR && de->d_name[0] != '.') {
			snprintf(path, sizeof(path), "%.250s/%.200s", dir, de->d_name);
			force_clean_dir(path);
		}
	closedir(d);
	snprintf(path, sizeof(path), "%s/tasks", dir);
	snprintf(root_tasks, sizeof(root_tasks), "%.*s/tasks", (int)(strchr(dir + 15, '/') - dir),
		 dir);
	f = fopen(path, "r");
	while (f && fscanf(f, "%d", &tid) == 1) {
		FILE *r = fopen(root_tasks, "w");

		if (r) {
			fprintf(r, "%d\n", tid);
			fclose(r);
		}
	}
	if (f)
		fclose(f);
	rmdir(dir);
}

static void force_clean(void)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/fs/cgroup/cpuset/%s", parent);
	force_clean_dir(path);
	snprintf(path, sizeof(path), "/sys/fs/cgroup/cpu/%s", parent);
	force_clean_dir(path);
	snprintf(path, sizeof(path), "%s/%s.state", state_dir, parent);
	unlink(path);
	rmdir(state_dir);
}

/* ---------------------------------------------------------------- fixtures */

static void log_cb(enum act_log_level level, const char *msg, void *ctx)
{
	print_message("  [%d] %s\n", level, msg);
}

static struct act_opts opts(bool dry_run)
{
	struct act_opts o = {
		.sz = sizeof(o),
		.parent = parent,
		.dry_run = dry_run,
		.state_dir = state_dir,
		.cgroup_mode = ACT_CGROUP_V1,
		.log = log_cb,
		.log_level = ACT_LOG_INFO,
	};
	return o;
}

static int setup(void **state)
{
	snprintf(parent, sizeof(parent), "parties-test-%d", getpid());
	snprintf(state_dir, sizeof(state_dir), "/tmp/act-test-%d", getpid());
	if (geteuid() != 0)
		return 0;
	return 0;
}

static int teardown(void **state)
{
	act_close(act);
	act = NULL;
	kill_workers();
	force_clean();
	return 0;
}

#define NEED_ROOT()                                                          \
	do {                                                                 \
		if (geteuid() != 0) {                                        \
			print_message("SKIP: needs root (cgroup writes)\n"); \
			skip();                                              \
		}                                                            \
	} while (0)

/*
 * The v1 tests force ACT_CGROUP_V1; a cgroup v2 only host (Debian 12, systemd) has no v1
 * cpuset hierarchy to force, so they report why and skip there (test_v2 covers v2).
 */
#define NEED_V1()                                                                               \
	do {                                                                                    \
		if (access("/sys/fs/cgroup/cpuset/cpuset.cpus", F_OK) != 0) {                   \
			print_message("SKIP: needs the cgroup v1 cpuset hierarchy at "          \
				      "/sys/fs/cgroup/cpuset (this host is cgroup v2 only)\n"); \
			skip();                                                                 \
		}                                                                               \
	} while (0)

static struct act_cpumask mask(const char *list)
{
	struct act_cpumask m;

	assert_int_equal(act_cpumask_parse(list, &m), 0);
	return m;
}

static void need_two_cpus(void)
{
	const struct act_caps *c = act_caps(act);

	if (c->nr_cpus < 2) {
		print_message("SKIP: needs 2 cpus in the root cpuset, have %d\n", c->nr_cpus);
		skip();
	}
}

/* ---------------------------------------------------------------- tests */

static void test_place_grow_shrink(void **state)
{
	struct act_opts o;
	struct act_workload_opts wo = { .sz = sizeof(wo) };
	struct act_workload *a;
	struct act_cpumask m;
	struct act_current st;
	char cg[256], want[256];
	pid_t pa;

	NEED_ROOT();
	NEED_V1();
	o = opts(false);
	act = act_open(&o);
	assert_non_null(act);
	assert_true(act_caps(act)->cpuset);
	assert_int_equal(act_caps(act)->cgroup_version, 1);
	need_two_cpus();
	assert_true(dir_exists("/sys/fs/cgroup/cpuset/%s", parent));

	pa = spawn(0, 3); /* 4 threads */
	m = mask("0");
	wo.cpus = &m;
	a = act_workload_add(act, "a", pa, &wo);
	assert_non_null(a);
	snprintf(want, sizeof(want), "/%s/a", parent);
	cgroup_of(pa, "cpuset", cg, sizeof(cg));
	assert_string_equal(cg, want);
	cgroup_of(pa, "cpu", cg, sizeof(cg));
	assert_string_equal(cg, want);
	assert_int_equal(check_tree_cpus(pa, "0", 1), 0);

	/* a thread started after placement inherits the cgroup */
	assert_int_equal(ask(0, 't'), 1);
	assert_int_equal(check_tree_cpus(pa, "0", 1), 0);

	/* grow to both cpus, shrink back */
	m = mask("0-1");
	assert_int_equal(act_set_cpus(act, a, &m), 0);
	assert_int_equal(check_tree_cpus(pa, "0-1", 1), 0);
	assert_int_equal(act_get(act, a, &st), 0);
	assert_true(act_cpumask_equal(&st.cpus, &m));
	assert_int_equal(st.nr_tasks, 5);
	m = mask("1");
	assert_int_equal(act_set_cpus(act, a, &m), 0);
	assert_int_equal(check_tree_cpus(pa, "1", 1), 0);
	read_str("/sys/fs/cgroup/cpuset/cpuset.cpus", cg, sizeof(cg)); /* untouched root */
	snprintf(want, sizeof(want), "/sys/fs/cgroup/cpuset/%s/a/cpuset.cpus", parent);
	read_str(want, cg, sizeof(cg));
	assert_string_equal(cg, "1");

	/* bad requests change nothing */
	m = mask("");
	assert_int_equal(act_set_cpus(act, a, &m), -EINVAL);
	m = mask("1000");
	assert_int_equal(act_set_cpus(act, a, &m), -ERANGE);
	assert_int_equal(check_tree_cpus(pa, "1", 1), 0);

	assert_int_equal(act_workload_remove(act, a), 0);
	assert_false(dir_exists("/sys/fs/cgroup/cpuset/%s/a", parent));
	cgroup_of(pa, "cpuset", cg, sizeof(cg));
	assert_string_equal(cg, "/");
	assert_int_equal(check_tree_cpus(pa, "0-1", 1), 0);
}

static void test_overlap_and_swap(void **state)
{
	struct act_opts o = opts(false);
	struct act_workload_opts wo = { .sz = sizeof(wo) };
	struct act_workload *a, *b;
	struct act_cpumask m0 = mask("0"), m1 = mask("1"), both = mask("0-1");
	struct act_assign swap[2];
	pid_t pa, pb, child;

	NEED_ROOT();
	NEED_V1();
	act = act_open(&o);
	assert_non_null(act);
	need_two_cpus();
	pa = spawn(0, 2);
	pb = spawn(1, 1);
	wo.cpus = &m0;
	a = act_workload_add(act, "a", pa, &wo);
	assert_non_null(a);
	wo.cpus = &m1;
	b = act_workload_add(act, "b", pb, &wo);
	assert_non_null(b);

	/* b forks after placement: the child (and its thread) follow b */
	child = ask(1, 'f');
	assert_true(child > 0);
	usleep(100000);
	assert_int_equal(check_tree_cpus(pb, "1", 2), 0);
	assert_int_equal(check_tree_cpus(child, "1", 0), 0);

	/* overlap refused, with a message naming the other workload */
	wo.cpus = &m0;
	assert_null(act_workload_add(act, "c", pa, &wo)); /* cpus of a */
	assert_int_equal(errno, EBUSY);
	assert_int_equal(act_set_cpus(act, a, &both), -EBUSY);
	assert_non_null(strstr(act_last_error(act), "overlap workload b"));
	assert_int_equal(check_tree_cpus(pa, "0", 1), 0);

	/* swap: one change */
	swap[0].wl = a;
	swap[0].cpus = m1;
	swap[1].wl = b;
	swap[1].cpus = m0;
	assert_int_equal(act_assign_cpus(act, swap, 2), 0);
	assert_int_equal(check_tree_cpus(pa, "1", 1), 0);
	assert_int_equal(check_tree_cpus(pb, "0", 2), 0);
	assert_int_equal(check_tree_cpus(child, "0", 0), 0);
	assert_true(act_cpumask_equal(act_workload_cpus(a), &m1));
	/* and back */
	swap[0].cpus = m0;
	swap[1].cpus = m1;
	assert_int_equal(act_assign_cpus(act, swap, 2), 0);
	assert_int_equal(check_tree_cpus(pa, "0", 1), 0);
	assert_int_equal(check_tree_cpus(pb, "1", 2), 0);

	/* a swap that would overlap in the end is refused as a whole */
	swap[0].cpus = both;
	swap[1].cpus = m1;
	assert_int_equal(act_assign_cpus(act, swap, 2), -EBUSY);
	assert_int_equal(check_tree_cpus(pa, "0", 1), 0);
	assert_int_equal(check_tree_cpus(pb, "1", 2), 0);

	/* close restores: everything back in the root, cgroups gone */
	act_close(act);
	act = NULL;
	assert_false(dir_exists("/sys/fs/cgroup/cpuset/%s", parent));
	assert_false(dir_exists("/sys/fs/cgroup/cpu/%s", parent));
	assert_int_equal(check_tree_cpus(pa, "0-1", 1), 0);
	assert_int_equal(check_tree_cpus(pb, "0-1", 2), 0);
}

static void test_restore_affinity(void **state)
{
	struct act_opts o = opts(false);
	struct act_workload_opts wo = { .sz = sizeof(wo) };
	struct act_cpumask m0 = mask("0");
	cpu_set_t cs;
	char cg[256];
	pid_t pa;

	NEED_ROOT();
	NEED_V1();
	act = act_open(&o);
	assert_non_null(act);
	need_two_cpus();
	pa = spawn(0, 0);
	/* a workload pinned by its user to cpu 1 gets that pin back */
	CPU_ZERO(&cs);
	CPU_SET(1, &cs);
	assert_int_equal(sched_setaffinity(pa, sizeof(cs), &cs), 0);
	wo.cpus = &m0;
	assert_non_null(act_workload_add(act, "a", pa, &wo));
	assert_int_equal(check_tree_cpus(pa, "0", 0), 0);
	assert_int_equal(act_restore(act), 0);
	assert_int_equal(check_tree_cpus(pa, "1", 0), 0);
	cgroup_of(pa, "cpuset", cg, sizeof(cg));
	assert_string_equal(cg, "/");
	assert_false(dir_exists("/sys/fs/cgroup/cpuset/%s", parent));
}

/* The actuating process is SIGKILLed in the middle of its changes; a new
 * instance with the same parent puts everything back. */
static void test_killed_midway(void **state)
{
	struct act_cpumask m0 = mask("0"), m1 = mask("1");
	int ready[2];
	pid_t pa, pb, ctl;
	char c, cg[256], path[512];
	struct stat st;

	NEED_ROOT();
	NEED_V1();
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		print_message("SKIP: needs 2 cpus\n");
		skip();
	}
	pa = spawn(0, 2);
	pb = spawn(1, 1);
	assert_int_equal(pipe(ready), 0);
	ctl = fork();
	assert_true(ctl >= 0);
	if (ctl == 0) {
		struct act_opts o = opts(false);
		struct act_workload_opts wo = { .sz = sizeof(wo), .quota_mc = 500 };
		struct act_workload *a, *b;
		struct act_assign sw[2];
		struct act *x;

		close(ready[0]);
		o.log = NULL;
		x = act_open(&o);
		if (!x)
			_exit(2);
		wo.cpus = &m0;
		a = act_workload_add(x, "a", pa, &wo);
		wo.cpus = &m1;
		b = act_workload_add(x, "b", pb, &wo);
		if (!a || !b)
			_exit(3);
		if (write(ready[1], "r", 1) != 1)
			_exit(4);
		/* keep changing until killed */
		for (int i = 0;; i++) {
			sw[0].wl = a;
			sw[0].cpus = i & 1 ? m0 : m1;
			sw[1].wl = b;
			sw[1].cpus = i & 1 ? m1 : m0;
			act_assign_cpus(x, sw, 2);
			act_workload_set_quota(x, a, i & 1 ? 500 : 1500);
		}
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	usleep(30000);
	kill(ctl, SIGKILL);
	waitpid(ctl, NULL, 0);

	/* leftovers are there */
	assert_true(dir_exists("/sys/fs/cgroup/cpuset/%s/a", parent));
	cgroup_of(pa, "cpuset", cg, sizeof(cg));
	assert_non_null(strstr(cg, parent));
	snprintf(path, sizeof(path), "%s/%s.state", state_dir, parent);
	assert_int_equal(stat(path, &st), 0);

	/* a new instance cleans up */
	{
		struct act_opts o = opts(false);

		assert_int_equal(act_cleanup(&o), 1); /* something was repaired */
	}
	assert_false(dir_exists("/sys/fs/cgroup/cpuset/%s", parent));
	assert_false(dir_exists("/sys/fs/cgroup/cpu/%s", parent));
	assert_int_not_equal(stat(path, &st), 0);
	cgroup_of(pa, "cpuset", cg, sizeof(cg));
	assert_string_equal(cg, "/");
	cgroup_of(pb, "cpu", cg, sizeof(cg));
	assert_string_equal(cg, "/");
	assert_int_equal(check_tree_cpus(pa, "0-1", 1), 0);
	assert_int_equal(check_tree_cpus(pb, "0-1", 1), 0);

	/* and act_open() does the same on its own */
	{
		struct act_opts o = opts(false);
		struct act_workload_opts wo = { .sz = sizeof(wo), .cpus = &m1 };
		pid_t k = fork();
		int st;

		/* a crash: a process that exits without closing (its lock goes with it) */
		if (k == 0) {
			struct act *x = act_open(&o);

			_exit(x && act_workload_add(x, "a", pa, &wo) ? 0 : 1);
		}
		assert_int_equal(waitpid(k, &st, 0), k);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		act = act_open(&o);
		assert_non_null(act);
		cgroup_of(pa, "cpuset", cg, sizeof(cg));
		assert_string_equal(cg, "/");
		assert_int_equal(check_tree_cpus(pa, "0-1", 1), 0);
		act_close(act);
		act = NULL;
		assert_false(dir_exists("/sys/fs/cgroup/cpuset/%s", parent));
	}
}

static void test_dry_run(void **state)
{
	struct act_opts o = opts(true);
	struct act_workload_opts wo = { .sz = sizeof(wo), .quota_mc = 500 };
	struct act_cpumask m0 = mask("0"), m1 = mask("1");
	struct act_workload *a;
	struct act_current st;
	char cg[256];
	pid_t pa;

	NEED_ROOT();
	NEED_V1();
	act = act_open(&o);
	assert_non_null(act);
	assert_true(act_caps(act)->dry_run);
	need_two_cpus();
	assert_false(dir_exists("/sys/fs/cgroup/cpuset/%s", parent));
	pa = spawn(0, 1);
	wo.cpus = &m0;
	a = act_workload_add(act, "a", pa, &wo);
	assert_non_null(a);
	assert_int_equal(act_set_cpus(act, a, &m1), 0);
	assert_int_equal(act_get(act, a, &st), 0);
	assert_true(act_cpumask_equal(&st.cpus, &m1));
	assert_int_equal(st.quota_us, 50000);
	assert_int_equal(st.nr_tasks, 2);
	/* nothing changed on the machine */
	assert_false(dir_exists("/sys/fs/cgroup/cpuset/%s", parent));
	assert_false(dir_exists("/sys/fs/cgroup/cpu/%s", parent));
	cgroup_of(pa, "cpuset", cg, sizeof(cg));
	assert_string_equal(cg, "/");
	assert_int_equal(check_tree_cpus(pa, "0-1", 1), 0);
	assert_false(dir_exists("%s", state_dir));
}

static void test_v2(void **state)
{
	struct act_opts o = opts(false);
	const struct act_caps *c;
	struct act_workload_opts wo = { .sz = sizeof(wo) };
	struct act_cpumask m0 = mask("0");
	pid_t pa;

	NEED_ROOT();
	o.cgroup_mode = ACT_CGROUP_V2;
	o.resources = ACT_RES_CPUSET;
	act = act_open(&o);
	assert_non_null(act);
	c = act_caps(act);
	if (!c->cpuset) {
		/* the report says why, and nothing failed */
		assert_true(strlen(c->cpuset_reason) > 0);
		print_message("SKIP: cgroup v2 cpuset unavailable: %s\n", c->cpuset_reason);
		skip();
	}
	assert_int_equal(c->cgroup_version, 2);
	pa = spawn(0, 2);
	wo.cpus = &m0;
	assert_non_null(act_workload_add(act, "a", pa, &wo));
	assert_int_equal(check_tree_cpus(pa, "0", 1), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_place_grow_shrink, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overlap_and_swap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restore_affinity, setup, teardown),
		cmocka_unit_test_setup_teardown(test_killed_midway, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dry_run, setup, teardown),
		cmocka_unit_test_setup_teardown(test_v2, setup, teardown),
	};

	alarm(120);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
