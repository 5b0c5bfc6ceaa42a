// SPDX-License-Identifier: MIT
/*
 * ebee's two threads and the record handler. The consumer drains the ring
 * buffers into the windows (ebee_threads_on_record()) under lock; the
 * housekeeper, every HOUSEKEEPING_NS, notices exited workloads, runs the
 * scanners (scan.c), makes and revisits the mode choice (workload.c) and
 * keeps the kernel in step (ksync.c).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/epoll.h>

#include "core.h"

#define HOUSEKEEPING_NS (100ull * 1000 * 1000)
/* gRPC: how often traced processes are searched for libgrpc. */
#define GRPC_SCAN_NS (1000ull * 1000 * 1000)
/* dgram: how often the pending table is swept. */
#define DGRAM_SWEEP_NS (1000ull * 1000 * 1000)

/* With ctl held (the list cannot change), lock not held. */
static void wl_mark_exited(struct ebee *eb, struct wl *w)
{
	uint64_t dropped = 0, req;
	struct ebee_kc_read kr;

	ebee_loader_workload_dropped(eb->loader, w->pid, &dropped);
	ebee_wl_kc_read(eb, w->pid, &kr); /* its last: the entry goes below */
	ebee_loader_workload_del(eb->loader, w->pid);
	ebee_grpc_workload_del(eb->grpc, w->pid); /* gRPC */
	pthread_mutex_lock(&eb->lock);
	ebee_loader_consume(eb->loader); /* its last records */
	ebee_wl_kc_apply(w, &kr);
	w->dropped_final = dropped;
	w->nprocs_final = 0;
	w->exited = true;
	req = ebee_wl_requests(w);
	pthread_mutex_unlock(&eb->lock);
	ebee_dgram_workload_del(eb->dgram, w->pid);
	ebee_cg2_wl_del(eb->cg2, w->pid);
	ebee_logf(eb, EBEE_LOG_INFO, "ebee: pid %d exited; %llu requests traced", w->pid,
		  (unsigned long long)req);
}

/* One round: /proc checks and probe changes with ctl only, the mode
 * decisions (cheap) under lock. */
static void housekeeping(struct ebee *eb)
{
	uint64_t now = ebee_now_ns();
	bool grpc_scan, dgram_sweep;
	struct ebee_kc_read kr;

	pthread_mutex_lock(&eb->ctl);
	grpc_scan = now - eb->last_grpc_scan_ns >= GRPC_SCAN_NS;
	if (grpc_scan)
		eb->last_grpc_scan_ns = now;
	dgram_sweep = eb->dgram && now - eb->last_dgram_sweep_ns >= DGRAM_SWEEP_NS;
	if (dgram_sweep) {
		eb->last_dgram_sweep_ns = now;
		ebee_dgram_sweep(eb->dgram, now);
	}
	for (struct wl *w = eb->wls; w; w = w->next) {
		if (w->exited)
			continue;
		if (!procfs_alive(w->pid, 0)) {
			wl_mark_exited(eb, w);
			continue;
		}
		if (grpc_scan)
			ebee_scan_grpc(eb, w, false);
		if (dgram_sweep)
			ebee_scan_dgram(eb, w);
		ebee_wl_kc_read(eb, w->pid, &kr);
		pthread_mutex_lock(&eb->lock);
		ebee_wl_kc_apply(w, &kr); /* before the mode round: a switch snaps it */
		ebee_wl_auto(eb, w, now);
		pthread_mutex_unlock(&eb->lock);
	}
	ebee_ksync_frame_missed(eb);
	ebee_ksync(eb, NULL, 0);
	pthread_mutex_unlock(&eb->ctl);
}

int ebee_threads_on_record(void *ctx, const struct ebee_rec *r)
{
	struct ebee *eb = ctx;
	struct wl *w = ebee_wl_find(eb, r->wid);
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
	else if (r->kind == EBEE_REC_GRPC)
		k = K_GRPC;
	else if (r->kind == EBEE_REC_DGRAM)
		k = K_DGRAM;
	else if (r->kind == EBEE_REC_FRAMED)
		k = K_IO; /* nreq requests of the io pattern, delimited by a framer */
	else
		return 0;
	/* A request that began before its pattern became the mode spans the
	 * switch: it stays out of the window (its count is the kernel's). */
	if (w->since_ns[k] &&
	    r->end_ns - (r->soj_ns > r->lat_ns ? r->soj_ns : r->lat_ns) < w->since_ns[k])
		return 0;
	for (unsigned int i = 0; i < (r->kind == EBEE_REC_FRAMED ? r->nreq : 1u); i++) {
		w->total[k]++;
		if (w->win[k][EBEE_LAT_SERVICE])
			ebee_window_push(w->win[k][EBEE_LAT_SERVICE], r->end_ns, r->lat_ns);
		if (w->win[k][EBEE_LAT_SOJOURN] && r->soj_ns)
			ebee_window_push(w->win[k][EBEE_LAT_SOJOURN], r->end_ns, r->soj_ns);
		/* The request hook; only the kind the queries read, so
		 * a histogram built from it counts what ebee_get_stats() counts. */
		if (eb->opts.on_request && k == ebee_wl_kind(w))
			eb->opts.on_request(w->pid, r->lat_ns, eb->opts.on_request_ctx);
	}
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
		epoll_wait(eb->epfd, &ev, 1, eb->opts.drain_ms);
		pthread_mutex_lock(&eb->lock);
		if (eb->stop) {
			pthread_mutex_unlock(&eb->lock);
			break;
		}
		ebee_loader_consume(eb->loader);
		pthread_mutex_unlock(&eb->lock);
	}
	return NULL;
}

static void *housekeeper(void *arg)
{
	struct ebee *eb = arg;
	struct timespec ts = { 0, HOUSEKEEPING_NS };
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	while (!__atomic_load_n(&eb->stop, __ATOMIC_ACQUIRE)) {
		nanosleep(&ts, NULL);
		if (__atomic_load_n(&eb->stop, __ATOMIC_ACQUIRE))
			break;
		housekeeping(eb);
	}
	return NULL;
}

/* Starts the consumer, then the housekeeper; ebee_close() joins each one
 * that started. */
int ebee_threads_start(struct ebee *eb, char *msg, size_t msg_len)
{
	int err;

	err = -pthread_create(&eb->thread, NULL, consumer, eb);
	if (err) {
		snprintf(msg, msg_len, "ebee: cannot start the consumer thread: %s",
			 strerror(-err));
		return err;
	}
	eb->thread_started = true;
	err = -pthread_create(&eb->house, NULL, housekeeper, eb);
	if (err) {
		snprintf(msg, msg_len, "ebee: cannot start the housekeeping thread: %s",
			 strerror(-err));
		return err;
	}
	eb->house_started = true;
	return 0;
}
