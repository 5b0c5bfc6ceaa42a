// SPDX-License-Identifier: MIT
/*
 * The simulation keys (sim_config.h): one table per section (cfg_key.h), as
 * config.c's. Kept out of config.c so the strict INI parser only forwards
 * keys here; the messages follow config.c's style and config.c prefixes
 * them with file:line.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg_key.h"
#include "cpulist.h"
#include "sim_config.h"

#define SIM(f) CFG_KEY_AT(struct cfg_sim, f)
#define WL(f)  CFG_KEY_AT(struct cfg_sim_wl, f)
/* "KEY: 'VAL' is not a number in LO..HI" (cfg_key.h's message of a bare range) */
#define RANGE(l, h) .rule = { { .lo = (l), .hi = (h) } }
#define RANGE_WHOLE(l, h)                   \
	.rule = { { .lo = (l), .hi = (h) }, \
		  { -INFINITY, INFINITY, CFG_KEY_INTEGRAL, "%s: '%s' is not a whole number" } }

static int sim_freq(const struct cfg_key *k, void *base, const char *val, void *ctx, char *err,
		    size_t len);

static const struct cfg_key sim_keys[SIM_CFG_NKEYS] = {
	[SIM_CFG_CORES] = { "cores", CFG_KEY_REAL, SIM(cores), RANGE_WHOLE(1, 1024), .def = 16 },
	[SIM_CFG_FREQ_MIN_MHZ] = { "freq_min_mhz", CFG_KEY_CUSTOM, SIM(freq_min_khz),
				   RANGE(1, 100000), .scale = 1000, .def = 1200,
				   .parse = sim_freq },
	[SIM_CFG_FREQ_MAX_MHZ] = { "freq_max_mhz", CFG_KEY_CUSTOM, SIM(freq_max_khz),
				   RANGE(1, 100000), .scale = 1000, .def = 2300,
				   .parse = sim_freq },
	[SIM_CFG_FREQ_STEP_MHZ] = { "freq_step_mhz", CFG_KEY_CUSTOM, SIM(freq_step_khz),
				    RANGE(1, 10000), .scale = 1000, .def = 100, .parse = sim_freq },
	[SIM_CFG_LINK_GBPS] = { "link_gbps", CFG_KEY_REAL, SIM(link_gbps), RANGE(0, 1e6),
				.def = 10 },
	[SIM_CFG_PROP_DELAY_US] = { "prop_delay_us", CFG_KEY_REAL, SIM(prop_ns), RANGE(0, 1e7),
				    .scale = 1000, .def = 25 },
	[SIM_CFG_DURATION_S] = { "duration_s", CFG_KEY_REAL, SIM(duration_s), RANGE(0, 1e6) },
	/* the machine's topology as the loop and the policies see it */
	[SIM_CFG_NODES] = { "nodes", CFG_KEY_REAL, SIM(nodes), RANGE_WHOLE(1, 64), .def = 1 },
	[SIM_CFG_THREADS_PER_CORE] = { "threads_per_core", CFG_KEY_REAL, SIM(threads_per_core),
				       RANGE_WHOLE(1, 8), .def = 1 },
	[SIM_CFG_NUMBERING] = { "numbering", CFG_KEY_CHOICE, SIM(numbering),
				.names = (const char *const[]){ "adjacent", "split", NULL },
				.msg = "%s: '%s' must be adjacent or split" },
};

int sim_cfg_ncpus(const struct cfg_sim *s)
{
	return s->cores * s->threads_per_core;
}

static int sim_load(const struct cfg_key *k, void *base, const char *val, void *ctx, char *err,
		    size_t len);

static const struct cfg_key wl_keys[SIM_CFG_WL_NKEYS] = {
	[SIM_CFG_WL_LOAD] = { "sim_load", CFG_KEY_CUSTOM, .parse = sim_load },
	[SIM_CFG_WL_MAX_RPS] = { "sim_max_rps", CFG_KEY_REAL, WL(max_rps), RANGE(0, 1e9) },
	[SIM_CFG_WL_SERVICE] = { "sim_service", CFG_KEY_CHOICE, WL(dist),
				 .names = (const char *const[]){ "exponential", "lognormal",
								 "deterministic", NULL },
				 .msg =
				     "%s: '%s' must be exponential, lognormal or deterministic" },
	[SIM_CFG_WL_SERVICE_US] = { "sim_service_us", CFG_KEY_REAL, WL(service_ns),
				    RANGE(0.001, 1e9), .scale = 1000, .def = 1000 },
	[SIM_CFG_WL_SERVICE_CV] = { "sim_service_cv", CFG_KEY_REAL, WL(cv), RANGE(0, 100),
				    .def = 1 },
	[SIM_CFG_WL_FIXED_US] = { "sim_fixed_us", CFG_KEY_REAL, WL(fixed_ns), RANGE(0, 1e9),
				  .scale = 1000 },
	[SIM_CFG_WL_FREQ_SCALING] = { "sim_freq_scaling", CFG_KEY_REAL, WL(freq_scaling),
				      RANGE(0, 1), .def = 1 },
	[SIM_CFG_WL_THREADS] = { "sim_threads", CFG_KEY_REAL, WL(threads), RANGE_WHOLE(0, 1024) },
	[SIM_CFG_WL_REQUEST_BYTES] = { "sim_request_bytes", CFG_KEY_REAL, WL(req_bytes),
				       RANGE(0, 1e9), .def = 100 },
	[SIM_CFG_WL_RESPONSE_BYTES] = { "sim_response_bytes", CFG_KEY_REAL, WL(resp_bytes),
					RANGE(0, 1e9), .def = 1000 },
	[SIM_CFG_WL_CLIENT_WINDOW_MS] = { "sim_client_window_ms", CFG_KEY_REAL,
					  WL(client_window_ns), RANGE(1, 3.6e6), .scale = 1e6 },
	[SIM_CFG_WL_CLIENT_LAG_MS] = { "sim_client_lag_ms", CFG_KEY_REAL, WL(client_lag_ns),
				       RANGE(0, 3.6e6), .scale = 1e6 },
};

void sim_cfg_defaults(struct cfg_sim *s)
{
	memset(s, 0, sizeof(*s));
	cfg_key_defaults(sim_keys, SIM_CFG_NKEYS, s);
	for (int i = 0; i < SIM_MAX_WL; i++)
		cfg_key_defaults(wl_keys, SIM_CFG_WL_NKEYS, &s->wl[i]);
}

/* A frequency in MHz, in its range, whole MHz (a fraction is dropped), as kHz. */
static int sim_freq(const struct cfg_key *k, void *base, const char *val, void *ctx, char *err,
		    size_t len)
{
	double d;

	if (cfg_key_real(k, val, &d, err, len))
		return -EINVAL;
	*(long *)((char *)base + k->off) = (long)d * (long)k->scale;
	return 0;
}

const struct cfg_key *sim_cfg_keys(bool wl, int *n)
{
	*n = wl ? SIM_CFG_WL_NKEYS : SIM_CFG_NKEYS;
	return wl ? wl_keys : sim_keys;
}

int sim_cfg_key(struct cfg_sim *s, const char *key, const char *val, int line, char *err,
		size_t len)
{
	int r = cfg_key_take(sim_keys, SIM_CFG_NKEYS, s->line_of, s, key, val, line, "simulation",
			     NULL, err, len);
	char names[160];

	if (r)
		return r < 0 ? r : 0;
	cfg_key_list(sim_keys, SIM_CFG_NKEYS, names, sizeof(names));
	return cfg_key_err(err, len, "unknown key '%s' in [simulation] (%s)", key, names);
}

/* "T:V, T:V%, ..." with T in seconds, strictly increasing. */
static int sim_load(const struct cfg_key *k, void *base, const char *val, void *ctx, char *err,
		    size_t len)
{
	struct cfg_sim_wl *w = base;
	const char *p = val;
	int n = 0;

	while (*p) {
		char *end;
		double t, v;

		while (isspace((unsigned char)*p))
			p++;
		if (n == SIM_MAX_POINTS)
			return cfg_key_err(err, len, "sim_load: more than %d points",
					   SIM_MAX_POINTS);
		errno = 0;
		t = strtod(p, &end);
		if (end == p || errno || !isfinite(t) || t < 0 || *end != ':')
			goto syntax;
		p = end + 1;
		v = strtod(p, &end);
		if (end == p || errno || !isfinite(v) || v < 0)
			goto syntax;
		p = end;
		w->pct[n] = *p == '%';
		if (w->pct[n])
			p++;
		if (w->pct[n] && v > 1000)
			return cfg_key_err(err, len, "sim_load: %g%% is above 1000%%", v);
		if (n && t <= w->t_s[n - 1])
			return cfg_key_err(err, len, "sim_load: times must increase (%g after %g)",
					   t, w->t_s[n - 1]);
		w->t_s[n] = t;
		w->val[n] = v;
		n++;
		while (isspace((unsigned char)*p))
			p++;
		if (*p == ',')
			p++;
		else if (*p)
			goto syntax;
	}
	if (!n)
		goto syntax;
	w->npoints = n;
	return 0;
syntax:
	return cfg_key_err(
	    err, len,
	    "sim_load: '%s' is not a list of TIME_S:RATE points (RATE in rps, or N%% of "
	    "sim_max_rps), e.g. 0:7%%, 300:100%%, 600:7%%",
	    val);
}

int sim_cfg_wl_key(struct cfg_sim_wl *w, const char *key, const char *val, int line, char *err,
		   size_t len)
{
	int r;
	char names[256];

	if (strncmp(key, "sim_", 4))
		return 0;
	r = cfg_key_take(wl_keys, SIM_CFG_WL_NKEYS, w->line_of, w, key, val, line, "workload", NULL,
			 err, len);
	if (r)
		return r;
	cfg_key_list(wl_keys, SIM_CFG_WL_NKEYS, names, sizeof(names));
	return cfg_key_err(err, len, "unknown simulation key '%s' (%s)", key, names);
}

int sim_cfg_validate_wl(const struct cfg_sim *s, int i, const char *name, int wl_line, char *err,
			size_t len, int *line)
{
	const struct cfg_sim_wl *w = &s->wl[i];

	*line = s->line;
	if (s->cores % s->nodes) {
		*line = s->line_of[SIM_CFG_NODES];
		return cfg_key_err(err, len, "[simulation] %d cores do not split into %d nodes",
				   s->cores, s->nodes);
	}
	if (sim_cfg_ncpus(s) > ACT_CPUMASK_MAX) {
		*line = s->line_of[SIM_CFG_THREADS_PER_CORE];
		return cfg_key_err(err, len, "[simulation] %d cores x %d threads are over %d cpus",
				   s->cores, s->threads_per_core, ACT_CPUMASK_MAX);
	}
	if (s->freq_min_khz > s->freq_max_khz) {
		/* the later of the two */
		*line = s->line_of[SIM_CFG_FREQ_MIN_MHZ] > s->line_of[SIM_CFG_FREQ_MAX_MHZ]
			    ? s->line_of[SIM_CFG_FREQ_MIN_MHZ]
			    : s->line_of[SIM_CFG_FREQ_MAX_MHZ];
		return cfg_key_err(err, len, "[simulation] freq_min_mhz %ld > freq_max_mhz %ld",
				   s->freq_min_khz / 1000, s->freq_max_khz / 1000);
	}
	*line = wl_line;
	if (!w->npoints)
		return cfg_key_err(err, len, "workload %s: sim_load is required in a simulation",
				   name);
	for (int k = 0; k < w->npoints; k++) {
		if (w->pct[k] && !(w->max_rps > 0)) {
			*line = w->line_of[SIM_CFG_WL_LOAD];
			return cfg_key_err(
			    err, len,
			    "workload %s: sim_load gives %% of sim_max_rps, which is not set",
			    name);
		}
	}
	if (w->fixed_ns > w->service_ns) {
		*line = w->line_of[SIM_CFG_WL_FIXED_US];
		return cfg_key_err(err, len, "workload %s: sim_fixed_us %g > sim_service_us %g",
				   name, w->fixed_ns / 1e3, w->service_ns / 1e3);
	}
	return 0;
}

void sim_cfg_model(const struct cfg_sim *s, int i, struct sim_wl_model *m)
{
	const struct cfg_sim_wl *w = &s->wl[i];

	memset(m, 0, sizeof(*m));
	m->npoints = w->npoints;
	for (int k = 0; k < w->npoints; k++) {
		m->t_s[k] = w->t_s[k];
		m->rps[k] = w->pct[k] ? w->val[k] / 100.0 * w->max_rps : w->val[k];
	}
	m->dist = w->dist;
	m->mean_ns = w->service_ns;
	m->fixed_ns = w->fixed_ns;
	m->cv = w->cv;
	m->freq_frac = w->freq_scaling;
	m->threads = w->threads;
	m->req_bytes = w->req_bytes;
	m->resp_bytes = w->resp_bytes;
	m->client_window_ns = (uint64_t)llround(w->client_window_ns);
	m->client_lag_ns = (uint64_t)llround(w->client_lag_ns);
}

double sim_cfg_duration(const struct cfg_sim *s, int nwl)
{
	double d = 0;

	if (s->duration_s > 0)
		return s->duration_s;
	for (int i = 0; i < nwl; i++)
		if (s->wl[i].npoints && s->wl[i].t_s[s->wl[i].npoints - 1] > d)
			d = s->wl[i].t_s[s->wl[i].npoints - 1];
	return d;
}
