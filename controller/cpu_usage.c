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

int cpu_usage_ns(const char *parent, const char *name, pid_t pid, uint64_t *ns)
{
	char path[512];
	uint64_t v, sum = 0;
	FILE *f;
	int n = 0;

	snprintf(path, sizeof(path), "/sys/fs/cgroup/unified/%s/%s/cpu.stat", parent, name);
	if (!read_u64(path, "usage_usec", &v)) {
		*ns = v * 1000;
		return 0;
	}
	snprintf(path, sizeof(path), "/sys/fs/cgroup/%s/%s/cpu.stat", parent, name);
	if (!read_u64(path, "usage_usec", &v)) {
		*ns = v * 1000;
		return 0;
	}
	snprintf(path, sizeof(path), "/sys/fs/cgroup/cpuacct/%s/%s/cpuacct.usage", parent, name);
	if (!read_u64(path, NULL, &v)) {
		*ns = v;
		return 0;
	}
	/* the processes of its cpuset cgroup: a launched command's children too */
	snprintf(path, sizeof(path), "/sys/fs/cgroup/cpuset/%s/%s/cgroup.procs", parent, name);
	f = fopen(path, "r");
	if (f) {
		int p;

		while (fscanf(f, "%d", &p) == 1) {
			if (!cpu_usage_pid_ns(p, &v)) {
				sum += v;
				n++;
			}
		}
		fclose(f);
		if (n) {
			*ns = sum;
			return 0;
		}
	}
	return cpu_usage_pid_ns(pid, ns);
}
