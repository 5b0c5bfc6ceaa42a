// SPDX-License-Identifier: MIT
/*
 * The configuration against the running machine: everything that parsing
 * (config.c, offline and table-driven) cannot know, from whether the
 * processes, programs and files a workload names exist to whether it is
 * safe to manage them. One step, called by the
 * daemon before it changes anything and by --check-config, so that a config
 * that passes --check-config starts, and one that would misbehave is refused
 * with file:line before a workload is launched or a cgroup is created.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "inplace.h"
#include "procfs.h"
#include "res/res.h"
#include "topology.h"

/* read_pidfile(): not a regular file (an errno no open() of a pidfile returns) */
#define EFTYPE_NOTREG EMEDIUMTYPE

/*
 * ebee builds that trace gRPC define EBEE_HAVE_GRPC in ebee.h; without it
 * ebee_add() returns -EOPNOTSUPP for EBEE_MODE_GRPC, which used to surface
 * only after the workload was launched.
 */
#ifdef EBEE_HAVE_GRPC
#define GRPC_SUPPORTED true
#else
#define GRPC_SUPPORTED false
#endif

static int live_fail(const struct cfg *c, int line, char *err, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int live_fail(const struct cfg *c, int line, char *err, size_t len, const char *fmt, ...)
{
	va_list ap;
	/* no c: about a command-line argument, which has no file:line */
	int n = !c	   ? snprintf(err, len, "--")
		: line > 0 ? snprintf(err, len, "%s:%d: ", c->file, line)
			   : snprintf(err, len, "%s: ", c->file);

	if (n < 0 || (size_t)n >= len)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(err + n, len - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/*
 * Non-blocking, regular files only: a FIFO here would stall start-up.
 * -EFTYPE_NOTREG when it is something else.
 */
static int read_pidfile(const char *path, pid_t *pid)
{
	char buf[32];
	struct stat st;
	ssize_t n;
	char *end;
	long v;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EFTYPE_NOTREG;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EINVAL;
	buf[n] = '\0';
	errno = 0;
	v = strtol(buf, &end, 10);
	if (errno || end == buf || (*end && !isspace((unsigned char)*end)) || v <= 0 ||
	    v > INT32_MAX)
		return -EINVAL;
	*pid = (pid_t)v;
	return 0;
}

int cfg_workload_pid(const struct cfg_workload *w, pid_t *pid)
{
	int err;

	if (w->find == CFG_FIND_PID) {
		*pid = w->pid;
	} else if (w->find == CFG_FIND_PIDFILE) {
		err = read_pidfile(w->pidfile, pid);
		if (err)
			return err;
	} else {
		return -EINVAL;
	}
	if (!procfs_alive(*pid, 0))
		return -ESRCH;
	return 0;
}

/* Is the first word of a shell command something we can run? */
static bool runnable(const char *cmd)
{
	char word[CFG_PATH_LEN], path[2 * CFG_PATH_LEN];
	const char *p = cmd, *env;
	size_t n = 0;

	while (isspace((unsigned char)*p))
		p++;
	if (!strncmp(p, "exec ", 5))
		p += 5;
	while (isspace((unsigned char)*p))
		p++;
	while (*p && !isspace((unsigned char)*p) && n < sizeof(word) - 1)
		word[n++] = *p++;
	word[n] = '\0';
	if (!n)
		return false;
	if (strchr(word, '='))
		return true; /* VAR=value cmd: let the shell judge */
	if (strchr(word, '/'))
		return access(word, X_OK) == 0;
	env = getenv("PATH");
	if (!env)
		env = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";
	while (*env) {
		const char *e = strchr(env, ':');
		size_t len = e ? (size_t)(e - env) : strlen(env);

		snprintf(path, sizeof(path), "%.*s/%s", (int)len, env, word);
		if (access(path, X_OK) == 0)
			return true;
		env += len + (e ? 1 : 0);
	}
	return false;
}

/* The process, pidfile or program a workload names exists. */
static int check_found(const struct cfg *c, const struct cfg_workload *w, char *err, size_t len)
{
	int line = cfg_find_line(w), e;
	pid_t pid = w->pid;

	switch (w->find) {
	case CFG_FIND_PID:
		if (!procfs_alive(w->pid, 0))
			return live_fail(c, line, err, len, "workload %s: no process with pid %d",
					 w->name, (int)w->pid);
		return 0;
	case CFG_FIND_PIDFILE:
		e = cfg_workload_pid(w, &pid);
		if (e == -ESRCH)
			return live_fail(
			    c, line, err, len,
			    "workload %s: pidfile %s names pid %d, which is not running", w->name,
			    w->pidfile, (int)pid);
		if (e == -EFTYPE_NOTREG)
			return live_fail(c, line, err, len,
					 "workload %s: pidfile %s is not a regular file", w->name,
					 w->pidfile);
		if (e)
			return live_fail(c, line, err, len,
					 "workload %s: cannot read a pid from pidfile %s (%s)",
					 w->name, w->pidfile, strerror(-e));
		return 0;
	case CFG_FIND_COMMAND:
		if (!runnable(w->command))
			return live_fail(
			    c, line, err, len,
			    "workload %s: command '%s' cannot be run (not found or not "
			    "executable)",
			    w->name, w->command);
		return 0;
	default:
		return 0;
	}
}

static int check_feed(const struct cfg *c, const struct cfg_workload *w, char *err, size_t len)
{
	struct stat st;

	if (lstat(w->feed, &st))
		return live_fail(c, w->feed_line, err, len,
				 "workload %s: feed file %s does not exist (start the load "
				 "generator with --feed %s first)",
				 w->name, w->feed, w->feed);
	/* each read opens it with O_NOFOLLOW (source_client.c): say so now */
	if (S_ISLNK(st.st_mode))
		return live_fail(c, w->feed_line, err, len,
				 "workload %s: feed %s is a symbolic link: a feed is never "
				 "followed through one (give the file itself)",
				 w->name, w->feed);
	if (!S_ISREG(st.st_mode))
		return live_fail(c, w->feed_line, err, len,
				 "workload %s: feed %s is not a regular file", w->name, w->feed);
	return 0;
}

/* What each workload names exists, reported in the order of the file. */
static int check_named(const struct cfg *c, char *err, size_t len)
{
	for (int i = 0; i < c->nwl; i++) {
		const struct cfg_workload *w = &c->wl[i];
		bool feed_first = w->feed[0] && w->feed_line < cfg_find_line(w);
		int e = feed_first ? check_feed(c, w, err, len) : 0;

		if (!e)
			e = check_found(c, w, err, len);
		if (!e && w->feed[0] && !feed_first)
			e = check_feed(c, w, err, len);
		if (e)
			return e;
	}
	return 0;
}

/* Is anc pid itself or one of pid's ancestors? */
static bool is_ancestor(pid_t anc, pid_t pid)
{
	for (int depth = 0; pid > 0 && depth < 4096; depth++) {
		struct procfs_stat st;

		if (pid == anc)
			return true;
		if (procfs_stat(pid, &st))
			return false;
		pid = st.ppid;
	}
	return false;
}

/* Does pid map a gRPC C-core, where ebee's grpc mode looks for one
 * (libgrpc*.so by name, or a file whose symbols define the chttp2 functions:
 * the tracing core's own rule, ebee_grpc_maps_core())? */
static bool maps_libgrpc(pid_t pid)
{
	return ebee_grpc_maps_core(pid) > 0;
}

/* ebee_mode = grpc on a running process: it, or one of its descendants (a
 * master's workers), must map a C-core, or ebee would refuse it only after
 * start-up. A command's process does not exist yet: ebee says so then. */
static bool subtree_maps_libgrpc(pid_t pid)
{
	bool found = false;
	pid_t *kids;
	size_t n;

	if (maps_libgrpc(pid))
		return true;
	if (procfs_descendants(pid, &kids, &n))
		return true; /* cannot tell: leave it to ebee */
	for (size_t i = 0; !found && i < n; i++)
		found = maps_libgrpc(kids[i]);
	free(kids);
	return found;
}

/*
 * A workload is a pid and every descendant: the pids that would make the
 * daemon manage itself, the whole host or a kernel thread are refused.
 */
static int check_pid(const struct cfg *c, const struct cfg_workload *w, pid_t pid, char *err,
		     size_t len)
{
	int line = cfg_find_line(w) ? cfg_find_line(w) : w->line;
	struct procfs_stat st;
	int e;

	if (pid == 1)
		return live_fail(c, line, err, len,
				 "workload %s: pid 1 is init: a workload is a process and all "
				 "its descendants, so this would be every process on the host",
				 w->name);
	if (pid == getpid())
		return live_fail(c, line, err, len, "workload %s: pid %d is parties itself",
				 w->name, (int)pid);
	if (is_ancestor(pid, getpid()))
		return live_fail(c, line, err, len,
				 "workload %s: pid %d is an ancestor of parties (pid %d): its "
				 "descendants include the daemon itself",
				 w->name, (int)pid, (int)getpid());
	e = procfs_stat(pid, &st);
	if (e)
		return live_fail(c, line, err, len, "workload %s: pid %d: %s", w->name, (int)pid,
				 strerror(-e));
	if (procfs_kthread(&st))
		return live_fail(c, line, err, len,
				 "workload %s: pid %d is a kernel thread: it cannot be moved "
				 "or traced",
				 w->name, (int)pid);
	return 0;
}

/* The directory part of path ("." for a bare name). */
static void dir_of(const char *path, char *dir, size_t len)
{
	const char *s = strrchr(path, '/');

	if (!s)
		snprintf(dir, len, ".");
	else if (s == path)
		snprintf(dir, len, "/");
	else
		snprintf(dir, len, "%.*s", (int)(s - path), path);
}

int cfg_dir_safe(const char *dir, char *why, size_t len)
{
	struct stat st;

	if (stat(dir, &st)) {
		snprintf(why, len, "%s: %s", dir, strerror(errno));
		return -errno;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(why, len, "%s is not a directory", dir);
		return -ENOTDIR;
	}
	/* the sticky bit does not help: others may still create the name first */
	if ((st.st_mode & S_IWOTH) || ((st.st_mode & S_IWGRP) && st.st_gid != 0) ||
	    (st.st_uid != 0 && st.st_uid != geteuid())) {
		snprintf(why, len,
			 "%s is writable by other users (owner uid %u, mode %04o): another user "
			 "could plant a file or symlink there",
			 dir, (unsigned int)st.st_uid, (unsigned int)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

/* A file the daemon appends to: absent, or a regular file of ours; its directory safe. */
static int check_output(const struct cfg *c, int line, const char *what, const char *path,
			char *err, size_t len)
{
	char dir[PATH_MAX], why[PATH_MAX + 128];
	struct stat st;

	if (!*path)
		return live_fail(c, line, err, len, "%s: empty file name", what);
	if (!lstat(path, &st)) {
		if (S_ISLNK(st.st_mode))
			return live_fail(c, line, err, len,
					 "%s %s is a symbolic link (refused: it could point at "
					 "any file root can write)",
					 what, path);
		if (!S_ISREG(st.st_mode))
			return live_fail(c, line, err, len, "%s %s is not a regular file", what,
					 path);
		if (st.st_uid != geteuid())
			return live_fail(c, line, err, len, "%s %s belongs to uid %u, not to us",
					 what, path, (unsigned int)st.st_uid);
	} else if (errno != ENOENT) {
		return live_fail(c, line, err, len, "%s %s: %s", what, path, strerror(errno));
	}
	dir_of(path, dir, sizeof(dir));
	if (cfg_dir_safe(dir, why, sizeof(why)))
		return live_fail(c, line, err, len, "%s directory %s", what, why);
	return 0;
}

/* The state directory, or the closest existing directory above it (where it will be made). */
static int check_state_dir(const struct cfg *c, char *err, size_t len)
{
	char dir[PATH_MAX], why[PATH_MAX + 128];
	struct stat st;

	snprintf(dir, sizeof(dir), "%s", c->state_dir);
	while (stat(dir, &st) && errno == ENOENT && strcmp(dir, "/") && strcmp(dir, ".")) {
		char up[PATH_MAX];

		dir_of(dir, up, sizeof(up));
		snprintf(dir, sizeof(dir), "%s", up);
	}
	if (cfg_dir_safe(dir, why, sizeof(why)))
		return live_fail(c, c->line_of[CFG_STATE_DIR], err, len, "state_dir: %s", why);
	return 0;
}

/* Each resource's own live check (res_ops cfg.check_live: cores, that the
 * managed cpus and explicit lists are whole cores of this machine). */
static int check_res(const struct cfg *c, char *err, size_t len)
{
	char why[512];

	for (int r = 0; r < POL_RES_COUNT; r++) {
		int line = 0;

		if (res_table[r]->cfg.check_live &&
		    res_table[r]->cfg.check_live(c, why, sizeof(why), &line))
			return live_fail(c, line, err, len, "%s", why);
	}
	return 0;
}

static int check_cpus(const struct cfg *c, char *err, size_t len)
{
	struct act_cpumask on;

	if (act_topo_online(NULL, &on))
		return 0; /* no sysfs: the actuators will say what they find */
	for (int cpu = 0; cpu < ACT_CPUMASK_MAX; cpu++) {
		if (!act_cpumask_isset(&c->cpus, cpu) || act_cpumask_isset(&on, cpu))
			continue;
		return live_fail(c, c->line_of[CFG_CPUS], err, len,
				 "cpus: cpu %d is not online on this machine (online: %d cpus)",
				 cpu, act_cpumask_count(&on));
	}
	return check_res(c, err, len);
}

static int check_identity(const struct cfg *c, const struct cfg_workload *w, char *err, size_t len)
{
	if ((w->user[0] || w->group[0]) && w->find != CFG_FIND_COMMAND)
		return live_fail(
		    c, w->line_of[CFG_WL_USER] ? w->line_of[CFG_WL_USER] : w->line_of[CFG_WL_GROUP],
		    err, len,
		    "workload %s: user and group apply to a command the daemon "
		    "starts, not to a running process",
		    w->name);
	if (w->user[0] && !getpwnam(w->user))
		return live_fail(c, w->line_of[CFG_WL_USER], err, len,
				 "workload %s: user '%s' does not exist", w->name, w->user);
	if (w->group[0] && !getgrnam(w->group))
		return live_fail(c, w->line_of[CFG_WL_GROUP], err, len,
				 "workload %s: group '%s' does not exist", w->name, w->group);
	return 0;
}

/*
 * An in-place workload: its cgroup exists with the controllers' files, is not
 * the root, parties' own parent or the daemon's cgroup, holds a process, and
 * no other in-place workload names it.
 */
static int check_inplace(const struct cfg *c, const struct cfg_workload *w, char *err, size_t len)
{
	char grp[INPLACE_PATH_MAX], msg[768];
	struct cgfs r;
	pid_t pid;
	int e;

	e = cgfs_find(&r, NULL, NULL);
	if (!e)
		e = inplace_resolve(&r, w, grp, sizeof(grp), msg, sizeof(msg));
	else
		snprintf(msg, sizeof(msg), "cannot read the mounts: %s", strerror(-e));
	if (!e)
		e = inplace_may_manage(&r, grp, c->cgroup_parent, getpid(), msg, sizeof(msg));
	if (!e && inplace_pids(&r, grp, &pid, 1) <= 0) {
		snprintf(msg, sizeof(msg), "cgroup %s has no process to manage", grp);
		e = -ESRCH;
	}
	if (e)
		return live_fail(c, cfg_find_line(w), err, len, "workload %s: %s", w->name, msg);
	for (const struct cfg_workload *o = c->wl; o < w; o++)
		if (o->find == w->find && !strcmp(o->cgroup, w->cgroup))
			return live_fail(c, cfg_find_line(w), err, len,
					 "workload %s: cgroup %s is managed by workload %s already",
					 w->name, grp, o->name);
	return 0;
}

int cfg_check_live(const struct cfg *c, const char *log_override, char *err, size_t len)
{
	pid_t pids[CFG_MAX_WL] = { 0 };
	int e;

	/* first, as when the file was read: what the workloads name is there */
	e = check_named(c, err, len);
	if (!e)
		e = check_cpus(c, err, len);
	if (e)
		return e;
	for (int i = 0; i < c->nwl; i++) {
		const struct cfg_workload *w = &c->wl[i];
		int line = cfg_find_line(w) ? cfg_find_line(w) : w->line;

		if (w->ebee_mode == EBEE_MODE_GRPC && !GRPC_SUPPORTED)
			return live_fail(c, w->line_of[CFG_WL_EBEE_MODE], err, len,
					 "workload %s: ebee_mode grpc is not supported by this "
					 "build of ebee",
					 w->name);
		e = check_identity(c, w, err, len);
		if (e)
			return e;
		if (w->find == CFG_FIND_CGROUP || w->find == CFG_FIND_UNIT) {
			e = check_inplace(c, w, err, len);
			if (e)
				return e;
			continue;
		}
		if (w->find != CFG_FIND_PID && w->find != CFG_FIND_PIDFILE)
			continue;
		e = cfg_workload_pid(w, &pids[i]);
		if (e)
			return live_fail(c, line, err, len, "workload %s: process is gone (%s)",
					 w->name, strerror(-e));
		e = check_pid(c, w, pids[i], err, len);
		if (e)
			return e;
		if (w->ebee_mode == EBEE_MODE_GRPC && w->source == CFG_SRC_EBEE &&
		    !subtree_maps_libgrpc(pids[i]))
			return live_fail(c, w->line_of[CFG_WL_EBEE_MODE], err, len,
					 "workload %s: ebee_mode grpc, but process %d (and its "
					 "descendants) maps no libgrpc (nor any file with gRPC "
					 "C-core's chttp2 symbols): not a gRPC C-core server",
					 w->name, (int)pids[i]);
		/* one owner per process: the same pid, or one inside another's tree */
		for (int j = 0; j < i; j++) {
			if (!pids[j])
				continue;
			if (pids[j] == pids[i] || is_ancestor(pids[j], pids[i]) ||
			    is_ancestor(pids[i], pids[j]))
				return live_fail(c, line, err, len,
						 "workload %s: pid %d is already managed by "
						 "workload %s (pid %d and its descendants)",
						 w->name, (int)pids[i], c->wl[j].name,
						 (int)pids[j]);
		}
	}
	e = cfg_check_log(c, log_override, err, len);
	if (e)
		return e;
	return check_state_dir(c, err, len);
}

int cfg_check_log(const struct cfg *c, const char *log_override, char *err, size_t len)
{
	if (log_override)
		return check_output(NULL, 0, "log", log_override, err, len);
	if (c->log[0])
		return check_output(c, c->line_of[CFG_LOG], "log", c->log, err, len);
	return 0;
}
