/* SPDX-License-Identifier: MIT */
/*
 * Which cpus a count of cores is: the loop's choice of core ids, over the
 * machine's topology (actuators/include/topology.h) and [resources] smt.
 *
 * A unit is what one POL_RES_CORES counts (policy.h, enum pol_smt): a
 * physical core's managed threads (whole), its first thread (primary) or one
 * cpu (shared). A unit is named by its lowest cpu. A workload's cpus are
 * always a union of units; they grow by the lowest free unit on the
 * workload's node (the node most of its units are on, or the one a policy
 * asked for) and shrink by the highest unit on the node it has fewest units
 * on, so a workload stays on one NUMA node while it fits. On a machine
 * without SMT and with one node this is the loop's old rule: grow from the
 * lowest free cpu, shrink from the highest.
 *
 * Pure functions of their arguments; no machine access.
 */
#ifndef PARTIES_CORES_H
#define PARTIES_CORES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpulist.h"
#include "policy.h"
#include "topology.h"

struct cores {
	enum pol_smt smt;
	const struct act_topo *topo;
	struct act_cpumask managed; /* [resources] cpus */
	struct act_cpumask handout; /* cpus that are in some unit */
	int nunits;
};

/*
 * Units of managed under topo and smt. 0, or -EINVAL with why: under whole,
 * a core whose threads are managed only in part (list whole cores, or smt =
 * shared); no unit at all (under primary: no managed cpu is a first thread).
 */
int cores_init(struct cores *c, const struct act_topo *topo, const struct act_cpumask *managed,
	       enum pol_smt smt, char *why, size_t len);
/* The unit cpu is in (its lowest cpu), or -1: unmanaged, or a second thread
 * under primary. */
int cores_unit_of(const struct cores *c, int cpu);
/* The cpus of the unit named u. */
void cores_unit_cpus(const struct cores *c, int u, struct act_cpumask *out);
/* Units in cpus, counting a partly present one. */
int cores_count(const struct cores *c, const struct act_cpumask *cpus);
/* cpus is a union of whole units: 0, or -EINVAL with why ("cpu 4 is core
 * [0,4]'s sibling and not in the set", "cpu 5 is not handed out"). */
int cores_check(const struct cores *c, const struct act_cpumask *cpus, char *why, size_t len);
/* The node most of cpus' units are on (lowest on a tie); -1 when empty. */
int cores_home(const struct cores *c, const struct act_cpumask *cpus);
/* Units of free on node n. */
int cores_free_on(const struct cores *c, const struct act_cpumask *free, int n);
/*
 * Move one unit from free to have: the lowest free one on node (node < 0:
 * have's home; have empty: the node with the most free units), else the
 * lowest on the node with the most free units. -ENOSPC when free has none.
 */
int cores_grow(const struct cores *c, struct act_cpumask *have, struct act_cpumask *free, int node);
/*
 * Move one unit from have to free: the highest on the node have has fewest
 * units on, other than node (node < 0: any). -ENOENT when have is empty.
 */
int cores_shrink(const struct cores *c, struct act_cpumask *have, struct act_cpumask *free,
		 int node);
/*
 * Trade have's units off node for free units on node, one for one, while
 * there are both. Returns how many moved.
 */
int cores_migrate(const struct cores *c, struct act_cpumask *have, struct act_cpumask *free,
		  int node);

/*
 * One line for people: the topology read and how cores are counted,
 *   "8 cpus, 4 cores of 2 threads, 2 nodes (smt = whole): node0: [0,1] [2,3]; node1: ..."
 * or a workload's cores with their siblings and nodes (cpus non-NULL),
 *   "2 cores, 4 threads: node0: [0,1] [2,3] (mems 0)"
 * ("one memory node" instead of the mems where there is no choice).
 * Length, or -ENOSPC (truncated).
 */
int cores_describe(const struct cores *c, const struct act_cpumask *cpus, char *buf, size_t len);

#endif /* PARTIES_CORES_H */
