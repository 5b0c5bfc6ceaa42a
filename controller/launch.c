// SPDX-License-Identifier: MIT
/*
 * The commands parties starts. A command runs under sh -c in a process group
 * and a cgroup of its own (act_cmd_prepare(): recorded in the state file
 * before the fork, joined by the child before it execs), as the user and
 * group its workload names. Between fork and exec the child dies with the
 * daemon (PR_SET_PDEATHSIG) until its process group is recorded too.
 * Whatever the command starts (setsid, double fork, ignoring SIGTERM,
 * thousands of processes) stays in that cgroup, which the daemon's exit and
 * a cleanup after SIGKILL empty. parties is also a child subreaper
 * (daemon.c), so orphans stay below it. Every wait here has a deadline.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "actuator.h"
#include "launch.h"
#include "machine.h"
#include "procfs.h"

/* How long a child may take from fork to exec (initgroups() may ask NSS)
 * before it is killed and the launch fails. */
#define LAUNCH_EXEC_MS 10000
/* After SIGKILL, how long a process we signalled may take to be reaped. */
#define LAUNCH_REAP_MS 2000

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

/* What went wrong in the child before exec, sent up the status pipe. */
struct child_err {
	int stage; /* enum below */
	int err;   /* errno */
};

enum { CHILD_CGROUP = 1, CHILD_IDENT, CHILD_PARENT, CHILD_GONE, CHILD_EXEC };

static const char *stage_str(int stage)
{
	switch (stage) {
	case CHILD_CGROUP:
		return "cannot join its cgroup";
	case CHILD_IDENT:
		return "cannot drop privileges";
	case CHILD_PARENT:
		return "parties exited while it started";
	case CHILD_GONE:
		return "it died before exec";
	default:
		return "cannot run /bin/sh";
	}
}

static void child_fail(int fd, int stage)
{
	struct child_err e = { stage, errno };
	ssize_t r = write(fd, &e, sizeof(e));

	(void)r;
	_exit(stage == CHILD_EXEC ? 127 : 126);
}

/* SIGKILL when the daemon's thread that forked us dies, and the daemon is
 * still there (it may have died before the prctl). Set again after a
 * credential change, which clears it. */
static void die_with(pid_t parent, int st)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent) {
		errno = ESRCH;
		child_fail(st, CHILD_PARENT);
	}
}

/*
 * The child, up to exec: its own process group, the command's cgroup
 * (before anything it runs can fork), the identity, then it waits for the
 * daemon to have recorded its process group ("go" on the go pipe) and only
 * then execs. Until then it dies with the daemon (PR_SET_PDEATHSIG, or EOF
 * on the go pipe), so a daemon killed between fork and the record leaves
 * nothing running. The death signal is cleared at exec: a command recorded
 * in the state file outlives a SIGKILLed daemon whole, for a restart to
 * adopt or --cleanup to stop with everything in its cgroup (a main process
 * killed alone would leave its children orphaned and the service broken).
 * Failures go up st (close-on-exec: EOF there means exec).
 */
static void child(const char *cmd, const struct ident *id, int cg_fd, int st, int go, pid_t parent)
{
	char buf[CFG_CMD_LEN + 8];
	sigset_t none;
	ssize_t n;

	die_with(parent, st);
	setpgid(0, 0);
	if (cg_fd >= 0) {
		int len = snprintf(buf, sizeof(buf), "%d", (int)getpid());

		if (write(cg_fd, buf, (size_t)len) != len)
			child_fail(st, CHILD_CGROUP);
	}
	if (ident_drop(id))
		child_fail(st, CHILD_IDENT);
	die_with(parent, st);
	do
		n = read(go, buf, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1) {
		errno = ESRCH;
		child_fail(st, CHILD_PARENT);
	}
	prctl(PR_SET_PDEATHSIG, 0);
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
	child_fail(st, CHILD_EXEC);
}

static int pidfd_of(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* Wait up to ms for the process of pidfd to exit (a pidfd is readable
 * then); true if it did. Without a pidfd, by polling /proc. */
static bool wait_exit(int pidfd, pid_t pid, int ms)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	if (pidfd >= 0) {
		struct pollfd p = { .fd = pidfd, .events = POLLIN };

		return poll(&p, 1, ms) > 0;
	}
	for (int t = 0; t < ms / 20; t++) {
		if (waitpid(pid, NULL, WNOHANG) == pid || !procfs_alive(pid, 0))
			return true;
		nanosleep(&ts, NULL);
	}
	return false;
}

/*
 * Fork, the child into cg_fd's cgroup; record its process group (wl's, in
 * m's state file), let it exec, wait (bounded) for the exec.
 */
static pid_t launch(struct mach *m, const char *wl, const char *cmd, const struct ident *id,
		    int cg_fd, char *msg, size_t len)
{
	pid_t parent = getpid(), pid;
	struct child_err e = { 0 };
	struct pollfd p;
	int st[2], go[2];
	bool wrote;
	ssize_t n;

	if (pipe2(st, O_CLOEXEC)) {
		snprintf(msg, len, "cannot start '%s': %s", cmd, strerror(errno));
		return -errno;
	}
	if (pipe2(go, O_CLOEXEC)) {
		int err = errno;

		close(st[0]);
		close(st[1]);
		snprintf(msg, len, "cannot start '%s': %s", cmd, strerror(err));
		return -err;
	}
	pid = fork();
	if (pid == 0) {
		close(st[0]);
		close(go[1]);
		child(cmd, id, cg_fd, st[1], go[0], parent);
	}
	close(st[1]);
	close(go[0]);
	if (pid < 0) {
		int err = errno;

		close(st[0]);
		close(go[1]);
		snprintf(msg, len, "cannot start '%s': %s", cmd, strerror(err));
		return -err;
	}
	setpgid(pid, pid);
	if (mach_record_pgrp(m, wl, pid))
		fprintf(stderr,
			"parties: workload %s: cannot record process group %d in the state "
			"file\n",
			wl, (int)pid);
	/* fails (EPIPE; SIGPIPE is ignored) only if the child is gone: its
	 * reason, if it gave one, is on st */
	wrote = write(go[1], "g", 1) == 1;
	close(go[1]);
	p = (struct pollfd){ .fd = st[0], .events = POLLIN };
	if (poll(&p, 1, LAUNCH_EXEC_MS) <= 0) {
		e = (struct child_err){ CHILD_EXEC, ETIMEDOUT };
	} else {
		do
			n = read(st[0], &e, sizeof(e));
		while (n < 0 && errno == EINTR);
		if (n == 0 && wrote)
			e.stage = 0; /* EOF: exec closed the pipe */
		else if (n == 0)
			e = (struct child_err){ CHILD_GONE, ESRCH };
		else if (n != sizeof(e))
			e = (struct child_err){ CHILD_EXEC, EIO };
	}
	close(st[0]);
	if (!e.stage)
		return pid;
	kill(pid, SIGKILL);
	wait_exit(-1, pid, LAUNCH_REAP_MS);
	waitpid(pid, NULL, WNOHANG);
	snprintf(msg, len, "cannot start '%s': %s: %s", cmd, stage_str(e.stage), strerror(e.err));
	return -(e.err ? e.err : EIO);
}

int launch_command(const struct cfg_workload *w, struct mach *m, struct launched *out, char *msg,
		   size_t len)
{
	char why[512] = "";
	struct ident id;
	int cg_fd;
	pid_t pid;

	*out = (struct launched){ .pidfd = -1 };
	if (ident_of(w, &id)) {
		snprintf(msg, len, "user/group vanished");
		return -ENOENT;
	}
	cg_fd = mach_cmd_prepare(m, w->name, why, sizeof(why));
	if (cg_fd == -EOPNOTSUPP) {
		fprintf(stderr, "parties: workload %s: %s\n", w->name, why);
	} else if (cg_fd < 0) {
		snprintf(msg, len, "%s", why);
		return cg_fd;
	}
	pid = launch(m, w->name, w->command, &id, cg_fd, msg, len);
	if (cg_fd >= 0)
		close(cg_fd);
	if (pid < 0) {
		if (cg_fd >= 0)
			mach_cmd_stop(m, w->name, 0, why, sizeof(why));
		return (int)pid;
	}
	out->pid = pid;
	out->pidfd = pidfd_of(pid); /* our unreaped child: it is this process */
	out->cgroup = cg_fd >= 0;
	return 0;
}

void launch_adopted(struct launched *l, pid_t pid)
{
	/* its cgroup, if it had one, was adopted with it (act_cmd_stop() of a
	 * workload without one does nothing) */
	*l = (struct launched){ .pid = pid, .pidfd = pidfd_of(pid), .cgroup = true };
}

/*
 * Every process below us: launched commands, what they forked, and (as a
 * subreaper) what they orphaned. Zombies are left out: waitpid() collects
 * ours, signals do nothing to them. Any number (malloc'd, NULL when none).
 */
static pid_t *descendants(size_t *n)
{
	pid_t *v = NULL;

	*n = 0;
	if (procfs_descendants(getpid(), &v, n)) {
		*n = 0;
		return NULL;
	}
	return v;
}

static void reap(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

/*
 * On exit, after every command's cgroup was emptied: whatever is still
 * below us (a command without a cgroup, or one moved out of it by root):
 * SIGTERM to each, a grace period, then SIGKILL; reaped, within deadlines.
 */
void launch_stop_descendants(void)
{
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	size_t n;
	pid_t *v = descendants(&n);

	for (size_t i = 0; i < n; i++)
		kill(v[i], SIGTERM);
	free(v);
	for (int t = 0; n && t < ACT_PGRP_GRACE_MS / 50; t++) {
		reap();
		free(descendants(&n));
		if (n)
			nanosleep(&ts, NULL);
	}
	for (int t = 0; n && t < LAUNCH_REAP_MS / 50; t++) {
		v = descendants(&n);
		for (size_t i = 0; i < n; i++)
			kill(v[i], SIGKILL);
		free(v);
		reap();
		if (n)
			nanosleep(&ts, NULL);
	}
	reap();
	if (n)
		fprintf(stderr, "parties: %zu processes below parties survived SIGKILL for %d ms\n",
			n, LAUNCH_REAP_MS);
}

void launch_stop(struct mach *m, const char *wl, struct launched *l)
{
	char why[512];

	if (l->pid <= 0)
		return;
	/* SIGTERM to everything in its cgroup, the grace period, killed until empty */
	if (l->cgroup && mach_cmd_stop(m, wl, ACT_PGRP_GRACE_MS, why, sizeof(why)))
		fprintf(stderr, "parties: workload %s: %s\n", wl, why);
	if (l->pidfd >= 0) {
		/* without a cgroup (or if it could not be emptied): the process
		 * group, while its leader (the pidfd's) lives, so that a reused
		 * pgid is never signalled; a no-op once the cgroup is empty */
		if (!syscall(SYS_pidfd_send_signal, l->pidfd, SIGTERM, NULL, 0))
			kill(-l->pid, SIGTERM);
		if (!wait_exit(l->pidfd, l->pid, ACT_PGRP_GRACE_MS) &&
		    !syscall(SYS_pidfd_send_signal, l->pidfd, SIGKILL, NULL, 0))
			kill(-l->pid, SIGKILL);
	}
	wait_exit(l->pidfd, l->pid, LAUNCH_REAP_MS);
	waitpid(l->pid, NULL, WNOHANG);
	if (l->pidfd >= 0)
		close(l->pidfd);
	*l = (struct launched){ .pidfd = -1 };
}
