// SPDX-License-Identifier: MIT
/*
 * Core ids for core counts (controller/cores.c) through the real loop, with
 * a fake machine whose topology is read from fake sysfs trees
 * (tests/lib/fake_topo.c): 2 nodes x 2 cores x 2 threads numbered as qemu
 * does (cpu0/cpu1 siblings) and as Intel does (cpu0/cpu4), and one node
 * without SMT (this machine). Under smt = whole a workload gets both
 * siblings of a core, never one; under primary only first threads; a
 * workload stays on one node while it fits; the validator refuses a decision
 * that splits a core; a policy may ask for a node.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../lib/fake_topo.h"
#include "config.h"
#include "loop.h"
#include "res/res.h"

/* ---------------------------------------------------------------- fake machine */
struct fake_mach {
	struct loop_caps caps;
	struct act_cpumask cpus[CFG_MAX_WL];
	int assigns;
};

static int fm_caps(void *p, struct loop_caps *c)
{
	*c = ((struct fake_mach *)p)->caps;
	return 0;
}

static int fm_add(void *p, int wl, const char *name, pid_t pid, const struct act_cpumask *cpus,
		  const long alloc[POL_RES_COUNT])
{
	if (cpus)
		((struct fake_mach *)p)->cpus[wl] = *cpus;
	return 0;
}

static int fm_assign(void *p, const int *wls, const struct act_cpumask *cpus, int n)
{
	struct fake_mach *m = p;

	m->assigns++;
	for (int i = 0; i < n; i++)
		m->cpus[wls[i]] = cpus[i];
	return 0;
}

static int fm_nop(void *p, enum pol_res r, int wl, long v)
{
	return 0;
}

static int fm_remove(void *p, int wl)
{
	return 0;
}

static const char *fm_err(void *p)
{
	return "fake failure";
}

static const struct loop_mach_ops fake_ops = {
	.caps = fm_caps,
	.add = fm_add,
	.assign_cpus = fm_assign,
	.set = fm_nop,
	.remove = fm_remove,
	.last_error = fm_err,
};

/* ---------------------------------------------------------------- scripted policy */
static struct {
	bool set;
	long cores[CFG_MAX_WL];
	bool set_cpus[CFG_MAX_WL];
	struct act_cpumask cpus[CFG_MAX_WL];
	int node[CFG_MAX_WL]; /* -1: none */
	struct pol_observation seen;
} script;

static int sp_decide(void *st, const struct pol_observation *obs, struct pol_decision *dec)
{
	script.seen = *obs;
	if (!script.set)
		return 0;
	for (int i = 0; i < obs->nwl; i++) {
		dec->wl[i].alloc[POL_RES_CORES] = script.cores[i];
		dec->wl[i].set_cpus = script.set_cpus[i];
		dec->wl[i].cpus = script.cpus[i];
		dec->wl[i].set_node = script.node[i] >= 0;
		dec->wl[i].node = script.node[i];
	}
	return 0;
}

static const struct pol_ops scripted = {
	.name = "scripted",
	.decide = sp_decide,
};

/* ---------------------------------------------------------------- fixture */
struct fx {
	char root[64];
	struct cfg cfg;
	struct fake_mach m;
	struct loop l;
	int ret;
	char err[256];
};

static struct fx *fx_new(int nodes, int cores, int threads, enum ft_numbering num, const char *ini)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct loop_args a = { .sz = sizeof(a) };
	char text[2048];

	assert_non_null(f);
	assert_int_equal(ft_make(f->root, sizeof(f->root), nodes, cores, threads, num, true), 0);
	assert_int_equal(act_topo_read(&f->m.caps.topo, f->root), 0);
	f->m.caps.cpus = f->m.caps.topo.online;
	f->m.caps.res[POL_RES_CORES] = true;
	/* the fake machine's cpus, unless the test names them (the default is
	 * this machine's online cpus) */
	if (!strncmp(ini, "[resources]\ncpus", 16))
		snprintf(text, sizeof(text), "%s", ini);
	else
		snprintf(text, sizeof(text), "[resources]\ncpus = 0-%d\n%s",
			 nodes * cores * threads - 1,
			 strncmp(ini, "[resources]\n", 12) ? ini : ini + 12);
	if (cfg_load_string(&f->cfg, "t.ini", text, f->err, sizeof(f->err)))
		fail_msg("config: %s", f->err);
	a.cfg = &f->cfg;
	a.pol = &scripted;
	a.mops = &fake_ops;
	a.mctx = &f->m;
	for (int i = 0; i < f->cfg.nwl; i++)
		a.pid[i] = getpid();
	memset(&script, 0, sizeof(script));
	for (int i = 0; i < CFG_MAX_WL; i++)
		script.node[i] = -1;
	f->ret = loop_init(&f->l, &a, f->err, sizeof(f->err));
	return f;
}

static void fx_free(struct fx *f)
{
	if (!f->ret)
		loop_fini(&f->l);
	ft_remove(f->root);
	free(f);
}

static const char *fmt(const struct act_cpumask *m)
{
	static char buf[4][128];
	static int k;

	k = (k + 1) % 4;
	act_cpumask_format(m, buf[k], sizeof(buf[k]));
	return buf[k];
}

static const char *wl_cpus(struct fx *f, int i)
{
	return fmt(&f->l.wl[i].cpus);
}

/* Every cpu a workload has comes with all of its siblings, and no two
 * workloads share a cpu. */
static void assert_whole_cores(struct fx *f)
{
	for (int i = 0; i < f->l.nwl; i++) {
		int cpu;

		act_cpumask_for_each(cpu, &f->l.wl[i].cpus)
		{
			struct act_cpumask s;

			act_topo_siblings(&f->m.caps.topo, cpu, &s);
			assert_true(act_cpumask_subset(&s, &f->l.wl[i].cpus));
		}
		for (int j = i + 1; j < f->l.nwl; j++)
			assert_false(act_cpumask_intersects(&f->l.wl[i].cpus, &f->l.wl[j].cpus));
		/* the machine got what the loop believes */
		assert_true(act_cpumask_equal(&f->m.cpus[i], &f->l.wl[i].cpus));
	}
}

static void step(struct fx *f, uint64_t t)
{
	assert_int_equal(loop_step(&f->l, t), 0);
}

static const char three_wl[] = "[workload a]\ntarget_ms = 1\ncores = 1\npid = 1\n"
			       "[workload b]\ntarget_ms = 1\ncores = 1\npid = 1\n"
			       "[workload c]\ntarget_ms = 1\ncores = 1\npid = 1\n";

/* Intel numbering: siblings are cpuN and cpuN+4. Whole cores, each workload
 * on its own node while it fits, growing on its node, then spilling. */
static void test_whole_split_numbering(void **state)
{
	struct fx *f = fx_new(2, 2, 2, FT_SPLIT,
			      "[resources]\nsmt = whole\n"
			      "[workload a]\ntarget_ms = 1\ncores = 1\npid = 1\n"
			      "[workload b]\ntarget_ms = 1\ncores = 1\npid = 1\n");

	assert_int_equal(f->ret, 0);
	assert_int_equal(f->l.res[POL_RES_CORES].total, 4); /* 4 cores, 8 threads */
	assert_string_equal(wl_cpus(f, 0), "0,4");	    /* node 0 */
	assert_string_equal(wl_cpus(f, 1), "2,6");	    /* node 1: the one with more free */
	assert_whole_cores(f);
	/* the observation: topology, threads, nodes, units per node */
	step(f, 1000);
	assert_int_equal(script.seen.topo.smt, POL_SMT_WHOLE);
	assert_non_null(script.seen.topo.topo);
	assert_int_equal(script.seen.topo.nodes, 3);
	assert_int_equal(script.seen.topo.node_units[0], 2);
	assert_int_equal(script.seen.topo.node_free[1], 1);
	assert_int_equal(script.seen.wl[0].alloc[POL_RES_CORES], 1);
	assert_int_equal(script.seen.wl[0].threads, 2);
	assert_int_equal(script.seen.wl[1].nodes, 2);
	assert_int_equal(script.seen.res[POL_RES_CORES].free, 2);
	/* a grows on its node */
	script.set = true;
	script.cores[0] = 2;
	script.cores[1] = 1;
	step(f, 1500);
	assert_true(f->l.out.applied);
	assert_string_equal(wl_cpus(f, 0), "0-1,4-5");
	assert_whole_cores(f);
	/* b shrinks to nothing is not allowed (min 1); a takes the last core:
	 * node 0 is full, so it spills to node 1 */
	script.cores[0] = 3;
	step(f, 2000);
	assert_true(f->l.out.applied);
	assert_string_equal(wl_cpus(f, 0), "0-1,3-5,7");
	assert_int_equal(act_topo_nodes_of(&f->m.caps.topo, &f->l.wl[0].cpus), 3);
	assert_whole_cores(f);
	/* and gives the spilled core back first when it shrinks */
	script.cores[0] = 2;
	step(f, 2500);
	assert_string_equal(wl_cpus(f, 0), "0-1,4-5");
	fx_free(f);
}

/* qemu numbering, three workloads fair-shared: whole cores only. */
static void test_whole_fair_share(void **state)
{
	long smt = -1;
	struct fx *f = fx_new(2, 2, 2, FT_ADJACENT,
			      "[workload a]\ntarget_ms = 1\npid = 1\n"
			      "[workload b]\ntarget_ms = 1\npid = 1\n"
			      "[workload c]\ntarget_ms = 1\npid = 1\n");

	assert_int_equal(f->ret, 0);
	assert_int_equal(res_cfg_value(&f->cfg, -1, "smt", &smt, NULL), 0);
	assert_int_equal(smt, POL_SMT_WHOLE); /* the default */
	/* min 1 each first (a node 0, b node 1, c node 0), then the last core to a */
	assert_string_equal(wl_cpus(f, 0), "0-1,6-7");
	assert_string_equal(wl_cpus(f, 1), "4-5");
	assert_string_equal(wl_cpus(f, 2), "2-3");
	assert_whole_cores(f);
	fx_free(f);
}

/* Under primary, only first threads are handed out, siblings stay idle. */
static void test_primary(void **state)
{
	struct fx *f = fx_new(2, 2, 2, FT_SPLIT,
			      "[resources]\nsmt = primary\n"
			      "[workload a]\ntarget_ms = 1\ncores = 2\npid = 1\n"
			      "[workload b]\ntarget_ms = 1\ncores = 1\npid = 1\n");
	struct act_cpumask all;

	assert_int_equal(f->ret, 0);
	assert_int_equal(f->l.res[POL_RES_CORES].total, 4);
	assert_string_equal(wl_cpus(f, 0), "0-1"); /* cores 0 and 1 of node 0 */
	assert_string_equal(wl_cpus(f, 1), "2");
	script.set = true;
	script.cores[0] = 2;
	script.cores[1] = 2;
	step(f, 1000);
	assert_true(f->l.out.applied);
	assert_string_equal(wl_cpus(f, 1), "2-3");
	act_cpumask_or(&all, &f->l.wl[0].cpus, &f->l.wl[1].cpus);
	assert_string_equal(fmt(&all), "0-3"); /* never 4-7, the second threads */
	/* naming a second thread is refused */
	script.set_cpus[1] = true;
	act_cpumask_parse("2,6", &script.cpus[1]);
	step(f, 1500);
	assert_false(f->l.out.applied);
	assert_non_null(strstr(f->l.out.why, "not its core's first thread"));
	fx_free(f);
}

/* Shared: today's behaviour, any cpu, so one core can be split. */
static void test_shared(void **state)
{
	struct fx *f = fx_new(2, 2, 2, FT_SPLIT,
			      "[resources]\nsmt = shared\n"
			      "[workload a]\ntarget_ms = 1\ncores = 1\npid = 1\n"
			      "[workload b]\ntarget_ms = 1\ncores = 1\npid = 1\n");

	assert_int_equal(f->ret, 0);
	assert_int_equal(f->l.res[POL_RES_CORES].total, 8);
	assert_string_equal(wl_cpus(f, 0), "0");
	assert_string_equal(wl_cpus(f, 1), "2"); /* node 1 has more free */
	script.set = true;
	script.cores[0] = 1;
	script.cores[1] = 1;
	script.set_cpus[0] = script.set_cpus[1] = true;
	act_cpumask_parse("0", &script.cpus[0]);
	act_cpumask_parse("4", &script.cpus[1]); /* cpu0's sibling: allowed here */
	step(f, 1000);
	assert_true(f->l.out.applied);
	fx_free(f);
}

/* The validator refuses named cpus that split a core between workloads. */
static void test_whole_refuses_split(void **state)
{
	struct fx *f = fx_new(2, 2, 2, FT_SPLIT,
			      "[resources]\nsmt = whole\n"
			      "[workload a]\ntarget_ms = 1\ncores = 1\npid = 1\n"
			      "[workload b]\ntarget_ms = 1\ncores = 1\npid = 1\n");
	struct pol_decision dec;
	char why[256];

	assert_int_equal(f->ret, 0);
	step(f, 1000);
	pol_decision_init(&dec, &script.seen);
	/* a keeps cpu 0, b gets cpu 4: the two threads of one core */
	dec.wl[0].set_cpus = dec.wl[1].set_cpus = true;
	act_cpumask_parse("0", &dec.wl[0].cpus);
	act_cpumask_parse("4", &dec.wl[1].cpus);
	assert_int_equal(loop_validate(&f->l, &dec, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "split"));
	/* "0-1" is two half cores under Intel numbering: refused too */
	dec.wl[1].set_cpus = false;
	act_cpumask_parse("0-1", &dec.wl[0].cpus);
	dec.wl[0].alloc[POL_RES_CORES] = 2;
	assert_int_equal(loop_validate(&f->l, &dec, why, sizeof(why)), -EINVAL);
	/* whole cores are fine, counted as cores */
	act_cpumask_parse("0-1,4-5", &dec.wl[0].cpus);
	assert_int_equal(loop_validate(&f->l, &dec, why, sizeof(why)), 0);
	dec.wl[0].alloc[POL_RES_CORES] = 4;
	assert_int_equal(loop_validate(&f->l, &dec, why, sizeof(why)), -EINVAL);
	/* a node that does not exist */
	dec.wl[0].alloc[POL_RES_CORES] = 1;
	dec.wl[0].set_cpus = false;
	dec.wl[0].set_node = true;
	dec.wl[0].node = 5;
	assert_int_equal(loop_validate(&f->l, &dec, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "node 5"));
	fx_free(f);
}

/* A policy asks for a node: the workload's cores move there as free cores
 * there allow, and it grows there. */
static void test_set_node(void **state)
{
	struct fx *f = fx_new(2, 2, 2, FT_ADJACENT,
			      "[workload a]\ntarget_ms = 1\ncores = 1\npid = 1\n"
			      "[workload b]\ntarget_ms = 1\ncores = 1\npid = 1\n");

	assert_int_equal(f->ret, 0);
	assert_string_equal(wl_cpus(f, 0), "0-1");
	assert_string_equal(wl_cpus(f, 1), "4-5");
	script.set = true;
	script.cores[0] = 1;
	script.cores[1] = 1;
	script.node[0] = 1;
	step(f, 1000);
	assert_true(f->l.out.applied);
	assert_string_equal(wl_cpus(f, 0), "6-7");
	script.node[0] = -1;
	script.node[1] = 0; /* b to node 0, growing there */
	script.cores[1] = 2;
	step(f, 1500);
	assert_string_equal(wl_cpus(f, 1), "0-3");
	assert_whole_cores(f);
	fx_free(f);
}

/* Managed cpus that cut a core in half are refused under whole, with the
 * sibling named. */
static void test_whole_refuses_half_core(void **state)
{
	struct fx *f = fx_new(1, 2, 2, FT_ADJACENT,
			      "[resources]\ncpus = 0-2\n[workload a]\ntarget_ms = 1\npid = 1\n");

	assert_int_equal(f->ret, -EINVAL);
	assert_non_null(strstr(f->err, "cpu 2 but not its SMT sibling 3"));
	fx_free(f);
	f = fx_new(1, 2, 2, FT_ADJACENT,
		   "[resources]\ncpus = 0-3\n[workload a]\ntarget_ms = 1\npid = 1\ncpus = 1-2\n");
	assert_int_equal(f->ret, -EINVAL);
	assert_non_null(strstr(f->err, "split"));
	fx_free(f);
	f = fx_new(1, 2, 2, FT_ADJACENT,
		   "[resources]\ncpus = 0-3\n[workload a]\ntarget_ms = 1\npid = 1\ncpus = 2-3\n"
		   "cores = 1\n");
	assert_int_equal(f->ret, 0);
	assert_string_equal(wl_cpus(f, 0), "2-3");
	fx_free(f);
}

/* Without SMT and NUMA (this machine) the three modes hand out the same
 * cpus as each other, in the old order: lowest free first, highest off. */
static void test_no_smt_modes_agree(void **state)
{
	static const char *const modes[] = { "whole", "primary", "shared" };
	char seen[3][3][64];

	for (int m = 0; m < 3; m++) {
		char ini[512];
		struct fx *f;

		snprintf(ini, sizeof(ini), "[resources]\nsmt = %s\n%s", modes[m], three_wl);
		f = fx_new(1, 6, 1, FT_ADJACENT, ini);
		assert_int_equal(f->ret, 0);
		snprintf(seen[m][0], 64, "%s %s %s", wl_cpus(f, 0), wl_cpus(f, 1), wl_cpus(f, 2));
		script.set = true;
		script.cores[0] = 3;
		script.cores[1] = 1;
		script.cores[2] = 1;
		step(f, 1000);
		snprintf(seen[m][1], 64, "%s %s %s", wl_cpus(f, 0), wl_cpus(f, 1), wl_cpus(f, 2));
		script.cores[0] = 1;
		script.cores[2] = 3;
		step(f, 1500);
		snprintf(seen[m][2], 64, "%s %s %s", wl_cpus(f, 0), wl_cpus(f, 1), wl_cpus(f, 2));
		fx_free(f);
	}
	assert_string_equal(seen[0][0], "0 1 2");
	assert_string_equal(seen[0][1], "0,3-4 1 2");
	assert_string_equal(seen[0][2], "0 1 2-4");
	for (int m = 1; m < 3; m++)
		for (int s = 0; s < 3; s++)
			assert_string_equal(seen[m][s], seen[0][s]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole_split_numbering),
		cmocka_unit_test(test_whole_fair_share),
		cmocka_unit_test(test_primary),
		cmocka_unit_test(test_shared),
		cmocka_unit_test(test_whole_refuses_split),
		cmocka_unit_test(test_set_node),
		cmocka_unit_test(test_whole_refuses_half_core),
		cmocka_unit_test(test_no_smt_modes_agree),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
