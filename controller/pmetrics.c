// SPDX-License-Identifier: MIT
/*
 * The daemon's metrics (see pmetrics.h). Base units throughout: quota in
 * cores, frequency in hertz, latency in seconds, slack as a ratio (from the
 * loop's milli-cores, kHz and ns).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pmetrics.h"
#include "promhttp.h"
#include "res/res.h"

#define PM_MAX_KINDS 64

struct pm_action {
	int wl;
	char kind[POL_ACTION_LEN];
	uint64_t n;
};

struct pmetrics_state {
	bool valid; /* one interval has run */
	int nwl;
	struct pol_res_info res[POL_RES_COUNT];
	struct pol_wl_obs wl[POL_MAX_WORKLOADS];
	struct loop_stats stats;
	double step_s;
	int nact;
	struct pm_action act[PM_MAX_KINDS];
};

struct pmetrics {
	pthread_mutex_t lock;
	struct pmetrics_state cur;
	struct pmetrics_state copy; /* the render's own, outside the lock */
	struct promhttp *http;
};

struct pmetrics_state *pmetrics_state_new(void)
{
	return calloc(1, sizeof(struct pmetrics_state));
}

void pmetrics_state_free(struct pmetrics_state *s)
{
	free(s);
}

static void count_action(struct pmetrics_state *s, int wl, const char *kind)
{
	for (int i = 0; i < s->nact; i++) {
		if (s->act[i].wl == wl && !strcmp(s->act[i].kind, kind)) {
			s->act[i].n++;
			return;
		}
	}
	if (s->nact == PM_MAX_KINDS)
		return; /* policies use a handful of verbs; more is a policy bug */
	s->act[s->nact].wl = wl;
	snprintf(s->act[s->nact].kind, sizeof(s->act[0].kind), "%s", kind);
	s->act[s->nact++].n = 1;
}

void pmetrics_state_update(struct pmetrics_state *s, const struct loop *l, double step_s)
{
	s->valid = true;
	s->nwl = l->nwl;
	memcpy(s->res, l->obs.res, sizeof(s->res));
	memcpy(s->wl, l->obs.wl, sizeof(s->wl));
	for (int i = 0; i < l->nwl; i++) {
		/* the allocation in force after this interval, not before it */
		memcpy(s->wl[i].alloc, l->wl[i].alloc, sizeof(s->wl[i].alloc));
		if (l->dec.wl[i].action[0] && strcmp(l->dec.wl[i].action, "hold"))
			count_action(s, i, l->dec.wl[i].action);
	}
	s->stats = l->stats;
	s->step_s = step_s;
}

static double process_cpu_s(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts))
		return NAN;
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int pmetrics_state_render(const struct pmetrics_state *s, struct prom_buf *b)
{
	struct prom_label l[POL_MAX_WORKLOADS][2];

	for (int i = 0; i < s->nwl; i++)
		l[i][0] = (struct prom_label){ "workload", s->wl[i].name };

	prom_family(b, "parties_target_seconds", PROM_GAUGE, "QoS target for the p99 latency.");
	for (int i = 0; i < s->nwl; i++)
		prom_sample(b, l[i], 1, s->wl[i].target_ns / 1e9);
	prom_family(b, "parties_latency_p99_seconds", PROM_GAUGE,
		    "The p99 latency the policy saw last interval (NaN when not fresh).");
	for (int i = 0; i < s->nwl; i++)
		prom_sample(b, l[i], 1,
			    s->wl[i].state == POL_LAT_FRESH ? s->wl[i].p99_ns / 1e9 : NAN);
	prom_family(b, "parties_slack_ratio", PROM_GAUGE,
		    "(target - p99) / target last interval (NaN when not fresh).");
	for (int i = 0; i < s->nwl; i++)
		prom_sample(b, l[i], 1, s->wl[i].state == POL_LAT_FRESH ? s->wl[i].slack : NAN);
	prom_family(b, "parties_workload_up", PROM_GAUGE,
		    "1 while the workload's process is alive.");
	for (int i = 0; i < s->nwl; i++)
		prom_sample(b, l[i], 1, s->wl[i].alive);
	for (int r = 0; r < POL_RES_COUNT; r++) {
		/* not managed: no series rather than a made-up value */
		if (!s->res[r].avail || !res_table[r]->prom.name)
			continue;
		prom_family(b, res_table[r]->prom.name, PROM_GAUGE, res_table[r]->prom.help);
		for (int i = 0; i < s->nwl; i++)
			prom_sample(b, l[i], 1,
				    (double)s->wl[i].alloc[r] * res_table[r]->prom.scale);
	}
	prom_family(b, "parties_actions_total", PROM_COUNTER,
		    "Policy actions applied, by workload and kind (the policy's verb).");
	for (int i = 0; i < s->nact; i++) {
		struct prom_label al[2] = { { "workload", s->wl[s->act[i].wl].name },
					    { "kind", s->act[i].kind } };

		prom_sample(b, al, 2, (double)s->act[i].n);
	}
	prom_family(b, "parties_decisions_refused_total", PROM_COUNTER,
		    "Decisions refused by validation.");
	prom_sample(b, NULL, 0, (double)s->stats.rejected);
	prom_family(b, "parties_decisions_failed_total", PROM_COUNTER,
		    "Decisions whose writes failed.");
	prom_sample(b, NULL, 0, (double)s->stats.failed);
	prom_family(b, "parties_intervals_total", PROM_COUNTER, "Control intervals run.");
	prom_sample(b, NULL, 0, (double)s->stats.intervals);
	prom_family(b, "parties_interval_duration_seconds", PROM_GAUGE,
		    "Wall time of the last control interval's work (observe to log).");
	prom_sample(b, NULL, 0, s->step_s);
	prom_family(b, "process_cpu_seconds_total", PROM_COUNTER,
		    "User and system CPU time of the daemon (with ebee's consumer thread).");
	prom_sample(b, NULL, 0, process_cpu_s());
	return b->err;
}

static int render(struct prom_buf *b, void *ctx)
{
	struct pmetrics *m = ctx;

	pthread_mutex_lock(&m->lock);
	m->copy = m->cur;
	pthread_mutex_unlock(&m->lock);
	return pmetrics_state_render(&m->copy, b);
}

struct pmetrics *pmetrics_start(const char *addr, char *msg, size_t msg_len)
{
	struct pmetrics *m = calloc(1, sizeof(*m));

	if (!m) {
		snprintf(msg, msg_len, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&m->lock, NULL);
	m->http = promhttp_start(addr, render, m, msg, msg_len);
	if (!m->http) {
		int e = errno;

		pthread_mutex_destroy(&m->lock);
		free(m);
		errno = e;
		return NULL;
	}
	return m;
}

int pmetrics_port(const struct pmetrics *m)
{
	return m ? promhttp_port(m->http) : -1;
}

void pmetrics_update(struct pmetrics *m, const struct loop *l, double step_s)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	pmetrics_state_update(&m->cur, l, step_s);
	pthread_mutex_unlock(&m->lock);
}

void pmetrics_stop(struct pmetrics *m)
{
	if (!m)
		return;
	promhttp_stop(m->http);
	pthread_mutex_destroy(&m->lock);
	free(m);
}
