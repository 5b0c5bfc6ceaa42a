// SPDX-License-Identifier: MIT
/*
 * cfg_check_live(): the configuration against this machine and this process:
 * what the workloads name exists, and may be managed (and, for ebee_mode
 * grpc, maps a gRPC C-core by ebee's own rule).
 * This test process stands for the daemon: its pid, its parent and its
 * children are the cases. Also cfg_load_file() on a FIFO (must not block)
 * and on a file others can write (refused: its commands run as root).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"

static struct cfg cfg;
static char err[1024], dir[64];
static pid_t child, grandchild;

/* A child (sleeping) with a child of its own: a subtree that is not ours. */
static int setup(void **state)
{
	int p[2];

	snprintf(dir, sizeof(dir), "/tmp/test_cfg_liveXXXXXX");
	if (!mkdtemp(dir) || pipe(p))
		return -1;
	child = fork();
	if (child == 0) {
		pid_t g = fork();

		if (g == 0) {
			pause();
			_exit(0);
		}
		if (write(p[1], &g, sizeof(g)) != sizeof(g))
			_exit(1);
		pause();
		_exit(0);
	}
	if (child < 0 || read(p[0], &grandchild, sizeof(grandchild)) != sizeof(grandchild))
		return -1;
	close(p[0]);
	close(p[1]);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	kill(grandchild, SIGKILL);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Parse text (with %d replaced by the given pids) and run the live checks. */
static int live(const char *fmt, ...)
{
	char text[2048];
	va_list ap;
	int e;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	err[0] = '\0';
	e = cfg_load_string(&cfg, "t.ini", text, err, sizeof(err));
	if (e) {
		print_error("parse: %s\n", err);
		return 1000;
	}
	return cfg_check_live(&cfg, NULL, err, sizeof(err));
}

static void expect(const char *want)
{
	if (!strstr(err, want))
		fail_msg("'%s' does not contain '%s'", err, want);
}

static void test_pids(void **state)
{
	assert_int_equal(live("[workload a]\ntarget_ms = 1\npid = 1\n"), -EINVAL);
	expect("t.ini:3: workload a: pid 1 is init");
	assert_int_equal(live("[workload a]\ntarget_ms = 1\npid = %d\n", (int)getpid()), -EINVAL);
	expect("t.ini:3: workload a: pid ");
	expect("is parties itself");
	assert_int_equal(live("[workload a]\ntarget_ms = 1\npid = %d\n", (int)getppid()), -EINVAL);
	expect("is an ancestor of parties");
	assert_int_equal(live("[workload a]\ntarget_ms = 1\npid = 2\n"), -EINVAL);
	expect("t.ini:3: workload a: pid 2 is a kernel thread");
	/* a process that is not ours to refuse: fine */
	assert_int_equal(live("[workload a]\ntarget_ms = 1\npid = %d\n", (int)child), 0);
}

static void test_one_owner(void **state)
{
	assert_int_equal(live("[workload a]\ntarget_ms = 1\npid = %d\n[workload b]\ntarget_ms = "
			      "1\npid = %d\n",
			      (int)child, (int)child),
			 -EINVAL);
	expect("t.ini:6: workload b: pid");
	expect("is already managed by workload a");
	/* b inside a's tree, and the other way round */
	assert_int_equal(live("[workload a]\ntarget_ms = 1\npid = %d\n[workload b]\ntarget_ms = "
			      "1\npid = %d\n",
			      (int)child, (int)grandchild),
			 -EINVAL);
	expect("is already managed by workload a");
	assert_int_equal(live("[workload a]\ntarget_ms = 1\npid = %d\n[workload b]\ntarget_ms = "
			      "1\npid = %d\n",
			      (int)grandchild, (int)child),
			 -EINVAL);
	expect("is already managed by workload a");
}

/* What a workload names exists (moved here from test_config.c when these
 * checks left the parser): the whole message, file:line first. */
static void test_named(void **state)
{
	assert_int_equal(live("[workload a]\ntarget_ms = 1\npid = 2147483646\n"), -EINVAL);
	assert_string_equal(err, "t.ini:3: workload a: no process with pid 2147483646");
	assert_int_equal(live("[workload a]\ntarget_ms = 1\npidfile = /nonexistent/x.pid\n"),
			 -EINVAL);
	assert_string_equal(err, "t.ini:3: workload a: cannot read a pid from pidfile "
				 "/nonexistent/x.pid (No such file or directory)");
	assert_int_equal(
	    live("[workload a]\ntarget_ms = 1\ncommand = /nonexistent/server --port 1\n"), -EINVAL);
	assert_string_equal(err, "t.ini:3: workload a: command '/nonexistent/server --port 1' "
				 "cannot be run (not found or not executable)");
	assert_int_equal(live("[workload a]\npid = %d\ntarget_ms = 1\nsource = "
			      "client:/nonexistent/f\n",
			      (int)child),
			 -EINVAL);
	assert_string_equal(err, "t.ini:4: workload a: feed file /nonexistent/f does not exist "
				 "(start the load generator with --feed /nonexistent/f first)");
	/* a feed that is a symlink (here to a regular file) is refused, not followed */
	{
		char link[64];

		snprintf(link, sizeof(link), "/tmp/test_config_live_feed.%d", (int)getpid());
		unlink(link);
		assert_int_equal(symlink("/etc/hostname", link), 0);
		assert_int_equal(live("[workload a]\npid = %d\ntarget_ms = 1\nsource = "
				      "client:%s\n",
				      (int)child, link),
				 -EINVAL);
		unlink(link);
		expect("t.ini:4: workload a: feed ");
		expect("is a symbolic link");
	}
}

static void test_machine(void **state)
{
	assert_int_equal(live("[resources]\ncpus = 0-%d\n[workload a]\ntarget_ms = 1\npid = %d\n",
			      ACT_CPUMASK_MAX - 1, (int)child),
			 -EINVAL);
	expect("t.ini:2: cpus: cpu ");
	expect("is not online");
#ifndef EBEE_HAVE_GRPC
	assert_int_equal(
	    live("[workload a]\ntarget_ms = 1\npid = %d\nebee_mode = grpc\n", (int)child), -EINVAL);
	expect("t.ini:4: workload a: ebee_mode grpc is not supported");
#else /* this build traces gRPC: the process (a test child) must map libgrpc */
	assert_int_equal(
	    live("[workload a]\ntarget_ms = 1\npid = %d\nebee_mode = grpc\n", (int)child), -EINVAL);
	expect("t.ini:4: workload a: ebee_mode grpc, but process");
	expect("maps no libgrpc");
#endif
	assert_int_equal(live("[workload a]\ntarget_ms = 1\ncommand = true\nuser = nobody-xyz\n"),
			 -EINVAL);
	expect("t.ini:4: workload a: user 'nobody-xyz' does not exist");
	assert_int_equal(live("[workload a]\ntarget_ms = 1\ncommand = true\ngroup = nogrp-xyz\n"),
			 -EINVAL);
	expect("t.ini:4: workload a: group 'nogrp-xyz' does not exist");
	assert_int_equal(live("[workload a]\ntarget_ms = 1\npid = %d\nuser = nobody\n", (int)child),
			 -EINVAL);
	expect("t.ini:4: workload a: user and group apply to a command");
}

#ifdef EBEE_HAVE_GRPC
/* Start prog (a fake gRPC C-core of tests/fixtures/chttp2/, idle until told
 * otherwise) and wait until it maps itself: its pid, or 0 if not built. */
static pid_t start_fake(const char *prog)
{
	char maps[64], line[4096];
	pid_t pid;

	if (access(prog, X_OK))
		return 0;
	pid = fork();
	if (pid == 0) {
		execl(prog, prog, "1", "/nonexistent/go", "/nonexistent/done", (char *)NULL);
		_exit(127);
	}
	assert_true(pid > 0);
	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)pid);
	for (int i = 0; i < 500; i++) {
		FILE *f = fopen(maps, "r");
		bool seen = false;

		while (f && !seen && fgets(line, sizeof(line), f))
			seen = strstr(line, prog + strlen("build/fixtures/")) != NULL;
		if (f)
			fclose(f);
		if (seen)
			return pid;
		usleep(10000);
	}
	fail_msg("%s never mapped itself", prog);
	return 0;
}

static void stop_fake(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}
#endif

/* ebee_mode = grpc follows ebee's own rule (ebee_grpc_maps_core()): a
 * program with the C-core linked in and its symbols kept passes, the same
 * program stripped is refused. */
static void test_grpc_linked_in(void **state)
{
#ifndef EBEE_HAVE_GRPC
	skip(); /* refused as unsupported: test_machine */
#else
	pid_t pie = start_fake("build/fixtures/fake_chttp2_pie");
	pid_t stripped = start_fake("build/fixtures/fake_chttp2_stripped");

	if (!pie || !stripped) {
		if (pie)
			stop_fake(pie);
		if (stripped)
			stop_fake(stripped);
		printf("SKIP: build/fixtures/fake_chttp2_* not built (make all)\n");
		skip();
	}
	assert_int_equal(
	    live("[workload a]\ntarget_ms = 1\npid = %d\nebee_mode = grpc\n", (int)pie), 0);
	assert_int_equal(
	    live("[workload a]\ntarget_ms = 1\npid = %d\nebee_mode = grpc\n", (int)stripped),
	    -EINVAL);
	expect("t.ini:4: workload a: ebee_mode grpc, but process");
	expect("maps no libgrpc");
	stop_fake(pie);
	stop_fake(stripped);
#endif
}

static void test_files(void **state)
{
	char p[256];

	snprintf(p, sizeof(p), "%s/open", dir);
	assert_int_equal(mkdir(p, 0777), 0);
	assert_int_equal(chmod(p, 0777), 0);
	assert_int_equal(live("[controller]\nstate_dir = %s/state\n[workload a]\ntarget_ms = "
			      "1\npid = %d\n",
			      p, (int)child),
			 -EINVAL);
	expect("t.ini:2: state_dir: ");
	expect("is writable by other users");
	assert_int_equal(live("[controller]\nlog = %s/x.jsonl\nstate_dir = %s\n[workload "
			      "a]\ntarget_ms = 1\npid = %d\n",
			      p, dir, (int)child),
			 -EINVAL);
	expect("t.ini:2: log directory ");
	snprintf(p, sizeof(p), "%s/link", dir);
	assert_int_equal(symlink("/etc/hostname", p), 0);
	assert_int_equal(live("[controller]\nlog = %s\nstate_dir = %s\n[workload a]\ntarget_ms = "
			      "1\npid = %d\n",
			      p, dir, (int)child),
			 -EINVAL);
	expect("t.ini:2: log ");
	expect("is a symbolic link");
	snprintf(p, sizeof(p), "%s/fifo", dir);
	assert_int_equal(mkfifo(p, 0600), 0);
	assert_int_equal(live("[controller]\nstate_dir = %s\n[workload a]\ntarget_ms = "
			      "1\npid = %d\n",
			      dir, (int)child),
			 0);
	assert_int_equal(cfg_check_live(&cfg, p, err, sizeof(err)), -EINVAL);
	expect("--log ");
	expect("fifo is not a regular file");
}

/* the config file itself: a FIFO is refused at once, a file others may write too */
static void test_config_file(void **state)
{
	char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s/fifo.ini", dir);
	assert_int_equal(mkfifo(p, 0600), 0);
	alarm(5); /* a blocking open would hang the test: let SIGALRM fail it */
	assert_int_equal(cfg_load_file(&cfg, p, err, sizeof(err)), -EINVAL);
	alarm(0);
	expect("fifo.ini: not a regular file");
	snprintf(p, sizeof(p), "%s/open.ini", dir);
	f = fopen(p, "w");
	assert_non_null(f);
	fprintf(f, "[workload a]\ntarget_ms = 1\npid = %d\n", (int)child);
	fclose(f);
	assert_int_equal(chmod(p, 0666), 0);
	assert_int_equal(cfg_load_file(&cfg, p, err, sizeof(err)), -EPERM);
	expect("open.ini: writable by users other than root");
	assert_int_equal(chmod(p, 0644), 0);
	assert_int_equal(cfg_load_file(&cfg, p, err, sizeof(err)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pids),	       cmocka_unit_test(test_one_owner),
		cmocka_unit_test(test_named),	       cmocka_unit_test(test_machine),
		cmocka_unit_test(test_files),	       cmocka_unit_test(test_config_file),
		cmocka_unit_test(test_grpc_linked_in),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
