// SPDX-License-Identifier: MIT
/*
 * Finding and vetting the cgroup of an in-place workload (see inplace.h).
 *
 * On cgroup v1 each controller is its own hierarchy, so a cgroup must exist in
 * both the cpuset and the cpu hierarchies for both resources to be managed;
 * its processes are read from the cpuset hierarchy (where parties pins them).
 * On v2 there is one directory with cpuset.cpus and cpu.max. Which layout,
 * and where: common/cgroupfs.h.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inplace.h"

static bool is_dir(const char *p)
{
	struct stat st;

	return !stat(p, &st) && S_ISDIR(st.st_mode);
}

int inplace_resolve(const struct cgfs *fs, const struct cfg_workload *w, char *grp, size_t len,
		    char *msg, size_t mlen)
{
	const char *root = cgfs_home(fs);
	char path[2 * INPLACE_PATH_MAX];
	const char *g = w->cgroup;

	if (w->find == CFG_FIND_UNIT) {
		snprintf(grp, len, "system.slice/%s", w->cgroup);
	} else if (w->find == CFG_FIND_CGROUP) {
		while (*g == '/')
			g++;
		snprintf(grp, len, "%s", g);
	} else {
		return -EINVAL;
	}
	if (!root[0]) {
		snprintf(msg, mlen, "no cgroup hierarchy is mounted");
		return -ENOENT;
	}
	if (cgfs_path(path, sizeof(path), root, grp, NULL) || !is_dir(path)) {
		if (w->find == CFG_FIND_UNIT)
			snprintf(msg, mlen, "unit %s has no cgroup %s (is the unit running%s?)",
				 w->cgroup, path,
				 fs->v1_cpuset[0] ? ", and does systemd create it in the cgroup "
						    "v1 cpuset hierarchy"
						  : "");
		else
			snprintf(msg, mlen, "no cgroup %s", path);
		return -ENOENT;
	}
	return 0;
}

static bool has_file(const char *root, const char *grp, const char *file)
{
	char path[2 * INPLACE_PATH_MAX + 64];

	return !cgfs_path(path, sizeof(path), root, grp, file) && access(path, F_OK) == 0;
}

int inplace_dir(const struct cgfs *fs, const char *grp, char *buf, size_t len)
{
	return cgfs_path(buf, len, cgfs_home(fs), grp, NULL);
}

int inplace_pids(const struct cgfs *fs, const char *grp, pid_t *pids, size_t cap)
{
	char dir[2 * INPLACE_PATH_MAX];
	int err = inplace_dir(fs, grp, dir, sizeof(dir));

	return err ? err : cgfs_procs(dir, pids, cap > INT_MAX ? INT_MAX : (int)cap);
}

/* Does grp have the files of the controllers parties writes, in this layout? */
static int check_files(const struct cgfs *fs, const char *grp, char *msg, size_t mlen)
{
	if (fs->version != 2 && (fs->v1_cpuset[0] || fs->v1_cpu[0])) {
		if (fs->v1_cpuset[0] && !has_file(fs->v1_cpuset, grp, "cpuset.cpus")) {
			snprintf(msg, mlen, "cgroup %s/%s has no cpuset.cpus", fs->v1_cpuset, grp);
			return -ENOENT;
		}
		if (fs->v1_cpu[0] && !has_file(fs->v1_cpu, grp, "cpu.cfs_quota_us")) {
			snprintf(msg, mlen,
				 "cgroup %s is not in the cpu hierarchy %s (create it there too, "
				 "or parties cannot set its quota)",
				 grp, fs->v1_cpu);
			return -ENOENT;
		}
	} else if (!has_file(fs->v2, grp, "cpuset.cpus") || !has_file(fs->v2, grp, "cpu.max")) {
		/* systemd owns the subtree_control of its slices and rewrites it: the unit
		 * has to ask systemd for the controllers, parties does not enable them */
		snprintf(msg, mlen,
			 "cgroup %s/%s lacks cpuset.cpus or cpu.max: have systemd enable cpuset "
			 "and cpu for it, e.g. AllowedCPUs= and CPUWeight= in the unit "
			 "(systemctl set-property --runtime UNIT AllowedCPUs=0-N CPUWeight=100)",
			 fs->v2, grp);
		return -ENOENT;
	}
	return 0;
}

int inplace_may_manage(const struct cgfs *fs, const char *grp, const char *parent, pid_t self,
		       char *msg, size_t mlen)
{
	pid_t pids[4096];
	int n, err;

	if (!grp[0] || strstr(grp, "..")) {
		snprintf(msg, mlen, "cgroup '/%s' is %s: parties manages a workload's own cgroup",
			 grp, grp[0] ? "not below the root" : "the root cgroup (every process)");
		return -EINVAL;
	}
	if (cgfs_within(grp, parent)) {
		snprintf(msg, mlen, "cgroup %s is parties' own cgroup_parent %s or below it", grp,
			 parent);
		return -EINVAL;
	}
	err = check_files(fs, grp, msg, mlen);
	if (err)
		return err;
	n = inplace_pids(fs, grp, pids, sizeof(pids) / sizeof(pids[0]));
	for (int i = 0; i < n && i < (int)(sizeof(pids) / sizeof(pids[0])); i++)
		if (pids[i] == self) {
			snprintf(msg, mlen, "cgroup %s holds parties itself (pid %d)", grp,
				 (int)self);
			return -EINVAL;
		}
	return 0;
}
