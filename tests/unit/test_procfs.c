// SPDX-License-Identifier: MIT
/*
 * common/procfs: the stat parser on lines /proc may really print, the one
 * meaning of alive on real processes (this one, a zombie, a zombie leader
 * whose thread still runs, a pid that does not exist) and the descendant
 * walker on a process tree forked here.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "procfs.h"

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Wait (at most 5 s) until pid shows state in stat. */
static bool wait_state(pid_t pid, char state)
{
	struct procfs_stat st;

	for (int i = 0; i < 500; i++) {
		if (!procfs_stat(pid, &st) && st.state == state)
			return true;
		sleep_ms(10);
	}
	return false;
}

static bool contains(const pid_t *v, size_t n, pid_t x)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

static size_t index_of(const pid_t *v, size_t n, pid_t x)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == x)
			return i;
	return n;
}

/* A child that dies with its parent, so a failed assertion leaves nothing. */
static pid_t fork_child(void)
{
	pid_t parent = getpid(), pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
	}
	return pid;
}

static void test_parse_comm_with_spaces_and_parens(void **state)
{
	/* a comm may hold anything but NUL, ')' and " (" included */
	const char *line = "4242 (a) b (c) d)) S 17 4242 4242 0 -1 4194560 120 0 3 0 7 5 0 0 20 0 "
			   "1 0 123456 10240000 350 18446744073709551615 1 1 0 0 0 0 0 4096 "
			   "0 0 0 17 1 0 0 0 0 0\n";
	const char *zombie = "7 (z) Z 1 7 7 0 -1 4228108 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0\n";
	const char *long_comm =
	    "9 (xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	    ") R 1 0 0 0 0 0 0 0 0 0 1 2 0 0 0 0 0 0 3\n";
	struct procfs_stat st;

	assert_int_equal(procfs_stat_parse(line, &st), 0);
	assert_int_equal(st.pid, 4242);
	assert_string_equal(st.comm, "a) b (c) d)");
	assert_int_equal(st.state, 'S');
	assert_int_equal(st.ppid, 17);
	assert_int_equal(st.flags, 4194560);
	assert_int_equal(st.utime, 7);
	assert_int_equal(st.stime, 5);
	assert_int_equal(st.starttime, 123456);
	assert_false(procfs_kthread(&st));

	assert_int_equal(procfs_stat_parse(zombie, &st), 0);
	assert_int_equal(st.state, 'Z');
	assert_int_equal(st.starttime, 99);

	/* a comm longer than the field is cut, not overflowed */
	assert_int_equal(procfs_stat_parse(long_comm, &st), 0);
	assert_int_equal(strlen(st.comm), sizeof(st.comm) - 1);
	assert_int_equal(st.starttime, 3);

	/* no ')', fields missing, nothing */
	assert_int_equal(procfs_stat_parse("4242 (abc S 17 4242", &st), -EINVAL);
	assert_int_equal(procfs_stat_parse("4242 (abc) S 17 4242 4242 0 -1 0", &st), -EINVAL);
	assert_int_equal(procfs_stat_parse(") 4242 (", &st), -EINVAL);
	assert_int_equal(procfs_stat_parse("", &st), -EINVAL);
}

static void test_kthread(void **state)
{
	struct procfs_stat st = { .pid = 100, .ppid = 50 };

	assert_false(procfs_kthread(&st));
	st.flags = PROCFS_PF_KTHREAD;
	assert_true(procfs_kthread(&st));
	st.flags = 0;
	st.ppid = 2;
	assert_true(procfs_kthread(&st));
	st.ppid = 0;
	st.pid = 2;
	assert_true(procfs_kthread(&st));
}

static pthread_barrier_t bar;
static pid_t thread_tid;

static void *thread_fn(void *arg)
{
	thread_tid = gettid();
	pthread_barrier_wait(&bar); /* tid published */
	pthread_barrier_wait(&bar); /* checks done */
	return NULL;
}

static void test_self(void **state)
{
	struct procfs_stat st;
	pid_t *tids = NULL;
	size_t n = 0, cap = 0;
	char comm[64];
	pthread_t th;

	assert_int_equal(procfs_stat(getpid(), &st), 0);
	assert_int_equal(st.pid, getpid());
	assert_int_equal(st.ppid, getppid());
	assert_int_equal(st.state, 'R'); /* it is running: it reads the file */
	assert_false(procfs_kthread(&st));
	assert_int_equal(procfs_comm(getpid(), comm, sizeof(comm)), 0);
	assert_string_equal(comm, st.comm);
	assert_true(st.starttime > 0);
	assert_int_equal(procfs_starttime(getpid()), st.starttime);

	assert_true(procfs_alive(getpid(), 0));
	assert_true(procfs_alive(getpid(), st.starttime));
	/* another start time: the pid's earlier (or later) owner is not alive */
	assert_false(procfs_alive(getpid(), st.starttime + 1));
	assert_int_equal(procfs_tgid(getpid()), getpid());

	assert_int_equal(pthread_barrier_init(&bar, NULL, 2), 0);
	assert_int_equal(pthread_create(&th, NULL, thread_fn, NULL), 0);
	pthread_barrier_wait(&bar);
	assert_int_equal(procfs_tgid(thread_tid), getpid());
	assert_true(procfs_alive(thread_tid, 0));
	assert_int_equal(procfs_threads(getpid(), &tids, &n, &cap), 0);
	assert_int_equal(n, 2);
	assert_true(contains(tids, n, getpid()));
	assert_true(contains(tids, n, thread_tid));
	pthread_barrier_wait(&bar);
	pthread_join(th, NULL);
	pthread_barrier_destroy(&bar);
	free(tids);
}

static void test_no_such_pid(void **state)
{
	struct procfs_stat st;
	pid_t *v = NULL;
	size_t n = 1, cap = 0;
	char comm[16];
	FILE *f;
	int max = 4194304;

	/* pids run below pid_max: pid_max itself never exists */
	f = fopen("/proc/sys/kernel/pid_max", "re");
	if (f) {
		assert_int_equal(fscanf(f, "%d", &max), 1);
		fclose(f);
	}
	assert_false(procfs_alive(max, 0));
	assert_false(procfs_alive(0, 0));
	assert_false(procfs_alive(-1, 0));
	assert_int_equal(procfs_stat(max, &st), -ENOENT);
	assert_int_equal(procfs_starttime(max), 0);
	assert_int_equal(procfs_tgid(max), -ESRCH);
	assert_int_equal(procfs_comm(max, comm, sizeof(comm)), -ENOENT);
	n = 0;
	assert_int_equal(procfs_threads(max, &v, &n, &cap), 0);
	assert_int_equal(n, 0);
	assert_int_equal(procfs_descendants(max, &v, &n), 0);
	assert_int_equal(n, 0);
	free(v);
}

static void test_zombie_is_not_alive(void **state)
{
	pid_t pid = fork_child(), *v = NULL;
	size_t n = 0, cap = 0;
	unsigned long long start;

	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_true(wait_state(pid, 'Z')); /* not reaped yet */
	assert_false(procfs_alive(pid, 0));
	/* still the same process: it keeps its start time until reaped */
	start = procfs_starttime(pid);
	assert_true(start > 0);
	assert_false(procfs_alive(pid, start));
	assert_int_equal(procfs_threads(pid, &v, &n, &cap), 0);
	assert_int_equal(n, 0);
	assert_int_equal(procfs_descendants(getpid(), &v, &n), 0);
	assert_false(contains(v, n, pid));
	free(v);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	assert_false(procfs_alive(pid, start));
}

static void *run_forever(void *arg)
{
	for (;;)
		pause();
	return NULL;
}

/* Its main thread called pthread_exit(): /proc says 'Z', a thread runs. */
static void test_zombie_leader_with_a_running_thread_is_alive(void **state)
{
	pid_t pid = fork_child(), *v = NULL;
	size_t n = 0, cap = 0;

	assert_true(pid >= 0);
	if (pid == 0) {
		pthread_t th;

		if (pthread_create(&th, NULL, run_forever, NULL))
			_exit(1);
		pthread_exit(NULL);
	}
	assert_true(wait_state(pid, 'Z'));
	assert_true(procfs_alive(pid, 0));
	assert_true(procfs_alive(pid, procfs_starttime(pid)));
	/* the running thread only: the zombie leader cannot be moved */
	assert_int_equal(procfs_threads(pid, &v, &n, &cap), 0);
	assert_int_equal(n, 1);
	assert_true(v[0] != pid && v[0] > 0);
	free(v);
	v = NULL;
	assert_int_equal(procfs_descendants(getpid(), &v, &n), 0);
	assert_true(contains(v, n, pid));
	free(v);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
}

struct born {
	char role;
	pid_t pid;
};

static void tell(int fd, char role)
{
	struct born b = { role, getpid() };

	if (write(fd, &b, sizeof(b)) != sizeof(b))
		_exit(1);
}

/*
 *   test -> A -> B -> D
 *               C
 *               E (exited, never reaped: a zombie)
 */
static void test_descendants_of_a_forked_tree(void **state)
{
	pid_t pids[128] = { 0 }, *v = NULL;
	size_t n = 0;
	int fds[2];

	/* what A leaves behind comes to this process, which reaps it */
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	assert_int_equal(pipe(fds), 0);
	pids['A'] = fork_child();
	assert_true(pids['A'] >= 0);
	if (pids['A'] == 0) {
		setpgid(0, 0);
		tell(fds[1], 'A');
		if (fork_child() == 0) {
			tell(fds[1], 'B');
			if (fork_child() == 0)
				tell(fds[1], 'D');
			for (;;)
				pause();
		}
		if (fork_child() == 0)
			tell(fds[1], 'C');
		else if (fork_child() == 0) {
			tell(fds[1], 'E');
			_exit(0);
		}
		for (;;)
			pause();
	}
	close(fds[1]);
	for (int i = 0; i < 5; i++) {
		struct born b;

		assert_int_equal(read(fds[0], &b, sizeof(b)), sizeof(b));
		assert_true(b.role >= 'A' && b.role <= 'E');
		pids[(int)b.role] = b.pid;
	}
	close(fds[0]);
	assert_true(wait_state(pids['E'], 'Z'));

	assert_int_equal(procfs_descendants(pids['A'], &v, &n), 0);
	assert_int_equal(n, 3);
	assert_true(contains(v, n, pids['B']));
	assert_true(contains(v, n, pids['C']));
	assert_true(contains(v, n, pids['D']));
	/* breadth-first: the grandchild after both children */
	assert_true(index_of(v, n, pids['D']) > index_of(v, n, pids['B']));
	assert_true(index_of(v, n, pids['D']) > index_of(v, n, pids['C']));
	free(v);

	assert_int_equal(procfs_descendants(pids['B'], &v, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(v[0], pids['D']);
	free(v);

	assert_int_equal(procfs_descendants(pids['D'], &v, &n), 0);
	assert_int_equal(n, 0);
	free(v);

	assert_int_equal(procfs_descendants(getpid(), &v, &n), 0);
	assert_true(contains(v, n, pids['A']));
	assert_true(contains(v, n, pids['D']));
	assert_false(contains(v, n, pids['E']));
	assert_false(contains(v, n, getpid()));
	free(v);

	kill(-pids['A'], SIGKILL);
	while (waitpid(-1, NULL, 0) > 0)
		;
	assert_int_equal(errno, ECHILD);
	prctl(PR_SET_CHILD_SUBREAPER, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_comm_with_spaces_and_parens),
		cmocka_unit_test(test_kthread),
		cmocka_unit_test(test_self),
		cmocka_unit_test(test_no_such_pid),
		cmocka_unit_test(test_zombie_is_not_alive),
		cmocka_unit_test(test_zombie_leader_with_a_running_thread_is_alive),
		cmocka_unit_test(test_descendants_of_a_forked_tree),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
