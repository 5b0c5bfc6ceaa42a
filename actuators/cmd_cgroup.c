// SPDX-License-Identifier: MIT
/*
 * A launched command's own cgroup: made, filled by the child itself before
 * exec, signalled, killed until empty and removed (see act_cmdcg.h for which
 * hierarchy and how). Every loop here is bounded by a deadline; nothing
 * waits for a process.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "act_cgroup.h"
#include "act_cmdcg.h"

/* How often a cgroup is looked at while it empties (a read of cgroup.procs). */
#define ACT_CMD_POLL_MS 10
/* One freeze (v1 freezer, v2 without cgroup.kill): how long FREEZING may take
 * before the tasks are killed anyway (the next round catches what it missed). */
#define ACT_CMD_FREEZE_MS 200

enum act_cmd_kind act__cmd_choose(enum act_cmd_cgroup want, int placement_version,
				  const char *v2_mnt, const char *freezer_mnt)
{
	bool v2 = v2_mnt && v2_mnt[0] && want != ACT_CMD_CGROUP_FREEZER;
	bool fr = freezer_mnt && freezer_mnt[0] && want != ACT_CMD_CGROUP_V2;

	if (placement_version == 2 && v2)
		return ACT_CMD_V2_SHARED;
	if (v2)
		return ACT_CMD_V2;
	if (fr)
		return ACT_CMD_FREEZER;
	return ACT_CMD_NONE;
}

enum act_cmd_kind act__cmd_detect(enum act_cmd_cgroup want, int placement_version, char *mnt,
				  size_t len)
{
	enum act_cmd_kind k;
	struct cgfs fs;

	cgfs_find(&fs, NULL, NULL);
	k = act__cmd_choose(want, placement_version, fs.v2, fs.v1_freezer);
	snprintf(mnt, len, "%s",
		 k == ACT_CMD_FREEZER ? fs.v1_freezer
		 : k == ACT_CMD_NONE  ? ""
				      : fs.v2);
	return k;
}

const char *act__cmd_kind_str(enum act_cmd_kind kind)
{
	switch (kind) {
	case ACT_CMD_V2:
		return "cgroup v2 beside the v1 placement";
	case ACT_CMD_V2_SHARED:
		return "cgroup v2";
	case ACT_CMD_FREEZER:
		return "the v1 freezer";
	default:
		return "none";
	}
}

int act__cmd_dir(const struct act_cmdcg *c, bool top, char *buf, size_t len)
{
	char grp[ACT_PATH_MAX];
	int n = top ? snprintf(grp, sizeof(grp), "%s.cmd", c->parent)
		    : snprintf(grp, sizeof(grp), "%s.cmd/%s", c->parent, c->wl);

	if (n < 0 || (size_t)n >= sizeof(grp))
		return -ENAMETOOLONG;
	return cgfs_path(buf, len, c->mnt, grp, NULL);
}

/* The workload's group in the shared v2 hierarchy, where placed tasks are. */
static int wl_dir(const struct act_cmdcg *c, char *buf, size_t len)
{
	char grp[ACT_PATH_MAX];
	int n = snprintf(grp, sizeof(grp), "%s/%s", c->parent, c->wl);

	if (n < 0 || (size_t)n >= sizeof(grp))
		return -ENAMETOOLONG;
	return cgfs_path(buf, len, c->mnt, grp, NULL);
}

/* dir/file into path (ACT_PATH_MAX + 32 bytes); false if it does not fit. */
static bool join(char *path, const char *dir, const char *file)
{
	return !cgfs_path(path, ACT_PATH_MAX + 32, dir, NULL, file);
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

struct each_proc {
	int sig;
	size_t n;
};

static void each_proc_one(pid_t pid, void *arg)
{
	struct each_proc *e = arg;

	if (pid <= 0)
		return;
	e->n++;
	if (e->sig)
		kill(pid, e->sig);
}

/*
 * The processes in dir's cgroup.procs (exited ones are not listed, zombies
 * included), any number; sig to each unless 0. The count; 0 when the
 * cgroup is gone.
 */
static size_t each_proc(const char *dir, int sig)
{
	struct each_proc e = { .sig = sig };

	cgfs_each_pid(dir, "cgroup.procs", each_proc_one, &e);
	return e.n;
}

/* The directories a command's processes may be in: its own, and when
 * shared the workload's group. The count. */
static int dirs_of(const struct act_cmdcg *c, char (*d)[ACT_PATH_MAX])
{
	int n = 0;

	if (!act__cmd_dir(c, false, d[n], ACT_PATH_MAX))
		n++;
	if (c->kind == ACT_CMD_V2_SHARED && !wl_dir(c, d[n], ACT_PATH_MAX))
		n++;
	return n;
}

size_t act__cmd_count(const struct act_cmdcg *c)
{
	char d[2][ACT_PATH_MAX];
	int nd = dirs_of(c, d);
	size_t n = 0;

	for (int i = 0; i < nd; i++)
		n += each_proc(d[i], 0);
	return n;
}

void act__cmd_signal(const struct act_cmdcg *c, int sig)
{
	char d[2][ACT_PATH_MAX];
	int nd = dirs_of(c, d);

	for (int i = 0; i < nd; i++)
		each_proc(d[i], sig);
}

static bool has_file(const char *dir, const char *file)
{
	char path[ACT_PATH_MAX + 32];

	return join(path, dir, file) && access(path, F_OK) == 0;
}

static int write_in(const char *dir, const char *file, const char *val)
{
	char path[ACT_PATH_MAX + 32];

	return join(path, dir, file) ? cgfs_write_file(path, val) : -ENAMETOOLONG;
}

/* Is dir frozen yet (v1: freezer.state FROZEN; v2: "frozen 1" in cgroup.events)? */
static bool frozen(bool v1, const char *dir)
{
	char path[ACT_PATH_MAX + 32], buf[512];

	if (!join(path, dir, v1 ? "freezer.state" : "cgroup.events") ||
	    cgfs_read_file(path, buf, sizeof(buf)))
		return true; /* gone: nothing to wait for */
	return v1 ? !strcmp(buf, "FROZEN") : strstr(buf, "frozen 1") != NULL;
}

/*
 * One round without cgroup.kill: freeze (nothing in it can fork or run),
 * SIGKILL every task, thaw (a frozen task dies only once it runs again).
 */
static void freeze_kill_thaw(bool v1, const char *dir)
{
	const char *file = v1 ? "freezer.state" : "cgroup.freeze";
	bool can_freeze = has_file(dir, file);
	long long end = now_ms() + ACT_CMD_FREEZE_MS;

	if (can_freeze && !write_in(dir, file, v1 ? "FROZEN" : "1"))
		while (!frozen(v1, dir) && now_ms() < end)
			sleep_ms(1);
	each_proc(dir, SIGKILL);
	if (can_freeze)
		write_in(dir, file, v1 ? "THAWED" : "0");
}

int act__cmd_kill(const struct act_cmdcg *c, int timeout_ms, size_t *left)
{
	long long end = now_ms() + timeout_ms;
	char d[2][ACT_PATH_MAX];
	int nd = dirs_of(c, d);

	for (;;) {
		size_t n = 0;

		for (int i = 0; i < nd; i++) {
			size_t k = each_proc(d[i], 0);

			n += k;
			if (!k)
				continue;
			/* cgroup.kill also takes what forks meanwhile: once is enough,
			 * again is harmless */
			if (c->kind != ACT_CMD_FREEZER && has_file(d[i], "cgroup.kill") &&
			    !write_in(d[i], "cgroup.kill", "1"))
				continue;
			freeze_kill_thaw(c->kind == ACT_CMD_FREEZER, d[i]);
		}
		if (left)
			*left = n;
		if (!n)
			return 0;
		if (now_ms() >= end)
			return -EBUSY;
		sleep_ms(ACT_CMD_POLL_MS);
	}
}

int act__cmd_create(const struct act_cmdcg *c)
{
	char top[ACT_PATH_MAX], dir[ACT_PATH_MAX], path[ACT_PATH_MAX + 32];
	int fd;

	if (act__cmd_dir(c, true, top, sizeof(top)) || act__cmd_dir(c, false, dir, sizeof(dir)))
		return -ENAMETOOLONG;
	if (mkdir(top, 0755) && errno != EEXIST)
		return -errno;
	if (mkdir(dir, 0755)) {
		if (errno != EEXIST)
			return -errno;
		if (each_proc(dir, 0))
			return -EBUSY; /* someone's processes: not ours to take */
	}
	/* a v1 freezer cgroup starts THAWED; one left FROZEN by a killed cleanup must not
	 * freeze the new command */
	if (c->kind == ACT_CMD_FREEZER)
		write_in(dir, "freezer.state", "THAWED");
	else if (has_file(dir, "cgroup.freeze"))
		write_in(dir, "cgroup.freeze", "0");
	if (!join(path, dir, "cgroup.procs"))
		return -ENAMETOOLONG;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int act__cmd_remove(const struct act_cmdcg *c)
{
	char top[ACT_PATH_MAX], dir[ACT_PATH_MAX];

	if (act__cmd_dir(c, true, top, sizeof(top)) || act__cmd_dir(c, false, dir, sizeof(dir)))
		return -ENAMETOOLONG;
	if (rmdir(dir) && errno != ENOENT)
		return -errno;
	rmdir(top); /* fails while another command's cgroup is below: fine */
	return 0;
}

bool act__cmd_on_cgroupfs(const char *path)
{
	struct statfs sf;

	if (statfs(path, &sf))
		return false;
	return sf.f_type == CGROUP_SUPER_MAGIC || sf.f_type == CGROUP2_SUPER_MAGIC;
}
