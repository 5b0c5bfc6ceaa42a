// SPDX-License-Identifier: MIT
/*
 * The simulation keys (sim_config.h). Kept out of config.c so the strict INI
 * parser only forwards keys here; the messages follow config.c's style and
 * config.c prefixes them with file:line.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_config.h"

void sim_cfg_defaults(struct cfg_sim *s)
{
	memset(s, 0, sizeof(*s));
	s->cores = 16;
	s->freq_min_mhz = 1200;
	s->freq_max_mhz = 2300;
	s->freq_step_mhz = 100;
	s->link_gbps = 10;
	s->prop_us = 25;
	for (int i = 0; i < SIM_MAX_WL; i++) {
		struct cfg_sim_wl *w = &s->wl[i];

		w->dist = SIM_DIST_EXP;
		w->service_us = 1000;
		w->cv = 1;
		w->freq_scaling = 1;
		w->req_bytes = 100;
		w->resp_bytes = 1000;
	}
}

static int bad(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int bad(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static bool num(const char *v, double lo, double hi, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(v, &end);
	return !errno && end != v && !*end && isfinite(*out) && *out >= lo && *out <= hi;
}

static int once(unsigned int *seen, const char *const *keys, const char *key, char *err, size_t len,
		const char *where)
{
	for (int i = 0; keys[i]; i++) {
		if (strcmp(keys[i], key))
			continue;
		if (*seen & (1u << i))
			return bad(err, len, "%s given twice in [%s]", key, where);
		*seen |= 1u << i;
		return 0;
	}
	return 0;
}

#define RANGE(key, lo, hi, dst)                                                              \
	do {                                                                                 \
		double d_;                                                                   \
		if (!num(val, lo, hi, &d_))                                                  \
			return bad(err, len, "%s: '%s' is not a number in %g..%g", key, val, \
				   (double)(lo), (double)(hi));                              \
		(dst) = d_;                                                                  \
	} while (0)

static const char *const sim_keys[] = {
	"cores",     "freq_min_mhz",  "freq_max_mhz", "freq_step_mhz",
	"link_gbps", "prop_delay_us", "duration_s",   NULL,
};

int sim_cfg_key(struct cfg_sim *s, const char *key, const char *val, int line, char *err,
		size_t len)
{
	double d;

	if (once(&s->seen, sim_keys, key, err, len, "simulation"))
		return -EINVAL;
	if (!s->line)
		s->line = line;
	if (!strcmp(key, "cores")) {
		RANGE(key, 1, 1024, d);
		if (d != floor(d))
			return bad(err, len, "cores: '%s' is not a whole number", val);
		s->cores = (int)d;
	} else if (!strcmp(key, "freq_min_mhz")) {
		RANGE(key, 1, 100000, s->freq_min_mhz);
		s->freq_line = line;
	} else if (!strcmp(key, "freq_max_mhz")) {
		RANGE(key, 1, 100000, s->freq_max_mhz);
		s->freq_line = line;
	} else if (!strcmp(key, "freq_step_mhz")) {
		RANGE(key, 1, 10000, s->freq_step_mhz);
	} else if (!strcmp(key, "link_gbps")) {
		RANGE(key, 0, 1e6, s->link_gbps);
	} else if (!strcmp(key, "prop_delay_us")) {
		RANGE(key, 0, 1e7, s->prop_us);
	} else if (!strcmp(key, "duration_s")) {
		RANGE(key, 0, 1e6, s->duration_s);
	} else {
		return bad(err, len,
			   "unknown key '%s' in [simulation] (cores, freq_min_mhz, freq_max_mhz, "
			   "freq_step_mhz, link_gbps, prop_delay_us, duration_s)",
			   key);
	}
	return 0;
}

/* "T:V, T:V%, ..." with T in seconds, strictly increasing. */
static int parse_load(struct cfg_sim_wl *w, const char *val, char *err, size_t len)
{
	const char *p = val;
	int n = 0;

	while (*p) {
		char *end;
		double t, v;

		while (isspace((unsigned char)*p))
			p++;
		if (n == SIM_MAX_POINTS)
			return bad(err, len, "sim_load: more than %d points", SIM_MAX_POINTS);
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
			return bad(err, len, "sim_load: %g%% is above 1000%%", v);
		if (n && t <= w->t_s[n - 1])
			return bad(err, len, "sim_load: times must increase (%g after %g)", t,
				   w->t_s[n - 1]);
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
	return bad(err, len,
		   "sim_load: '%s' is not a list of TIME_S:RATE points (RATE in rps, or N%% of "
		   "sim_max_rps), e.g. 0:7%%, 300:100%%, 600:7%%",
		   val);
}

static const char *const wl_keys[] = {
	"sim_load",
	"sim_max_rps",
	"sim_service",
	"sim_service_us",
	"sim_service_cv",
	"sim_fixed_us",
	"sim_freq_scaling",
	"sim_threads",
	"sim_request_bytes",
	"sim_response_bytes",
	NULL,
};

int sim_cfg_wl_key(struct cfg_sim_wl *w, const char *key, const char *val, int line, char *err,
		   size_t len)
{
	double d;

	if (strncmp(key, "sim_", 4))
		return 0;
	if (once(&w->seen, wl_keys, key, err, len, "workload"))
		return -EINVAL;
	if (!w->line)
		w->line = line;
	if (!strcmp(key, "sim_load")) {
		if (parse_load(w, val, err, len))
			return -EINVAL;
		w->load_line = line;
	} else if (!strcmp(key, "sim_max_rps")) {
		RANGE(key, 0, 1e9, w->max_rps);
		w->max_rps_line = line;
	} else if (!strcmp(key, "sim_service")) {
		if (!strcmp(val, "exponential"))
			w->dist = SIM_DIST_EXP;
		else if (!strcmp(val, "lognormal"))
			w->dist = SIM_DIST_LOGNORMAL;
		else if (!strcmp(val, "deterministic"))
			w->dist = SIM_DIST_DET;
		else
			return bad(err, len,
				   "sim_service: '%s' must be exponential, lognormal or "
				   "deterministic",
				   val);
	} else if (!strcmp(key, "sim_service_us")) {
		RANGE(key, 0.001, 1e9, w->service_us);
	} else if (!strcmp(key, "sim_service_cv")) {
		RANGE(key, 0, 100, w->cv);
	} else if (!strcmp(key, "sim_fixed_us")) {
		RANGE(key, 0, 1e9, w->fixed_us);
		w->fixed_line = line;
	} else if (!strcmp(key, "sim_freq_scaling")) {
		RANGE(key, 0, 1, w->freq_scaling);
	} else if (!strcmp(key, "sim_threads")) {
		RANGE(key, 0, 1024, d);
		if (d != floor(d))
			return bad(err, len, "sim_threads: '%s' is not a whole number", val);
		w->threads = (int)d;
	} else if (!strcmp(key, "sim_request_bytes")) {
		RANGE(key, 0, 1e9, w->req_bytes);
	} else if (!strcmp(key, "sim_response_bytes")) {
		RANGE(key, 0, 1e9, w->resp_bytes);
	} else {
		return bad(err, len,
			   "unknown simulation key '%s' (sim_load, sim_max_rps, sim_service, "
			   "sim_service_us, sim_service_cv, sim_fixed_us, sim_freq_scaling, "
			   "sim_threads, sim_request_bytes, sim_response_bytes)",
			   key);
	}
	return 1;
}

int sim_cfg_validate_wl(const struct cfg_sim *s, int i, const char *name, int wl_line, char *err,
			size_t len, int *line)
{
	const struct cfg_sim_wl *w = &s->wl[i];

	*line = s->line;
	if (s->freq_min_mhz > s->freq_max_mhz) {
		*line = s->freq_line;
		return bad(err, len, "[simulation] freq_min_mhz %ld > freq_max_mhz %ld",
			   s->freq_min_mhz, s->freq_max_mhz);
	}
	*line = wl_line;
	if (!w->npoints)
		return bad(err, len, "workload %s: sim_load is required in a simulation", name);
	for (int k = 0; k < w->npoints; k++) {
		if (w->pct[k] && !(w->max_rps > 0)) {
			*line = w->load_line;
			return bad(
			    err, len,
			    "workload %s: sim_load gives %% of sim_max_rps, which is not set",
			    name);
		}
	}
	if (w->fixed_us > w->service_us) {
		*line = w->fixed_line;
		return bad(err, len, "workload %s: sim_fixed_us %g > sim_service_us %g", name,
			   w->fixed_us, w->service_us);
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
	m->mean_us = w->service_us;
	m->fixed_us = w->fixed_us;
	m->cv = w->cv;
	m->freq_frac = w->freq_scaling;
	m->threads = w->threads;
	m->req_bytes = w->req_bytes;
	m->resp_bytes = w->resp_bytes;
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
