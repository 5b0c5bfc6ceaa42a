// SPDX-License-Identifier: MIT
/*
 * parties: what the command line asks for. The daemon (daemon.c) by
 * default; --check-config, --cleanup and --simulate instead. The
 * configuration is loaded and checked first, whatever the mode: against this
 * machine too, unless it is a simulation or a cleanup after workloads that
 * may be gone.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actuator.h"
#include "args.h"
#include "config.h"
#include "daemon.h"
#include "journal.h"
#include "loop.h"
#include "sim_run.h"

/* The file, --seed over its seed, its policy's settings. 0, or -EINVAL said
 * on stderr. */
static int load_config(const struct args *a, struct cfg *cfg, const struct pol_ops **pol)
{
	char err[512] = "";

	if (cfg_load_file(cfg, a->cfg_path, err, sizeof(err))) {
		fprintf(stderr, "parties: %s\n", err);
		return -EINVAL;
	}
	if (cfg->note[0])
		fprintf(stderr, "parties: %s\n", cfg->note);
	if (a->seed_arg) {
		char *e;

		errno = 0;
		cfg->seed = strtoull(a->seed_arg, &e, 0);
		if (errno || *e || e == a->seed_arg || *a->seed_arg == '-') {
			fprintf(stderr, "parties: --seed: '%s' is not a whole number >= 0\n",
				a->seed_arg);
			return -EINVAL;
		}
	}
	*pol = pol_find(cfg->policy);
	if (loop_check_policy(cfg, *pol, err, sizeof(err))) {
		fprintf(stderr, "parties: %s\n", err);
		return -EINVAL;
	}
	return 0;
}

/* The decision log: --log, else the config's, except in a dry run (which
 * writes only --log). Then the file against this machine, the log included.
 * 0, or -EINVAL said on stderr. */
static int check_live(struct args *a, const struct cfg *cfg)
{
	char err[512] = "";

	if (a->dry_run && !a->log_path && cfg->log[0])
		fprintf(stderr, "parties: dry run: not writing the config's log %s (give --log)\n",
			cfg->log);
	if (!a->log_path && cfg->log[0] && !a->dry_run)
		a->log_path = cfg->log;
	/* --cleanup repairs after workloads that may be gone: only the state_dir matters */
	if (!a->cleanup &&
	    cfg_check_live(cfg, a->log_path == cfg->log ? NULL : a->log_path, err, sizeof(err))) {
		fprintf(stderr, "parties: %s\n", err);
		return -EINVAL;
	}
	return 0;
}

/* --simulate: the loop against the model (sim_run.c); nothing real is touched. */
static int simulate(const struct args *a, const struct cfg *c, const struct pol_ops *pol)
{
	struct sim_run_opts o = {
		.sz = sizeof(o), .cfg = c, .pol = pol, .duration_s = a->duration
	};
	const char *log_path = a->log_path;
	struct sim_run_result r;
	char err[512] = "";
	int ret;

	if (!a->simulate) {
		fprintf(stderr,
			"parties: %s has a [simulation] section: run it with --simulate (its "
			"workloads are models, not processes)\n",
			c->file);
		return 2;
	}
	if (!c->sim.enabled) {
		fprintf(stderr, "parties: %s: no [simulation] section: nothing to simulate\n",
			c->file);
		return 2;
	}
	if (!log_path && c->log[0])
		log_path = c->log;
	if (log_path) {
		o.log = fopen(log_path, "w");
		if (!o.log) {
			fprintf(stderr, "parties: cannot open log %s: %s\n", log_path,
				strerror(errno));
			return 2;
		}
	}
	ret = sim_run(&o, &r, err, sizeof(err));
	if (o.log && fclose(o.log) && !ret) {
		fprintf(stderr, "parties: writing %s: %s\n", log_path, strerror(errno));
		return 1;
	}
	if (ret) {
		fprintf(stderr, "parties: %s\n", err);
		return ret == -EINVAL ? 2 : 1;
	}
	fprintf(stderr,
		"parties: simulated %.1f s (seed %llu, policy %s) in %.2f s wall, %.2f s CPU: "
		"%llu requests, %llu events (%.2f M events/s), %llu intervals, %llu actions, "
		"%llu refused\n",
		r.virtual_s, (unsigned long long)c->seed, pol->name, r.wall_s, r.cpu_s,
		(unsigned long long)r.requests, (unsigned long long)r.events,
		r.cpu_s > 0 ? (double)r.events / r.cpu_s / 1e6 : 0.0,
		(unsigned long long)r.intervals, (unsigned long long)r.actions,
		(unsigned long long)r.refused);
	return 0;
}

/* --check-config: the file would start. */
static int config_ok(const struct args *a, const struct cfg *cfg)
{
	fprintf(stderr, "parties: %s: ok (%s%d workload(s), policy %s)\n", a->cfg_path,
		cfg->sim.enabled ? "simulation, " : "", cfg->nwl, cfg->policy);
	return 0;
}

/* --cleanup: only repair what a killed instance with this cgroup_parent left. */
static int cleanup(const struct cfg *cfg)
{
	struct act_opts o = { .sz = sizeof(o),
			      .parent = cfg->cgroup_parent,
			      .state_dir = cfg->state_dir };
	int e = act_cleanup(&o);

	if (e < 0) {
		fprintf(stderr, "parties: cleanup of cgroup parent %s failed: %s\n",
			cfg->cgroup_parent, strerror(-e));
		return 1;
	}
	fprintf(stderr, "parties: cleanup of %s: %s\n", cfg->cgroup_parent,
		e ? "repaired what an earlier instance left" : "nothing was left to repair");
	return 0;
}

/* --show-topology: what act_topo_read() finds here, one node a line. */
static int show_topology(void)
{
	struct act_topo t;
	char buf[4096];
	int err = act_topo_read(&t, NULL);

	if (err) {
		fprintf(stderr,
			"parties: cannot read the cpu topology under /sys/devices/system: %s\n",
			strerror(-err));
		return 1;
	}
	act_cpumask_format(&t.online, buf, sizeof(buf));
	printf("cpus %s: %d online, %d physical cores of up to %d thread%s, %d NUMA node%s\n", buf,
	       act_cpumask_count(&t.online), t.ncores, t.threads_max, t.threads_max > 1 ? "s" : "",
	       t.nnodes, t.nnodes > 1 ? "s" : "");
	for (int n = 0; n < ACT_TOPO_NODES_MAX; n++) {
		if (!(t.nodes >> n & 1))
			continue;
		act_topo_format(&t, &t.node_cpus[n], buf, sizeof(buf));
		printf("%s%s\n", buf, t.mem_nodes >> n & 1 ? "" : " (no memory)");
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct cfg cfg;
	const struct pol_ops *pol;
	struct args a;
	int ret;

	journal_stderr_init();
	ret = args_parse(argc, argv, &a);
	if (ret)
		return ret == ARGS_DONE ? 0 : 2;
	if (a.show_topology)
		return show_topology();
	if (load_config(&a, &cfg, &pol))
		return 2;
	if (a.check_only && cfg.sim.enabled)
		return config_ok(&a, &cfg); /* a simulation touches nothing real: no live checks */
	if (a.simulate || cfg.sim.enabled)
		return simulate(&a, &cfg, pol);
	if (check_live(&a, &cfg))
		return 2;
	if (a.check_only)
		return config_ok(&a, &cfg);
	if (a.cleanup)
		return cleanup(&cfg);
	return daemon_run(&a, &cfg, pol);
}
