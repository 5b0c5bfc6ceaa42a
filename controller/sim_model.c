// SPDX-License-Identifier: MIT
/*
 * The request-level model (see sim_model.h). Three events per request: the
 * client sends it (SEND), it reaches the server (ARRIVE), its service ends
 * (DONE). The links need no events of their own: a FIFO link with a fixed
 * transmission time per byte and a fixed delay is fully described by the
 * time it next becomes free, and sends (and completions) are processed in
 * time order, so each crossing is computed the moment it starts.
 *
 * Determinism: one xoshiro256** stream per workload for arrivals and one for
 * service times, seeded from the run's seed and the workload's index, and a
 * heap ordered by (time, insertion number), so equal seeds give identical
 * event orders whatever the platform's qsort or heap ties would do.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opts.h"
#include "window.h"
#include "sim_model.h"

enum ev_kind { EV_SEND = 0, EV_ARRIVE, EV_DONE };

struct ev {
	uint64_t t;   /* ns */
	uint64_t ord; /* insertion number: ties break in insertion order */
	uint64_t seq; /* EV_DONE: the request */
	uint32_t kind;
	uint32_t wl;
};

struct req {
	uint64_t t_send, t_arr, t_start;
	uint64_t done;
};

struct rng {
	uint64_t s[4];
};

struct wl {
	struct sim_wl_model m;
	struct rng rarr, rsvc;
	double spare_normal;
	bool has_spare;
	int seg; /* schedule segment of the last arrival */
	double t_next_s;
	bool ended; /* no more arrivals (rate 0 for ever) */
	/* requests: seq numbers; ring index = seq & mask */
	struct req *ring;
	uint64_t mask;
	uint64_t head;	     /* oldest not yet done */
	uint64_t next_send;  /* seq of the next request created */
	uint64_t arrived;    /* requests that reached the server */
	uint64_t next_start; /* first request waiting for a server */
	uint64_t busy;
	uint64_t completed;
	uint64_t cpu_ns;
	/* processor sharing (threads > 0): up to `threads` requests in service
	 * share the workload's CPU capacity; each progresses at min(1, cap / k)
	 * of a core. V is the work (ns at full speed) every job in service has
	 * received; a job ends when V reaches its vf. */
	bool ps;
	struct psjob {
		double vf;
		uint64_t seq;
	} * psq;
	int psn;
	double V, rate, cap, cpu_acc;
	uint64_t tV, gen;
	/* allocation */
	int servers;
	double speed;	/* per server, 1 = a whole core */
	double stretch; /* frequency factor for the scaling fraction */
	/* latency windows */
	struct ebee_window *w_service, *w_sojourn, *w_client;
	double sum_sojourn_ns, sum_client_ns;
	/* the client feed's report (client_window_ns, client_lag_ns): responses
	 * wait in pend (a ring, in order of reception) until they are lag old,
	 * then enter w_report, which is read lag late */
	bool report;
	uint64_t lag_ns;
	struct ebee_window *w_report;
	struct pend {
		uint64_t t, lat;
	} * pend;
	size_t pend_cap, pend_head, pend_n;
	/* request rate between two reads of the stats */
	uint64_t snap_t, snap_n;
	double rps;
};

struct sim {
	struct sim_opts o;
	uint64_t now;
	uint64_t events;
	uint64_t ord;
	struct ev *heap;
	size_t nheap, capheap;
	double ns_per_byte; /* 0: infinite rate */
	uint64_t prop_ns;
	uint64_t up_free, down_free;
	struct wl wl[SIM_MAX_WL];
};

/* ------------------------------------------------------------ random */

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void rng_seed(struct rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix(&seed);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s, res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return res;
}

/* Uniform in (0, 1]: never 0, so log() is finite. */
static inline double rng_unit(struct rng *r)
{
	return ((double)(rng_next(r) >> 11) + 1.0) * 0x1.0p-53;
}

static inline double rng_exp(struct rng *r, double mean)
{
	return -log(rng_unit(r)) * mean;
}

static double rng_normal(struct wl *w)
{
	double u, v, rad;

	if (w->has_spare) {
		w->has_spare = false;
		return w->spare_normal;
	}
	u = rng_unit(&w->rsvc);
	v = rng_unit(&w->rsvc);
	rad = sqrt(-2.0 * log(u));
	w->spare_normal = rad * sin(2.0 * M_PI * v);
	w->has_spare = true;
	return rad * cos(2.0 * M_PI * v);
}

/* ------------------------------------------------------------ event heap */

static inline bool ev_before(const struct ev *a, const struct ev *b)
{
	return a->t < b->t || (a->t == b->t && a->ord < b->ord);
}

static int heap_push(struct sim *s, uint64_t t, uint32_t kind, uint32_t wl, uint64_t seq)
{
	struct ev e = { .t = t, .ord = s->ord++, .seq = seq, .kind = kind, .wl = wl };
	size_t i;

	if (s->nheap == s->capheap) {
		size_t cap = s->capheap ? 2 * s->capheap : 64;
		struct ev *h = realloc(s->heap, cap * sizeof(*h));

		if (!h)
			return -ENOMEM;
		s->heap = h;
		s->capheap = cap;
	}
	i = s->nheap++;
	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (!ev_before(&e, &s->heap[p]))
			break;
		s->heap[i] = s->heap[p];
		i = p;
	}
	s->heap[i] = e;
	return 0;
}

static void heap_pop(struct sim *s)
{
	struct ev last = s->heap[--s->nheap];
	size_t i = 0, n = s->nheap;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && ev_before(&s->heap[c + 1], &s->heap[c]))
			c++;
		if (!ev_before(&s->heap[c], &last))
			break;
		s->heap[i] = s->heap[c];
		i = c;
	}
	if (n)
		s->heap[i] = last;
}

/* ------------------------------------------------------------ model */

double sim_model_rate(const struct sim_wl_model *m, double t)
{
	int k;

	if (m->npoints <= 0)
		return 0;
	if (t <= m->t_s[0])
		return m->rps[0];
	for (k = 0; k + 1 < m->npoints && t >= m->t_s[k + 1]; k++)
		;
	if (k + 1 >= m->npoints)
		return m->rps[m->npoints - 1];
	return m->rps[k] +
	       (m->rps[k + 1] - m->rps[k]) * (t - m->t_s[k]) / (m->t_s[k + 1] - m->t_s[k]);
}

static inline double rate_in(const struct sim_wl_model *m, int k, double t)
{
	return m->rps[k] +
	       (m->rps[k + 1] - m->rps[k]) * (t - m->t_s[k]) / (m->t_s[k + 1] - m->t_s[k]);
}

/*
 * The next arrival after w->t_next_s, by thinning (Lewis and Shedler): within
 * a linear segment the rate is at most the larger end, so candidates come at
 * that rate and each is kept with probability rate(t) / max. The process is
 * memoryless, so a candidate past the segment's end is simply restarted there.
 */
static void next_arrival(struct wl *w)
{
	const struct sim_wl_model *m = &w->m;
	int last = m->npoints - 1;
	double t = w->t_next_s;

	for (;;) {
		double tend, rmax, c, r;
		int k = w->seg;

		if (t < m->t_s[0]) {
			tend = m->t_s[0];
			rmax = m->rps[0];
		} else {
			while (k < last && t >= m->t_s[k + 1])
				k++;
			w->seg = k;
			if (k == last) {
				if (m->rps[last] <= 0) {
					w->ended = true;
					return;
				}
				w->t_next_s = t + rng_exp(&w->rarr, 1.0 / m->rps[last]);
				return;
			}
			tend = m->t_s[k + 1];
			r = rate_in(m, k, t);
			rmax = r > m->rps[k + 1] ? r : m->rps[k + 1];
		}
		if (rmax <= 0) {
			t = tend;
			continue;
		}
		c = t + rng_exp(&w->rarr, 1.0 / rmax);
		if (c >= tend) {
			t = tend;
			continue;
		}
		t = c;
		r = c < m->t_s[0] ? m->rps[0] : rate_in(m, w->seg, c);
		if (rng_unit(&w->rarr) * rmax <= r) {
			w->t_next_s = c;
			return;
		}
	}
}

static double draw_service_ns(struct wl *w)
{
	const struct sim_wl_model *m = &w->m;
	double var = m->mean_ns - m->fixed_ns, x;

	switch (m->dist) {
	case SIM_DIST_DET:
		x = var;
		break;
	case SIM_DIST_LOGNORMAL: {
		double s2 = log1p(m->cv * m->cv), mu = log(var) - s2 / 2;

		x = var > 0 ? exp(mu + sqrt(s2) * rng_normal(w)) : 0;
		break;
	}
	default:
		x = rng_exp(&w->rsvc, var);
		break;
	}
	return m->fixed_ns + x;
}

static int ring_grow(struct wl *w)
{
	uint64_t cap = (w->mask + 1) * 2, nmask = cap - 1;
	struct req *r = malloc(cap * sizeof(*r));

	if (!r)
		return -ENOMEM;
	for (uint64_t q = w->head; q < w->next_send; q++)
		r[q & nmask] = w->ring[q & w->mask];
	free(w->ring);
	w->ring = r;
	w->mask = nmask;
	return 0;
}

static int start_services(struct sim *s, int i)
{
	struct wl *w = &s->wl[i];

	while (w->busy < (uint64_t)w->servers && w->next_start < w->arrived) {
		struct req *r = &w->ring[w->next_start & w->mask];
		double ns = draw_service_ns(w);
		double f = w->m.freq_frac;
		double wall_ns = ns * ((1.0 - f) + f * w->stretch) / w->speed;
		uint64_t d = (uint64_t)llround(wall_ns);

		if (d == 0)
			d = 1;
		r->t_start = s->now;
		w->cpu_ns += (uint64_t)llround(wall_ns * w->speed);
		if (heap_push(s, s->now + d, EV_DONE, (uint32_t)i, w->next_start))
			return -ENOMEM;
		w->next_start++;
		w->busy++;
	}
	return 0;
}

static inline uint64_t link_cross(struct sim *s, uint64_t *free_at, double bytes)
{
	uint64_t start = *free_at > s->now ? *free_at : s->now;

	*free_at = start + (uint64_t)llround(bytes * s->ns_per_byte);
	return *free_at + s->prop_ns;
}

static int on_send(struct sim *s, int i)
{
	struct wl *w = &s->wl[i];
	struct req *r;

	if (w->next_send - w->head > w->mask && ring_grow(w))
		return -ENOMEM;
	r = &w->ring[w->next_send & w->mask];
	r->t_send = s->now;
	r->t_arr = link_cross(s, &s->up_free, w->m.req_bytes);
	r->done = 0;
	w->next_send++;
	if (heap_push(s, r->t_arr, EV_ARRIVE, (uint32_t)i, 0))
		return -ENOMEM;
	next_arrival(w);
	if (!w->ended)
		return heap_push(s, (uint64_t)llround(w->t_next_s * 1e9), EV_SEND, (uint32_t)i, 0);
	return 0;
}

/* A response for the lagged report. The ring doubles when full; if it
 * cannot, the response is left out of the report (and only of it). */
static void pend_push(struct wl *w, uint64_t t, uint64_t lat)
{
	if (w->pend_n == w->pend_cap) {
		size_t cap = w->pend_cap ? 2 * w->pend_cap : 1024;
		struct pend *p = malloc(cap * sizeof(*p));

		if (!p)
			return;
		for (size_t k = 0; k < w->pend_n; k++)
			p[k] = w->pend[(w->pend_head + k) % w->pend_cap];
		free(w->pend);
		w->pend = p;
		w->pend_cap = cap;
		w->pend_head = 0;
	}
	w->pend[(w->pend_head + w->pend_n) % w->pend_cap] = (struct pend){ t, lat };
	w->pend_n++;
}

/* Request seq of workload i ends now: its three latencies, its response. */
static void finish(struct sim *s, int i, uint64_t seq)
{
	struct wl *w = &s->wl[i];
	struct req *r = &w->ring[seq & w->mask];
	uint64_t recv = link_cross(s, &s->down_free, w->m.resp_bytes);
	uint64_t soj = s->now - r->t_arr, cli = recv - r->t_send;

	ebee_window_push(w->w_service, s->now, s->now - r->t_start);
	ebee_window_push(w->w_sojourn, s->now, soj);
	ebee_window_push(w->w_client, recv, cli);
	if (w->report)
		pend_push(w, recv, cli);
	w->sum_sojourn_ns += (double)soj;
	w->sum_client_ns += (double)cli;
	r->done = 1;
	while (w->head < w->next_start && w->ring[w->head & w->mask].done)
		w->head++;
	w->busy--;
	w->completed++;
}

/* ---------------------------------------------------- processor sharing */

static void ps_advance(struct sim *s, struct wl *w)
{
	double dt = (double)(s->now - w->tV);

	w->V += dt * w->rate;
	w->cpu_acc += dt * ((double)w->psn < w->cap ? (double)w->psn : w->cap);
	w->cpu_ns = (uint64_t)llround(w->cpu_acc);
	w->tV = s->now;
}

static void ps_sift_down(struct wl *w, int i)
{
	struct psjob x = w->psq[i];

	for (;;) {
		int c = 2 * i + 1;

		if (c >= w->psn)
			break;
		if (c + 1 < w->psn && w->psq[c + 1].vf < w->psq[c].vf)
			c++;
		if (!(w->psq[c].vf < x.vf))
			break;
		w->psq[i] = w->psq[c];
		i = c;
	}
	w->psq[i] = x;
}

static void ps_push(struct wl *w, double vf, uint64_t seq)
{
	int i = w->psn++;

	while (i > 0 && vf < w->psq[(i - 1) / 2].vf) {
		w->psq[i] = w->psq[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	w->psq[i] = (struct psjob){ vf, seq };
}

/* After k or the capacity changed: the rate and the next completion (an
 * earlier scheduled one becomes stale: its generation no longer matches). */
static int ps_resched(struct sim *s, int i)
{
	struct wl *w = &s->wl[i];
	double dt;

	w->rate = w->psn ? ((double)w->psn < w->cap ? 1.0 : w->cap / (double)w->psn) : 0;
	w->gen++;
	if (!w->psn)
		return 0;
	dt = ceil((w->psq[0].vf - w->V) / w->rate);
	return heap_push(s, s->now + (dt < 1 ? 1 : (uint64_t)dt), EV_DONE, (uint32_t)i, w->gen);
}

/* Admit waiting requests while threads are free. The caller has advanced V. */
static bool ps_admit(struct sim *s, int i)
{
	struct wl *w = &s->wl[i];
	bool any = false;

	while (w->psn < w->m.threads && w->next_start < w->arrived) {
		struct req *r = &w->ring[w->next_start & w->mask];
		double f = w->m.freq_frac;
		double work = draw_service_ns(w) * ((1.0 - f) + f * w->stretch);

		r->t_start = s->now;
		ps_push(w, w->V + work, w->next_start);
		w->next_start++;
		w->busy++;
		any = true;
	}
	return any;
}

static int ps_done(struct sim *s, int i, uint64_t gen)
{
	struct wl *w = &s->wl[i];

	if (gen != w->gen)
		return 0; /* rescheduled since */
	ps_advance(s, w);
	/* every job whose work is done (to within rounding of the event time) */
	while (w->psn && w->psq[0].vf <= w->V + 1.0) {
		uint64_t seq = w->psq[0].seq;

		w->psq[0] = w->psq[--w->psn];
		if (w->psn)
			ps_sift_down(w, 0);
		finish(s, i, seq);
	}
	ps_admit(s, i);
	return ps_resched(s, i);
}

static int on_arrive(struct sim *s, int i)
{
	struct wl *w = &s->wl[i];

	w->arrived++;
	if (w->ps) {
		if (w->psn >= w->m.threads)
			return 0; /* waits for a thread */
		ps_advance(s, w);
		ps_admit(s, i);
		return ps_resched(s, i);
	}
	return start_services(s, i);
}

static int on_done(struct sim *s, int i, uint64_t seq)
{
	if (s->wl[i].ps)
		return ps_done(s, i, seq);
	finish(s, i, seq);
	return start_services(s, i);
}

/* ------------------------------------------------------------ public */

static int check_model(const struct sim_wl_model *m)
{
	if (m->npoints < 1 || m->npoints > SIM_MAX_POINTS)
		return -EINVAL;
	for (int k = 0; k < m->npoints; k++) {
		if (!(m->rps[k] >= 0) || !isfinite(m->rps[k]) || !(m->t_s[k] >= 0))
			return -EINVAL;
		if (k && !(m->t_s[k] > m->t_s[k - 1]))
			return -EINVAL;
	}
	if (!(m->mean_ns > 0) || !(m->fixed_ns >= 0) || m->fixed_ns > m->mean_ns)
		return -EINVAL;
	if (!(m->freq_frac >= 0 && m->freq_frac <= 1) || !(m->cv >= 0) || m->threads < 0)
		return -EINVAL;
	if (!(m->req_bytes >= 0) || !(m->resp_bytes >= 0))
		return -EINVAL;
	return 0;
}

struct sim *sim_new(const struct sim_opts *o)
{
	/* every field is required; a newer caller's tail must be zero */
	int err = o ? opts_check_min(o, OPTS_KNOWN_END(struct sim_opts, wl),
				     OPTS_KNOWN_END(struct sim_opts, wl))
		    : -EINVAL;
	struct sim *s;
	size_t cap;

	if (err) {
		errno = -err;
		return NULL;
	}
	if (o->nwl < 1 || o->nwl > SIM_MAX_WL || o->cores < 1 || o->freq_max_khz <= 0 ||
	    o->link_gbps < 0 || o->prop_ns < 0 || !o->window_ns) {
		errno = EINVAL;
		return NULL;
	}
	for (int i = 0; i < o->nwl; i++) {
		if (check_model(&o->wl[i])) {
			errno = EINVAL;
			return NULL;
		}
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->o = *o;
	cap = o->window_cap ? o->window_cap : 200000;
	s->ns_per_byte = o->link_gbps > 0 ? 8.0 / o->link_gbps : 0;
	s->prop_ns = (uint64_t)llround(o->prop_ns);
	for (int i = 0; i < o->nwl; i++) {
		struct wl *w = &s->wl[i];

		w->m = o->wl[i];
		rng_seed(&w->rarr, o->seed * 0x100000001b3ull + 2 * (uint64_t)i + 1);
		rng_seed(&w->rsvc, o->seed * 0x100000001b3ull + 2 * (uint64_t)i + 2);
		w->mask = 1023;
		w->ring = malloc((w->mask + 1) * sizeof(*w->ring));
		w->w_service = ebee_window_new(cap, o->window_ns);
		w->w_sojourn = ebee_window_new(cap, o->window_ns);
		w->w_client = ebee_window_new(cap, o->window_ns);
		w->report = w->m.client_window_ns || w->m.client_lag_ns;
		if (w->report) {
			uint64_t win = w->m.client_window_ns ? w->m.client_window_ns : o->window_ns;

			/* as many records per ns of window as the others hold */
			w->w_report = ebee_window_new(
			    (size_t)((double)cap * ((double)win / (double)o->window_ns)) + 1, win);
			w->lag_ns = w->m.client_lag_ns;
		}
		if (!w->ring || !w->w_service || !w->w_sojourn || !w->w_client ||
		    (w->report && !w->w_report)) {
			sim_free(s);
			errno = ENOMEM;
			return NULL;
		}
		w->ps = w->m.threads > 0;
		if (w->ps && !(w->psq = calloc((size_t)w->m.threads, sizeof(*w->psq)))) {
			sim_free(s);
			errno = ENOMEM;
			return NULL;
		}
		w->cap = 1;
		w->servers = 1;
		w->speed = 1;
		w->stretch = 1;
		w->t_next_s = 0;
		next_arrival(w);
		if (!w->ended &&
		    heap_push(s, (uint64_t)llround(w->t_next_s * 1e9), EV_SEND, (uint32_t)i, 0)) {
			sim_free(s);
			errno = ENOMEM;
			return NULL;
		}
	}
	return s;
}

void sim_free(struct sim *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->o.nwl; i++) {
		free(s->wl[i].ring);
		free(s->wl[i].psq);
		ebee_window_free(s->wl[i].w_service);
		ebee_window_free(s->wl[i].w_sojourn);
		ebee_window_free(s->wl[i].w_client);
		ebee_window_free(s->wl[i].w_report);
		free(s->wl[i].pend);
	}
	free(s->heap);
	free(s);
}

int sim_set_alloc(struct sim *s, int i, int cores, long quota_mc, long freq_khz)
{
	double quota = (double)quota_mc / 1000.0; /* cores: a share of the servers */
	struct wl *w;
	int n;

	if (i < 0 || i >= s->o.nwl || cores < 1 || quota_mc < 0 || freq_khz < 0)
		return -EINVAL;
	w = &s->wl[i];
	w->stretch = freq_khz > 0 ? (double)s->o.freq_max_khz / (double)freq_khz : 1.0;
	if (w->ps) {
		ps_advance(s, w);
		w->cap = quota > 0 && quota < cores ? quota : (double)cores;
		ps_admit(s, i);
		return ps_resched(s, i);
	}
	n = cores;
	w->servers = n;
	w->speed = quota > 0 && quota < n ? quota / n : 1.0;
	return start_services(s, i);
}

void sim_run_until(struct sim *s, uint64_t t)
{
	while (s->nheap && s->heap[0].t <= t) {
		struct ev e = s->heap[0];

		heap_pop(s);
		s->now = e.t;
		s->events++;
		switch (e.kind) {
		case EV_SEND:
			on_send(s, (int)e.wl);
			break;
		case EV_ARRIVE:
			on_arrive(s, (int)e.wl);
			break;
		default:
			on_done(s, (int)e.wl, e.seq);
			break;
		}
	}
	if (t > s->now)
		s->now = t;
}

uint64_t sim_now(const struct sim *s)
{
	return s->now;
}

uint64_t sim_events(const struct sim *s)
{
	return s->events;
}

/* ns, as the window holds them; NAN when it is empty */
static double p99(struct ebee_window *win, uint64_t now, double *mean)
{
	double v;

	ebee_window_expire(win, now);
	if (ebee_window_average(win, mean))
		*mean = NAN;
	if (ebee_window_percentile(win, 99.0, &v))
		return NAN;
	return v;
}

int sim_stats(struct sim *s, int i, struct sim_wl_stats *out)
{
	struct wl *w;

	if (i < 0 || i >= s->o.nwl)
		return -EINVAL;
	w = &s->wl[i];
	memset(out, 0, sizeof(*out));
	out->p99_service_ns = p99(w->w_service, s->now, &out->mean_service_ns);
	out->p99_sojourn_ns = p99(w->w_sojourn, s->now, &out->mean_sojourn_ns);
	out->p99_client_ns = p99(w->w_client, s->now, &out->mean_client_ns);
	out->p99_report_ns = out->p99_client_ns;
	if (w->report) {
		/* the window as it stood lag ago: every response received by then */
		uint64_t te = s->now > w->lag_ns ? s->now - w->lag_ns : 0;
		double mean;

		while (w->pend_n && w->pend[w->pend_head].t <= te) {
			ebee_window_push(w->w_report, w->pend[w->pend_head].t,
					 w->pend[w->pend_head].lat);
			w->pend_head = (w->pend_head + 1) % w->pend_cap;
			w->pend_n--;
		}
		out->p99_report_ns = s->now >= w->lag_ns ? p99(w->w_report, te, &mean) : NAN;
	}
	/* requests that reached the server since the previous read at an
	 * earlier time: the interval's rate, as a source read once per interval
	 * wants it */
	if (s->now > w->snap_t) {
		w->rps = (double)(w->arrived - w->snap_n) / ((double)(s->now - w->snap_t) / 1e9);
		w->snap_t = s->now;
		w->snap_n = w->arrived;
	}
	out->rps = w->rps;
	out->arrived = w->arrived;
	out->completed = w->completed;
	out->queued = w->arrived - w->next_start;
	out->busy = w->busy;
	out->cpu_ns = w->cpu_ns;
	out->sum_sojourn_ns = w->sum_sojourn_ns;
	out->sum_client_ns = w->sum_client_ns;
	return 0;
}

uint64_t sim_cpu_ns(const struct sim *s, int i)
{
	return i >= 0 && i < s->o.nwl ? s->wl[i].cpu_ns : 0;
}
