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

struct cfg_sim_wl {
	int line; /* first sim_* key, 0 when none */
	double max_rps;
	int max_rps_line;
	int npoints;
	double t_s[SIM_MAX_POINTS];
	double val[SIM_MAX_POINTS]; /* rps, or % of max_rps where pct[] */
	bool pct[SIM_MAX_POINTS];
	int load_line;
	enum sim_dist dist;
	double service_us, fixed_us, cv, freq_scaling;
	int fixed_line;
	int threads;
	double req_bytes, resp_bytes;
	unsigned int seen;
};

struct cfg_sim {
	bool enabled; /* the file has a [simulation] section */
	int line;
	int cores;
	long freq_min_mhz, freq_max_mhz, freq_step_mhz;
	int freq_line;
	double link_gbps, prop_us;
	double duration_s; /* 0 = the end of the longest schedule */
	unsigned int seen;
	struct cfg_sim_wl wl[SIM_MAX_WL];
};

void sim_cfg_defaults(struct cfg_sim *s);
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
/* Seconds the simulation runs: duration_s or the last schedule point. */
double sim_cfg_duration(const struct cfg_sim *s, int nwl);

#endif /* PARTIES_SIM_CONFIG_H */
