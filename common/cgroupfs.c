// SPDX-License-Identifier: MIT
/*
 * cgroup mounts, layout, paths and membership (see cgroupfs.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <mntent.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cgroupfs.h"

int cgfs_path(char *buf, size_t len, const char *mnt, const char *grp, const char *file)
{
	int n;

	n = snprintf(buf, len, "%s%s%s%s%s", mnt, grp && *grp ? "/" : "", grp ? grp : "",
		     file ? "/" : "", file ? file : "");
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int cgfs_read_file(const char *path, char *buf, size_t len)
{
	ssize_t r;
	int fd;

	if (len == 0)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = read(fd, buf, len - 1);
	if (r < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	close(fd);
	buf[r] = '\0';
	while (r > 0 && (buf[r - 1] == '\n' || buf[r - 1] == ' '))
		buf[--r] = '\0';
	return 0;
}

int cgfs_write_file(const char *path, const char *str)
{
	size_t len = strlen(str);
	ssize_t w;
	int fd;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	w = write(fd, str, len);
	if (w < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	close(fd);
	return (size_t)w == len ? 0 : -EIO;
}

bool cgfs_listed(const char *dir, const char *file, const char *ctrl)
{
	char path[CGFS_PATH_MAX + 64], buf[1024], *save = NULL, *tok;

	if (cgfs_path(path, sizeof(path), dir, NULL, file) ||
	    cgfs_read_file(path, buf, sizeof(buf)))
		return false;
	for (tok = strtok_r(buf, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save))
		if (!strcmp(tok, ctrl))
			return true;
	return false;
}

/* The first mount of each kind counts: a later bind mount of it changes nothing. */
static void keep(char *dst, const char *root, const char *dir)
{
	if (!dst[0])
		snprintf(dst, CGFS_PATH_MAX, "%s%s", root, dir);
}

static int read_mounts(struct cgfs *fs, const char *mounts, const char *root)
{
	struct mntent me, *m;
	char tmp[4096];
	FILE *f = setmntent(mounts, "re");

	if (!f)
		return -errno;
	while ((m = getmntent_r(f, &me, tmp, sizeof(tmp)))) {
		if (!strcmp(m->mnt_type, "cgroup2"))
			keep(fs->v2, root, m->mnt_dir);
		if (strcmp(m->mnt_type, "cgroup"))
			continue;
		if (hasmntopt(m, "cpuset"))
			keep(fs->v1_cpuset, root, m->mnt_dir);
		if (hasmntopt(m, "cpu"))
			keep(fs->v1_cpu, root, m->mnt_dir);
		if (hasmntopt(m, "cpuacct"))
			keep(fs->v1_cpuacct, root, m->mnt_dir);
		if (hasmntopt(m, "freezer"))
			keep(fs->v1_freezer, root, m->mnt_dir);
		if (hasmntopt(m, "name=systemd"))
			keep(fs->v1_systemd, root, m->mnt_dir);
	}
	endmntent(f);
	return 0;
}

int cgfs_find(struct cgfs *fs, const char *mounts, const char *root)
{
	int err;

	memset(fs, 0, sizeof(*fs));
	fs->version = 1;
	err = read_mounts(fs, mounts ? mounts : "/proc/self/mounts", root ? root : "");
	if (err)
		return err;
	if (!fs->v1_cpuset[0] && fs->v2[0] &&
	    (cgfs_listed(fs->v2, "cgroup.controllers", "cpuset") ||
	     cgfs_listed(fs->v2, "cgroup.controllers", "cpu")))
		fs->version = 2;
	return 0;
}

int cgfs_v2_mount(char *buf, size_t len, const char *mountinfo)
{
	FILE *f = fopen(mountinfo ? mountinfo : "/proc/self/mountinfo", "re");
	char line[4096];
	int err = -ENOENT;

	if (!f)
		return -errno;
	while (err && fgets(line, sizeof(line), f)) {
		char root[1024], mnt[1024];
		const char *sep = strstr(line, " - ");

		/* id parent major:minor root mountpoint ... - fstype ... */
		if (!sep || strncmp(sep + 3, "cgroup2 ", 8))
			continue;
		if (sscanf(line, "%*s %*s %*s %1023s %1023s", root, mnt) != 2 || strcmp(root, "/"))
			continue;
		if (snprintf(buf, len, "%s", mnt) < (int)len)
			err = 0;
	}
	fclose(f);
	return err;
}

static pthread_once_t here_once = PTHREAD_ONCE_INIT;
static struct cgfs here;

static void find_here(void)
{
	cgfs_find(&here, NULL, NULL);
}

const struct cgfs *cgfs_here(void)
{
	pthread_once(&here_once, find_here);
	return &here;
}

const char *cgfs_v1(const struct cgfs *fs, const char *ctrl)
{
	if (!strcmp(ctrl, "cpuset"))
		return fs->v1_cpuset;
	if (!strcmp(ctrl, "cpu"))
		return fs->v1_cpu;
	if (!strcmp(ctrl, "cpuacct"))
		return fs->v1_cpuacct;
	if (!strcmp(ctrl, "freezer"))
		return fs->v1_freezer;
	if (!strcmp(ctrl, "name=systemd"))
		return fs->v1_systemd;
	return "";
}

const char *cgfs_home(const struct cgfs *fs)
{
	if (fs->version == 2)
		return fs->v2;
	if (fs->v1_cpuset[0])
		return fs->v1_cpuset;
	return fs->v1_cpu[0] ? fs->v1_cpu : fs->v2;
}

bool cgfs_is_cgroup(const char *dir)
{
	char p[PATH_MAX + 16];

	return !cgfs_path(p, sizeof(p), dir, NULL, "cgroup.procs") && !access(p, R_OK);
}

int cgfs_each_pid(const char *dir, const char *file, void (*fn)(pid_t id, void *arg), void *arg)
{
	char p[PATH_MAX];
	int id, n = 0;
	FILE *f;

	if (cgfs_path(p, sizeof(p), dir, NULL, file))
		return -ENAMETOOLONG;
	f = fopen(p, "re");
	if (!f)
		return -errno;
	while (fscanf(f, "%d", &id) == 1) {
		fn(id, arg);
		n++;
	}
	fclose(f);
	return n;
}

struct scan {
	pid_t *out;
	int max;
	int n;	   /* stored in out, each once */
	int extra; /* found once out was full */
};

static void add_pid(pid_t pid, void *arg)
{
	struct scan *s = arg;

	for (int i = 0; i < s->n; i++)
		if (s->out[i] == pid)
			return;
	if (s->n < s->max)
		s->out[s->n++] = pid;
	else
		s->extra++;
}

static int scan_dir(struct scan *s, const char *dir, int depth)
{
	char p[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int n;

	n = cgfs_each_pid(dir, "cgroup.procs", add_pid, s);
	if (n < 0)
		return n;
	if (depth >= CGFS_DEPTH_MAX)
		return 0;
	d = opendir(dir);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if (!cgfs_path(p, sizeof(p), dir, de->d_name, NULL))
			scan_dir(s, p, depth + 1); /* a child removed meanwhile is fine */
	}
	closedir(d);
	return 0;
}

int cgfs_procs(const char *dir, pid_t *out, int max)
{
	struct scan s = { .out = out, .max = max < 0 ? 0 : max };
	int err = scan_dir(&s, dir, 0);

	return err ? err : s.n + s.extra;
}

bool cgfs_within(const char *grp, const char *parent)
{
	size_t pl = strlen(parent);

	return !strncmp(grp, parent, pl) && (!grp[pl] || grp[pl] == '/');
}
