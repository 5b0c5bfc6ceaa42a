// SPDX-License-Identifier: MIT
/*
 * The test helpers' promise that a test leaves nothing behind, also when it
 * is killed (no root): tests/run.sh bounds every program with timeout(1),
 * which signals the program's process group, and tu_spawn puts each child in
 * a group of its own, so the signal never reaches them (a timed-out program
 * once left a gRPC server running for the rest of a guest's suite).
 *   - SIGTERM to a program that spawned a shell with a background child: the
 *     shell and its child (its group) are killed, and the program still dies
 *     of SIGTERM;
 *   - SIGKILL to it (timeout's -k): the spawned child dies with it;
 *   - a helper the program forked without exec inherits the handler: its own
 *     SIGTERM must not kill the program's children.
 * This process is a child subreaper, so the orphans come back to it and
 * their ends are read from waitpid, not guessed from /proc.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "../lib/testutil.h"

/* Bounds only against a hang: nothing here waits for time to pass. */
#define HANG_S 30

/* The victims' files: made here, not by their tu_tmpdir (they die by signal,
 * so their atexit cleanup never runs); this process does not call tu_init,
 * whose handler a forked victim would inherit as the owner's. */
static char dir[] = "/tmp/test_testutil.XXXXXX";

struct victim {
	pid_t prog;	/* the "test program" (calls tu_init, tu_spawn) */
	pid_t spawned;	/* what it tu_spawn'ed */
	pid_t grandkid; /* the spawned shell's background child (0: none) */
	pid_t forked;	/* a helper it forked without exec (0: none) */
};

static void write_all(int fd, const void *buf, size_t n)
{
	if (write(fd, buf, n) != (ssize_t)n)
		_exit(3);
}

/* Whether pid has run exec (its name is want's): after the prctl, so the
 * kill below tests the parent-death signal, not the race guard before it. */
static bool execed(pid_t pid, const char *want)
{
	char path[64], comm[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if (!(f = fopen(path, "r")))
		return false;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = 0;
	fclose(f);
	comm[strcspn(comm, "\n")] = 0;
	return !strcmp(comm, want);
}

/* Fork a program that spawns `sh -c 'sleep 600 & echo $!; wait'` (or a lone
 * sleep), optionally forks a helper that waits for a signal, reports the
 * pids, and waits to be killed. */
static void start_victim(struct victim *v, bool shell, bool helper)
{
	int pfd[2], ofd[2];

	memset(v, 0, sizeof(*v));
	assert_int_equal(pipe(pfd), 0);
	v->prog = fork();
	assert_true(v->prog >= 0);
	if (v->prog == 0) {
		char log[64], buf[32] = "";
		struct victim me = { .prog = getpid() };
		FILE *f;

		close(pfd[0]);
		tu_init();
		snprintf(log, sizeof(log), "%s/sh.out", dir);
		if (shell)
			me.spawned = tu_spawn(
			    (char *const[]){ "sh", "-c", "sleep 600 & echo $!; wait", NULL }, log);
		else
			me.spawned = tu_spawn((char *const[]){ "sleep", "600", NULL }, NULL);
		if (me.spawned <= 0)
			_exit(2);
		for (int i = 0; !execed(me.spawned, shell ? "sh" : "sleep"); i++) {
			if (i == HANG_S * 100)
				_exit(7);
			tu_sleep_ms(10);
		}
		if (shell) {
			if (tu_wait_file(log, HANG_S) || !(f = fopen(log, "r")))
				_exit(4);
			if (!fgets(buf, sizeof(buf), f))
				_exit(5);
			fclose(f);
			me.grandkid = atoi(buf);
		}
		if (helper) {
			if (pipe(ofd))
				_exit(6);
			me.forked = fork();
			if (me.forked == 0) {
				close(ofd[0]);
				close(ofd[1]);
				for (;;)
					pause();
			}
			close(ofd[0]);
			close(ofd[1]);
		}
		write_all(pfd[1], &me, sizeof(me));
		for (;;)
			pause();
	}
	close(pfd[1]);
	assert_int_equal(read(pfd[0], v, sizeof(*v)), sizeof(*v));
	close(pfd[0]);
	assert_true(v->spawned > 0);
}

/* Reap pid (ours, or an orphan that came back to this subreaper): its
 * terminating signal, 0 if it exited, -1 if it did not end in HANG_S. */
static int end_of(pid_t pid)
{
	int st;

	for (int i = 0; i < HANG_S * 100; i++) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			return WIFSIGNALED(st) ? WTERMSIG(st) : 0;
		if (r < 0)
			return -1;
		tu_sleep_ms(10);
	}
	return -1;
}

static void test_sigterm_kills_the_spawned_groups(void **state)
{
	struct victim v;

	(void)state;
	start_victim(&v, true, false);
	assert_true(v.grandkid > 0);
	assert_int_equal(kill(v.prog, SIGTERM), 0);
	assert_int_equal(end_of(v.prog), SIGTERM); /* still dies of the signal */
	assert_int_equal(end_of(v.spawned), SIGKILL);
	assert_int_equal(end_of(v.grandkid), SIGKILL); /* in the spawned one's group */
}

static void test_sigkill_takes_the_spawned_child_along(void **state)
{
	struct victim v;

	(void)state;
	start_victim(&v, false, false);
	assert_int_equal(kill(v.prog, SIGKILL), 0);
	assert_int_equal(end_of(v.prog), SIGKILL);
	assert_int_equal(end_of(v.spawned), SIGKILL);
}

static void test_forked_helper_spares_the_programs_children(void **state)
{
	struct victim v;

	(void)state;
	start_victim(&v, false, true);
	assert_true(v.forked > 0);
	assert_int_equal(kill(v.forked, SIGTERM), 0);
	/* the helper is the program's child: wait until the program could
	 * have reaped it, i.e. until it is no longer running */
	for (int i = 0; i < HANG_S * 100; i++) {
		char path[64];
		FILE *f;
		char st = 0;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)v.forked);
		if (!(f = fopen(path, "r")))
			break;
		if (fscanf(f, "%*d (%*[^)]) %c", &st) != 1)
			st = 0;
		fclose(f);
		if (st == 'Z')
			break;
		tu_sleep_ms(10);
	}
	assert_int_equal(kill(v.spawned, 0), 0); /* the program's sleep lives on */
	assert_int_equal(kill(v.prog, SIGTERM), 0);
	assert_int_equal(end_of(v.prog), SIGTERM);
	assert_int_equal(end_of(v.spawned), SIGKILL);
	end_of(v.forked); /* reparented here when the program died */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sigterm_kills_the_spawned_groups),
		cmocka_unit_test(test_sigkill_takes_the_spawned_child_along),
		cmocka_unit_test(test_forked_helper_spares_the_programs_children),
	};

	char rm[64];
	int rc;

	/* orphans of the killed programs are reparented here, to be reaped */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1)) {
		perror("PR_SET_CHILD_SUBREAPER");
		return 1;
	}
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	snprintf(rm, sizeof(rm), "rm -rf '%s'", dir);
	if (system(rm))
		fprintf(stderr, "could not remove %s\n", dir);
	return rc;
}
