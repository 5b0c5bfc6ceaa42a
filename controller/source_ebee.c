// SPDX-License-Identifier: MIT
/*
 * The ebee metric source: server-side p99 from the in-process tracing
 * library. The window is bounded by age (ebee_window_ms, by default twice the
 * interval) so the percentile describes recent requests; an empty window is
 * IDLE, not a zero latency. Which latency is configurable: service latency
 * excludes the time a request waits before the server accepts or reads it,
 * so under overload it looks better than the clients do; sojourn latency
 * (ebee's socket path) starts when the request reached the server and sees
 * that queueing, which is why it is the default.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source.h"

struct src_ebee {
	struct ebee *eb;
	unsigned int window_ms;
};

struct ebee_src {
	struct src s;
	struct src_ebee *lib;
	pid_t pid;
	enum ebee_latency lat;
};

static int ebee_src_read(struct src *s, uint64_t now_ms, struct src_sample *out)
{
	struct ebee_src *e = s->priv;
	double p99, rps;
	int err;

	ebee_flush(e->lib->eb);
	err = ebee_get_latency_percentile_of(e->lib->eb, e->pid, e->lat, 99.0, &p99);
	if (err == -ENODATA) {
		out->state = POL_LAT_IDLE;
		out->rps = 0;
		snprintf(out->why, sizeof(out->why), "ebee: no request completed in the last %u ms",
			 e->lib->window_ms);
		return 0;
	}
	if (err) {
		snprintf(out->why, sizeof(out->why), "ebee: pid %d: %s", (int)e->pid,
			 strerror(-err));
		return err;
	}
	if (!ebee_get_rps(e->lib->eb, e->pid, &rps))
		out->rps = rps;
	out->state = POL_LAT_FRESH;
	out->p99_us = p99 / 1000.0;
	/* ebee times the request from its first read (or accept) to its
	 * response: the service time; it does not see the queue before that */
	out->p99_service_us = out->p99_us;
	return 0;
}

static void ebee_src_close(struct src *s)
{
	struct ebee_src *e = s->priv;

	ebee_stop_tracing(e->lib->eb, e->pid);
	free(e);
}

static const struct src_ops ebee_ops = {
	.name = "ebee",
	.kind = SRC_EBEE,
	.read = ebee_src_read,
	.close = ebee_src_close,
};

struct src_ebee *src_ebee_lib_open(unsigned int window_ms, char *msg, size_t msg_len)
{
	struct ebee_opts opts = {
		.sz = sizeof(opts),
		.window_age_ns = (uint64_t)window_ms * 1000000ull,
	};
	struct src_ebee *lib = calloc(1, sizeof(*lib));

	if (!lib)
		return NULL;
	lib->window_ms = window_ms;
	lib->eb = ebee_open(&opts, msg, msg_len);
	if (!lib->eb) {
		int err = errno;

		free(lib);
		errno = err;
		return NULL;
	}
	return lib;
}

void src_ebee_lib_close(struct src_ebee *lib)
{
	if (!lib)
		return;
	ebee_close(lib->eb);
	free(lib);
}

struct src *src_ebee_open(struct src_ebee *lib, pid_t pid, enum ebee_mode mode,
			  enum ebee_latency lat, bool lat_explicit, char *msg, size_t msg_len)
{
	struct ebee_trace_opts opts = { .sz = sizeof(opts), .mode = mode };
	struct ebee_global_stats g = { .sz = sizeof(g) };
	struct ebee_src *e;
	int err;

	if (lat == EBEE_LAT_SOJOURN && !ebee_get_global_stats(lib->eb, &g) &&
	    g.path != EBEE_PATH_SOCKET) {
		if (lat_explicit) {
			snprintf(msg, msg_len,
				 "ebee: ebee_latency = sojourn needs the socket tracepoints, which "
				 "this kernel lacks; use ebee_latency = service");
			errno = EOPNOTSUPP;
			return NULL;
		}
		fprintf(stderr,
			"parties: pid %d: no socket tracepoints in this kernel: ebee "
			"feeds the service latency, not the sojourn latency\n",
			(int)pid);
		lat = EBEE_LAT_SERVICE;
	}

	err = ebee_start_tracing(lib->eb, pid, &opts);
	if (err) {
		snprintf(msg, msg_len, "ebee: cannot trace pid %d: %s", (int)pid, strerror(-err));
		errno = -err;
		return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (!e) {
		ebee_stop_tracing(lib->eb, pid);
		errno = ENOMEM;
		return NULL;
	}
	e->lib = lib;
	e->pid = pid;
	e->lat = lat;
	e->s.ops = &ebee_ops;
	e->s.priv = e;
	return &e->s;
}
