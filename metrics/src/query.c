// SPDX-License-Identifier: MIT
/*
 * The queries: rate, latest, average and percentile latencies over a
 * workload's window (or several workloads' windows together), the
 * library-wide counters, and the flush that makes them current; the rate and
 * percentile also with their trust (the _trust forms: the verdict is
 * trust.c's). Each holds lock for O(log n) work only.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

int ebee_flush(struct ebee *eb)
{
	int n;

	if (!eb)
		return -EINVAL;
	pthread_mutex_lock(&eb->lock);
	n = ebee_loader_consume(eb->loader);
	pthread_mutex_unlock(&eb->lock);
	return n < 0 ? n : 0;
}

static int query_check(const struct ebee *eb, enum ebee_latency lat)
{
	if (!eb || lat < 0 || lat >= NLAT)
		return -EINVAL;
	if (lat == EBEE_LAT_SOJOURN && eb->path != EBEE_PATH_SOCKET)
		return -EOPNOTSUPP;
	return 0;
}

/* pid's window of latency lat, expired by age, and the workload's state its
 * trust rests on into snap (if not NULL) once pid is found; the lock is held. */
static int query_window(struct ebee *eb, pid_t pid, enum ebee_latency lat, struct ebee_window **win,
			struct ebee_trust_snap *snap)
{
	struct wl *w = ebee_wl_find(eb, pid);

	if (!w)
		return -ENOENT;
	if (snap)
		ebee_trust_snap(eb, w, snap);
	*win = w->win[ebee_wl_kind(w)][lat];
	if (!*win)
		return -ENODATA;
	if (eb->opts.window_age_ns)
		ebee_window_expire(*win, ebee_now_ns());
	return 0;
}

/* Look up pid and its window under the lock, which stays held on success.
 * out is the caller's result pointer: NULL is -EINVAL before anything else. */
static int query_begin(struct ebee *eb, pid_t pid, enum ebee_latency lat, const void *out,
		       struct ebee_window **win, struct ebee_trust_snap *snap)
{
	int err = out ? query_check(eb, lat) : -EINVAL;
	struct ebee_kc_read kr = {};
	struct wl *w;

	if (err)
		return err;
	/* The trust's share of requests covered, from the kernel's counters
	 * as of now: read outside the lock. */
	if (snap)
		ebee_wl_kc_read(eb, pid, &kr);
	pthread_mutex_lock(&eb->lock);
	w = snap ? ebee_wl_find(eb, pid) : NULL;
	if (w)
		ebee_wl_kc_apply(w, &kr);
	err = query_window(eb, pid, lat, win, snap);
	if (err)
		pthread_mutex_unlock(&eb->lock);
	return err;
}

/* The caller's trust, if any, is one ebee can fill. */
static int trust_check(const struct ebee_trust *trust)
{
	return trust && trust->sz < sizeof(size_t) ? -EINVAL : 0;
}

/* A figure's trust, from the workloads snapped with the figure: filled when
 * they are all traced (err 0 or -ENODATA). Returns err. */
static int query_trust(struct ebee *eb, int err, const struct ebee_trust_snap *snaps, size_t n,
		       struct ebee_trust *trust)
{
	if (trust && (!err || err == -ENODATA))
		ebee_trust_judge(eb, snaps, n, trust);
	return err;
}

/* Requests per second over the window's span as the kernel counted them:
 * the window's records and those lost in the span (kcount.h). -ENODATA, as
 * ever, with fewer than two records or no span. */
static int kernel_rps(struct ebee *eb, pid_t pid, struct ebee_window *win, double *rps)
{
	struct wl *w = ebee_wl_find(eb, pid);
	struct ebee_kc_span sp;
	uint64_t lo, hi;

	if (!ebee_window_span(win) || ebee_window_ends(win, &lo, &hi) || hi <= lo || !w)
		return -ENODATA;
	ebee_kc_window(&w->kc, ebee_wl_kind(w), lo, hi, ebee_window_count(win), &sp);
	*rps = sp.requests * 1e9 / (double)(hi - lo);
	return 0;
}

int ebee_get_rps_trust(struct ebee *eb, pid_t pid, double *rps, struct ebee_trust *trust)
{
	struct ebee_trust_snap snap;
	struct ebee_window *win;
	struct ebee_kc_read kr;
	int err = trust_check(trust);

	if (err || !eb || !rps)
		return err ? err : -EINVAL;
	/* The counters as of now, so the window's newest end is covered. */
	ebee_wl_kc_read(eb, pid, &kr);
	err = query_begin(eb, pid, EBEE_LAT_SERVICE, rps, &win, trust ? &snap : NULL);
	if (!err) {
		struct wl *w = ebee_wl_find(eb, pid);

		if (w)
			ebee_wl_kc_apply(w, &kr);
		err = kernel_rps(eb, pid, win, rps);
		pthread_mutex_unlock(&eb->lock);
	}
	return query_trust(eb, err, &snap, 1, trust);
}

int ebee_get_rps(struct ebee *eb, pid_t pid, double *rps)
{
	return ebee_get_rps_trust(eb, pid, rps, NULL);
}

int ebee_get_latest_latency_of(struct ebee *eb, pid_t pid, enum ebee_latency lat, uint64_t *lat_ns)
{
	struct ebee_window *win;
	int err = query_begin(eb, pid, lat, lat_ns, &win, NULL);

	if (err)
		return err;
	err = ebee_window_latest(win, lat_ns);
	pthread_mutex_unlock(&eb->lock);
	return err;
}

int ebee_get_average_latency_of(struct ebee *eb, pid_t pid, enum ebee_latency lat, double *avg_ns)
{
	struct ebee_window *win;
	int err = query_begin(eb, pid, lat, avg_ns, &win, NULL);

	if (err)
		return err;
	err = ebee_window_average(win, avg_ns);
	pthread_mutex_unlock(&eb->lock);
	return err;
}

int ebee_get_latency_percentile_trust(struct ebee *eb, pid_t pid, enum ebee_latency lat, double p,
				      double *val_ns, struct ebee_trust *trust)
{
	struct ebee_trust_snap snap;
	struct ebee_window *win;
	int err;

	if (!(p >= 0 && p <= 100))
		return -EINVAL;
	err = trust_check(trust);
	if (!err)
		err = query_begin(eb, pid, lat, val_ns, &win, trust ? &snap : NULL);
	if (!err) {
		err = ebee_window_percentile(win, p, val_ns);
		pthread_mutex_unlock(&eb->lock);
	}
	return query_trust(eb, err, &snap, 1, trust);
}

int ebee_get_latency_percentile_of(struct ebee *eb, pid_t pid, enum ebee_latency lat, double p,
				   double *val_ns)
{
	return ebee_get_latency_percentile_trust(eb, pid, lat, p, val_ns, NULL);
}

/* The distinct windows of pids into wins (*n of them), and, if snaps is not
 * NULL, the state of each distinct workload found into snaps (*ns); the lock
 * is held. */
static int joint_collect(struct ebee *eb, const pid_t *pids, size_t npids, enum ebee_latency lat,
			 struct ebee_window **wins, size_t *n, struct ebee_trust_snap *snaps,
			 size_t *ns)
{
	int err = 0;

	for (size_t i = 0; i < npids && !err; i++) {
		struct ebee_trust_snap *snap = snaps ? &snaps[*ns] : NULL;
		bool dup = false;

		for (size_t j = 0; j < i && !dup; j++)
			dup = pids[j] == pids[i]; /* a pid listed twice counts once */
		if (dup)
			continue;
		err = query_window(eb, pids[i], lat, &wins[*n], snap);
		if (snap && err != -ENOENT)
			(*ns)++;
		if (err == -ENODATA)
			err = 0; /* no window of that latency yet: no requests */
		else if (!err)
			(*n)++;
	}
	return err;
}

int ebee_get_latency_percentile_joint_trust(struct ebee *eb, const pid_t *pids, size_t npids,
					    enum ebee_latency lat, double p, double *val_ns,
					    struct ebee_trust *trust)
{
	struct ebee_trust_snap *snaps = NULL;
	struct ebee_window **wins;
	size_t n = 0, ns = 0;
	int err = val_ns ? query_check(eb, lat) : -EINVAL;

	if (err)
		return err;
	if (!pids || !npids || !val_ns || !(p >= 0 && p <= 100) || trust_check(trust))
		return -EINVAL;
	wins = malloc(npids * sizeof(*wins));
	if (trust)
		snaps = malloc(npids * sizeof(*snaps));
	if (!wins || (trust && !snaps)) {
		free(wins);
		free(snaps);
		return -ENOMEM;
	}
	pthread_mutex_lock(&eb->lock);
	err = joint_collect(eb, pids, npids, lat, wins, &n, snaps, &ns);
	if (!err)
		err = n ? ebee_window_percentile_union(wins, n, p, val_ns) : -ENODATA;
	pthread_mutex_unlock(&eb->lock);
	free(wins);
	err = query_trust(eb, err, snaps, ns, trust);
	free(snaps);
	return err;
}

int ebee_get_latency_percentile_joint(struct ebee *eb, const pid_t *pids, size_t npids,
				      enum ebee_latency lat, double p, double *val_ns)
{
	return ebee_get_latency_percentile_joint_trust(eb, pids, npids, lat, p, val_ns, NULL);
}

int ebee_get_latest_latency(struct ebee *eb, pid_t pid, uint64_t *lat_ns)
{
	return ebee_get_latest_latency_of(eb, pid, EBEE_LAT_SERVICE, lat_ns);
}

int ebee_get_average_latency(struct ebee *eb, pid_t pid, double *avg_ns)
{
	return ebee_get_average_latency_of(eb, pid, EBEE_LAT_SERVICE, avg_ns);
}

int ebee_get_latency_percentile(struct ebee *eb, pid_t pid, double p, double *val_ns)
{
	return ebee_get_latency_percentile_of(eb, pid, EBEE_LAT_SERVICE, p, val_ns);
}

int ebee_get_global_stats(struct ebee *eb, struct ebee_global_stats *st)
{
	struct ebee_global_stats s = {};
	size_t sz;

	if (!eb || !st || st->sz < sizeof(size_t))
		return -EINVAL;
	sz = st->sz < sizeof(s) ? st->sz : sizeof(s);
	pthread_mutex_lock(&eb->lock);
	s.sz = sz;
	s.records = eb->records;
	s.probes = eb->probes_now | (eb->grpc_probes_now ? EBEE_PROBE_GRPC : 0) |
		   (eb->dgram_probes_now ? EBEE_PROBE_DGRAM : 0);
	s.workloads = eb->nwls;
	pthread_mutex_unlock(&eb->lock);
	s.grpc_streams = ebee_grpc_stream_count(eb->grpc); /* gRPC */
	s.dropped = ebee_loader_counter(eb->loader, EBEE_CNT_DROPPED) +
		    ebee_grpc_counter(eb->grpc, EBEE_GCNT_DROPPED); /* both rings */
	s.conn_entries = ebee_loader_conn_count(eb->loader);
	s.path = eb->path;
	s.attach_io = eb->attach.io;
	s.attach_arrive = eb->attach.arrive;
	s.attach_state = eb->attach.state;
	memcpy(st, &s, sz);
	return 0;
}
