// SPDX-License-Identifier: MIT
/*
 * The trust verdict: ebee_get_stats() and what it says about whether a
 * workload's figures can be taken as exact (untrusted, and the warning that
 * says why): the framing counters (docs/design.md 4.9), clients that do not
 * wait for their responses, UDP traffic no pattern matches. The same verdict
 * goes with a figure (ebee_trust_judge(), for query.c's _trust forms). The
 * reasons themselves, each with its count and text, are warn.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core.h"
#include "frame/frame_ops.h"
#include "warn.h"

/* framing, untrusted and warning of ebee_get_stats(): the framer most of
 * the workload's connections use, and what the framing counters say cannot
 * be counted exactly (docs/design.md 4.9). */
static void stats_framing(struct ebee *eb, pid_t pid, struct ebee_stats *s, struct ebee_warns *ws,
			  struct ebee_fstat *fo, struct ebee_silent *z)
{
	struct ebee_fstat f = {};
	int best = EBEE_FRAME_NONE;

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
		/* Framing on, no connection noted: no first bytes seen. */
		if (!s->framing[0] && (eb->probes_now & EBEE_PROBE_SOCK_FRAME)) {
			memset(fo, 0, sizeof(*fo));
			z->framing = true;
			z->f = fo;
		}
		/* Framing off, the socket path still sees clients that do not wait. */
		if (eb->path == EBEE_PATH_SOCKET && !ebee_loader_fstat(eb->loader, pid, &f)) {
			s->overlap = f.overlap;
			ebee_warns_overlap(ws, &f);
		}
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
	s->midstream = f.midstream;
	s->resync = f.resync;
	s->desync = f.desync;
	s->gap_lost = f.gap_lost;
	s->regained = f.regained;
	s->regaining = f.lapses > f.regained ? f.lapses - f.regained : 0;
	s->overlap = f.overlap;
	ebee_warns_framing(ws, &f);
	*fo = f;
	z->framing = true;
	z->f = fo;
}

/* The share of the window's requests whose records arrived (the rest were
 * lost to a full ring: the kernel counted them, the percentiles cannot),
 * untrusted above EBEE_KC_LOST_MAX lost (kcount.h says why). */
static void stats_lost(struct ebee_stats *s, const struct ebee_kc_span *sp, struct ebee_warns *ws)
{
	s->covered = sp->covered;
	s->window_requests = (uint64_t)(sp->requests + 0.5);
	s->window_lost = (uint64_t)(sp->lost + 0.5);
	if (ebee_kc_lossy(sp->requests, sp->lost))
		ebee_warns_lost(ws, s->window_requests, s->window_lost);
}

/* The verdict: untrusted, warn_kinds and warning (whole reasons) of s from
 * ws, the dgram pattern's reason first. */
static void stats_verdict(struct ebee *eb, pid_t pid, struct ebee_stats *s, bool dg_unanswered,
			  const struct ebee_dgram_counts *dg, const struct ebee_kc_span *share,
			  const struct ebee_silent *silent, struct ebee_warns *ws)
{
	struct ebee_silent z = *silent;
	struct ebee_fstat f;

	if (dg_unanswered)
		ebee_warns_udp(ws, dg->rx, dg->expired);
	stats_lost(s, share, ws);
	stats_framing(eb, pid, s, ws, &f, &z);
	/* I/O and no request: why, from what stats_framing() read. */
	ebee_warns_silent(ws, &z);
	s->untrusted = ws->on != 0;
	s->warn_kinds = ws->on;
	ebee_warns_join(ws, s->warning, sizeof(s->warning));
}

void ebee_trust_snap(struct ebee *eb, struct wl *w, struct ebee_trust_snap *t)
{
	t->pid = w->pid;
	t->mode = w->mode;
	t->dg_unanswered = w->dg_unanswered;
	t->dg = w->dg;
	ebee_wl_silent(eb, w, &t->silent);
	if (ebee_wl_share(eb, w, &t->share))
		ebee_kc_between(&w->kc, -1, 0, 0, &t->share); /* no window: all covered */
}

/* Each workload judged as ebee_get_stats() judges it (its stats_verdict()
 * from the same mode and dgram state); the first untrusted one, as listed,
 * says why. */
void ebee_trust_judge(struct ebee *eb, const struct ebee_trust_snap *snaps, size_t n,
		      struct ebee_trust *out)
{
	struct ebee_trust t = {};
	size_t sz = out->sz < sizeof(t) ? out->sz : sizeof(t);

	t.sz = sz;
	for (size_t i = 0; i < n; i++) {
		struct ebee_stats s = { .mode = snaps[i].mode };
		struct ebee_warns ws = {};

		stats_verdict(eb, snaps[i].pid, &s, snaps[i].dg_unanswered, &snaps[i].dg,
			      &snaps[i].share, &snaps[i].silent, &ws);
		ebee_warns_free(&ws);
		if (!s.untrusted || t.nuntrusted++)
			continue;
		t.untrusted = true;
		t.pid = snaps[i].pid;
		memcpy(t.warning, s.warning, sizeof(t.warning));
		t.warn_kinds = s.warn_kinds;
	}
	memcpy(out, &t, sz);
}

int ebee_get_warnings(struct ebee *eb, pid_t pid, struct ebee_stats *st, ebee_warning_fn fn,
		      void *ctx)
{
	struct ebee_stats s = {};
	struct ebee_window *win;
	struct ebee_dgram_counts dg;
	struct ebee_warns ws = {};
	bool dg_unanswered;
	struct ebee_kc_span share;
	struct ebee_silent silent;
	struct ebee_kc_read kr;
	struct wl *w;
	size_t sz = 0;
	int err;

	if (!eb || (st && st->sz < sizeof(size_t)))
		return -EINVAL;
	if (st)
		sz = st->sz < sizeof(s) ? st->sz : sizeof(s);
	ebee_wl_kc_read(eb, pid, &kr); /* requests as of now, read outside the lock */
	pthread_mutex_lock(&eb->lock);
	w = ebee_wl_find(eb, pid);
	if (!w) {
		pthread_mutex_unlock(&eb->lock);
		return -ENOENT;
	}
	ebee_wl_kc_apply(w, &kr);
	ebee_wl_silent(eb, w, &silent);
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
	dg = w->dg;
	dg_unanswered = w->dg_unanswered;
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
	stats_verdict(eb, pid, &s, dg_unanswered, &dg, &share, &silent, &ws);
	if (st)
		memcpy(st, &s, sz);
	err = ebee_warns_each(&ws, fn, ctx);
	ebee_warns_free(&ws);
	return err;
}

int ebee_get_stats(struct ebee *eb, pid_t pid, struct ebee_stats *st)
{
	if (!st)
		return -EINVAL;
	return ebee_get_warnings(eb, pid, st, NULL, NULL);
}
