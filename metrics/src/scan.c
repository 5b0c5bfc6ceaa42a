// SPDX-License-Identifier: MIT
/*
 * The gRPC and UDP scanners of the housekeeping round: whether a workload
 * maps a usable gRPC C-core (then its streams are watched), and what the
 * datagram pattern saw of it (with the warning when that cannot be counted).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core.h"
#include "warn.h"

/* gRPC: does the workload (now) map a usable gRPC C-core (grpc_elf.c)? At the start
 * and then every GRPC_SCAN_NS, so a descendant that starts a gRPC server
 * later is covered. In grpc mode, a process without one is an error. With
 * ctl held and lock not held: the scan walks /proc and reads ELF files. */
int ebee_scan_grpc(struct ebee *eb, struct wl *w, bool starting)
{
	struct ebee_window *win[NLAT] = {};
	bool found = false;
	char msg[600];
	int err;

	if (w->req_mode != EBEE_MODE_AUTO && w->req_mode != EBEE_MODE_GRPC)
		return 0;
	if (!eb->grpc) {
		if (w->req_mode != EBEE_MODE_GRPC)
			return 0;
		ebee_logf(eb, EBEE_LOG_WARN, "ebee: pid %d: mode grpc is unavailable: %s", w->pid,
			  eb->grpc_err);
		return -EOPNOTSUPP;
	}
	msg[0] = 0;
	err = ebee_grpc_scan(eb->grpc, w->pid, !w->no_children, &found, msg, sizeof(msg));
	if (starting && w->req_mode == EBEE_MODE_GRPC && !found) {
		if (err)
			ebee_logf(eb, EBEE_LOG_WARN, "%s", msg);
		else
			ebee_logf(eb, EBEE_LOG_WARN,
				  "ebee: pid %d%s maps no libgrpc (nor any file with gRPC C-core's "
				  "chttp2 symbols: not a gRPC C-core process): mode grpc needs one",
				  w->pid, w->no_children ? "" : " (or a descendant)");
		return -EOPNOTSUPP;
	}
	if (err)
		ebee_logf(eb, starting ? EBEE_LOG_WARN : EBEE_LOG_DEBUG, "%s", msg);
	if (!found || w->grpc)
		return 0;
	/* Windows are made outside the lock, published under it. */
	for (int l = 0; l < NLAT && !w->win[K_GRPC][0]; l++) {
		win[l] = ebee_window_new(eb->opts.window_len, eb->opts.window_age_ns);
		if (!win[l]) {
			for (int j = 0; j < l; j++)
				ebee_window_free(win[j]);
			return -ENOMEM;
		}
	}
	pthread_mutex_lock(&eb->lock);
	for (int l = 0; l < NLAT; l++)
		if (win[l])
			w->win[K_GRPC][l] = win[l];
	w->grpc = true;
	pthread_mutex_unlock(&eb->lock);
	ebee_logf(eb, EBEE_LOG_INFO, "ebee: pid %d maps gRPC C-core: watching its streams", w->pid);
	return 0;
}

/* dgram: what the UDP pattern saw of the workload, and the warning when
 * what it saw cannot be counted: datagrams received on server sockets, and
 * none answered to its peer (one-way traffic, or replies from a socket or
 * port other than the request's), while nothing else was found either.
 * With ctl held and lock not held. */
void ebee_scan_dgram(struct ebee *eb, struct wl *w)
{
	struct ebee_dgram_counts c;
	struct ebee_warns ws = {};
	bool warn;
	bool candidate = w->req_mode == EBEE_MODE_DGRAM ||
			 (w->req_mode == EBEE_MODE_AUTO &&
			  (w->mode == EBEE_MODE_AUTO || w->mode == EBEE_MODE_DGRAM));

	if (ebee_dgram_counts(eb->dgram, w->pid, &c))
		return;
	ebee_logf(eb, EBEE_LOG_DEBUG,
		  "ebee: pid %d: dgram: %llu sockets (%llu client), %llu received, %llu answered, "
		  "%llu expired, %llu pending, %llu unsolicited, %llu of unknown peer, %llu not "
		  "tracked (table full)",
		  w->pid, (unsigned long long)c.socks, (unsigned long long)c.client_socks,
		  (unsigned long long)c.rx, (unsigned long long)c.matched,
		  (unsigned long long)c.expired, (unsigned long long)c.pending,
		  (unsigned long long)c.unsolicited, (unsigned long long)c.nopeer,
		  (unsigned long long)c.full);
	warn = candidate && c.rx >= eb->mp.min_requests && !c.matched;
	if (warn)
		ebee_warns_udp(&ws, c.rx, c.expired);
	pthread_mutex_lock(&eb->lock);
	w->dg = c;
	if (warn && !w->dg_unanswered) /* once, as it appears */
		ebee_logf(eb, EBEE_LOG_WARN, "ebee: pid %d: %s", w->pid,
			  ebee_warns_text(&ws, EBEE_WARN_UDP_UNANSWERED));
	w->dg_unanswered = warn;
	pthread_mutex_unlock(&eb->lock);
	ebee_warns_free(&ws);
}
