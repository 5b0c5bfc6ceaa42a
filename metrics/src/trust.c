// SPDX-License-Identifier: MIT
/*
 * The trust verdict: ebee_get_stats() and what it says about whether a
 * workload's figures can be taken as exact (untrusted, and the warning that
 * says why): the framing counters (docs/design.md 4.9), clients that do not
 * wait for their responses, UDP traffic no pattern matches. The same verdict
 * goes with a figure (ebee_trust_judge(), for query.c's _trust forms).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core.h"
#include "frame/frame_ops.h"
#include "frame/http2.h"

/* One more reason the figures cannot be taken as exact: untrusted, and the
 * reason after those before it ("; " between), cut to the field's size. */
__attribute__((format(printf, 2, 3))) static void warn_add(struct ebee_stats *s, const char *fmt,
							   ...)
{
	size_t off = strlen(s->warning);
	va_list ap;

	s->untrusted = true;
	if (off && off + 2 < sizeof(s->warning))
		off += snprintf(s->warning + off, sizeof(s->warning) - off, "; ");
	if (off + 1 >= sizeof(s->warning))
		return;
	va_start(ap, fmt);
	vsnprintf(s->warning + off, sizeof(s->warning) - off, fmt, ap);
	va_end(ap);
}

/* Connections counted by length whose client sent while a response was being
 * written (bpf/ebee.bpf.c, sock_overlap): with or without framing on. */
static void stats_overlap(struct ebee_stats *s, const struct ebee_fstat *f)
{
	s->overlap = f->overlap;
	if (f->overlap)
		warn_add(s,
			 "%llu connection(s) counted by length had a client that sent more "
			 "while a response was being written (pipelining, streaming): "
			 "requests read together count as one",
			 (unsigned long long)f->overlap);
}

/* What the framing counters say cannot be counted exactly, each reason
 * added to the warning. */
static void framing_warnings(struct ebee_stats *s, const struct ebee_fstat *f)
{
	for (int i = EBEE_FRAME_LENGTH; i < EBEE_FRAME_MAX; i++) {
		const char *why = ebee_frame_warning(i);
		char more[sizeof(s->warning)];

		if (f->conns[i] && !why && ebee_frame_check(i, f, more, sizeof(more)) > 0)
			why = more;
		if (f->conns[i] && why)
			warn_add(s, "%s on %llu connection(s): %s", ebee_frame_name(i),
				 (unsigned long long)f->conns[i], why);
	}
	if (f->unseen)
		warn_add(s,
			 "%llu connection(s) began with bytes ebee did not see (they came "
			 "with the handshake and were lost, or did not parse): counted by length",
			 (unsigned long long)f->unseen);
	if (f->desync_conns)
		warn_add(s,
			 "%llu framed connection(s) lost sync (%llu time(s): %llu at a sequence "
			 "gap, %llu at bytes that did not parse, %llu at a walk cut short): "
			 "requests in the gap are not counted",
			 (unsigned long long)f->desync_conns, (unsigned long long)f->desync,
			 (unsigned long long)f->desync_gap,
			 (unsigned long long)(f->desync - f->desync_gap - f->desync_cut),
			 (unsigned long long)f->desync_cut);
	if (f->late)
		warn_add(s,
			 "%llu connection(s) counted by length once their requests came one "
			 "at a time later sent several together: the bursts read before a "
			 "sample (one in %d segments arriving between requests) saw it may "
			 "count as one request each",
			 (unsigned long long)f->late, EBEE_FV_SAMPLE);
	stats_overlap(s, f);
	if (f->untimed)
		warn_add(s,
			 "%llu HTTP/2 stream(s) beyond %d in flight on a connection were "
			 "not counted",
			 (unsigned long long)f->untimed, EBEE_H2_SLOTS);
	if (f->unmatched)
		warn_add(s, "%llu response(s) had no request to pair with",
			 (unsigned long long)f->unmatched);
}

/* framing, untrusted and warning of ebee_get_stats(): the framer most of
 * the workload's connections use, and what the framing counters say cannot
 * be counted exactly (docs/design.md 4.9). */
static void stats_framing(struct ebee *eb, pid_t pid, struct ebee_stats *s)
{
	struct ebee_fstat f = {};
	int best = EBEE_FRAME_NONE;

	if (s->warning[0]) /* the dgram pattern's */
		s->untrusted = true;
	if (s->mode == EBEE_MODE_DGRAM) {
		snprintf(s->framing, sizeof(s->framing), "dgram");
		return;
	}
	if (s->mode == EBEE_MODE_GRPC) {
		snprintf(s->framing, sizeof(s->framing), "grpc");
		return;
	}
	if (eb->path != EBEE_PATH_SOCKET || !(eb->probes_now & EBEE_PROBE_SOCK_FRAME) ||
	    ebee_loader_fstat(eb->loader, pid, &f)) {
		/* No bytes seen (syscall path, framing off) or no connection yet. */
		snprintf(s->framing, sizeof(s->framing), "%s",
			 eb->path == EBEE_PATH_SOCKET && !eb->opts.no_framing ? "" : "length");
		/* Framing off, the socket path still sees clients that do not wait. */
		if (eb->path == EBEE_PATH_SOCKET && !ebee_loader_fstat(eb->loader, pid, &f))
			stats_overlap(s, &f);
		return;
	}
	for (int i = EBEE_FRAME_LENGTH; i < EBEE_FRAME_MAX; i++)
		if (f.conns[i] > (best ? f.conns[best] : 0))
			best = i;
	snprintf(s->framing, sizeof(s->framing), "%s", ebee_frame_name(best));
	s->desync_conns = f.desync_conns;
	s->aborted = f.aborted;
	s->untimed = f.untimed;
	s->unanswered = f.unanswered;
	s->verified = f.verified;
	s->late = f.late;
	s->handshake_data = f.hsdata;
	s->unseen = f.unseen;
	s->reordered = f.reordered;
	framing_warnings(s, &f);
}

void ebee_trust_snap(struct ebee *eb, struct wl *w, struct ebee_trust_snap *t)
{
	t->pid = w->pid;
	t->mode = w->mode;
	memcpy(t->warning, w->warning, sizeof(t->warning));
	if (ebee_wl_share(eb, w, &t->share))
		ebee_kc_between(&w->kc, -1, 0, 0, &t->share); /* no window: all covered */
}

/* The share of the window's requests whose records arrived (the rest were
 * lost to a full ring: the kernel counted them, the percentiles cannot),
 * untrusted above EBEE_KC_LOST_MAX lost (kcount.h says why). */
static void stats_lost(struct ebee_stats *s, const struct ebee_kc_span *sp)
{
	s->covered = sp->covered;
	s->window_requests = (uint64_t)(sp->requests + 0.5);
	s->window_lost = (uint64_t)(sp->lost + 0.5);
	if (ebee_kc_lossy(sp->requests, sp->lost))
		warn_add(s,
			 "%.1f%% of the window's requests (%llu of %llu) lost their records "
			 "(the ring buffer was full: give it more room, ebee_opts.ringbuf_size): "
			 "requests and rps are exact, the latencies are over the rest",
			 100 * (1 - sp->covered), (unsigned long long)s->window_lost,
			 (unsigned long long)s->window_requests);
}

/* Each workload judged as ebee_get_stats() judges it (its stats_framing()
 * from the same mode and warning); the first untrusted one, as listed, says
 * why. */
void ebee_trust_judge(struct ebee *eb, const struct ebee_trust_snap *snaps, size_t n,
		      struct ebee_trust *out)
{
	struct ebee_trust t = {};
	size_t sz = out->sz < sizeof(t) ? out->sz : sizeof(t);

	t.sz = sz;
	for (size_t i = 0; i < n; i++) {
		struct ebee_stats s = { .mode = snaps[i].mode };

		snprintf(s.warning, sizeof(s.warning), "%s", snaps[i].warning);
		stats_lost(&s, &snaps[i].share);
		stats_framing(eb, snaps[i].pid, &s);
		if (!s.untrusted || t.nuntrusted++)
			continue;
		t.untrusted = true;
		t.pid = snaps[i].pid;
		memcpy(t.warning, s.warning, sizeof(t.warning));
	}
	memcpy(out, &t, sz);
}

int ebee_get_stats(struct ebee *eb, pid_t pid, struct ebee_stats *st)
{
	struct ebee_stats s = {};
	struct ebee_window *win;
	struct ebee_kc_span share;
	struct ebee_kc_read kr;
	struct wl *w;
	size_t sz;

	if (!eb || !st || st->sz < sizeof(size_t))
		return -EINVAL;
	sz = st->sz < sizeof(s) ? st->sz : sizeof(s);
	ebee_wl_kc_read(eb, pid, &kr); /* requests as of now, read outside the lock */
	pthread_mutex_lock(&eb->lock);
	w = ebee_wl_find(eb, pid);
	if (!w) {
		pthread_mutex_unlock(&eb->lock);
		return -ENOENT;
	}
	ebee_wl_kc_apply(w, &kr);
	if (ebee_wl_share(eb, w, &share))
		ebee_kc_between(&w->kc, -1, 0, 0, &share);
	s.sz = sz;
	s.requests = ebee_wl_requests(w);
	s.mode = w->mode;
	s.req_mode = w->req_mode;
	s.mode_switches = w->switches;
	s.exited = w->exited;
	if (w->exited) {
		s.dropped = w->dropped_final;
		s.probes = 0;
	} else {
		s.probes = ebee_ksync_probes(eb, w->kflags) &
			   (eb->probes_now | (eb->grpc_probes_now ? EBEE_PROBE_GRPC : 0) |
			    (eb->dgram_probes_now ? EBEE_PROBE_DGRAM : 0));
	}
	s.expired = w->dg.expired;
	snprintf(s.warning, sizeof(s.warning), "%s", w->warning);
	win = w->win[ebee_wl_kind(w)][EBEE_LAT_SERVICE];
	if (win) {
		if (eb->opts.window_age_ns)
			ebee_window_expire(win, ebee_now_ns());
		s.window_count = ebee_window_count(win);
		s.window_span_ns = ebee_window_span(win);
	}
	pthread_mutex_unlock(&eb->lock);
	/* Map reads and walks outside the lock: queries never wait on them. */
	if (!s.exited) {
		ebee_loader_workload_dropped(eb->loader, pid, &s.dropped);
		s.nprocs = ebee_loader_proc_count(eb->loader, pid);
	}
	stats_lost(&s, &share);
	stats_framing(eb, pid, &s);
	memcpy(st, &s, sz);
	return 0;
}
