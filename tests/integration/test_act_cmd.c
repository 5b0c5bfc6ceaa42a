// SPDX-License-Identifier: MIT
/*
 * A launched command's own cgroup on the real kernel (root), in each
 * hierarchy this machine has (cgroup v2 with cgroup.kill, the v1 freezer):
 * a command that leaves 300 setsid processes ignoring SIGTERM is stopped
 * with all of them by act_cmd_stop(), and, when the daemon holding it is
 * SIGKILLed, by act_cleanup() from its state file. Processes are counted by
 * a token only this run puts in their command line.
 *
 * How long the kill may take is measured, not assumed: the actuator gives a
 * cgroup 5 s to empty after SIGKILL and then reports -EBUSY, keeping the
 * record for a later stop; under emulation (the VM lane's TCG guests) 300
 * exits can take longer than that. A stop that reports -EBUSY is polled on
 * until the processes are gone, and must end within twice the time this run
 * took to fork them (an exit undoes what a fork did: in the guests the kill
 * took 0.4-1.1 times as long as the start), or the actuator's own bound when
 * that is longer; then the stop is asked again and must succeed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../actuators/act_cmdcg.h"
#include "actuator.h"

#define NPROCS 300

static char parent[64], state_dir[128], token[32];

/* Live (not zombie) processes whose command line holds the token. */
static int count_token(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d))) {
		char path[300], buf[256], st[512];
		ssize_t r;
		int fd;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		r = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (r <= 0)
			continue; /* zombie or kernel thread */
		buf[r] = '\0';
		for (ssize_t i = 0; i < r; i++)
			if (!buf[i])
				buf[i] = ' ';
		if (!strstr(buf, token))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		r = read(fd, st, sizeof(st) - 1);
		close(fd);
		st[r > 0 ? r : 0] = '\0';
		if (strrchr(st, ')') && strrchr(st, ')')[2] != 'Z')
			n++;
	}
	closedir(d);
	return n;
}

static void kill_token(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "pkill -KILL -f '%s' 2>/dev/null", token);
	if (system(cmd) < 0)
		return;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Until at least n processes carry the token (20 s). */
static bool wait_count(int n)
{
	for (int i = 0; i < 2000; i++) {
		if (count_token() >= n)
			return true;
		sleep_ms(10);
	}
	return false;
}

/* The actuator's bound on a cgroup emptying after SIGKILL (commands.c). */
#define ACT_KILL_MS 5000

/* How long killing what took started_ms to fork may take: see the top. */
static long long kill_bound_ms(long long started_ms)
{
	return 2 * started_ms > ACT_KILL_MS ? 2 * started_ms : ACT_KILL_MS;
}

/*
 * What a stop (or cleanup) that returned err, started at t_stop with a SIGTERM
 * grace of grace_ms, ends as: -EBUSY (the actuator's 5 s after SIGKILL ran
 * out, the record kept) is waited past while the processes are still dying,
 * up to the grace plus kill_bound_ms(started_ms); then retry() is asked again (not when some are
 * still alive at the bound: -EBUSY stays). Prints what was measured.
 */
static int stop_within(int err, long long t_stop, int grace_ms, long long started_ms,
		       int (*retry)(void))
{
	long long bound = grace_ms + kill_bound_ms(started_ms);

	if (err == -EBUSY) {
		while (count_token() && now_ms() - t_stop < bound)
			sleep_ms(10);
		if (!count_token())
			err = retry();
	}
	print_message("%d processes started in %lld ms, stopped in %lld ms (bound %lld ms)\n",
		      NPROCS + 1, started_ms, now_ms() - t_stop, bound);
	return err;
}

static struct act *stop_act; /* what retry_stop() stops */

static int retry_stop(void)
{
	return act_cmd_stop(stop_act, "web", 0);
}

static struct act_opts cleanup_opts; /* what retry_cleanup() repairs */

static int retry_cleanup(void)
{
	return act_cleanup(&cleanup_opts);
}

static struct act_opts opts_for(enum act_cmd_cgroup kind)
{
	return (struct act_opts){ .sz = sizeof(struct act_opts),
				  .parent = parent,
				  .state_dir = state_dir,
				  .resources = ACT_RES_CPUSET,
				  .log_level = ACT_LOG_WARN,
				  .cmd_cgroup = kind };
}

/* This program's argument area (main's argv[0] up to the last argument's end). */
static char *arg_area;
static size_t arg_len;

/* Puts text in place of this process's command line (what /proc/PID/cmdline shows):
 * false when the argument area is too short. */
static bool set_cmdline(const char *text)
{
	size_t n = strlen(text);

	if (!arg_area || n + 1 > arg_len)
		return false;
	memset(arg_area, 0, arg_len);
	memcpy(arg_area, text, n);
	return true;
}

/* A process of the command: its command line is the token with a suffix, it
 * ignores SIGTERM (inherited), and it waits to be killed. Without room for the
 * token in the argument area it execs sleep with it instead. */
static void __attribute__((noreturn)) be_sleeper(const char *suffix)
{
	char name[64];

	snprintf(name, sizeof(name), "%s.%s", token, suffix);
	if (!set_cmdline(name)) {
		execlp("sleep", "sleep", name, (char *)NULL);
		_exit(127);
	}
	for (;;)
		pause();
}

/*
 * The command: joins the cgroup (fd) itself, ignores SIGTERM, then starts
 * NPROCS processes that each leave its session (setsid) and ignore SIGTERM
 * too. Forked without exec: under emulation (the VM lane's TCG guests) a
 * shell loop of `setsid sleep &` took 0.4 s a process, two execs each.
 */
static pid_t launch(int fd)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		char buf[32];
		int n = snprintf(buf, sizeof(buf), "%d", (int)getpid());

		if (write(fd, buf, (size_t)n) != n)
			_exit(126);
		close(fd);
		/* what exec would close: the daemon's close-on-exec files (its state
		 * lock among them, which a cleanup must find free once it is dead) */
		for (int f = 3; f < 1024; f++)
			if (fcntl(f, F_GETFD) > 0 && (fcntl(f, F_GETFD) & FD_CLOEXEC))
				close(f);
		signal(SIGTERM, SIG_IGN);
		for (int i = 0; i < NPROCS; i++) {
			pid_t c = fork();

			if (c == 0) {
				setsid();
				be_sleeper("1");
			}
		}
		be_sleeper("2");
	}
	return pid;
}

static bool cmd_dir_exists(void)
{
	char path[256];
	struct stat st;
	const char *mnts[] = { "/sys/fs/cgroup/unified", "/sys/fs/cgroup/freezer",
			       "/sys/fs/cgroup" };

	for (size_t i = 0; i < sizeof(mnts) / sizeof(mnts[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s.cmd", mnts[i], parent);
		if (!stat(path, &st))
			return true;
	}
	return false;
}

/* Is <mnt>/<parent>.cmd/web a directory (mnt NULL: the cgroup2 mount, from /proc/mounts)? */
static bool in_hierarchy(const char *mnt)
{
	char path[512], m[256] = "", line[512];
	struct stat st;
	FILE *f;

	if (!mnt) {
		f = fopen("/proc/self/mounts", "r");
		assert_non_null(f);
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "%*s %255s cgroup2", m) == 1 && strstr(line, " cgroup2 "))
				break;
			else
				m[0] = '\0';
		fclose(f);
		mnt = m;
	}
	snprintf(path, sizeof(path), "%s/%s.cmd/web", mnt, parent);
	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

/* An act for kind, or SKIP when not root or when this machine lacks the hierarchy. */
static struct act *open_kind(enum act_cmd_cgroup kind, int *fd)
{
	struct act_opts o = opts_for(kind);
	struct act *act;

	if (geteuid() != 0) {
		print_message("SKIP: needs root (cgroup writes)\n");
		skip();
	}
	act = act_open(&o);
	assert_non_null(act);
	*fd = act_cmd_prepare(act, "web");
	if (*fd == -EOPNOTSUPP) {
		print_message("SKIP: %s\n", act_last_error(act));
		act_close(act);
		skip();
	}
	assert_true(*fd >= 0);
	/* in the hierarchy asked for */
	assert_true(in_hierarchy(kind == ACT_CMD_CGROUP_FREEZER ? "/sys/fs/cgroup/freezer" : NULL));
	return act;
}

static void stop_case(enum act_cmd_cgroup kind)
{
	int fd, st;
	struct act *act = open_kind(kind, &fd);
	long long t0 = now_ms(), started, t1;
	pid_t pid = launch(fd);

	close(fd);
	assert_true(wait_count(NPROCS + 1));
	started = now_ms() - t0;
	stop_act = act;
	t1 = now_ms();
	assert_int_equal(stop_within(act_cmd_stop(act, "web", 200), t1, 200, started, retry_stop),
			 0);
	assert_int_equal(count_token(), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	act_close(act);
	assert_false(cmd_dir_exists());
}

static void cleanup_case(enum act_cmd_cgroup kind)
{
	struct act_opts o = opts_for(kind);
	int ready[2], st;
	long long t0 = now_ms(), started, t1;
	char c;
	pid_t daemon;

	if (geteuid() != 0) {
		print_message("SKIP: needs root (cgroup writes)\n");
		skip();
	}
	assert_int_equal(pipe(ready), 0);
	daemon = fork();
	assert_true(daemon >= 0);
	if (daemon == 0) {
		/* the daemon: the cgroup, the command, then it waits to be killed */
		int fd;
		struct act *act = act_open(&o);

		if (!act)
			_exit(1);
		fd = act_cmd_prepare(act, "web");
		c = fd == -EOPNOTSUPP ? 's' : fd < 0 ? 'e' : 'r';
		if (fd >= 0) {
			launch(fd);
			close(fd);
		}
		if (write(ready[1], &c, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	if (c == 's') {
		kill(daemon, SIGKILL);
		waitpid(daemon, NULL, 0);
		assert_int_equal(act_cleanup(&o), 1);
		print_message("SKIP: no such hierarchy here\n");
		skip();
	}
	assert_int_equal(c, 'r');
	assert_true(wait_count(NPROCS + 1));
	started = now_ms() - t0;
	kill(daemon, SIGKILL);
	assert_int_equal(waitpid(daemon, &st, 0), daemon);
	/* they outlive the daemon (polled: a process in the middle of its exec, the
	 * command's sh becoming its last sleep, has no command line for a moment) */
	assert_true(wait_count(NPROCS + 1));
	cleanup_opts = o;
	t1 = now_ms();
	assert_int_equal(
	    stop_within(act_cleanup(&o), t1, ACT_PGRP_GRACE_MS, started, retry_cleanup), 1);
	assert_int_equal(count_token(), 0);
	assert_false(cmd_dir_exists());
}

/* The cgroup2 mount point into m ("" when there is none). */
static void v2_mount(char *m, size_t len)
{
	char line[512], dir[256];
	FILE *f = fopen("/proc/self/mounts", "r");

	m[0] = '\0';
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %255s", dir) == 1 && strstr(line, " cgroup2 ")) {
			snprintf(m, len, "%s", dir);
			break;
		}
	fclose(f);
}

/*
 * On a v2-only machine placed tasks live in the workload's group
 * <parent>/<wl>, not in the command's cgroup: the shared kind's kill covers
 * both. Shown on this machine's v2 hierarchy with both groups made by hand.
 */
static void test_v2_shared_kill_covers_workload_group(void **state)
{
	char mnt[256], top[400], wlg[512], procs[600];
	struct act_cmdcg c = { ACT_CMD_V2_SHARED, mnt, parent, "web" };
	size_t left = 99;
	long long t0, started;
	pid_t a, b;
	int fd, st;

	if (geteuid() != 0) {
		print_message("SKIP: needs root (cgroup writes)\n");
		skip();
	}
	v2_mount(mnt, sizeof(mnt));
	if (!mnt[0]) {
		print_message("SKIP: no cgroup v2 hierarchy mounted\n");
		skip();
	}
	snprintf(top, sizeof(top), "%s/%s", mnt, parent);
	snprintf(wlg, sizeof(wlg), "%s/web", top);
	assert_int_equal(mkdir(top, 0755), 0);
	assert_int_equal(mkdir(wlg, 0755), 0);
	fd = act__cmd_create(&c);
	assert_true(fd >= 0);
	t0 = now_ms();
	a = launch(fd); /* in the command's cgroup, NPROCS + 1 processes */
	close(fd);
	assert_true(wait_count(NPROCS + 1));
	started = now_ms() - t0;
	/* one more, placed: in the workload's group */
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", wlg);
	fd = open(procs, O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	b = fork();
	assert_true(b >= 0);
	if (b == 0) {
		char buf[64];
		int n = snprintf(buf, sizeof(buf), "%d", (int)getpid());

		if (write(fd, buf, (size_t)n) != n)
			_exit(126);
		snprintf(buf, sizeof(buf), "%s.3", token);
		execlp("sleep", "sleep", buf, (char *)NULL);
		_exit(127);
	}
	close(fd);
	assert_true(wait_count(NPROCS + 2));
	assert_int_equal(act__cmd_count(&c), NPROCS + 2);
	/* bounded by what starting them took (kill_bound_ms()) */
	assert_int_equal(act__cmd_kill(&c, (int)kill_bound_ms(started), &left), 0);
	assert_int_equal(left, 0);
	assert_int_equal(count_token(), 0);
	assert_int_equal(waitpid(a, &st, 0), a);
	assert_int_equal(waitpid(b, &st, 0), b);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	assert_int_equal(act__cmd_remove(&c), 0);
	assert_int_equal(rmdir(wlg), 0);
	assert_int_equal(rmdir(top), 0);
}

static void test_v2_stop(void **state)
{
	stop_case(ACT_CMD_CGROUP_V2);
}

static void test_freezer_stop(void **state)
{
	stop_case(ACT_CMD_CGROUP_FREEZER);
}

static void test_v2_cleanup_after_sigkill(void **state)
{
	cleanup_case(ACT_CMD_CGROUP_V2);
}

static void test_freezer_cleanup_after_sigkill(void **state)
{
	cleanup_case(ACT_CMD_CGROUP_FREEZER);
}

static int setup(void **state)
{
	snprintf(parent, sizeof(parent), "parties-test-%d", getpid());
	snprintf(state_dir, sizeof(state_dir), "/tmp/act-test-%d", getpid());
	snprintf(token, sizeof(token), "%d", 500000 + getpid());
	return 0;
}

static int teardown(void **state)
{
	struct act_opts o = opts_for(ACT_CMD_CGROUP_AUTO);
	char cmd[256];

	char mnt[256], dir[600];

	kill_token();
	act_cleanup(&o);
	/* what test_v2_shared_kill_covers_workload_group made by hand */
	v2_mount(mnt, sizeof(mnt));
	if (mnt[0]) {
		sleep_ms(100); /* the killed leave the cgroups */
		snprintf(dir, sizeof(dir), "%s/%s.cmd/web", mnt, parent);
		rmdir(dir);
		snprintf(dir, sizeof(dir), "%s/%s.cmd", mnt, parent);
		rmdir(dir);
		snprintf(dir, sizeof(dir), "%s/%s/web", mnt, parent);
		rmdir(dir);
		snprintf(dir, sizeof(dir), "%s/%s", mnt, parent);
		rmdir(dir);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", state_dir);
	if (system(cmd) < 0)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	/* the argument strings are contiguous: the command's processes write their
	 * token over them (set_cmdline()) */
	arg_area = argv[0];
	arg_len = (size_t)(argv[argc - 1] + strlen(argv[argc - 1]) + 1 - argv[0]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_v2_stop, teardown),
		cmocka_unit_test_teardown(test_freezer_stop, teardown),
		cmocka_unit_test_teardown(test_v2_cleanup_after_sigkill, teardown),
		cmocka_unit_test_teardown(test_freezer_cleanup_after_sigkill, teardown),
		cmocka_unit_test_teardown(test_v2_shared_kill_covers_workload_group, teardown),
	};

	setup(NULL);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
