/* SPDX-License-Identifier: MIT */
/*
 * The machine's CPU topology as the kernel reports it: which CPUs are online,
 * which of them are SMT siblings (threads of one physical core), and which
 * NUMA node each is on. Read from sysfs, never assumed:
 *
 *   <root>/devices/system/cpu/online
 *   <root>/devices/system/cpu/cpuN/topology/{thread_siblings_list,core_id,physical_package_id}
 *   <root>/devices/system/node/online, nodeN/cpulist, has_memory
 *
 * where <root> is "/sys" or, in unit tests, a fake tree. A kernel without
 * CONFIG_NUMA has no node directory: every CPU is then on node 0, which is
 * what the kernel itself means (one memory node). A CPU without a topology
 * directory is a core of one thread.
 *
 * A physical core is named by its primary: its lowest-numbered online
 * thread. Siblings need not be adjacent (Intel numbers cpu0/cpu4 as one
 * core's threads; AMD and qemu cpu0/cpu1).
 *
 * Plain value type (copy with =), no allocation. Every name has the
 * act_topo_ prefix.
 */
#ifndef ACT_TOPOLOGY_H
#define ACT_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpulist.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ACT_TOPO_NODES_MAX 64 /* node ids 0..63: one bit each in a uint64_t */

struct act_topo {
	struct act_cpumask online;
	int ncores;	    /* physical cores with an online thread */
	int nnodes;	    /* nodes with an online cpu */
	int threads_max;    /* most online threads in one core */
	uint64_t nodes;	    /* bit n: node n has an online cpu */
	uint64_t mem_nodes; /* bit n: node n has memory (cpuset.mems may name it) */
	struct act_cpumask node_cpus[ACT_TOPO_NODES_MAX];
	int16_t primary[ACT_CPUMASK_MAX]; /* cpu -> its core's lowest online thread; -1 offline */
	int16_t node[ACT_CPUMASK_MAX];	  /* cpu -> NUMA node id; -1 offline */
	int32_t core_id[ACT_CPUMASK_MAX]; /* sysfs core_id (-1 unknown) */
	int32_t package_id[ACT_CPUMASK_MAX]; /* sysfs physical_package_id (-1 unknown) */
};

/*
 * Read the topology under root ("/sys" when NULL). 0, or a negative errno:
 * -ENOENT when cpu/online cannot be read, -EINVAL when a file does not parse
 * or the files contradict each other (a sibling that does not name the cpu
 * back, an online cpu on no node or on two).
 */
int act_topo_read(struct act_topo *t, const char *root);
/* Only the online cpus (root/devices/system/cpu/online; root "/sys" when
 * NULL): what the config's cpus default to. 0 or a negative errno. */
int act_topo_online(const char *root, struct act_cpumask *m);
/*
 * A made-up topology: nodes x cores x threads cpus, numbered as qemu and AMD
 * do (a core's threads adjacent, node 0's cores first), or, with
 * split_threads, as Intel does (every core's first thread, then every core's
 * second: cpu0 and cpu<cores*nodes> are siblings). For the simulator; the
 * trivial nodes=1, threads=1 is a machine without SMT or NUMA. -EINVAL when
 * it does not fit.
 */
int act_topo_synth(struct act_topo *t, int nodes, int cores, int threads, bool split_threads);

/* Every cpu of cpus a core of its own on node 0: what a machine that
 * reports no topology is taken to be (the loop's unit-test fakes). */
void act_topo_flat(struct act_topo *t, const struct act_cpumask *cpus);

/* cpu's online siblings (itself included) into out; empty when cpu is offline. */
void act_topo_siblings(const struct act_topo *t, int cpu, struct act_cpumask *out);
/* Is cpu the first thread of its core? */
bool act_topo_is_primary(const struct act_topo *t, int cpu);
/* The nodes (bit n = node n) cpus are on. */
uint64_t act_topo_nodes_of(const struct act_topo *t, const struct act_cpumask *cpus);
/*
 * The cpuset.mems for cpus: their nodes that have memory; when none of them
 * has (cpu-only nodes), every node with memory, as the kernel would place the
 * memory anyway. 0 when nothing is known.
 */
uint64_t act_topo_mems_for(const struct act_topo *t, const struct act_cpumask *cpus);
/* Format a node mask as a kernel list ("0-1"); "" for 0. Length or -ENOSPC. */
int act_topo_nodes_format(uint64_t nodes, char *buf, size_t len);
/*
 * cpus with their sibling groups and nodes, one line:
 *   "node0: [0,4] [1,5]; node1: [2,6]"
 * (only the cpus in the set; a group shows the members in the set). All of
 * the online cpus when cpus is NULL. Length or -ENOSPC (truncated).
 */
int act_topo_format(const struct act_topo *t, const struct act_cpumask *cpus, char *buf,
		    size_t len);

#ifdef __cplusplus
}
#endif

#endif /* ACT_TOPOLOGY_H */
