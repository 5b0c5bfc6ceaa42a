// SPDX-License-Identifier: MIT
/* Core ids for core counts, over the topology (cores.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cores.h"

static const char *smt_name(enum pol_smt s)
{
	return s == POL_SMT_WHOLE ? "whole" : s == POL_SMT_PRIMARY ? "primary" : "shared";
}

static int node_of(const struct cores *c, int u)
{
	int n = c->topo->node[u];

	return n >= 0 && n < ACT_TOPO_NODES_MAX ? n : 0;
}

int cores_unit_of(const struct cores *c, int cpu)
{
	if (!act_cpumask_isset(&c->handout, cpu))
		return -1;
	return c->smt == POL_SMT_WHOLE ? c->topo->primary[cpu] : cpu;
}

void cores_unit_cpus(const struct cores *c, int u, struct act_cpumask *out)
{
	act_cpumask_zero(out);
	if (cores_unit_of(c, u) != u)
		return;
	if (c->smt == POL_SMT_WHOLE)
		act_topo_siblings(c->topo, u, out);
	else
		act_cpumask_set(out, u);
}

int cores_init(struct cores *c, const struct act_topo *topo, const struct act_cpumask *managed,
	       enum pol_smt smt, char *why, size_t len)
{
	int cpu;

	memset(c, 0, sizeof(*c));
	c->smt = smt;
	c->topo = topo;
	c->managed = *managed;
	act_cpumask_for_each(cpu, managed)
	{
		struct act_cpumask sib;
		int s;

		if (!act_cpumask_isset(&topo->online, cpu)) {
			snprintf(why, len,
				 "cpu %d is managed but not in the topology read (offline?)", cpu);
			return -EINVAL;
		}
		act_topo_siblings(topo, cpu, &sib);
		if (smt == POL_SMT_WHOLE && !act_cpumask_subset(&sib, managed)) {
			act_cpumask_andnot(&sib, &sib, managed);
			s = act_cpumask_first(&sib);
			snprintf(
			    why, len,
			    "[resources] cpus has cpu %d but not its SMT sibling %d: under smt "
			    "= whole list whole cores, or set smt = shared",
			    cpu, s);
			return -EINVAL;
		}
		if (smt == POL_SMT_PRIMARY && !act_topo_is_primary(topo, cpu))
			continue;
		act_cpumask_set(&c->handout, cpu);
		if (smt != POL_SMT_WHOLE || act_topo_is_primary(topo, cpu))
			c->nunits++;
	}
	if (!c->nunits) {
		snprintf(why, len,
			 "no core to hand out: no managed cpu is a core's first thread (smt = %s)",
			 smt_name(smt));
		return -EINVAL;
	}
	return 0;
}

/* Units of cpus per node (counting each unit once, by any of its cpus). */
static void per_node(const struct cores *c, const struct act_cpumask *cpus,
		     int counts[ACT_TOPO_NODES_MAX])
{
	struct act_cpumask seen;
	int cpu;

	memset(counts, 0, sizeof(int) * ACT_TOPO_NODES_MAX);
	act_cpumask_zero(&seen);
	act_cpumask_for_each(cpu, cpus)
	{
		int u = cores_unit_of(c, cpu);

		if (u < 0 || act_cpumask_isset(&seen, u))
			continue;
		act_cpumask_set(&seen, u);
		counts[node_of(c, u)]++;
	}
}

int cores_count(const struct cores *c, const struct act_cpumask *cpus)
{
	int counts[ACT_TOPO_NODES_MAX], n = 0;

	per_node(c, cpus, counts);
	for (int i = 0; i < ACT_TOPO_NODES_MAX; i++)
		n += counts[i];
	return n;
}

int cores_check(const struct cores *c, const struct act_cpumask *cpus, char *why, size_t len)
{
	int cpu;

	act_cpumask_for_each(cpu, cpus)
	{
		struct act_cpumask unit, miss;
		char list[64];
		int u = cores_unit_of(c, cpu);

		if (u < 0) {
			if (act_cpumask_isset(&c->managed, cpu))
				snprintf(why, len,
					 "cpu %d is not handed out: it is not its core's first "
					 "thread (smt = primary)",
					 cpu);
			else
				snprintf(why, len, "cpu %d is not managed", cpu);
			return -EINVAL;
		}
		cores_unit_cpus(c, u, &unit);
		act_cpumask_andnot(&miss, &unit, cpus);
		if (!act_cpumask_empty(&miss)) {
			act_cpumask_format(&unit, list, sizeof(list));
			snprintf(why, len,
				 "cpus %s are one core (smt = whole): cpu %d is not in the set, so "
				 "the core would be split",
				 list, act_cpumask_first(&miss));
			return -EINVAL;
		}
	}
	return 0;
}

int cores_home(const struct cores *c, const struct act_cpumask *cpus)
{
	int counts[ACT_TOPO_NODES_MAX], best = -1;

	per_node(c, cpus, counts);
	for (int n = 0; n < ACT_TOPO_NODES_MAX; n++)
		if (counts[n] && (best < 0 || counts[n] > counts[best]))
			best = n;
	return best;
}

int cores_free_on(const struct cores *c, const struct act_cpumask *free, int n)
{
	int counts[ACT_TOPO_NODES_MAX];

	if (n < 0 || n >= ACT_TOPO_NODES_MAX)
		return 0;
	per_node(c, free, counts);
	return counts[n];
}

/* The lowest whole unit of free on node n (any node when n < 0), or -1. */
static int lowest_on(const struct cores *c, const struct act_cpumask *free, int n)
{
	int cpu;

	act_cpumask_for_each(cpu, free)
	{
		struct act_cpumask unit;

		if (cores_unit_of(c, cpu) != cpu || (n >= 0 && node_of(c, cpu) != n))
			continue;
		cores_unit_cpus(c, cpu, &unit);
		if (act_cpumask_subset(&unit, free))
			return cpu;
	}
	return -1;
}

static void move_unit(const struct cores *c, int u, struct act_cpumask *from,
		      struct act_cpumask *to)
{
	struct act_cpumask unit;

	cores_unit_cpus(c, u, &unit);
	act_cpumask_andnot(from, from, &unit);
	act_cpumask_or(to, to, &unit);
}

int cores_grow(const struct cores *c, struct act_cpumask *have, struct act_cpumask *free, int node)
{
	int counts[ACT_TOPO_NODES_MAX], most = -1, u = -1;

	per_node(c, free, counts);
	for (int n = 0; n < ACT_TOPO_NODES_MAX; n++)
		if (counts[n] && (most < 0 || counts[n] > counts[most]))
			most = n;
	if (most < 0)
		return -ENOSPC;
	if (node < 0)
		node = cores_home(c, have);
	if (node >= 0 && node < ACT_TOPO_NODES_MAX && counts[node])
		u = lowest_on(c, free, node);
	if (u < 0)
		u = lowest_on(c, free, most);
	if (u < 0)
		return -ENOSPC;
	move_unit(c, u, free, have);
	return 0;
}

int cores_shrink(const struct cores *c, struct act_cpumask *have, struct act_cpumask *free,
		 int node)
{
	int counts[ACT_TOPO_NODES_MAX], pick = -1, cpu, u = -1;

	per_node(c, have, counts);
	/* the node it has fewest units on (the highest on a tie), sparing node */
	for (int n = ACT_TOPO_NODES_MAX - 1; n >= 0; n--)
		if (counts[n] && n != node && (pick < 0 || counts[n] < counts[pick]))
			pick = n;
	if (pick < 0 && node >= 0 && node < ACT_TOPO_NODES_MAX && counts[node])
		pick = node;
	if (pick < 0)
		return -ENOENT;
	act_cpumask_for_each(cpu, have) if (cores_unit_of(c, cpu) == cpu && node_of(c, cpu) == pick)
	    u = cpu;
	if (u < 0)
		return -ENOENT;
	move_unit(c, u, have, free);
	return 0;
}

int cores_describe(const struct cores *c, const struct act_cpumask *cpus, char *buf, size_t len)
{
	const struct act_topo *t = c->topo;
	char groups[2048], mems[64];
	int n, units;

	act_topo_format(t, cpus ? cpus : &c->managed, groups, sizeof(groups));
	if (!cpus) {
		n = snprintf(
		    buf, len, "%d cpus, %d cores of %s%d thread%s, %d node%s (smt = %s): %s",
		    act_cpumask_count(&t->online), t->ncores, t->threads_max > 1 ? "up to " : "",
		    t->threads_max, t->threads_max > 1 ? "s" : "", t->nnodes,
		    t->nnodes > 1 ? "s" : "", smt_name(c->smt), groups);
		return n < (int)len ? n : -ENOSPC;
	}
	units = cores_count(c, cpus);
	/* mems are written only where there is a choice (actuators: act->numa) */
	snprintf(mems, sizeof(mems), "one memory node");
	if (__builtin_popcountll(t->mem_nodes) > 1) {
		snprintf(mems, sizeof(mems), "mems ");
		act_topo_nodes_format(act_topo_mems_for(t, cpus), mems + 5, sizeof(mems) - 5);
	}
	n = snprintf(buf, len, "%d %s%s, %d thread%s: %s (%s)", units,
		     c->smt == POL_SMT_SHARED ? "cpu" : "core", units == 1 ? "" : "s",
		     act_cpumask_count(cpus), act_cpumask_count(cpus) == 1 ? "" : "s", groups,
		     mems);
	return n < (int)len ? n : -ENOSPC;
}

int cores_migrate(const struct cores *c, struct act_cpumask *have, struct act_cpumask *free,
		  int node)
{
	int moved = 0;

	for (;;) {
		int counts[ACT_TOPO_NODES_MAX], total = 0;

		if (node < 0 || node >= ACT_TOPO_NODES_MAX)
			return moved;
		per_node(c, have, counts);
		for (int n = 0; n < ACT_TOPO_NODES_MAX; n++)
			total += counts[n];
		if (total == counts[node] || !cores_free_on(c, free, node))
			return moved;
		if (cores_shrink(c, have, free, node) || cores_grow(c, have, free, node))
			return moved;
		moved++;
	}
}
