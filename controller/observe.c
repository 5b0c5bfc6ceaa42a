// SPDX-License-Identifier: MIT
/*
 * The observation (observe.h): what each workload's sources said, its
 * averaged p99 and slack history, request rate and CPU used, the allocation
 * with its bounds, and what each resource adds (res_ops loop.observe).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "observe.h"
#include "res/res.h"

/* The latencies of every kind the sources gave, the request rate and the
 * CPU used since the last interval. */
static void observe_more(struct loop *l, int i, uint64_t now_ms, struct pol_wl_obs *ow)
{
	struct loop_wl *w = &l->wl[i];
	const struct src_sample *smp[2] = { &w->last, &w->last_aux }, *se, *sc;
	const struct src *src[2] = { w->src, w->aux };
	uint64_t ns;

	src_by_kind(w->src, &w->last, w->aux, &w->last_aux, &se, &sc);
	if (sc && sc->state == POL_LAT_FRESH)
		ow->p99_client_ns = sc->p99_ns;
	for (int k = 0; k < 2; k++) {
		if (!src[k] || smp[k]->state != POL_LAT_FRESH)
			continue;
		if (!isnan(smp[k]->p99_service_ns))
			ow->p99_service_ns = smp[k]->p99_service_ns;
		if (!isnan(smp[k]->p99_sojourn_ns))
			ow->p99_sojourn_ns = smp[k]->p99_sojourn_ns;
	}
	ow->rps = w->last.rps;
	if (isnan(ow->rps) && w->aux)
		ow->rps = w->last_aux.rps;
	w->cpu_used = NAN;
	if (l->mops->cpu_ns && !l->mops->cpu_ns(l->mctx, i, &ns)) {
		if (w->cpu_have && now_ms > w->cpu_prev_t_ms && ns >= w->cpu_prev_ns)
			w->cpu_used = (double)(ns - w->cpu_prev_ns) /
				      ((double)(now_ms - w->cpu_prev_t_ms) * 1e6);
		w->cpu_prev_ns = ns;
		w->cpu_prev_t_ms = now_ms;
		w->cpu_have = true;
	}
	ow->cpu_used = w->cpu_used;
}

/* The averaging window ("long slack") over fresh samples only, and the
 * history of fresh slacks. */
static void observe_average(struct loop_wl *w, uint64_t now_ms, unsigned int win,
			    struct pol_wl_obs *ow)
{
	double sum = 0;
	unsigned int k, j;

	for (k = 0, j = 0; k < w->navg; k++) {
		if (now_ms - w->avg_t[k] < win) {
			w->avg_t[j] = w->avg_t[k];
			w->avg_p99[j] = w->avg_p99[k];
			j++;
		}
	}
	w->navg = j;
	if (w->last.state == POL_LAT_FRESH) {
		if (w->navg == sizeof(w->avg_t) / sizeof(w->avg_t[0])) {
			memmove(w->avg_t, w->avg_t + 1, sizeof(w->avg_t) - sizeof(w->avg_t[0]));
			memmove(w->avg_p99, w->avg_p99 + 1,
				sizeof(w->avg_p99) - sizeof(w->avg_p99[0]));
			w->navg--;
		}
		w->avg_t[w->navg] = now_ms;
		w->avg_p99[w->navg] = w->last.p99_ns;
		w->navg++;
	}
	ow->state = w->last.state;
	if (w->last.state == POL_LAT_FRESH) {
		ow->p99_ns = w->last.p99_ns;
		ow->slack = (w->target_ns - ow->p99_ns) / w->target_ns;
		for (k = 0; k < w->navg; k++)
			sum += w->avg_p99[k];
		ow->p99_avg_ns = w->navg ? sum / w->navg : ow->p99_ns;
		ow->slack_avg = (w->target_ns - ow->p99_avg_ns) / w->target_ns;
		if (w->nhist == POL_HIST) {
			memmove(w->hist, w->hist + 1, sizeof(w->hist) - sizeof(w->hist[0]));
			w->nhist--;
		}
		w->hist[w->nhist++] = ow->slack;
	}
}

void loop_observe(struct loop *l, uint64_t now_ms)
{
	struct pol_observation *o = &l->obs;
	unsigned int win = l->cfg->avg_window_ms;

	memset(o, 0, sizeof(*o));
	o->now_ms = now_ms;
	o->tick = l->tick;
	o->interval_ms = l->cfg->interval_ms;
	o->nwl = l->nwl;
	memcpy(o->res, l->res, sizeof(o->res));
	for (int r = 0; r < POL_RES_COUNT; r++) {
		struct res_view v;

		if (!res_table[r]->loop.observe)
			continue;
		res_view(l, (enum pol_res)r, &v);
		res_table[r]->loop.observe(&v, o);
	}
	for (int r = 0; r < POL_RES_COUNT; r++)
		if (o->res[r].pooled)
			o->res[r].free = o->res[r].total - res_used(l, (enum pol_res)r);
	for (int i = 0; i < l->nwl; i++) {
		struct loop_wl *w = &l->wl[i];
		struct pol_wl_obs *ow = &o->wl[i];

		snprintf(ow->name, sizeof(ow->name), "%s", w->name);
		ow->alive = w->alive;
		ow->target_ns = w->target_ns;
		memcpy(ow->alloc, w->alloc, sizeof(ow->alloc));
		memcpy(ow->min, w->min, sizeof(ow->min));
		memcpy(ow->max, w->max, sizeof(ow->max));
		ow->state = POL_LAT_STALE;
		ow->p99_ns = ow->p99_avg_ns = ow->slack = ow->slack_avg = NAN;
		ow->rps = ow->cpu_used = NAN;
		ow->p99_client_ns = ow->p99_service_ns = ow->p99_sojourn_ns = NAN;
		if (!w->alive)
			continue;
		memset(&w->last, 0, sizeof(w->last));
		memset(&w->last_aux, 0, sizeof(w->last_aux));
		w->last_aux.p99_ns = NAN;
		w->last_aux.state = POL_LAT_STALE;
		if (w->src)
			src_read(w->src, now_ms, &w->last);
		else
			w->last = (struct src_sample){ .state = POL_LAT_STALE,
						       .p99_ns = NAN,
						       .rps = NAN,
						       .why = "no source" };
		if (w->aux)
			src_read(w->aux, now_ms, &w->last_aux);
		observe_more(l, i, now_ms, ow);
		observe_average(w, now_ms, win, ow);
		ow->nhist = w->nhist;
		memcpy(ow->hist_slack, w->hist, sizeof(ow->hist_slack));
	}
}
