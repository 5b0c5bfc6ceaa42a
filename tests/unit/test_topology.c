// SPDX-License-Identifier: MIT
/*
 * The topology read from sysfs (actuators/topology.c) against fake trees:
 * 2 nodes x 2 cores x 2 threads numbered as qemu does, the same numbered as
 * Intel does (cpu0/cpu4 siblings), one node without SMT (this machine), a
 * kernel without CONFIG_NUMA, and trees that contradict themselves.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../lib/fake_topo.h"
#include "topology.h"

static void check_siblings(const struct act_topo *t, int cpu, const char *want)
{
	struct act_cpumask s;
	char buf[64];

	act_topo_siblings(t, cpu, &s);
	act_cpumask_format(&s, buf, sizeof(buf));
	assert_string_equal(buf, want);
}

static void test_2x2x2_adjacent(void **state)
{
	struct act_topo t;
	char root[64], buf[256];

	assert_int_equal(ft_make(root, sizeof(root), 2, 2, 2, FT_ADJACENT, true), 0);
	assert_int_equal(act_topo_read(&t, root), 0);
	assert_int_equal(act_cpumask_count(&t.online), 8);
	assert_int_equal(t.ncores, 4);
	assert_int_equal(t.nnodes, 2);
	assert_int_equal(t.threads_max, 2);
	check_siblings(&t, 0, "0-1");
	check_siblings(&t, 5, "4-5");
	assert_true(act_topo_is_primary(&t, 4));
	assert_false(act_topo_is_primary(&t, 5));
	assert_int_equal(t.node[3], 0);
	assert_int_equal(t.node[4], 1);
	assert_int_equal(t.package_id[6], 1);
	assert_int_equal(t.core_id[6], 1);
	assert_int_equal(act_topo_format(&t, NULL, buf, sizeof(buf)) > 0, 1);
	assert_string_equal(buf, "node0: [0,1] [2,3]; node1: [4,5] [6,7]");
	ft_remove(root);
}

static void test_2x2x2_split(void **state)
{
	struct act_topo t;
	struct act_cpumask m;
	char root[64], buf[256];

	assert_int_equal(ft_make(root, sizeof(root), 2, 2, 2, FT_SPLIT, true), 0);
	assert_int_equal(act_topo_read(&t, root), 0);
	assert_int_equal(t.ncores, 4);
	check_siblings(&t, 0, "0,4");
	check_siblings(&t, 4, "0,4");
	check_siblings(&t, 3, "3,7");
	assert_true(act_topo_is_primary(&t, 3));
	assert_false(act_topo_is_primary(&t, 7));
	/* cores 0,1 (cpus 0,4,1,5) on node 0; cores 2,3 on node 1 */
	assert_int_equal(t.node[5], 0);
	assert_int_equal(t.node[6], 1);
	act_topo_format(&t, NULL, buf, sizeof(buf));
	assert_string_equal(buf, "node0: [0,4] [1,5]; node1: [2,6] [3,7]");
	act_cpumask_parse("1,5,6", &m);
	act_topo_format(&t, &m, buf, sizeof(buf));
	assert_string_equal(buf, "node0: [1,5]; node1: [6]");
	assert_int_equal(act_topo_nodes_of(&t, &m), 3);
	act_topo_nodes_format(act_topo_mems_for(&t, &m), buf, sizeof(buf));
	assert_string_equal(buf, "0-1");
	act_cpumask_parse("2,6", &m);
	assert_int_equal(act_topo_mems_for(&t, &m), 2);
	ft_remove(root);
}

static void test_no_smt_one_node(void **state)
{
	struct act_topo t;
	char root[64], buf[128];

	assert_int_equal(ft_make(root, sizeof(root), 1, 2, 1, FT_ADJACENT, true), 0);
	assert_int_equal(act_topo_read(&t, root), 0);
	assert_int_equal(t.ncores, 2);
	assert_int_equal(t.nnodes, 1);
	assert_int_equal(t.threads_max, 1);
	check_siblings(&t, 1, "1");
	act_topo_format(&t, NULL, buf, sizeof(buf));
	assert_string_equal(buf, "node0: [0] [1]");
	ft_remove(root);
}

/* No devices/system/node (no CONFIG_NUMA): one node 0 with the memory. */
static void test_no_numa_dir(void **state)
{
	struct act_topo t;
	struct act_cpumask m;
	char root[64];

	assert_int_equal(ft_make(root, sizeof(root), 1, 4, 1, FT_ADJACENT, false), 0);
	assert_int_equal(act_topo_read(&t, root), 0);
	assert_int_equal(t.nnodes, 1);
	assert_int_equal(t.node[3], 0);
	act_cpumask_parse("2", &m);
	assert_int_equal(act_topo_mems_for(&t, &m), 1);
	ft_remove(root);
}

/* A cpu-only node (no memory): mems fall back to the nodes that have it. */
static void test_memoryless_node(void **state)
{
	struct act_topo t;
	struct act_cpumask m;
	char root[64];

	assert_int_equal(ft_make(root, sizeof(root), 2, 1, 2, FT_ADJACENT, true), 0);
	assert_int_equal(ft_write(root, "devices/system/node/has_memory", "0"), 0);
	assert_int_equal(act_topo_read(&t, root), 0);
	act_cpumask_parse("2-3", &m);
	assert_int_equal(act_topo_nodes_of(&t, &m), 2);
	assert_int_equal(act_topo_mems_for(&t, &m), 1);
	ft_remove(root);
}

/* Offline cpus are not anyone's sibling; trees that contradict themselves
 * are refused. */
static void test_offline_and_contradictions(void **state)
{
	struct act_topo t;
	char root[64];

	assert_int_equal(ft_make(root, sizeof(root), 1, 2, 2, FT_ADJACENT, true), 0);
	assert_int_equal(ft_write(root, "devices/system/cpu/online", "0-2"), 0);
	assert_int_equal(ft_write(root, "devices/system/node/node0/cpulist", "0-2"), 0);
	assert_int_equal(act_topo_read(&t, root), 0);
	check_siblings(&t, 2, "2");
	assert_int_equal(t.ncores, 2);
	check_siblings(&t, 3, "");
	/* cpu2 says it is alone but cpu... a sibling list without the cpu itself */
	assert_int_equal(
	    ft_write(root, "devices/system/cpu/cpu1/topology/thread_siblings_list", "0"), 0);
	assert_int_equal(act_topo_read(&t, root), -EINVAL);
	assert_int_equal(
	    ft_write(root, "devices/system/cpu/cpu1/topology/thread_siblings_list", "0-1"), 0);
	/* a cpu on no node */
	assert_int_equal(ft_write(root, "devices/system/node/node0/cpulist", "0-1"), 0);
	assert_int_equal(act_topo_read(&t, root), -EINVAL);
	ft_remove(root);
	assert_int_equal(act_topo_read(&t, "/nonexistent-root"), -ENOENT);
}

static void test_synth_matches_read(void **state)
{
	struct act_topo r, s;
	char root[64];

	for (int split = 0; split < 2; split++) {
		assert_int_equal(
		    ft_make(root, sizeof(root), 2, 2, 2, split ? FT_SPLIT : FT_ADJACENT, true), 0);
		assert_int_equal(act_topo_read(&r, root), 0);
		assert_int_equal(act_topo_synth(&s, 2, 2, 2, split), 0);
		assert_true(act_cpumask_equal(&r.online, &s.online));
		assert_memory_equal(r.primary, s.primary, sizeof(r.primary));
		assert_memory_equal(r.node, s.node, sizeof(r.node));
		assert_int_equal(r.ncores, s.ncores);
		assert_int_equal(r.mem_nodes, s.mem_nodes);
		ft_remove(root);
	}
	assert_int_equal(act_topo_synth(&s, 0, 1, 1, false), -EINVAL);
}

/* The real machine: whatever it is, the read is consistent. */
static void test_this_machine(void **state)
{
	struct act_topo t;
	int cpu, ncores = 0;

	assert_int_equal(act_topo_read(&t, NULL), 0);
	act_cpumask_for_each(cpu, &t.online)
	{
		assert_true(t.node[cpu] >= 0);
		assert_true(act_cpumask_isset(&t.node_cpus[t.node[cpu]], cpu));
		ncores += act_topo_is_primary(&t, cpu);
	}
	assert_int_equal(ncores, t.ncores);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_2x2x2_adjacent),
		cmocka_unit_test(test_2x2x2_split),
		cmocka_unit_test(test_no_smt_one_node),
		cmocka_unit_test(test_no_numa_dir),
		cmocka_unit_test(test_memoryless_node),
		cmocka_unit_test(test_offline_and_contradictions),
		cmocka_unit_test(test_synth_matches_read),
		cmocka_unit_test(test_this_machine),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
