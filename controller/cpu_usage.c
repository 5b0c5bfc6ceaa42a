// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cpu_usage.h"
#include "procfs.h"

int cpu_usage_pid_ns(pid_t pid, uint64_t *ns)
{
	long hz = sysconf(_SC_CLK_TCK);
	struct procfs_stat st;
	int err = procfs_stat(pid, &st);

	if (err)
		return err;
	if (hz <= 0)
		return -EINVAL;
	*ns = (st.utime + st.stime) * (1000000000ull / (unsigned long long)hz);
	return 0;
}

static int read_u64(const char *path, const char *key, uint64_t *v)
{
	char line[256];
	size_t n = key ? strlen(key) : 0;
	FILE *f = fopen(path, "r");
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long x;

		if (key && (strncmp(line, key, n) || line[n] != ' '))
			continue;
		if (sscanf(line + n, "%llu", &x) == 1) {
			*v = x;
			ret = 0;
		}
		break;
	}
	fclose(f);
	return ret;
}

/* Processes of a cpuset cgroup whose CPU time is summed: more than a server has. */
#define CPU_USAGE_PIDS_MAX 4096

int cpu_usage_cg_ns(const struct cgfs *fs, const char *parent, const char *name, pid_t pid,
		    uint64_t *ns)
{
	char grp[2 * CGFS_PATH_MAX], path[4 * CGFS_PATH_MAX];
	pid_t pids[CPU_USAGE_PIDS_MAX];
	uint64_t v, sum = 0;
	int n, used = 0;

	snprintf(grp, sizeof(grp), "%s/%s", parent, name);
	if (fs->v2[0] && !cgfs_path(path, sizeof(path), fs->v2, grp, "cpu.stat") &&
	    !read_u64(path, "usage_usec", &v)) {
		*ns = v * 1000;
		return 0;
	}
	if (fs->v1_cpuacct[0] &&
	    !cgfs_path(path, sizeof(path), fs->v1_cpuacct, grp, "cpuacct.usage") &&
	    !read_u64(path, NULL, &v)) {
		*ns = v;
		return 0;
	}
	/* the processes of its cpuset cgroup: a launched command's children too */
	n = fs->v1_cpuset[0] && !cgfs_path(path, sizeof(path), fs->v1_cpuset, grp, NULL)
		? cgfs_procs(path, pids, CPU_USAGE_PIDS_MAX)
		: 0;
	for (int i = 0; i < n && i < CPU_USAGE_PIDS_MAX; i++)
		if (!cpu_usage_pid_ns(pids[i], &v)) {
			sum += v;
			used++;
		}
	if (used) {
		*ns = sum;
		return 0;
	}
	return cpu_usage_pid_ns(pid, ns);
}

int cpu_usage_ns(const char *parent, const char *name, pid_t pid, uint64_t *ns)
{
	return cpu_usage_cg_ns(cgfs_here(), parent, name, pid, ns);
}
