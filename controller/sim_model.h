/* SPDX-License-Identifier: MIT */
/*
 * The request-level model behind `parties --simulate`: a discrete-event
 * simulation, in virtual time, of open-loop clients, a network link and the
 * co-located servers of one machine.
 *
 * Per workload: Poisson arrivals whose rate follows a piecewise-linear
 * schedule; each request crosses the uplink (one FIFO link shared by every
 * workload: transmission at a rate, then a propagation delay), waits in its
 * server's FIFO queue, is served by one of c servers (c = min(cores,
 * threads)), and its response crosses the downlink the same way. A service
 * time is drawn at the maximum frequency on a whole core and stretched by the
 * frequency (only its frequency-scaling fraction) and by the quota (a quota
 * below c cores slows every server in proportion, as CFS bandwidth control
 * does on average).
 *
 * Every request yields three latencies, each pushed into its own ebee window
 * (common/window.c, the code ebee uses), bounded by the same age:
 *   service  start of service -> end of service (what ebee's service mode sees)
 *   sojourn  arrival at the server -> end of service (queueing + service)
 *   client   sent -> response received (adds both network crossings)
 *
 * Nothing here allocates per event: the event queue is a binary heap, the
 * requests of a workload are a ring that doubles when it fills (rare), and
 * the windows preallocate. With threads = 0 an allocation change applies to
 * services that start afterwards (a request in service finishes where it
 * started); with processor sharing it applies at once to the remaining work.
 */
#ifndef PARTIES_SIM_MODEL_H
#define PARTIES_SIM_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SIM_MAX_WL     16
#define SIM_MAX_POINTS 64

enum sim_dist { SIM_DIST_EXP = 0, SIM_DIST_LOGNORMAL, SIM_DIST_DET };

struct sim_wl_model {
	/* arrival rate (requests/s) at time t_s[i]; linear in between; held
	 * at the last value after the last point */
	int npoints;
	double t_s[SIM_MAX_POINTS];
	double rps[SIM_MAX_POINTS];
	/* service time at the maximum frequency on one whole core:
	 * fixed_ns + X, E[X] = mean_ns - fixed_ns, X from dist */
	enum sim_dist dist;
	double mean_ns;
	double fixed_ns;
	double cv;	   /* coefficient of variation of X (lognormal) */
	double freq_frac;  /* fraction of the service time that scales with 1/f */
	int threads;	   /* 0: one server per core (FCFS); N: processor sharing, N at once */
	double req_bytes;  /* uplink size of a request */
	double resp_bytes; /* downlink size of a response */
	/* The client feed as a load generator reports it: the p99 of the
	 * responses received over its own window (client_window_ns; 0 = the
	 * run's window_ns), read client_lag_ns after the window ends (the
	 * released PARTIES curls its clients' log). Both 0: the feed is the
	 * client window itself, at once (struct sim_wl_stats p99_report_ns). */
	uint64_t client_window_ns;
	uint64_t client_lag_ns;
};

struct sim_opts {
	size_t sz;
	uint64_t seed;
	int cores;	    /* of the machine */
	long freq_max_khz;  /* reference frequency of the service times */
	double link_gbps;   /* each way; 0 = infinite */
	double prop_ns;	    /* propagation delay each way */
	uint64_t window_ns; /* age bound of the latency windows */
	size_t window_cap;  /* records per window; 0 = 200000 */
	int nwl;
	struct sim_wl_model wl[SIM_MAX_WL];
};

/* What one workload looks like at a moment of virtual time. NAN for a p99
 * whose window is empty. */
struct sim_wl_stats {
	double p99_service_ns, p99_sojourn_ns, p99_client_ns;
	/* what the client feed reports now (see client_lag_ns); p99_client_ns
	 * is what clients see now */
	double p99_report_ns;
	double mean_service_ns, mean_sojourn_ns, mean_client_ns;
	double rps;	       /* requests that reached the server per second, over the window */
	uint64_t arrived;      /* requests that reached the server so far */
	uint64_t completed;    /* responses received by clients so far */
	uint64_t queued;       /* waiting for a server now */
	uint64_t busy;	       /* in service now */
	uint64_t cpu_ns;       /* CPU time used so far */
	double sum_sojourn_ns; /* over every completed request (for tests) */
	double sum_client_ns;
};

struct sim;

/* NULL with errno (EINVAL for a bad model, ENOMEM). */
struct sim *sim_new(const struct sim_opts *o);
void sim_free(struct sim *s);

/* The allocation of workload wl from now on: cores (>= 1), quota in
 * milli-cores (0 = no quota) and frequency in kHz (0 = the maximum). */
int sim_set_alloc(struct sim *s, int wl, int cores, long quota_mc, long freq_khz);
/* Process every event up to t_ns (virtual), then stand at t_ns. */
void sim_run_until(struct sim *s, uint64_t t_ns);
uint64_t sim_now(const struct sim *s);
/* Events processed so far. */
uint64_t sim_events(const struct sim *s);
int sim_stats(struct sim *s, int wl, struct sim_wl_stats *out);
/* CPU time workload wl has used so far (cheap: no percentile). */
uint64_t sim_cpu_ns(const struct sim *s, int wl);

/* The offered rate of a model at time t_s (the schedule, interpolated). */
double sim_model_rate(const struct sim_wl_model *m, double t_s);

#endif /* PARTIES_SIM_MODEL_H */
