/* SPDX-License-Identifier: MIT */
/*
 * Configuration of `parties --simulate`: the [simulation] section (the
 * modelled machine and network) and the sim_* keys of each [workload NAME]
 * (its load schedule and service model). config.c hands these keys here; a
 * config with a [simulation] section is a simulation config: its workloads
 * need no process (pid, pidfile, command) and `source = client` needs no
 * feed file. Every key and default is in configs/example.ini.
 */
#ifndef PARTIES_SIM_CONFIG_H
#define PARTIES_SIM_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "sim_model.h"

struct cfg_key;

/* The sim_* keys of [workload NAME], in their table's order (sim_config.c). */
enum sim_cfg_wl_key_id {
	SIM_CFG_WL_LOAD = 0,
	SIM_CFG_WL_MAX_RPS,
	SIM_CFG_WL_SERVICE,
	SIM_CFG_WL_SERVICE_US,
	SIM_CFG_WL_SERVICE_CV,
	SIM_CFG_WL_FIXED_US,
	SIM_CFG_WL_FREQ_SCALING,
	SIM_CFG_WL_THREADS,
	SIM_CFG_WL_REQUEST_BYTES,
	SIM_CFG_WL_RESPONSE_BYTES,
	SIM_CFG_WL_CLIENT_WINDOW_MS,
	SIM_CFG_WL_CLIENT_LAG_MS,
	SIM_CFG_WL_NKEYS,
};

/* The keys of [simulation], in their table's order. */
enum sim_cfg_key_id {
	SIM_CFG_CORES = 0,
	SIM_CFG_FREQ_MIN_MHZ,
	SIM_CFG_FREQ_MAX_MHZ,
	SIM_CFG_FREQ_STEP_MHZ,
	SIM_CFG_LINK_GBPS,
	SIM_CFG_PROP_DELAY_US,
	SIM_CFG_DURATION_S,
	SIM_CFG_NODES,
	SIM_CFG_THREADS_PER_CORE,
	SIM_CFG_NUMBERING,
	SIM_CFG_NKEYS,
};

/* Durations in ns, frequencies in kHz (the file gives us and MHz). */
struct cfg_sim_wl {
	int line_of[SIM_CFG_WL_NKEYS]; /* where each key was given; 0 = not given */
	double max_rps;
	int npoints;
	double t_s[SIM_MAX_POINTS];
	double val[SIM_MAX_POINTS]; /* rps, or % of max_rps where pct[] */
	bool pct[SIM_MAX_POINTS];
	enum sim_dist dist;
	double service_ns, fixed_ns, cv, freq_scaling;
	int threads;
	double req_bytes, resp_bytes;
	double client_window_ns, client_lag_ns; /* 0 = not given */
};

struct cfg_sim {
	bool enabled; /* the file has a [simulation] section */
	int line;     /* its header */
	int line_of[SIM_CFG_NKEYS];
	int cores;	      /* physical cores */
	int nodes;	      /* NUMA nodes, cores / nodes each */
	int threads_per_core; /* SMT threads: cores * threads_per_core cpus */
	int numbering;	      /* 0 adjacent (qemu, AMD), 1 split (Intel: cpu0/cpuN siblings) */
	long freq_min_khz, freq_max_khz, freq_step_khz;
	double link_gbps, prop_ns;
	double duration_s; /* 0 = the end of the longest schedule */
	struct cfg_sim_wl wl[SIM_MAX_WL];
};

void sim_cfg_defaults(struct cfg_sim *s);
/* The keys of [simulation] (wl false) or a workload's sim_* keys, and how many. */
const struct cfg_key *sim_cfg_keys(bool wl, int *n);
/* A key of [simulation]: 0, or -EINVAL with err set. */
int sim_cfg_key(struct cfg_sim *s, const char *key, const char *val, int line, char *err,
		size_t len);
/* A key of [workload NAME]: 1 taken, 0 not a simulation key, -EINVAL with
 * err set. */
int sim_cfg_wl_key(struct cfg_sim_wl *w, const char *key, const char *val, int line, char *err,
		   size_t len);
/* Whole-file checks of workload wl (named name, section at wl_line): 0 or
 * -EINVAL with err and *line set. */
int sim_cfg_validate_wl(const struct cfg_sim *s, int wl, const char *name, int wl_line, char *err,
			size_t len, int *line);
/* Fill the model of workload wl; the schedule in absolute rps. */
void sim_cfg_model(const struct cfg_sim *s, int wl, struct sim_wl_model *m);
/* The modelled machine's cpus (cores x threads_per_core). */
int sim_cfg_ncpus(const struct cfg_sim *s);
/* Seconds the simulation runs: duration_s or the last schedule point. */
double sim_cfg_duration(const struct cfg_sim *s, int nwl);

#endif /* PARTIES_SIM_CONFIG_H */
