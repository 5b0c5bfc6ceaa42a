// SPDX-License-Identifier: MIT
/*
 * Finding and vetting the cgroup of an in-place workload (see inplace.h).
 *
 * On cgroup v1 each controller is its own hierarchy, so a cgroup must exist in
 * both the cpuset and the cpu hierarchies for both resources to be managed;
 * its processes are read from the cpuset hierarchy (where parties pins them).
 * On v2 there is one directory with cpuset.cpus and cpu.max.
 */
#include <errno.h>
#include <mntent.h>
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

int inplace_roots_find(struct inplace_roots *r)
{
	struct mntent me, *m;
	char tmp[4096];
	FILE *f;

	memset(r, 0, sizeof(*r));
	f = setmntent("/proc/self/mounts", "re");
	if (!f)
		return -errno;
	while ((m = getmntent_r(f, &me, tmp, sizeof(tmp)))) {
		if (!strcmp(m->mnt_type, "cgroup2") && !r->v2[0])
			snprintf(r->v2, sizeof(r->v2), "%s", m->mnt_dir);
		if (strcmp(m->mnt_type, "cgroup"))
			continue;
		if (hasmntopt(m, "cpuset") && !r->v1_cpuset[0])
			snprintf(r->v1_cpuset, sizeof(r->v1_cpuset), "%s", m->mnt_dir);
		if (hasmntopt(m, "cpu") && !r->v1_cpu[0])
			snprintf(r->v1_cpu, sizeof(r->v1_cpu), "%s", m->mnt_dir);
	}
	endmntent(f);
	return 0;
}

/* The directory processes are listed in (and that must exist). */
static const char *main_root(const struct inplace_roots *r)
{
	if (r->v1_cpuset[0])
		return r->v1_cpuset;
	return r->v2[0] ? r->v2 : r->v1_cpu;
}

int inplace_resolve(const struct inplace_roots *r, const struct cfg_workload *w, char *grp,
		    size_t len, char *msg, size_t mlen)
{
	const char *root = main_root(r);
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
	snprintf(path, sizeof(path), "%s/%s", root, grp);
	if (!is_dir(path)) {
		if (w->find == CFG_FIND_UNIT)
			snprintf(msg, mlen, "unit %s has no cgroup %s (is the unit running%s?)",
				 w->cgroup, path,
				 r->v1_cpuset[0] ? ", and does systemd create it in the cgroup "
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

	snprintf(path, sizeof(path), "%s/%s/%s", root, grp, file);
	return access(path, F_OK) == 0;
}

int inplace_procs_path(const struct inplace_roots *r, const char *grp, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s/cgroup.procs", main_root(r), grp);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int inplace_pids(const struct inplace_roots *r, const char *grp, pid_t *pids, size_t cap)
{
	char path[2 * INPLACE_PATH_MAX + 64];
	int n = 0, pid;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/cgroup.procs", main_root(r), grp);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fscanf(f, "%d", &pid) == 1) {
		if ((size_t)n < cap)
			pids[n] = pid;
		n++;
	}
	fclose(f);
	return n;
}

int inplace_check(const struct inplace_roots *r, const char *grp, const char *parent, pid_t self,
		  char *msg, size_t mlen)
{
	size_t pl = strlen(parent);
	pid_t pids[4096];
	int n;

	if (!grp[0] || strstr(grp, "..")) {
		snprintf(msg, mlen, "cgroup '/%s' is %s: parties manages a workload's own cgroup",
			 grp, grp[0] ? "not below the root" : "the root cgroup (every process)");
		return -EINVAL;
	}
	if (!strncmp(grp, parent, pl) && (!grp[pl] || grp[pl] == '/')) {
		snprintf(msg, mlen, "cgroup %s is parties' own cgroup_parent %s or below it", grp,
			 parent);
		return -EINVAL;
	}
	if (r->v1_cpuset[0] || r->v1_cpu[0]) {
		if (r->v1_cpuset[0] && !has_file(r->v1_cpuset, grp, "cpuset.cpus")) {
			snprintf(msg, mlen, "cgroup %s/%s has no cpuset.cpus", r->v1_cpuset, grp);
			return -ENOENT;
		}
		if (r->v1_cpu[0] && !has_file(r->v1_cpu, grp, "cpu.cfs_quota_us")) {
			snprintf(msg, mlen,
				 "cgroup %s is not in the cpu hierarchy %s (create it there too, "
				 "or parties cannot set its quota)",
				 grp, r->v1_cpu);
			return -ENOENT;
		}
	} else if (!has_file(r->v2, grp, "cpuset.cpus") || !has_file(r->v2, grp, "cpu.max")) {
		/* systemd owns the subtree_control of its slices and rewrites it: the unit
		 * has to ask systemd for the controllers, parties does not enable them */
		snprintf(msg, mlen,
			 "cgroup %s/%s lacks cpuset.cpus or cpu.max: have systemd enable cpuset "
			 "and cpu for it, e.g. AllowedCPUs= and CPUWeight= in the unit "
			 "(systemctl set-property --runtime UNIT AllowedCPUs=0-N CPUWeight=100)",
			 r->v2, grp);
		return -ENOENT;
	}
	n = inplace_pids(r, grp, pids, sizeof(pids) / sizeof(pids[0]));
	for (int i = 0; i < n && i < (int)(sizeof(pids) / sizeof(pids[0])); i++)
		if (pids[i] == self) {
			snprintf(msg, mlen, "cgroup %s holds parties itself (pid %d)", grp,
				 (int)self);
			return -EINVAL;
		}
	return 0;
}
