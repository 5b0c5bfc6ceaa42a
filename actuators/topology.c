// SPDX-License-Identifier: MIT
/* The CPU topology from sysfs (topology.h). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topology.h"

#define TOPO_PATH_MAX 512

/* The first line of root/rel, without its newline. 0 or a negative errno. */
static int read_line(const char *root, const char *rel, char *buf, size_t len)
{
	char path[TOPO_PATH_MAX];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f)) {
		buf[0] = '\0';
		n = (size_t)ferror(f);
		fclose(f);
		return n ? -EIO : 0; /* an empty file is an empty list */
	}
	fclose(f);
	n = strlen(buf);
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	return 0;
}

static int read_list(const char *root, const char *rel, struct act_cpumask *m)
{
	char buf[4096];
	int err = read_line(root, rel, buf, sizeof(buf));

	return err ? err : act_cpumask_parse(buf, m);
}

static int read_int(const char *root, const char *rel, int32_t *v)
{
	char buf[64], *end;
	long x;
	int err = read_line(root, rel, buf, sizeof(buf));

	if (err)
		return err;
	errno = 0;
	x = strtol(buf, &end, 10);
	if (errno || end == buf || *end)
		return -EINVAL;
	*v = (int32_t)x;
	return 0;
}

static void topo_clear(struct act_topo *t)
{
	memset(t, 0, sizeof(*t));
	for (int c = 0; c < ACT_CPUMASK_MAX; c++) {
		t->primary[c] = t->node[c] = -1;
		t->core_id[c] = t->package_id[c] = -1;
	}
}

/* Cores, threads_max, nodes, nnodes from primary[] and node[]. */
static void topo_count(struct act_topo *t)
{
	int cpu;

	t->ncores = t->nnodes = t->threads_max = 0;
	t->nodes = 0;
	act_cpumask_for_each(cpu, &t->online)
	{
		struct act_cpumask s;
		int n;

		if (t->primary[cpu] == cpu)
			t->ncores++;
		act_topo_siblings(t, cpu, &s);
		n = act_cpumask_count(&s);
		if (n > t->threads_max)
			t->threads_max = n;
		t->nodes |= 1ull << t->node[cpu];
	}
	t->nnodes = __builtin_popcountll(t->nodes);
}

/* Node ids: node/online, else the nodeN directories; -ENOENT without either. */
static int node_ids(const char *root, uint64_t *ids)
{
	struct act_cpumask m;
	char path[TOPO_PATH_MAX];
	struct dirent *de;
	DIR *d;
	int n;

	*ids = 0;
	if (!read_list(root, "devices/system/node/online", &m)) {
		act_cpumask_for_each(n, &m)
		{
			if (n >= ACT_TOPO_NODES_MAX)
				return -ERANGE;
			*ids |= 1ull << n;
		}
		return 0;
	}
	snprintf(path, sizeof(path), "%s/devices/system/node", root);
	d = opendir(path);
	if (!d)
		return -ENOENT;
	while ((de = readdir(d))) {
		char *end;
		long v;

		if (strncmp(de->d_name, "node", 4) || !de->d_name[4])
			continue;
		v = strtol(de->d_name + 4, &end, 10);
		if (*end || v < 0)
			continue;
		if (v >= ACT_TOPO_NODES_MAX) {
			closedir(d);
			return -ERANGE;
		}
		*ids |= 1ull << v;
	}
	closedir(d);
	return 0;
}

static int read_nodes(struct act_topo *t, const char *root)
{
	struct act_cpumask seen, m, mem;
	uint64_t ids;
	char rel[64];
	int cpu, err = node_ids(root, &ids);

	if (err == -ENOENT) { /* no CONFIG_NUMA: one node, and it has the memory */
		t->node_cpus[0] = t->online;
		act_cpumask_for_each(cpu, &t->online) t->node[cpu] = 0;
		t->mem_nodes = 1;
		return 0;
	}
	if (err)
		return err;
	act_cpumask_zero(&seen);
	for (int n = 0; n < ACT_TOPO_NODES_MAX; n++) {
		if (!(ids >> n & 1))
			continue;
		snprintf(rel, sizeof(rel), "devices/system/node/node%d/cpulist", n);
		err = read_list(root, rel, &m);
		if (err)
			return err;
		act_cpumask_and(&m, &m, &t->online);
		if (act_cpumask_intersects(&m, &seen))
			return -EINVAL; /* a cpu on two nodes */
		act_cpumask_or(&seen, &seen, &m);
		t->node_cpus[n] = m;
		act_cpumask_for_each(cpu, &m) t->node[cpu] = (int16_t)n;
	}
	if (!act_cpumask_equal(&seen, &t->online))
		return -EINVAL; /* an online cpu on no node */
	if (read_list(root, "devices/system/node/has_memory", &mem)) {
		t->mem_nodes = ids; /* kernels before 2.6.35 lack the file */
	} else {
		t->mem_nodes = 0;
		act_cpumask_for_each(cpu, &mem) if (cpu < ACT_TOPO_NODES_MAX) t->mem_nodes |=
		    1ull << cpu;
	}
	return 0;
}

int act_topo_online(const char *root, struct act_cpumask *m)
{
	return read_list(root ? root : "/sys", "devices/system/cpu/online", m);
}

int act_topo_read(struct act_topo *t, const char *root)
{
	char rel[96];
	int cpu, err;

	if (!root)
		root = "/sys";
	topo_clear(t);
	err = read_list(root, "devices/system/cpu/online", &t->online);
	if (err || act_cpumask_empty(&t->online))
		return err ? err : -EINVAL;
	act_cpumask_for_each(cpu, &t->online)
	{
		struct act_cpumask sib;

		snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/topology/thread_siblings_list",
			 cpu);
		err = read_list(root, rel, &sib);
		if (err == -ENOENT) {
			act_cpumask_zero(&sib); /* no topology directory: a core of its own */
			act_cpumask_set(&sib, cpu);
		} else if (err) {
			return err;
		}
		act_cpumask_and(&sib, &sib, &t->online);
		if (!act_cpumask_isset(&sib, cpu))
			return -EINVAL;
		t->primary[cpu] = (int16_t)act_cpumask_first(&sib);
		snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/topology/core_id", cpu);
		read_int(root, rel, &t->core_id[cpu]);
		snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/topology/physical_package_id",
			 cpu);
		read_int(root, rel, &t->package_id[cpu]);
	}
	/* siblings name each other: cpu's primary has cpu as its own sibling */
	act_cpumask_for_each(cpu, &t->online)
	{
		int p = t->primary[cpu];

		if (t->primary[p] != p)
			return -EINVAL;
	}
	err = read_nodes(t, root);
	if (err)
		return err;
	topo_count(t);
	return 0;
}

int act_topo_synth(struct act_topo *t, int nodes, int cores, int threads, bool split_threads)
{
	int ncores = nodes * cores;

	if (nodes < 1 || cores < 1 || threads < 1 || nodes > ACT_TOPO_NODES_MAX ||
	    ncores * threads > ACT_CPUMASK_MAX)
		return -EINVAL;
	topo_clear(t);
	for (int n = 0; n < nodes; n++) {
		for (int c = 0; c < cores; c++) {
			int core = n * cores + c;

			for (int h = 0; h < threads; h++) {
				int cpu = split_threads ? h * ncores + core : core * threads + h;

				act_cpumask_set(&t->online, cpu);
				act_cpumask_set(&t->node_cpus[n], cpu);
				t->primary[cpu] = (int16_t)(split_threads ? core : core * threads);
				t->node[cpu] = (int16_t)n;
				t->core_id[cpu] = c;
				t->package_id[cpu] = n;
			}
		}
	}
	t->mem_nodes = nodes == ACT_TOPO_NODES_MAX ? ~0ull : (1ull << nodes) - 1;
	topo_count(t);
	return 0;
}

void act_topo_flat(struct act_topo *t, const struct act_cpumask *cpus)
{
	int cpu;

	topo_clear(t);
	t->online = *cpus;
	t->node_cpus[0] = *cpus;
	act_cpumask_for_each(cpu, cpus)
	{
		t->primary[cpu] = (int16_t)cpu;
		t->node[cpu] = 0;
	}
	t->mem_nodes = 1;
	topo_count(t);
}

void act_topo_siblings(const struct act_topo *t, int cpu, struct act_cpumask *out)
{
	int p, c;

	act_cpumask_zero(out);
	if (cpu < 0 || cpu >= ACT_CPUMASK_MAX || t->primary[cpu] < 0)
		return;
	p = t->primary[cpu];
	act_cpumask_for_each(c, &t->online) if (t->primary[c] == p) act_cpumask_set(out, c);
}

bool act_topo_is_primary(const struct act_topo *t, int cpu)
{
	return cpu >= 0 && cpu < ACT_CPUMASK_MAX && t->primary[cpu] == cpu;
}

uint64_t act_topo_nodes_of(const struct act_topo *t, const struct act_cpumask *cpus)
{
	uint64_t mask = 0;
	int cpu;

	act_cpumask_for_each(cpu, cpus)
	{
		int n = t->node[cpu];

		if (n >= 0 && n < ACT_TOPO_NODES_MAX)
			mask |= 1ull << n;
	}
	return mask;
}

uint64_t act_topo_mems_for(const struct act_topo *t, const struct act_cpumask *cpus)
{
	uint64_t mem = t->mem_nodes, m = 0;
	int cpu;

	/* one loop, not act_topo_nodes_of() & mem: gcc 12.2 -O2 inlined that
	 * into an AND with the loop's last shifted bit (wrong code, seen in
	 * test_topology's memoryless-node case) */
	act_cpumask_for_each(cpu, cpus)
	{
		int n = t->node[cpu];

		if (n >= 0 && n < ACT_TOPO_NODES_MAX && (mem >> n & 1))
			m |= 1ull << n;
	}
	return m ? m : mem;
}

int act_topo_nodes_format(uint64_t nodes, char *buf, size_t len)
{
	struct act_cpumask m;

	act_cpumask_zero(&m);
	m.w[0] = nodes;
	return act_cpumask_format(&m, buf, len);
}

/* Append to buf at *off, keeping it NUL-terminated; -ENOSPC once it is full. */
static int put(char *buf, size_t len, size_t *off, const char *s)
{
	size_t n = strlen(s);

	if (*off + n + 1 > len) {
		if (len > *off) {
			memcpy(buf + *off, s, len - *off - 1);
			buf[len - 1] = '\0';
		}
		*off = len;
		return -ENOSPC;
	}
	memcpy(buf + *off, s, n + 1);
	*off += n;
	return 0;
}

int act_topo_format(const struct act_topo *t, const struct act_cpumask *cpus, char *buf, size_t len)
{
	const struct act_cpumask *set = cpus ? cpus : &t->online;
	bool first_node = true;
	size_t off = 0;
	int err = 0;

	if (len)
		buf[0] = '\0';
	for (int n = 0; n < ACT_TOPO_NODES_MAX && !err; n++) {
		struct act_cpumask on;
		char item[64];
		int cpu;

		act_cpumask_and(&on, &t->node_cpus[n], set);
		if (act_cpumask_empty(&on))
			continue;
		snprintf(item, sizeof(item), "%snode%d:", first_node ? "" : "; ", n);
		first_node = false;
		err = put(buf, len, &off, item);
		act_cpumask_for_each(cpu, &on)
		{
			struct act_cpumask sib;
			char list[48];

			if (err)
				break;
			act_topo_siblings(t, cpu, &sib);
			act_cpumask_and(&sib, &sib, set);
			if (act_cpumask_first(&sib) != cpu)
				continue; /* shown with its group's first member */
			if (act_cpumask_format(&sib, list, sizeof(list)) < 0)
				snprintf(list, sizeof(list), "%d,...", cpu);
			/* "0-1" reads as a range; a pair is a pair */
			for (char *p = list; *p; p++)
				if (*p == '-' && act_cpumask_count(&sib) == 2)
					*p = ',';
			snprintf(item, sizeof(item), " [%s]", list);
			err = put(buf, len, &off, item);
		}
	}
	return err ? err : (int)off;
}
