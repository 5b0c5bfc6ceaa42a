// SPDX-License-Identifier: MIT
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "source.h"

int src_read(struct src *s, uint64_t now_ms, struct src_sample *out)
{
	int err;

	out->state = POL_LAT_STALE;
	out->p99_ns = NAN;
	out->rps = NAN;
	out->p99_service_ns = out->p99_sojourn_ns = NAN;
	out->why[0] = '\0';
	err = s->ops->read(s, now_ms, out);
	if (err && !out->why[0])
		snprintf(out->why, sizeof(out->why), "%s: read failed (%d)", s->ops->name, err);
	if (err)
		out->state = POL_LAT_STALE;
	return err;
}

void src_close(struct src *s)
{
	if (s)
		s->ops->close(s);
}

void src_by_kind(const struct src *src, const struct src_sample *s, const struct src *aux,
		 const struct src_sample *a, const struct src_sample **ebee,
		 const struct src_sample **client)
{
	const struct src *k[2] = { src, aux };
	const struct src_sample *v[2] = { s, a };

	*ebee = *client = NULL;
	for (int i = 0; i < 2; i++) {
		if (k[i] && k[i]->ops->kind == SRC_EBEE)
			*ebee = v[i];
		else if (k[i] && k[i]->ops->kind == SRC_CLIENT)
			*client = v[i];
	}
}

int src_open_lib(const struct cfg *c, struct src_ebee **eb, char *msg, size_t msg_len)
{
	bool need_ebee = c->ebee == CFG_ON;
	unsigned int win =
	    c->ebee_window_ms; /* resolved by the config (two intervals unless set) */

	for (int i = 0; i < c->nwl; i++)
		if (c->wl[i].source == CFG_SRC_EBEE)
			need_ebee = true;
	*eb = NULL;
	if (!need_ebee)
		return 0;
	msg[0] = '\0';
	*eb = src_ebee_lib_open(win, msg, msg_len);
	if (!*eb) {
		int e = errno ? errno : EINVAL;

		if (!msg[0])
			snprintf(msg, msg_len, "%s", strerror(e));
		return -e;
	}
	return 0;
}

int src_open_workload(const struct cfg *c, int i, struct src_ebee *eb, pid_t pid, const char *cgdir,
		      struct src **src, struct src **aux, char *msg, size_t msg_len)
{
	const struct cfg_workload *w = &c->wl[i];
	unsigned int stale = c->stale_intervals * c->interval_ms;
	struct src *s;

	if (eb && pid > 0) {
		enum ebee_latency lat =
		    w->ebee_latency == CFG_LAT_SOJOURN ? EBEE_LAT_SOJOURN : EBEE_LAT_SERVICE;
		char why[512] = "";

		if (cgdir[0])
			s = src_ebee_open_cgroup(eb, cgdir, w->ebee_mode, lat,
						 w->line_of[CFG_WL_EBEE_LATENCY] > 0, why,
						 sizeof(why));
		else
			s = src_ebee_open(eb, pid, w->ebee_mode, lat,
					  w->line_of[CFG_WL_EBEE_LATENCY] > 0, why, sizeof(why));
		if (!s) {
			int e = errno ? errno : EINVAL;

			snprintf(msg, msg_len, "workload %s: %s", w->name, why);
			return -e;
		}
		src_ebee_trust_unframed(s, w->trust_unframed);
		if (w->source == CFG_SRC_EBEE)
			*src = s;
		else
			*aux = s;
	}
	if (w->feed[0]) {
		s = src_client_open(w->feed, stale < 300 ? 300 : stale);
		if (!s) {
			int e = errno;

			snprintf(msg, msg_len, "workload %s: feed %s: %s", w->name, w->feed,
				 strerror(e));
			return e ? -e : -EINVAL;
		}
		if (w->source == CFG_SRC_CLIENT)
			*src = s;
		else
			*aux = s;
	}
	return 0;
}
