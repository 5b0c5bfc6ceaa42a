// SPDX-License-Identifier: MIT
/*
 * The commands parties starts. A command runs under sh -c in a process group
 * of its own, as the user and group its workload names; parties is a child
 * subreaper (daemon.c), so whatever a command forks or orphans stays below
 * it and is stopped on exit.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "actuator.h"
#include "launch.h"
#include "procfs.h"

/*
 * Who a command runs as: root unless the workload names a user (its
 * primary group and supplementary groups) and/or a group. Looked up before
 * fork: the child only makes system calls.
 */
struct ident {
	bool drop;
	uid_t uid;
	gid_t gid;
	char user[CFG_NAME_LEN];
};

static int ident_of(const struct cfg_workload *w, struct ident *id)
{
	memset(id, 0, sizeof(*id));
	id->uid = getuid();
	id->gid = getgid();
	if (w->user[0]) {
		struct passwd *pw = getpwnam(w->user);

		if (!pw)
			return -ENOENT;
		id->uid = pw->pw_uid;
		id->gid = pw->pw_gid;
		snprintf(id->user, sizeof(id->user), "%s", w->user);
		id->drop = true;
	}
	if (w->group[0]) {
		struct group *gr = getgrnam(w->group);

		if (!gr)
			return -ENOENT;
		id->gid = gr->gr_gid;
		id->drop = true;
	}
	return 0;
}

/* In the child: groups first (setgid needs root), then the uid; any failure is fatal. */
static int ident_drop(const struct ident *id)
{
	if (!id->drop)
		return 0;
	if (id->user[0] ? initgroups(id->user, id->gid) : setgroups(0, NULL))
		return -1;
	if (setresgid(id->gid, id->gid, id->gid) || setresuid(id->uid, id->uid, id->uid))
		return -1;
	/* must not be able to get root back */
	if (id->uid != 0 && setuid(0) == 0)
		return -1;
	return 0;
}

static pid_t launch(const char *cmd, const struct ident *id)
{
	pid_t pid = fork();

	if (pid == 0) {
		char buf[CFG_CMD_LEN + 8];
		sigset_t none;

		setpgid(0, 0);
		if (ident_drop(id)) {
			fprintf(stderr, "parties: cannot drop privileges for '%s': %s\n", cmd,
				strerror(errno));
			_exit(126);
		}
		/* our handler would swallow a SIGTERM that arrives before exec */
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		dup2(STDERR_FILENO, STDOUT_FILENO); /* our stdout carries only --help */
		snprintf(buf, sizeof(buf), "exec %s", cmd);
		execl("/bin/sh", "sh", "-c", buf, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		setpgid(pid, pid);
	return pid;
}

pid_t launch_command(const struct cfg_workload *w, char *msg, size_t len)
{
	struct ident id;
	pid_t pid;

	if (ident_of(w, &id)) {
		snprintf(msg, len, "user/group vanished");
		return -ENOENT;
	}
	pid = launch(w->command, &id);
	if (pid < 0) {
		int e = errno;

		snprintf(msg, len, "cannot start '%s': %s", w->command, strerror(e));
		return -e;
	}
	return pid;
}

/*
 * Every process below us: launched commands, what they forked, and (as a
 * subreaper) what they orphaned, e.g. a command that called setsid and
 * left its process group. Zombies are left out: waitpid() collects ours,
 * signals do nothing to them. *n at most max.
 */
static size_t descendants(pid_t *out, size_t max)
{
	pid_t *v;
	size_t n;

	if (procfs_descendants(getpid(), &v, &n))
		return 0;
	if (n > max)
		n = max;
	memcpy(out, v, n * sizeof(*out));
	free(v);
	return n;
}

/*
 * On exit: SIGTERM to every descendant, a grace period, then SIGKILL; reap.
 * Catches what launch_stop() cannot: processes that left the launched group.
 */
void launch_stop_descendants(void)
{
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	pid_t pids[1024];
	size_t n = descendants(pids, 1024);

	for (size_t i = 0; i < n; i++)
		kill(pids[i], SIGTERM);
	for (int t = 0; n && t < ACT_PGRP_GRACE_MS / 50; t++) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		n = descendants(pids, 1024);
		if (n)
			nanosleep(&ts, NULL);
	}
	n = descendants(pids, 1024);
	for (size_t i = 0; i < n; i++)
		kill(pids[i], SIGKILL);
	while (waitpid(-1, NULL, n ? 0 : WNOHANG) > 0)
		;
}

void launch_stop(pid_t pid)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	kill(-pid, SIGTERM);
	kill(pid, SIGTERM);
	for (int i = 0; i < 150; i++) {
		pid_t r = waitpid(pid, NULL, WNOHANG);

		if (r == pid)
			goto group;
		/* an adopted command is not our child: wait for it to exit */
		if (r < 0 && errno == ECHILD && !procfs_alive(pid, 0))
			goto group;
		nanosleep(&ts, NULL);
	}
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
group:
	kill(-pid, SIGKILL); /* stragglers of the group */
}
