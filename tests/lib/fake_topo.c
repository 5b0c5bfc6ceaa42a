// SPDX-License-Identifier: MIT
/* Fake sysfs topology trees (fake_topo.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fake_topo.h"

static int mkdirs(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) && errno != EEXIST) {
			*p = '/';
			return -errno;
		}
		*p = '/';
	}
	return 0;
}

int ft_write(const char *root, const char *rel, const char *text)
{
	char path[1024];
	FILE *f;
	int err;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	err = mkdirs(path);
	if (err)
		return err;
	f = fopen(path, "we");
	if (!f)
		return -errno;
	fprintf(f, "%s\n", text);
	return fclose(f) ? -errno : 0;
}

int ft_make(char *root, size_t len, int nodes, int cores, int threads, enum ft_numbering num,
	    bool with_nodes)
{
	int ncores = nodes * cores, ncpus = ncores * threads, err;
	char rel[160], text[256];

	snprintf(root, len, "/tmp/parties-fake-topo-XXXXXX");
	if (!mkdtemp(root))
		return -errno;
	snprintf(text, sizeof(text), "0-%d", ncpus - 1);
	err = ft_write(root, "devices/system/cpu/online", text);
	for (int core = 0; core < ncores && !err; core++) {
		size_t off = 0;

		text[0] = '\0';
		for (int h = 0; h < threads; h++) /* the kernel's list of the siblings */
			off += (size_t)snprintf(
			    text + off, sizeof(text) - off, "%s%d", h ? "," : "",
			    num == FT_SPLIT ? h * ncores + core : core * threads + h);
		for (int h = 0; h < threads && !err; h++) {
			int cpu = num == FT_SPLIT ? h * ncores + core : core * threads + h;
			char v[16];

			snprintf(rel, sizeof(rel),
				 "devices/system/cpu/cpu%d/topology/thread_siblings_list", cpu);
			err = ft_write(root, rel, text);
			snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/topology/core_id",
				 cpu);
			snprintf(v, sizeof(v), "%d", core % cores);
			err = err ? err : ft_write(root, rel, v);
			snprintf(rel, sizeof(rel),
				 "devices/system/cpu/cpu%d/topology/physical_package_id", cpu);
			snprintf(v, sizeof(v), "%d", core / cores);
			err = err ? err : ft_write(root, rel, v);
		}
	}
	if (err || !with_nodes)
		return err;
	snprintf(text, sizeof(text), nodes > 1 ? "0-%d" : "0", nodes - 1);
	err = ft_write(root, "devices/system/node/online", text);
	err = err ? err : ft_write(root, "devices/system/node/has_memory", text);
	for (int n = 0; n < nodes && !err; n++) {
		size_t off = 0;

		text[0] = '\0';
		for (int cpu = 0; cpu < ncpus; cpu++) {
			int core = num == FT_SPLIT ? cpu % ncores : cpu / threads;

			if (core / cores == n)
				off += (size_t)snprintf(text + off, sizeof(text) - off, "%s%d",
							off ? "," : "", cpu);
		}
		snprintf(rel, sizeof(rel), "devices/system/node/node%d/cpulist", n);
		err = ft_write(root, rel, text);
	}
	return err;
}

void ft_remove(const char *root)
{
	char cmd[1100];

	if (strncmp(root, "/tmp/parties-fake-topo-", 23))
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", root);
}
