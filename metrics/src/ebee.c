// SPDX-License-Identifier: MIT
/*
 * libebee's public API: workloads, the consumer thread, the queries.
 *
 * One consumer thread waits on the ring buffer for at most drain_ms (the BPF
 * side skips wakeups until the ring is half full), drains it into the
 * per-workload windows under one lock, and every 100 ms does housekeeping:
 * notices exited workloads, makes and revisits the automatic mode choice,
 * and keeps the attached probe set equal to what the workloads need.
 *
 * Each workload keeps two windows while both patterns are observed (auto mode
 * before and during a decision): conn records and io records. The queries
 * read the window of the chosen pattern.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>

#include "ebee.h"
#include "feature_check.h"
#include "kern.h"
#include "mode.h"
#include "proc.h"
#include "window.h"

#define HOUSEKEEPING_NS (100ull * 1000 * 1000)

enum { K_CONN, K_IO, K_NKINDS };

struct wl {
	pid_t pid;
	enum ebee_mode req_mode; /* asked for */
	enum ebee_mode mode;	 /* in force; AUTO while undecided */
	uint32_t kflags;	 /* EBEE_F_* in the kernel now */
	bool kflags_resync;	 /* re-copy the flags into process entries */
	bool no_children;
	bool exited;
	struct ebee_window *win[K_NKINDS];
	uint64_t total[K_NKINDS]; /* records of each kind since start */
	uint64_t req_base, kind_snap;
	struct ebee_evidence ev;
	uint64_t epoch_ns;	   /* start of the evidence epoch */
	uint64_t recheck_until_ns; /* conn mode: io probes back until then */
	uint64_t next_recheck_ns;
	uint64_t switches;
	uint64_t dropped_final;
	uint32_t nprocs_final;
	struct wl *next;
};

struct ebee {
	struct ebee_opts opts;
	struct ebee_mode_params mp;
	struct ebee_kern *kern;
	pthread_mutex_t lock;
	pthread_t thread;
	bool thread_started;
	volatile bool stop;
	struct wl *wls;
	unsigned int nwls;
	uint64_t records;
	uint64_t last_house_ns;
	int epfd;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void logf_(struct ebee *eb, enum ebee_log_level lvl, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void logf_(struct ebee *eb, enum ebee_log_level lvl, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (lvl > eb->opts.log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (eb->opts.log)
		eb->opts.log(lvl, buf, eb->opts.log_ctx);
	else
		fprintf(stderr, "%s\n", buf);
}

/* ---------------------------------------------------------------- names */

static const char *const mode_names[EBEE_MODE_COUNT] = { "auto", "conn", "io", "grpc" };

const char *ebee_mode_str(enum ebee_mode mode)
{
	return mode >= 0 && mode < EBEE_MODE_COUNT ? mode_names[mode] : NULL;
}

int ebee_mode_parse(const char *s, enum ebee_mode *mode)
{
	for (int i = 0; i < EBEE_MODE_COUNT; i++) {
		if (s && !strcmp(s, mode_names[i])) {
			*mode = i;
			return 0;
		}
	}
	return -EINVAL;
}

char *ebee_probes_str(unsigned int mask, char *buf, size_t len)
{
	static const char *const names[] = { "accept", "close", "read", "write", "fork", "grpc" };
	size_t off = 0;

	if (!len)
		return buf;
	buf[0] = 0;
	for (unsigned int i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!(mask & (1u << i)))
			continue;
		off += snprintf(buf + off, off < len ? len - off : 0, "%s%s", off ? "," : "",
				names[i]);
	}
	return buf;
}

/* ---------------------------------------------------------------- workloads */

static struct wl *find_wl(struct ebee *eb, pid_t pid)
{
	for (struct wl *w = eb->wls; w; w = w->next)
		if (w->pid == pid)
			return w;
	return NULL;
}

static int primary_kind(const struct wl *w)
{
	switch (w->mode) {
	case EBEE_MODE_CONN:
		return K_CONN;
	case EBEE_MODE_IO:
		return K_IO;
	default:
		/* Undecided: whichever pattern has seen more. */
		if (!w->win[K_IO])
			return K_CONN;
		if (!w->win[K_CONN])
			return K_IO;
		return w->total[K_IO] >= w->total[K_CONN] ? K_IO : K_CONN;
	}
}

static uint64_t wl_requests(const struct wl *w)
{
	int k = primary_kind(w);

	if (w->mode == EBEE_MODE_AUTO)
		return w->total[k];
	return w->req_base + w->total[k] - w->kind_snap;
}

/* Kernel flags for the workload's current state. */
static uint32_t wl_flags(const struct wl *w, uint64_t now)
{
	uint32_t f = w->no_children ? EBEE_F_NOCHILD : 0;

	switch (w->req_mode) {
	case EBEE_MODE_CONN:
		return f | EBEE_F_CONN;
	case EBEE_MODE_IO:
		return f | EBEE_F_IO;
	default:
		break;
	}
	if (w->mode == EBEE_MODE_CONN && now >= w->recheck_until_ns)
		return f | EBEE_F_CONN;
	/* Undecided, io (closes feed the revisit), or a conn-mode recheck. */
	return f | EBEE_F_CONN | EBEE_F_IO;
}

static unsigned int flags_probes(uint32_t flags)
{
	unsigned int p = 0;

	if (flags & (EBEE_F_CONN | EBEE_F_IO))
		p |= EBEE_PROBE_ACCEPT | EBEE_PROBE_CLOSE | EBEE_PROBE_FORK;
	if (flags & EBEE_F_IO)
		p |= EBEE_PROBE_READ | EBEE_PROBE_WRITE;
	return p;
}

/* Make the kernel flags and the attached probe groups match the workloads. */
static int sync_kernel(struct ebee *eb, char *msg, size_t msg_len)
{
	unsigned int need = 0;
	uint64_t now = now_ns();
	char m[256], b1[64], b2[64];
	int err;

	for (struct wl *w = eb->wls; w; w = w->next) {
		uint32_t f;

		if (w->exited)
			continue;
		f = wl_flags(w, now);
		need |= flags_probes(f);
		/* Once more on the round after a change: a process forked while
		 * the copies were updated may hold the old flags. */
		if (f != w->kflags || w->kflags_resync) {
			w->kflags_resync = f != w->kflags;
			err = ebee_kern_workload_set(eb->kern, w->pid, f);
			if (err)
				return err;
			w->kflags = f;
		}
	}
	if (need == ebee_kern_probes(eb->kern))
		return 0;
	ebee_probes_str(ebee_kern_probes(eb->kern), b1, sizeof(b1));
	ebee_probes_str(need, b2, sizeof(b2));
	err = ebee_kern_set_probes(eb->kern, need, msg ? msg : m, msg ? msg_len : sizeof(m));
	if (err) {
		logf_(eb, EBEE_LOG_WARN, "%s", msg ? msg : m);
		return err;
	}
	logf_(eb, EBEE_LOG_DEBUG, "ebee: probes [%s] -> [%s]", b1, b2);
	return 0;
}

static void set_mode(struct ebee *eb, struct wl *w, enum ebee_mode m, const char *why)
{
	int k = m == EBEE_MODE_IO ? K_IO : K_CONN;

	if (w->mode == EBEE_MODE_AUTO) {
		/* First choice: everything of that kind since the start counts. */
		w->req_base = 0;
		w->kind_snap = 0;
	} else {
		w->req_base = wl_requests(w);
		w->kind_snap = w->total[k];
		w->switches++;
	}
	logf_(eb, EBEE_LOG_INFO, "ebee: pid %d: mode %s -> %s (%s)", w->pid, ebee_mode_str(w->mode),
	      ebee_mode_str(m), why);
	w->mode = m;
	/* A window of the other kind must not mix into this one later. */
	if (m == EBEE_MODE_CONN && w->win[K_IO])
		ebee_window_reset(w->win[K_IO]);
}

static void describe(const struct ebee_evidence *ev, char *buf, size_t len)
{
	snprintf(buf, len, "%llu closed connections, %llu with several requests, %llu io requests",
		 (unsigned long long)ev->conns_closed, (unsigned long long)ev->conns_multi,
		 (unsigned long long)ev->io_reqs);
}

static void wl_auto(struct ebee *eb, struct wl *w, uint64_t now)
{
	uint64_t epoch_len = (uint64_t)eb->opts.auto_recheck_ms * 1000000ull;
	enum ebee_mode d;
	char why[160];

	if (w->req_mode != EBEE_MODE_AUTO)
		return;
	d = ebee_mode_decide(&w->ev, &eb->mp);
	describe(&w->ev, why, sizeof(why));
	switch (w->mode) {
	case EBEE_MODE_AUTO:
		if (d != EBEE_MODE_AUTO) {
			set_mode(eb, w, d, why);
			memset(&w->ev, 0, sizeof(w->ev));
			w->epoch_ns = now;
			w->next_recheck_ns = now + epoch_len;
			w->recheck_until_ns = 0;
		}
		break;
	case EBEE_MODE_IO:
		/* io keeps every probe: judge each epoch's fresh evidence. */
		if (now - w->epoch_ns < epoch_len)
			break;
		if (d == EBEE_MODE_CONN)
			set_mode(eb, w, d, why);
		memset(&w->ev, 0, sizeof(w->ev));
		w->epoch_ns = now;
		w->next_recheck_ns = now + epoch_len;
		break;
	case EBEE_MODE_CONN:
		/* conn runs without the io probes; bring them back now and then
		 * for a short look, then judge what that look saw. */
		if (w->recheck_until_ns == 0 && now >= w->next_recheck_ns) {
			memset(&w->ev, 0, sizeof(w->ev));
			w->epoch_ns = now;
			w->recheck_until_ns =
			    now + (uint64_t)eb->opts.auto_recheck_len_ms * 1000000ull;
		} else if (w->recheck_until_ns && now >= w->recheck_until_ns) {
			if (d == EBEE_MODE_IO)
				set_mode(eb, w, d, why);
			memset(&w->ev, 0, sizeof(w->ev));
			w->epoch_ns = now;
			w->recheck_until_ns = 0;
			w->next_recheck_ns = now + epoch_len;
		}
		break;
	default:
		break;
	}
}

static void wl_mark_exited(struct ebee *eb, struct wl *w)
{
	ebee_kern_workload_dropped(eb->kern, w->pid, &w->dropped_final);
	w->nprocs_final = 0;
	w->exited = true;
	ebee_kern_workload_del(eb->kern, w->pid);
	logf_(eb, EBEE_LOG_INFO, "ebee: pid %d exited; %llu requests traced", w->pid,
	      (unsigned long long)wl_requests(w));
}

static void housekeeping(struct ebee *eb, uint64_t now)
{
	for (struct wl *w = eb->wls; w; w = w->next) {
		if (w->exited)
			continue;
		if (!ebee_proc_alive(w->pid)) {
			wl_mark_exited(eb, w);
			continue;
		}
		wl_auto(eb, w, now);
	}
	sync_kernel(eb, NULL, 0);
	eb->last_house_ns = now;
}

/* ---------------------------------------------------------------- consumer */

static int on_record(void *ctx, const struct ebee_rec *r)
{
	struct ebee *eb = ctx;
	struct wl *w = find_wl(eb, r->wid);
	int k;

	eb->records++;
	if (!w)
		return 0; /* stopped while the record was queued */
	/* Every kind is evidence for the mode; an adopted connection's close is
	 * nothing more (its accept time is unknown). */
	ebee_evidence_add(&w->ev, r->kind, r->nreq);
	if (r->kind == EBEE_REC_CONN)
		k = K_CONN;
	else if (r->kind == EBEE_REC_IO)
		k = K_IO;
	else
		return 0;
	w->total[k]++;
	if (w->win[k])
		ebee_window_push(w->win[k], r->end_ns, r->lat_ns);
	/* ops (issue 13): the request hook; only the kind the queries read, so
	 * a histogram built from it counts what ebee_get_stats() counts. */
	if (eb->opts.on_request && k == primary_kind(w))
		eb->opts.on_request(w->pid, r->lat_ns, eb->opts.on_request_ctx);
	return 0;
}

static void *consumer(void *arg)
{
	struct ebee *eb = arg;
	struct epoll_event ev;
	sigset_t all;

	/* Signals belong to the application's threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (;;) {
		uint64_t now;

		epoll_wait(eb->epfd, &ev, 1, eb->opts.drain_ms);
		pthread_mutex_lock(&eb->lock);
		if (eb->stop) {
			pthread_mutex_unlock(&eb->lock);
			break;
		}
		ebee_kern_consume(eb->kern);
		now = now_ns();
		if (now - eb->last_house_ns >= HOUSEKEEPING_NS)
			housekeeping(eb, now);
		pthread_mutex_unlock(&eb->lock);
	}
	return NULL;
}

/* ---------------------------------------------------------------- lifecycle */

#define OPT(o, field, def)                                                                  \
	((o) && (o)->sz >= offsetof(typeof(*(o)), field) + sizeof((o)->field) && (o)->field \
	     ? (o)->field                                                                   \
	     : (def))

struct ebee *ebee_open(const struct ebee_opts *opts, char *msg, size_t msg_len)
{
	struct ebee_kern_opts ko = {};
	char dummy[8];
	struct ebee *eb;
	int err;

	if (!msg) {
		msg = dummy;
		msg_len = sizeof(dummy);
	}
	msg[0] = 0;
	if (opts && opts->sz < sizeof(size_t)) {
		snprintf(msg, msg_len, "ebee: options struct has a bad size");
		errno = EINVAL;
		return NULL;
	}
	eb = calloc(1, sizeof(*eb));
	if (!eb) {
		errno = ENOMEM;
		return NULL;
	}
	eb->epfd = -1;
	eb->opts.sz = sizeof(eb->opts);
	eb->opts.ringbuf_size = OPT(opts, ringbuf_size, 128 * 1024);
	eb->opts.window_len = OPT(opts, window_len, 100000);
	eb->opts.window_age_ns = OPT(opts, window_age_ns, 0);
	eb->opts.drain_ms = OPT(opts, drain_ms, 20);
	eb->opts.max_conns = OPT(opts, max_conns, 65536);
	eb->opts.auto_min_conns = OPT(opts, auto_min_conns, 8);
	eb->opts.auto_min_requests = OPT(opts, auto_min_requests, 32);
	eb->opts.auto_recheck_ms = OPT(opts, auto_recheck_ms, 10000);
	eb->opts.auto_recheck_len_ms = OPT(opts, auto_recheck_len_ms, 1000);
	eb->opts.log = OPT(opts, log, NULL);
	eb->opts.log_ctx = OPT(opts, log_ctx, NULL);
	eb->opts.log_level = OPT(opts, log_level, EBEE_LOG_WARN);
	eb->opts.on_request = OPT(opts, on_request, NULL);
	eb->opts.on_request_ctx = OPT(opts, on_request_ctx, NULL);
	eb->mp.min_conns = eb->opts.auto_min_conns;
	eb->mp.min_requests = eb->opts.auto_min_requests;
	pthread_mutex_init(&eb->lock, NULL);

	{
		size_t rs = eb->opts.ringbuf_size;
		long page = sysconf(_SC_PAGESIZE);

		if (rs < (size_t)page || (rs & (rs - 1))) {
			snprintf(msg, msg_len,
				 "ebee: ring buffer size %zu must be a power of two >= %ld", rs,
				 page);
			err = -EINVAL;
			goto fail;
		}
	}
	err = ebee_check_features(msg, msg_len);
	if (err)
		goto fail;
	ko.ringbuf_size = eb->opts.ringbuf_size;
	ko.max_conns = eb->opts.max_conns;
	ko.on_record = on_record;
	ko.ctx = eb;
	err = ebee_kern_open(&ko, &eb->kern, msg, msg_len);
	if (err)
		goto fail;
	eb->epfd = ebee_kern_epoll_fd(eb->kern);
	err = -pthread_create(&eb->thread, NULL, consumer, eb);
	if (err) {
		snprintf(msg, msg_len, "ebee: cannot start the consumer thread: %s",
			 strerror(-err));
		goto fail;
	}
	eb->thread_started = true;
	return eb;
fail:
	ebee_close(eb);
	errno = -err;
	return NULL;
}

static void free_wl(struct wl *w)
{
	for (int k = 0; k < K_NKINDS; k++)
		ebee_window_free(w->win[k]);
	free(w);
}

void ebee_close(struct ebee *eb)
{
	if (!eb)
		return;
	if (eb->thread_started) {
		pthread_mutex_lock(&eb->lock);
		eb->stop = true;
		pthread_mutex_unlock(&eb->lock);
		pthread_join(eb->thread, NULL);
	}
	while (eb->wls) {
		struct wl *w = eb->wls;

		eb->wls = w->next;
		free_wl(w);
	}
	ebee_kern_close(eb->kern);
	pthread_mutex_destroy(&eb->lock);
	free(eb);
}

/* Connections a process accepted before tracing began: without them, a
 * server whose clients connected earlier (memcached behind long-lived client
 * pools) would show nothing in io mode until its clients reconnect. */
static size_t adopt_conns(struct ebee *eb, pid_t tgid)
{
	size_t n = 0, ok = 0;
	int *fds = NULL;

	if (ebee_proc_accepted_fds(tgid, &fds, &n))
		return 0;
	for (size_t i = 0; i < n; i++)
		ok += !ebee_kern_conn_adopt(eb->kern, tgid, fds[i]);
	free(fds);
	return ok;
}

int ebee_start_tracing(struct ebee *eb, pid_t pid, const struct ebee_trace_opts *opts)
{
	enum ebee_mode mode = OPT(opts, mode, EBEE_MODE_AUTO);
	bool no_children = OPT(opts, no_children, false);
	size_t nkids = 0, nadopted;
	pid_t *kids = NULL;
	struct wl *w;
	char msg[256];
	pid_t tgid;
	int err;

	if (!eb || pid <= 0 || mode < 0 || mode >= EBEE_MODE_COUNT)
		return -EINVAL;
	if (mode == EBEE_MODE_GRPC)
		return -EOPNOTSUPP; /* gRPC uprobes: not built yet */
	tgid = ebee_proc_tgid(pid);
	if (tgid < 0 || !ebee_proc_alive(pid))
		return -ESRCH;
	if (tgid != pid)
		return -EINVAL; /* a thread id, not a process */

	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->pid = pid;
	w->req_mode = mode;
	w->mode = mode;
	w->no_children = no_children;
	w->epoch_ns = now_ns();
	if (mode != EBEE_MODE_IO)
		w->win[K_CONN] = ebee_window_new(eb->opts.window_len, eb->opts.window_age_ns);
	if (mode != EBEE_MODE_CONN)
		w->win[K_IO] = ebee_window_new(eb->opts.window_len, eb->opts.window_age_ns);
	if ((mode != EBEE_MODE_IO && !w->win[K_CONN]) ||
	    (mode != EBEE_MODE_CONN && !w->win[K_IO])) {
		free_wl(w);
		return -ENOMEM;
	}

	pthread_mutex_lock(&eb->lock);
	if (find_wl(eb, pid)) {
		struct wl *old = find_wl(eb, pid);

		if (!old->exited) {
			err = -EEXIST;
			goto unlock;
		}
		/* An exited workload of the same pid (recycled): replace it. */
		for (struct wl **pp = &eb->wls; *pp; pp = &(*pp)->next) {
			if (*pp == old) {
				*pp = old->next;
				free_wl(old);
				eb->nwls--;
				break;
			}
		}
	}
	/* Workload entry first (gates the programs), then the root, then the
	 * probes (the fork hook among them), and only then the descendants
	 * that already exist: a fork racing with the scan is caught by one or
	 * the other. */
	w->kflags = wl_flags(w, now_ns());
	err = ebee_kern_workload_set(eb->kern, pid, w->kflags);
	if (err)
		goto unlock;
	err = ebee_kern_proc_add(eb->kern, pid, pid);
	if (err) {
		ebee_kern_workload_del(eb->kern, pid);
		err = err == -EEXIST ? -EBUSY : err; /* traced as part of another workload */
		goto unlock;
	}
	w->next = eb->wls;
	eb->wls = w;
	eb->nwls++;
	err = sync_kernel(eb, msg, sizeof(msg));
	if (err)
		goto unwind;
	nadopted = adopt_conns(eb, pid);
	if (!no_children && !ebee_proc_descendants(pid, &kids, &nkids)) {
		for (size_t i = 0; i < nkids; i++) {
			/* -EEXIST: the fork hook got there first */
			ebee_kern_proc_add(eb->kern, kids[i], pid);
			nadopted += adopt_conns(eb, kids[i]);
		}
		free(kids);
	}
	logf_(eb, EBEE_LOG_INFO,
	      "ebee: tracing pid %d (%s, %zu descendants, %zu open connections adopted)", pid,
	      ebee_mode_str(mode), nkids, nadopted);
	pthread_mutex_unlock(&eb->lock);
	return 0;
unwind:
	eb->wls = w->next;
	eb->nwls--;
	ebee_kern_workload_del(eb->kern, pid);
	sync_kernel(eb, NULL, 0);
unlock:
	pthread_mutex_unlock(&eb->lock);
	free_wl(w);
	return err;
}

int ebee_stop_tracing(struct ebee *eb, pid_t pid)
{
	struct wl **pp, *w = NULL;

	if (!eb)
		return -EINVAL;
	pthread_mutex_lock(&eb->lock);
	/* Count what completed before the stop, then forget the workload. */
	ebee_kern_consume(eb->kern);
	for (pp = &eb->wls; *pp; pp = &(*pp)->next) {
		if ((*pp)->pid == pid) {
			w = *pp;
			*pp = w->next;
			break;
		}
	}
	if (!w) {
		pthread_mutex_unlock(&eb->lock);
		return -ENOENT;
	}
	eb->nwls--;
	if (!w->exited)
		ebee_kern_workload_del(eb->kern, pid);
	sync_kernel(eb, NULL, 0);
	pthread_mutex_unlock(&eb->lock);
	free_wl(w);
	return 0;
}

int ebee_flush(struct ebee *eb)
{
	int n;

	if (!eb)
		return -EINVAL;
	pthread_mutex_lock(&eb->lock);
	n = ebee_kern_consume(eb->kern);
	pthread_mutex_unlock(&eb->lock);
	return n < 0 ? n : 0;
}

/* ---------------------------------------------------------------- queries */

/* Look up pid and its window under the lock; expire by age first. */
static int query_begin(struct ebee *eb, pid_t pid, struct ebee_window **win)
{
	struct wl *w;

	if (!eb)
		return -EINVAL;
	pthread_mutex_lock(&eb->lock);
	w = find_wl(eb, pid);
	if (!w) {
		pthread_mutex_unlock(&eb->lock);
		return -ENOENT;
	}
	*win = w->win[primary_kind(w)];
	if (!*win) {
		pthread_mutex_unlock(&eb->lock);
		return -ENODATA;
	}
	if (eb->opts.window_age_ns)
		ebee_window_expire(*win, now_ns());
	return 0;
}

int ebee_get_rps(struct ebee *eb, pid_t pid, double *rps)
{
	struct ebee_window *win;
	int err = query_begin(eb, pid, &win);

	if (err)
		return err;
	err = ebee_window_rps(win, rps);
	pthread_mutex_unlock(&eb->lock);
	return err;
}

int ebee_get_latest_latency(struct ebee *eb, pid_t pid, uint64_t *lat_ns)
{
	struct ebee_window *win;
	int err = query_begin(eb, pid, &win);

	if (err)
		return err;
	err = ebee_window_latest(win, lat_ns);
	pthread_mutex_unlock(&eb->lock);
	return err;
}

int ebee_get_average_latency(struct ebee *eb, pid_t pid, double *avg_ns)
{
	struct ebee_window *win;
	int err = query_begin(eb, pid, &win);

	if (err)
		return err;
	err = ebee_window_average(win, avg_ns);
	pthread_mutex_unlock(&eb->lock);
	return err;
}

int ebee_get_latency_percentile(struct ebee *eb, pid_t pid, double p, double *val_ns)
{
	struct ebee_window *win;
	int err;

	if (!(p >= 0 && p <= 100))
		return -EINVAL;
	err = query_begin(eb, pid, &win);
	if (err)
		return err;
	err = ebee_window_percentile(win, p, val_ns);
	pthread_mutex_unlock(&eb->lock);
	return err;
}

int ebee_get_stats(struct ebee *eb, pid_t pid, struct ebee_stats *st)
{
	struct ebee_stats s = {};
	struct ebee_window *win;
	struct wl *w;
	size_t sz;

	if (!eb || !st || st->sz < sizeof(size_t))
		return -EINVAL;
	sz = st->sz < sizeof(s) ? st->sz : sizeof(s);
	pthread_mutex_lock(&eb->lock);
	w = find_wl(eb, pid);
	if (!w) {
		pthread_mutex_unlock(&eb->lock);
		return -ENOENT;
	}
	s.sz = sz;
	s.requests = wl_requests(w);
	s.mode = w->mode;
	s.req_mode = w->req_mode;
	s.mode_switches = w->switches;
	s.exited = w->exited;
	if (w->exited) {
		s.dropped = w->dropped_final;
		s.nprocs = 0;
		s.probes = 0;
	} else {
		ebee_kern_workload_dropped(eb->kern, pid, &s.dropped);
		s.nprocs = ebee_kern_proc_count(eb->kern, pid);
		s.probes = flags_probes(w->kflags) & ebee_kern_probes(eb->kern);
	}
	win = w->win[primary_kind(w)];
	if (win) {
		if (eb->opts.window_age_ns)
			ebee_window_expire(win, now_ns());
		s.window_count = ebee_window_count(win);
		s.window_span_ns = ebee_window_span(win);
	}
	pthread_mutex_unlock(&eb->lock);
	memcpy(st, &s, sz);
	return 0;
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
	s.dropped = ebee_kern_counter(eb->kern, EBEE_CNT_DROPPED);
	s.records = eb->records;
	s.probes = ebee_kern_probes(eb->kern);
	s.workloads = eb->nwls;
	s.conn_entries = ebee_kern_conn_count(eb->kern);
	pthread_mutex_unlock(&eb->lock);
	memcpy(st, &s, sz);
	return 0;
}
