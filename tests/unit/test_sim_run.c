// SPDX-License-Identifier: MIT
/*
 * parties --simulate end to end without a process: the config's simulation
 * keys (and their file:line errors), the real loop and policy driven against
 * the model, the log's three latencies, and reproducibility by seed.
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

#include "config.h"
#include "policy.h"
#include "sim_run.h"
#include "topology.h" /* the topology the simulator made up, behind policy.h's opaque pointer */

static const char *const small_ini = "[controller]\n"
				     "interval_ms = 500\n"
				     "policy = %s\n"
				     "seed = %d\n"
				     "[resources]\n"
				     "freq = true\n"
				     "[simulation]\n"
				     "cores = 8\n"
				     "freq_min_mhz = 1200\n"
				     "freq_max_mhz = 2300\n"
				     "[workload hotel]\n"
				     "target_ms = 25\n"
				     "source = %s\n"
				     "%s"
				     "sim_max_rps = 2000\n"
				     "sim_load = 0:10%%, 5:100%%, 10:100%%, 15:10%%\n"
				     "sim_service = lognormal\n"
				     "sim_service_us = 2000\n"
				     "sim_service_cv = 0.5\n"
				     "sim_freq_scaling = 0.8\n"
				     "[workload memcached]\n"
				     "target_ms = 1\n"
				     "source = client\n"
				     "sim_load = 0:5000, 15:5000\n"
				     "sim_service_us = 50\n"
				     "sim_threads = 4\n";

static const struct pol_ops *test_pol; /* instead of the config's policy */

/* Run the small config; returns the log (malloc'd). */
static char *run_log(const char *policy, int seed, const char *source, const char *extra,
		     struct sim_run_result *res)
{
	static struct cfg c;
	char ini[2048], err[512] = "", *buf = NULL;
	size_t len = 0;
	struct sim_run_opts o = { .sz = sizeof(o), .cfg = &c };
	struct sim_run_result r;
	FILE *f;

	snprintf(ini, sizeof(ini), small_ini, policy, seed, source, extra);
	if (cfg_load_string(&c, "s.ini", ini, err, sizeof(err)))
		fail_msg("config: %s", err);
	o.pol = test_pol ? test_pol : pol_find(c.policy);
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	o.log = f;
	if (sim_run(&o, res ? res : &r, err, sizeof(err)))
		fail_msg("sim_run: %s", err);
	fclose(f);
	return buf;
}

static void test_same_seed_same_log(void **state)
{
	char *a = run_log("parties", 3, "client", "", NULL);
	char *b = run_log("parties", 3, "client", "", NULL);
	char *c = run_log("parties", 4, "client", "", NULL);

	assert_true(strlen(a) > 1000);
	assert_string_equal(a, b);
	assert_string_not_equal(a, c);
	free(a);
	free(b);
	free(c);
}

static void test_log_has_three_latencies(void **state)
{
	struct sim_run_result r;
	char *log = run_log("parties", 1, "ebee", "ebee_latency = sojourn\n", &r);
	char *line, *save = NULL;
	int n = 0, full = 0;

	assert_int_equal(r.intervals, 30);
	assert_true(r.requests > 70000);
	assert_true(r.events >= 3 * (r.requests - 1000));
	for (line = strtok_r(log, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strstr(line, "\"summary\""))
			continue;
		n++;
		/* both workloads, each with three non-null p99s and its cpu use */
		if (strstr(line, "\"name\":\"hotel\"") && strstr(line, "\"name\":\"memcached\"")) {
			const char *p = line;
			int k = 0;

			while ((p = strstr(p, "\"p99_client_us\":")) && p[16] != 'n') {
				if (strncmp(strstr(p, "\"p99_service_us\":") + 17, "null", 4) &&
				    strncmp(strstr(p, "\"p99_sojourn_us\":") + 17, "null", 4) &&
				    strncmp(strstr(p, "\"cpu_used\":"), "\"cpu_used\":null", 15))
					k++;
				p++;
			}
			full += k == 2;
		}
	}
	assert_int_equal(n, 30);
	assert_true(full >= 28); /* the first interval has no cpu_used yet */
	/* the hotel is fed by the sojourn p99: the ebee column carries it */
	assert_non_null(strstr(log, "\"source\":\"ebee\""));
	free(log);
}

static void test_policy_moves_cores_in_simulation(void **state)
{
	struct sim_run_result r;
	char *log = run_log("parties", 1, "client", "", &r);

	/* memcached has lots of slack from the start: PARTIES takes from it */
	assert_true(r.actions > 0);
	assert_int_equal(r.refused, 0);
	free(log);
	log = run_log("static", 1, "client", "", &r);
	assert_int_equal(r.actions, 0);
	free(log);
}

/* A policy that names cpus: hotel on 5-7, memcached on 0-1 (or both on 0). */
static bool overlap;

static int pin_decide(void *st, const struct pol_observation *obs, struct pol_decision *dec)
{
	(void)st;
	act_cpumask_zero(&dec->wl[0].cpus);
	act_cpumask_zero(&dec->wl[1].cpus);
	if (overlap) {
		act_cpumask_set(&dec->wl[0].cpus, 0);
		act_cpumask_set(&dec->wl[1].cpus, 0);
		dec->wl[0].alloc[POL_RES_CORES] = dec->wl[1].alloc[POL_RES_CORES] = 1;
	} else {
		for (int c = 5; c <= 7; c++)
			act_cpumask_set(&dec->wl[0].cpus, c);
		act_cpumask_set(&dec->wl[1].cpus, 0);
		act_cpumask_set(&dec->wl[1].cpus, 1);
		dec->wl[0].alloc[POL_RES_CORES] = 3;
		dec->wl[1].alloc[POL_RES_CORES] = 2;
	}
	dec->wl[0].set_cpus = dec->wl[1].set_cpus = true;
	return 0;
}

static const struct pol_ops pin_ops = { .name = "pin", .decide = pin_decide };

static void test_policy_names_cpus(void **state)
{
	struct sim_run_result r;
	char *log, *last;
	double cpu;

	test_pol = &pin_ops;
	overlap = false;
	log = run_log("static", 1, "client", "", &r);
	last = strstr(log, "\"t\":15.000");
	assert_non_null(last);
	assert_non_null(strstr(last, "\"cores\":3,\"cpus\":\"5-7\""));
	assert_non_null(strstr(last, "\"cores\":2,\"cpus\":\"0-1\""));
	assert_int_equal(r.actions, 1); /* once named, nothing more changes */
	/* memcached: 5000 rps x 50 us = 0.25 cores */
	assert_int_equal(
	    sscanf(strstr(strstr(last, "memcached"), "\"cpu_used\":") + 11, "%lf", &cpu), 1);
	assert_true(cpu > 0.2 && cpu < 0.3);
	free(log);
	overlap = true;
	log = run_log("static", 1, "client", "", &r);
	assert_int_equal(r.actions, 0);
	assert_int_equal(r.refused, r.intervals);
	assert_non_null(strstr(log, "given to another workload too"));
	free(log);
	test_pol = NULL;
}

/* A made-up 2 nodes x 2 cores x 2 threads machine, Intel-numbered (cpu c
 * and c+4 siblings): the policy sees it, whole cores on one node each, and
 * a node asked for is where the workload's core goes. */
static int topo_bad, topo_seen;

static int topo_decide(void *st, const struct pol_observation *obs, struct pol_decision *dec)
{
	const struct pol_topology *t = &obs->topo;

	(void)st;
	topo_seen++;
	if (!t->topo || t->smt != POL_SMT_WHOLE || t->nodes != 3 || t->node_units[1] != 2 ||
	    t->topo->ncores != 4 || t->topo->threads_max != 2)
		topo_bad++;
	for (int i = 0; i < obs->nwl; i++) {
		int cpu;

		if (__builtin_popcountll(obs->wl[i].nodes) != 1 ||
		    obs->wl[i].threads != 2 * obs->wl[i].alloc[POL_RES_CORES])
			topo_bad++;
		act_cpumask_for_each(cpu, &obs->wl[i].cpus)
		{
			struct act_cpumask sib;

			act_topo_siblings(t->topo, cpu, &sib);
			if (!act_cpumask_subset(&sib, &obs->wl[i].cpus))
				topo_bad++;
		}
	}
	if (obs->tick >= 3) {
		dec->wl[0].alloc[POL_RES_CORES] = 1;
		dec->wl[1].alloc[POL_RES_CORES] = 1;
		dec->wl[1].set_node = true;
		dec->wl[1].node = 0;
	}
	return 0;
}

static const struct pol_ops topo_ops = { .name = "topo", .decide = topo_decide };

static void test_topology_in_simulation(void **state)
{
	static struct cfg c;
	char ini[2048], fmt[2048], err[512] = "", *buf = NULL, *last;
	const char *at = strstr(small_ini, "cores = 8\n");
	struct sim_run_opts o = { .sz = sizeof(o), .cfg = &c, .pol = &topo_ops };
	struct sim_run_result r;
	size_t len = 0;

	assert_non_null(at);
	snprintf(fmt, sizeof(fmt),
		 "%.*scores = 4\nnodes = 2\nthreads_per_core = 2\n"
		 "numbering = split\n%s",
		 (int)(at - small_ini), small_ini, at + strlen("cores = 8\n"));
	snprintf(ini, sizeof(ini), fmt, "static", 1, "client", "");
	if (cfg_load_string(&c, "t.ini", ini, err, sizeof(err)))
		fail_msg("config: %s", err);
	o.log = open_memstream(&buf, &len);
	assert_int_equal(sim_run(&o, &r, err, sizeof(err)), 0);
	fclose(o.log);
	assert_int_equal(topo_seen, 30);
	assert_int_equal(topo_bad, 0);
	/* fair share: hotel node 0's two cores, memcached node 1's */
	assert_non_null(strstr(buf, "\"cores\":2,\"cpus\":\"0-1,4-5\""));
	assert_non_null(strstr(buf, "\"cores\":2,\"cpus\":\"2-3,6-7\""));
	/* then one core each, memcached moved to node 0 */
	last = strstr(buf, "\"t\":15.000");
	assert_non_null(last);
	assert_non_null(strstr(last, "\"cores\":1,\"cpus\":\"0,4\""));
	assert_non_null(strstr(last, "\"cores\":1,\"cpus\":\"1,5\""));
	assert_int_equal(r.refused, 0);
	free(buf);
	/* nodes must divide the cores */
	snprintf(fmt, sizeof(fmt), "%.*scores = 3\nnodes = 2\n%s", (int)(at - small_ini), small_ini,
		 at + strlen("cores = 8\n"));
	snprintf(ini, sizeof(ini), fmt, "static", 1, "client", "");
	assert_int_not_equal(cfg_load_string(&c, "t.ini", ini, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "do not split into 2 nodes"));
}

/* Quota instead of cores: the model's capacity follows the quota. */
static void test_quota_in_simulation(void **state)
{
	static struct cfg c;
	char err[512] = "", *buf = NULL;
	size_t len = 0;
	struct sim_run_opts o = { .sz = sizeof(o), .cfg = &c };
	struct sim_run_result r;
	FILE *f;

	assert_int_equal(cfg_load_string(&c, "q.ini",
					 "[controller]\npolicy = parties\n"
					 "[resources]\ncores = false\nquota = true\nfreq = false\n"
					 "[simulation]\ncores = 4\n"
					 "[workload a]\ntarget_ms = 5\nsource = client\n"
					 "sim_load = 0:1500, 20:1500\nsim_service_us = 1000\n"
					 "sim_threads = 64\n"
					 "[workload b]\ntarget_ms = 5\nsource = client\n"
					 "sim_load = 0:100, 20:100\nsim_service_us = 1000\n",
					 err, sizeof(err)),
			 0);
	o.pol = pol_find(c.policy);
	f = open_memstream(&buf, &len);
	o.log = f;
	assert_int_equal(sim_run(&o, &r, err, sizeof(err)), 0);
	fclose(f);
	/* a needs 1.5 cores of its 2: PARTIES moves quota from b to a */
	assert_true(r.actions > 0);
	assert_int_equal(r.refused, 0);
	assert_non_null(strstr(buf, "\"quota\":"));
	assert_null(strstr(buf, "\"quota\":null"));
	free(buf);
}

/* The hotel's state in the log's interval records, in order: 'f' fresh, 'i'
 * idle, and how many sim_clients lines the log has. */
static int hotel_states(char *log, char *st, size_t n, int *clients)
{
	char *line, *save = NULL;
	size_t k = 0;

	*clients = 0;
	for (line = strtok_r(log, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *h = strstr(line, "\"name\":\"hotel\"");

		if (strstr(line, "\"sim_clients\"")) {
			(*clients)++;
			/* what clients saw is there even before the first report */
			assert_non_null(strstr(line, "\"p99_client_us\":"));
			continue;
		}
		if (!h || k + 1 >= n)
			continue;
		h = strstr(h, "\"state\":\"");
		assert_non_null(h);
		st[k++] = h[9]; /* f(resh), i(dle), s(tale) */
	}
	st[k] = 0;
	return (int)k;
}

/* sim_client_lag_ms: the client feed reports nothing until the lag has
 * passed, then drives the policy; the log says what clients saw beside it. */
static void test_client_lag_in_log(void **state)
{
	char *plain = run_log("parties", 2, "client", "", NULL);
	char *lag = run_log("parties", 2, "client", "sim_client_lag_ms = 1000\n", NULL);
	char a[64], b[64];
	int ca, cb;

	assert_int_equal(hotel_states(plain, a, sizeof(a), &ca), 30);
	assert_int_equal(hotel_states(lag, b, sizeof(b), &cb), 30);
	printf("states without lag %s\n            with 1 s %s\n", a, b);
	assert_int_equal(ca, 0);
	assert_int_equal(cb, 30);
	assert_int_equal(a[0], 'f');
	/* t = 0.5 and 1 s: nothing received by t - 1 s yet */
	assert_memory_equal(b, "iif", 3);
	free(plain);
	free(lag);
}

static void expect_error(const char *ini, const char *want)
{
	static struct cfg c;
	char err[512] = "";

	assert_int_not_equal(cfg_load_string(&c, "e.ini", ini, err, sizeof(err)), 0);
	if (!strstr(err, want))
		fail_msg("error '%s' does not contain '%s'", err, want);
}

static void test_config_errors(void **state)
{
	expect_error("[simulation]\ncores = 4\nbogus = 1\n[workload a]\ntarget_ms = 1\n"
		     "sim_load = 0:10\n",
		     "e.ini:3: unknown key 'bogus' in [simulation]");
	expect_error("[simulation]\ncores = 2.5\n[workload a]\ntarget_ms = 1\nsim_load = 0:10\n",
		     "e.ini:2: cores");
	expect_error("[simulation]\n[workload a]\ntarget_ms = 1\nsim_load = 0:10, 0:20\n",
		     "e.ini:4: sim_load: times must increase");
	expect_error("[simulation]\n[workload a]\ntarget_ms = 1\nsim_load = 0:10%\n",
		     "e.ini:4: workload a: sim_load gives % of sim_max_rps");
	expect_error("[simulation]\n[workload a]\ntarget_ms = 1\n", "e.ini:2: workload a: sim_load "
								    "is required");
	expect_error("[simulation]\n[workload a]\ntarget_ms = 1\nsim_load = 0:1\n"
		     "sim_service = gamma\n",
		     "e.ini:5: sim_service: 'gamma' must be");
	expect_error("[simulation]\n[workload a]\ntarget_ms = 1\nsim_load = 0:1\n"
		     "sim_service_us = 10\nsim_fixed_us = 20\n",
		     "e.ini:6: workload a: sim_fixed_us 20 > sim_service_us 10");
	expect_error("[simulation]\n[workload a]\ntarget_ms = 1\nsim_load = 0:1\nsim_bogus = 1\n",
		     "e.ini:5: unknown simulation key 'sim_bogus'");
	expect_error("[simulation]\n[workload a]\ntarget_ms = 1\nsim_load = 0:1\n"
		     "sim_client_lag_ms = -5\n",
		     "e.ini:5: sim_client_lag_ms");
	expect_error("[simulation]\n[workload a]\ntarget_ms = 1\nsim_load = 0:1\n"
		     "sim_client_window_ms = 0\n",
		     "e.ini:5: sim_client_window_ms");
	expect_error("[simulation]\nfreq_min_mhz = 3000\n[workload a]\ntarget_ms = 1\n"
		     "sim_load = 0:1\n",
		     "e.ini:2: [simulation] freq_min_mhz 3000 > freq_max_mhz 2300");
	expect_error("[workload a]\ncommand = sleep 1\ntarget_ms = 1\nsource = client\n",
		     "e.ini:4: workload a: source = client needs a feed");
	expect_error("[workload a]\ncommand = sleep 1\ntarget_ms = 1\nebee_latency = queue\n",
		     "e.ini:4: ebee_latency: 'queue' must be service or sojourn");
}

static void test_config_defaults(void **state)
{
	static struct cfg c;
	char err[512] = "";

	assert_int_equal(cfg_load_string(&c, "d.ini",
					 "[simulation]\n[workload a]\ntarget_ms = 1\n"
					 "sim_max_rps = 1000\nsim_load = 0:10%, 60:50%\n",
					 err, sizeof(err)),
			 0);
	assert_true(c.sim.enabled);
	assert_int_equal(c.sim.cores, 16);
	assert_int_equal(act_cpumask_count(&c.cpus), 16);
	assert_int_equal(c.sim.freq_min_khz, 1200000);
	assert_int_equal(c.sim.freq_max_khz, 2300000);
	assert_true(sim_cfg_duration(&c.sim, c.nwl) == 60);
	{
		struct sim_wl_model m;

		sim_cfg_model(&c.sim, 0, &m);
		assert_true(m.rps[0] == 100 && m.rps[1] == 500);
		assert_int_equal(m.dist, SIM_DIST_EXP);
		/* the client feed is the client window, at once */
		assert_true(m.client_window_ns == 0 && m.client_lag_ns == 0);
	}
	assert_int_equal(cfg_load_string(&c, "d.ini",
					 "[simulation]\n[workload a]\ntarget_ms = 1\n"
					 "sim_load = 0:10\nsim_client_window_ms = 2000\n"
					 "sim_client_lag_ms = 1500\n",
					 err, sizeof(err)),
			 0);
	{
		struct sim_wl_model m;

		sim_cfg_model(&c.sim, 0, &m);
		assert_true(m.client_window_ns == 2000000000ull);
		assert_true(m.client_lag_ns == 1500000000ull);
	}
}

/* A run above the bounds on the work (sim_run.h) is refused before it starts:
 * -EINVAL, the reason, no virtual time, no event, no log line. alarm(): a
 * run that is not refused would go on for hours (SIGALRM fails the test). */
static void expect_too_big(const char *load, double duration_s, const char *want)
{
	static struct cfg c;
	char ini[512], err[512] = "", *buf = NULL;
	struct sim_run_opts o = { .sz = sizeof(o), .cfg = &c, .duration_s = duration_s };
	struct sim_run_result r;
	size_t len = 0;
	int ret;

	snprintf(ini, sizeof(ini),
		 "[controller]\ninterval_ms = 500\n[simulation]\ncores = 4\n"
		 "[workload a]\ntarget_ms = 1\nsource = client\nsim_load = %s\n"
		 "sim_service_us = 50\n",
		 load);
	if (cfg_load_string(&c, "b.ini", ini, err, sizeof(err)))
		fail_msg("config: %s", err);
	o.pol = pol_find(c.policy);
	o.log = open_memstream(&buf, &len);
	assert_non_null(o.log);
	alarm(20);
	ret = sim_run(&o, &r, err, sizeof(err));
	alarm(0);
	fclose(o.log);
	printf("  %s for %g s: %d %s\n", load, duration_s, ret, err);
	assert_int_equal(ret, -EINVAL);
	if (!strstr(err, want))
		fail_msg("'%s' does not say '%s'", err, want);
	assert_true(r.virtual_s == 0 && r.events == 0);
	assert_int_equal(len, 0);
	free(buf);
}

static void test_work_bounded(void **state)
{
	/* a year given through the schedule; --duration 1e9 */
	expect_too_big("0:10, 31536000:10", 0, "intervals");
	expect_too_big("0:10", 1e9, "intervals");
	/* rates that end in ENOMEM: their windows alone would not fit */
	expect_too_big("0:1e10, 1:1e10", 0, "window");
	expect_too_big("0:1e12", 1, "window");
	/* 1e6 rps for 2000 s: 2e9 requests */
	expect_too_big("0:1000000, 2000:1000000", 0, "requests");
	/* just within: 1000 s at 10 rps runs */
	{
		static struct cfg c;
		char err[512] = "";
		struct sim_run_opts o = { .sz = sizeof(o), .cfg = &c };
		struct sim_run_result r;

		assert_int_equal(cfg_load_string(&c, "ok.ini",
						 "[controller]\ninterval_ms = 500\n[simulation]\n"
						 "cores = 4\n[workload a]\ntarget_ms = 1\n"
						 "source = client\nsim_load = 0:10, 1000:10\n",
						 err, sizeof(err)),
				 0);
		o.pol = pol_find(c.policy);
		assert_int_equal(sim_run(&o, &r, err, sizeof(err)), 0);
		assert_true(r.virtual_s == 1000);
	}
}

/* A newer caller's larger sim_run_opts with a byte set that this build does
 * not know (an option it would ignore) is refused before anything runs. */
static void test_opts_newer_caller(void **state)
{
	static struct cfg c;
	char ini[2048], err[512] = "";
	struct {
		struct sim_run_opts o;
		long newer;
	} big = { .o = { .sz = sizeof(big), .cfg = &c }, .newer = 1 };
	struct sim_run_result r;

	snprintf(ini, sizeof(ini), small_ini, "static", 1, "client", "");
	assert_int_equal(cfg_load_string(&c, "s.ini", ini, err, sizeof(err)), 0);
	big.o.pol = pol_find(c.policy);
	assert_int_equal(sim_run(&big.o, &r, err, sizeof(err)), -E2BIG);
	assert_non_null(strstr(err, "sim_run_opts"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_opts_newer_caller),
		cmocka_unit_test(test_same_seed_same_log),
		cmocka_unit_test(test_log_has_three_latencies),
		cmocka_unit_test(test_policy_moves_cores_in_simulation),
		cmocka_unit_test(test_policy_names_cpus),
		cmocka_unit_test(test_topology_in_simulation),
		cmocka_unit_test(test_quota_in_simulation),
		cmocka_unit_test(test_client_lag_in_log),
		cmocka_unit_test(test_config_errors),
		cmocka_unit_test(test_config_defaults),
		cmocka_unit_test(test_work_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
