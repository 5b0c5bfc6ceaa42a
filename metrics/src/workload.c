// SPDX-License-Identifier: MIT
/*
 * The workload table and the pattern state machine: finding a workload,
 * making and freeing one with the windows its mode may use, which pattern's
 * records its figures read, the kernel flags its state asks for, and the
 * automatic mode choice and its revisits (the rule itself is mode.c's).
 * Callers hold the locks core.h names for each call.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

int ebee_wl_kind(const struct wl *w)
{
	switch (w->mode) {
	case EBEE_MODE_CONN:
		return K_CONN;
	case EBEE_MODE_IO:
		return K_IO;
	case EBEE_MODE_GRPC:
		return K_GRPC;
	case EBEE_MODE_DGRAM:
		return K_DGRAM;
	default:
		/* gRPC streams decide at the next housekeeping. */
		if (w->win[K_GRPC][0] && w->total[K_GRPC])
			return K_GRPC;
		/* dgram: answered datagrams and nothing on TCP yet. */
		if (w->total[K_DGRAM] && !w->total[K_IO] && !w->total[K_CONN])
			return K_DGRAM;
		/* Undecided: whichever pattern has seen more. */
		if (!w->win[K_IO][0])
			return K_CONN;
		if (!w->win[K_CONN][0])
			return K_IO;
		return w->total[K_IO] >= w->total[K_CONN] ? K_IO : K_CONN;
	}
}

uint64_t ebee_wl_kreq(const struct wl *w, int k)
{
	return w->kc.last.c.req[k];
}

/* From the kernel's counter: exact when records are lost. */
uint64_t ebee_wl_requests(const struct wl *w)
{
	int k = ebee_wl_kind(w);
	uint64_t n = ebee_wl_kreq(w, k);

	if (w->mode == EBEE_MODE_AUTO)
		return n;
	return n >= w->kind_snap ? w->req_base + n - w->kind_snap : w->req_base;
}

int ebee_wl_share(struct ebee *eb, struct wl *w, struct ebee_kc_span *out)
{
	int k = ebee_wl_kind(w);
	struct ebee_window *win = w->win[k][EBEE_LAT_SERVICE];
	uint64_t lo, hi;

	if (!win)
		return -ENODATA;
	if (eb->opts.window_age_ns)
		ebee_window_expire(win, ebee_now_ns());
	if (ebee_window_count(win) < 2 || ebee_window_ends(win, &lo, &hi) || hi <= lo)
		/* Nothing to span (every record lost, say): all so far. */
		ebee_kc_between(&w->kc, k, w->kc.start.t_ns, w->kc.last.t_ns, out);
	else
		ebee_kc_window(&w->kc, k, lo, hi, ebee_window_count(win), out);
	return 0;
}

void ebee_wl_kc_read(struct ebee *eb, pid_t pid, struct ebee_kc_read *r)
{
	/* Stamped before the read: a workload added after the stamp (a pid
	 * stopped and traced again) cannot take a reading of the one before. */
	r->t_ns = ebee_now_ns();
	r->ok = !ebee_loader_kcount(eb->loader, pid, &r->c);
}

void ebee_wl_silent(struct ebee *eb, struct wl *w, struct ebee_silent *z)
{
	uint64_t age = eb->opts.window_age_ns, hi = w->kc.last.t_ns, lo;
	struct ebee_window *win;
	struct ebee_kc_io io;

	memset(z, 0, sizeof(*z));
	z->mode = w->mode;
	z->adopted = w->adopted;
	z->syscall = eb->path == EBEE_PATH_SYSCALL;
	z->requests = ebee_wl_requests(w);
	z->io_bytes = w->kc.last.c.io_bytes;
	z->io_calls = w->kc.last.c.io_calls;
	/* A run that counted requests can still show a zero over a window of
	 * age: the last age's I/O and the requests of every pattern in it. */
	if (!z->requests || !age || hi - w->kc.start.t_ns <= age)
		return;
	lo = hi - age;
	ebee_kc_io_between(&w->kc, lo, hi, &io);
	z->span_ns = age;
	z->requests = (uint64_t)(io.requests + 0.5);
	/* A request the window of age still holds is one, whatever the
	 * readings (every 100 ms) say. */
	win = w->win[ebee_wl_kind(w)][EBEE_LAT_SERVICE];
	if (win) {
		ebee_window_expire(win, ebee_now_ns());
		if (ebee_window_count(win) > z->requests)
			z->requests = ebee_window_count(win);
	}
	z->io_bytes = io.bytes;
	z->io_calls = io.calls;
}

void ebee_wl_kc_apply(struct wl *w, const struct ebee_kc_read *r)
{
	if (r->ok && !w->exited)
		ebee_kc_update(&w->kc, r->t_ns, &r->c);
}

/* Kernel flags for the workload's current state. */
uint32_t ebee_wl_flags(const struct wl *w, uint64_t now)
{
	uint32_t f = w->no_children ? EBEE_F_NOCHILD : 0;
	uint32_t g = w->grpc ? EBEE_F_GRPC : 0; /* gRPC: watch streams */

	switch (w->req_mode) {
	case EBEE_MODE_CONN:
		return f | EBEE_F_CONN;
	case EBEE_MODE_IO:
		return f | EBEE_F_IO;
	case EBEE_MODE_GRPC:
		return f | EBEE_F_GRPC;
	case EBEE_MODE_DGRAM:
		return f | EBEE_F_DGRAM;
	default:
		break;
	}
	if (w->mode == EBEE_MODE_GRPC)
		return f | EBEE_F_GRPC; /* the socket or syscall probes are pruned */
	if (w->mode == EBEE_MODE_DGRAM)
		return f | EBEE_F_DGRAM; /* the TCP probes are pruned */
	if (w->mode == EBEE_MODE_AUTO)
		f |= EBEE_F_DGRAM; /* undecided: UDP is a candidate too */
	if (w->mode == EBEE_MODE_CONN && now >= w->recheck_until_ns)
		return f | EBEE_F_CONN | g;
	/* Undecided, io (closes feed the revisit), or a conn-mode recheck. */
	return f | EBEE_F_CONN | EBEE_F_IO | g;
}

static void set_mode(struct ebee *eb, struct wl *w, enum ebee_mode m, const char *why)
{
	int k = m == EBEE_MODE_IO      ? K_IO
		: m == EBEE_MODE_GRPC  ? K_GRPC
		: m == EBEE_MODE_DGRAM ? K_DGRAM
				       : K_CONN;

	if (w->mode == EBEE_MODE_AUTO) {
		/* First choice: everything of that kind since the start counts. */
		w->req_base = 0;
		w->kind_snap = 0;
	} else if (m == EBEE_MODE_GRPC) {
		/* gRPC: streams were watched from the start, and what
		 * io or conn counted on a gRPC server's connections was wrong. */
		w->req_base = 0;
		w->kind_snap = 0;
		w->switches++;
	} else {
		w->req_base = ebee_wl_requests(w);
		w->kind_snap = ebee_wl_kreq(w, k);
		w->switches++;
	}
	ebee_logf(eb, EBEE_LOG_INFO, "ebee: pid %d: mode %s -> %s (%s)", w->pid,
		  ebee_mode_str(w->mode), ebee_mode_str(m), why);
	w->mode = m;
	/* A window of the other kind must not mix into this one later. */
	if (m == EBEE_MODE_CONN)
		for (int l = 0; l < NLAT; l++)
			if (w->win[K_IO][l])
				ebee_window_reset(w->win[K_IO][l]);
	/* A switch starts the new pattern's window afresh: what it collected
	 * under the old pattern (keep-alive connection lifetimes while in io)
	 * and requests that began before the switch are not its requests. gRPC
	 * streams are exact from the start, whatever the mode was. */
	if (w->switches && m != EBEE_MODE_GRPC) {
		for (int l = 0; l < NLAT; l++)
			if (w->win[k][l])
				ebee_window_reset(w->win[k][l]);
		w->since_ns[k] = ebee_now_ns();
	}
}

static void describe(const struct ebee_evidence *ev, char *buf, size_t len)
{
	snprintf(buf, len,
		 "%llu closed connections, %llu with several requests, %llu io requests, "
		 "%llu grpc streams, %llu answered datagrams",
		 (unsigned long long)ev->conns_closed, (unsigned long long)ev->conns_multi,
		 (unsigned long long)ev->io_reqs, (unsigned long long)ev->grpc_reqs,
		 (unsigned long long)ev->dgram_reqs);
}

/* Auto in conn mode, which runs without the io probes: bring them back now
 * and then for a short look, then judge what that look saw. */
static void auto_conn(struct ebee *eb, struct wl *w, enum ebee_mode d, const char *why,
		      uint64_t now, uint64_t epoch_len)
{
	if (w->recheck_until_ns == 0 && now >= w->next_recheck_ns) {
		memset(&w->ev, 0, sizeof(w->ev));
		w->epoch_ns = now;
		w->recheck_until_ns = now + (uint64_t)eb->opts.auto_recheck_len_ms * 1000000ull;
	} else if (w->recheck_until_ns && now >= w->recheck_until_ns) {
		if (d == EBEE_MODE_IO)
			set_mode(eb, w, d, why);
		memset(&w->ev, 0, sizeof(w->ev));
		w->epoch_ns = now;
		w->recheck_until_ns = 0;
		w->next_recheck_ns = now + epoch_len;
	}
}

void ebee_wl_auto(struct ebee *eb, struct wl *w, uint64_t now)
{
	uint64_t epoch_len = (uint64_t)eb->opts.auto_recheck_ms * 1000000ull;
	enum ebee_mode d;
	char why[200];

	if (w->req_mode != EBEE_MODE_AUTO)
		return;
	d = ebee_mode_decide(&w->ev, &eb->mp);
	describe(&w->ev, why, sizeof(why));
	/* gRPC: server streams decide at once, and for good; so does dgram
	 * (a UDP server does not turn into a TCP one). */
	if (w->mode == EBEE_MODE_GRPC || w->mode == EBEE_MODE_DGRAM)
		return;
	if (d == EBEE_MODE_GRPC) {
		set_mode(eb, w, d, why);
		memset(&w->ev, 0, sizeof(w->ev));
		return;
	}
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
		auto_conn(eb, w, d, why, now, epoch_len);
		break;
	default:
		break;
	}
}

/* The windows of the patterns a mode may use. Auto's grpc window comes with a
 * libgrpc (ebee_scan_grpc()): most processes never need one. */
static bool wants_window(enum ebee_mode mode, int k)
{
	switch (mode) {
	case EBEE_MODE_AUTO:
		return k != K_GRPC; /* K_DGRAM included: UDP is a candidate */
	case EBEE_MODE_CONN:
		return k == K_CONN;
	case EBEE_MODE_IO:
		return k == K_IO;
	case EBEE_MODE_DGRAM:
		return k == K_DGRAM;
	default:
		return k == K_GRPC;
	}
}

/* A new workload with the windows its mode may use. */
int ebee_wl_new(struct ebee *eb, pid_t pid, enum ebee_mode mode, bool no_children, struct wl **out)
{
	struct wl *w;

	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->pid = pid;
	w->req_mode = mode;
	w->mode = mode;
	w->no_children = no_children;
	w->epoch_ns = ebee_now_ns();
	ebee_kc_init(&w->kc, w->epoch_ns);
	for (int k = 0; k < K_NKINDS; k++) {
		if (!wants_window(mode, k))
			continue;
		for (int l = 0; l < NLAT; l++) {
			w->win[k][l] = ebee_window_new(eb->opts.window_len, eb->opts.window_age_ns);
			if (!w->win[k][l]) {
				ebee_wl_free(w);
				return -ENOMEM;
			}
		}
	}
	*out = w;
	return 0;
}

void ebee_wl_free(struct wl *w)
{
	if (!w)
		return;
	for (int k = 0; k < K_NKINDS; k++)
		for (int l = 0; l < NLAT; l++)
			ebee_window_free(w->win[k][l]);
	free(w);
}

void ebee_wl_unlink(struct ebee *eb, struct wl *w)
{
	for (struct wl **pp = &eb->wls; *pp; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			eb->nwls--;
			return;
		}
	}
}
