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

#include "cgroupfs.h"
#include "log.h"
#include "source.h"

struct src_ebee {
	struct ebee *eb;
	unsigned int window_ms;
};

#define EBEE_SRC_MAX_PIDS 64

struct ebee_src {
	struct src s;
	struct src_ebee *lib;
	pid_t pid;
	enum ebee_latency lat;
	/* a cgroup's directory (src_ebee_open_cgroup()): dir[0] == '\0' otherwise */
	char dir[512];
	struct ebee_trace_opts topts;
	pid_t pids[EBEE_SRC_MAX_PIDS]; /* traced by this source */
	int npids;
	pid_t skip[256]; /* listed but not ours to trace (followed already, or refused) */
	int nskip;
	bool trust_unframed; /* act on untrusted figures (trust_unframed = yes) */
	bool told_untrusted; /* the refusal was logged */
	bool told_covered;   /* records lost: logged, until none is again */
};

/* Processes of the cgroup read per scan: beyond what one source traces and skips. */
#define EBEE_SRC_SCAN_MAX 1024

/* Trace the processes of the cgroup (and of its descendants: cgfs_procs(), as
 * `ebee trace --cgroup` does) not traced yet. */
static void cgroup_scan(struct ebee_src *e)
{
	pid_t found[EBEE_SRC_SCAN_MAX];
	int n = cgfs_procs(e->dir, found, EBEE_SRC_SCAN_MAX);

	for (int k = 0; k < n && k < EBEE_SRC_SCAN_MAX; k++) {
		pid_t pid = found[k];
		bool known = false;

		for (int i = 0; i < e->npids && !known; i++)
			known = e->pids[i] == pid;
		for (int i = 0; i < e->nskip && !known; i++)
			known = e->skip[i] == pid;
		if (known)
			continue;
		if (e->npids < EBEE_SRC_MAX_PIDS && !ebee_start_tracing(e->lib->eb, pid, &e->topts))
			e->pids[e->npids++] = pid;
		else if (e->nskip < (int)(sizeof(e->skip) / sizeof(e->skip[0])))
			e->skip[e->nskip++] = pid;
	}
}

/* The p99 of the other latency too, for the decision log and the policy's
 * observation (NAN where it cannot be had: sojourn on the syscall path). */
static void other_p99(struct ebee_src *e, const pid_t *pids, int n, double p99,
		      struct src_sample *out)
{
	enum ebee_latency other = e->lat == EBEE_LAT_SERVICE ? EBEE_LAT_SOJOURN : EBEE_LAT_SERVICE;
	double v;

	if (ebee_get_latency_percentile_joint(e->lib->eb, pids, n, other, 99.0, &v))
		v = NAN;
	out->p99_service_ns = e->lat == EBEE_LAT_SERVICE ? p99 : v;
	out->p99_sojourn_ns = e->lat == EBEE_LAT_SOJOURN ? p99 : v;
}

/* The reasons joined whole ("; " between), as the log says them. */
struct why_all {
	char *s;
	size_t len;
};

static int why_add(const struct ebee_warning *w, void *ctx)
{
	struct why_all *a = ctx;
	size_t n = strlen(w->text), sep = a->len ? 2 : 0;
	char *s = realloc(a->s, a->len + sep + n + 1);

	if (!s)
		return -ENOMEM;
	memcpy(s + a->len, "; ", sep);
	memcpy(s + a->len + sep, w->text, n + 1);
	a->s = s;
	a->len += sep + n;
	return 0;
}

/* The ids of the reasons in kinds (ebee_trust.warn_kinds), as many as fit
 * whole in why, the rest counted: the decision log's stale_why every
 * interval, where the texts are too long (the log has them, once). */
static void why_ids(uint64_t kinds, char *why, size_t len)
{
	const int head = snprintf(why, len, "ebee: untrusted:");
	int off = head, left = __builtin_popcountll(kinds);

	for (int k = 0; k < 64 && left; k++) {
		const char *id = ebee_warn_str(k);
		char more[24];
		int n;

		if (!(kinds & (1ull << k)))
			continue;
		snprintf(more, sizeof(more), " +%d more", left);
		n = id ? (int)strlen(id) + (off > head ? 2 : 1) : 0;
		/* room for this one, and for counting the rest after it */
		if (!id || off + n + (left > 1 ? (int)strlen(more) : 0) >= (int)len) {
			snprintf(why + off, len - off, "%s", more);
			return;
		}
		off += snprintf(why + off, len - off, "%s%s", off > head ? ", " : " ", id);
		left--;
	}
}

/* Figures ebee cannot vouch for (a multiplexed or encrypted protocol counted
 * by length, a stream that lost sync), as the p99's query returned their
 * trust, drive nothing unless the workload says trust_unframed = yes: the
 * interval is STALE, its why the reasons' ids (the decision log's stale_why
 * has them every interval), and the reasons are logged once per workload,
 * whole. */
static void untrusted(struct ebee_src *e, const struct ebee_trust *t, struct src_sample *out)
{
	struct why_all all = {};

	if (!t->untrusted || e->trust_unframed)
		return;
	out->state = POL_LAT_STALE;
	why_ids(t->warn_kinds, out->why, sizeof(out->why));
	if (e->told_untrusted)
		return;
	/* Each reason from the library (the trust's warning holds what fits). */
	if (ebee_get_warnings(e->lib->eb, t->pid, NULL, why_add, &all) || !all.s) {
		free(all.s);
		all.s = NULL;
	}
	log_msg("ebee cannot count pid %d's requests exactly: %s; not acting on them "
		"(trust_unframed = yes would)",
		(int)t->pid, all.s ? all.s : t->warning);
	free(all.s);
	e->told_untrusted = true;
}

/* Records lost to a full ring: rps is still exact (the kernel counts the
 * requests), the p99 is over the share of the window's requests whose records
 * arrived. Logged when the share first falls below 1, and again once it is
 * back; above 1% lost the trust is untrusted (above) and says so. */
static void covered(struct ebee_src *e, const pid_t *pids, int n)
{
	double share = 1;
	uint64_t req = 0, lost = 0;

	for (int i = 0; i < n; i++) {
		struct ebee_stats st = { .sz = sizeof(st) };

		if (ebee_get_stats(e->lib->eb, pids[i], &st))
			continue;
		req += st.window_requests;
		lost += st.window_lost;
		if (st.covered < share)
			share = st.covered;
	}
	if (share < 1 && !e->told_covered)
		log_msg("ebee: records lost (ring buffer full): the p99 is over %.2f%% of the "
			"window's requests (%llu of %llu lost); rps counts them all",
			100 * share, (unsigned long long)lost, (unsigned long long)req);
	else if (share >= 1 && e->told_covered)
		log_msg("ebee: no record lost in the window any more: the p99 is over every "
			"request");
	e->told_covered = share < 1;
}

/* The p99 over all requests of the pid, or of the cgroup's processes taken
 * together (not a maximum of per-process p99s), and their summed rps. */
static int ebee_src_read(struct src *s, uint64_t now_ms, struct src_sample *out)
{
	struct ebee_src *e = s->priv;
	const pid_t *pids = e->dir[0] ? e->pids : &e->pid;
	int n = e->dir[0] ? e->npids : 1, err;
	struct ebee_trust trust = { .sz = sizeof(trust) };
	double p99, rps, rps_sum = NAN;

	if (e->dir[0])
		cgroup_scan(e);
	ebee_flush(e->lib->eb);
	err = n ? ebee_get_latency_percentile_joint_trust(e->lib->eb, pids, n, e->lat, 99.0, &p99,
							  &trust)
		: -ENODATA;
	if (err == -ENODATA) {
		out->state = POL_LAT_IDLE;
		out->rps = 0;
		if (e->dir[0])
			snprintf(out->why, sizeof(out->why),
				 "ebee: no request of its %d processes completed in the last %u ms",
				 n, e->lib->window_ms);
		else
			snprintf(out->why, sizeof(out->why),
				 "ebee: no request completed in the last %u ms", e->lib->window_ms);
		/* Bytes moved and no request counted: that zero is no
		 * measurement of an idle server (ebee's no_requests), so it
		 * is not idle but untrusted, said as the other reasons are. */
		if (trust.untrusted && (trust.warn_kinds & (1ull << EBEE_WARN_NO_REQUESTS)))
			untrusted(e, &trust, out);
		return 0;
	}
	if (err) {
		if (e->dir[0])
			snprintf(out->why, sizeof(out->why), "ebee: the cgroup's processes: %s",
				 strerror(-err));
		else
			snprintf(out->why, sizeof(out->why), "ebee: pid %d: %s", (int)e->pid,
				 strerror(-err));
		return err;
	}
	for (int i = 0; i < n; i++)
		if (!ebee_get_rps(e->lib->eb, pids[i], &rps))
			rps_sum = isnan(rps_sum) ? rps : rps_sum + rps;
	out->state = POL_LAT_FRESH;
	out->rps = rps_sum;
	out->p99_ns = p99; /* ebee's ns */
	other_p99(e, pids, n, p99, out);
	covered(e, pids, n);
	untrusted(e, &trust, out);
	return 0;
}

static void ebee_src_close(struct src *s)
{
	struct ebee_src *e = s->priv;

	if (e->dir[0])
		for (int i = 0; i < e->npids; i++)
			ebee_stop_tracing(e->lib->eb, e->pids[i]);
	else
		ebee_stop_tracing(e->lib->eb, e->pid);
	free(e);
}

static const struct src_ops ebee_ops = {
	.name = "ebee",
	.kind = SRC_EBEE,
	.read = ebee_src_read,
	.close = ebee_src_close,
};

void src_ebee_trust_unframed(struct src *s, bool trust)
{
	if (s && s->ops == &ebee_ops)
		((struct ebee_src *)s->priv)->trust_unframed = trust;
}

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

/*
 * Sojourn needs ebee's socket path: without it an explicit choice is an error
 * (-1, errno EOPNOTSUPP, msg), the default falls back to service with a warning.
 */
static int pick_latency(struct src_ebee *lib, enum ebee_latency *lat, bool lat_explicit, char *msg,
			size_t msg_len)
{
	struct ebee_global_stats g = { .sz = sizeof(g) };

	if (*lat != EBEE_LAT_SOJOURN || ebee_get_global_stats(lib->eb, &g) ||
	    g.path == EBEE_PATH_SOCKET)
		return 0;
	if (lat_explicit) {
		snprintf(msg, msg_len,
			 "ebee: ebee_latency = sojourn needs the socket tracepoints, which "
			 "this kernel lacks; use ebee_latency = service");
		errno = EOPNOTSUPP;
		return -1;
	}
	log_msg("no socket tracepoints in this kernel: ebee feeds the service latency, not the "
		"sojourn latency");
	*lat = EBEE_LAT_SERVICE;
	return 0;
}

struct src *src_ebee_open(struct src_ebee *lib, pid_t pid, enum ebee_mode mode,
			  enum ebee_latency lat, bool lat_explicit, char *msg, size_t msg_len)
{
	struct ebee_trace_opts opts = { .sz = sizeof(opts), .mode = mode };
	struct ebee_src *e;
	int err;

	if (pick_latency(lib, &lat, lat_explicit, msg, msg_len))
		return NULL;

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

struct src *src_ebee_open_cgroup(struct src_ebee *lib, const char *dir, enum ebee_mode mode,
				 enum ebee_latency lat, bool lat_explicit, char *msg,
				 size_t msg_len)
{
	struct ebee_src *e;

	if (pick_latency(lib, &lat, lat_explicit, msg, msg_len))
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e) {
		errno = ENOMEM;
		return NULL;
	}
	e->lib = lib;
	e->lat = lat;
	e->topts.sz = sizeof(e->topts);
	e->topts.mode = mode;
	snprintf(e->dir, sizeof(e->dir), "%s", dir);
	cgroup_scan(e);
	if (!e->npids) {
		snprintf(msg, msg_len, "ebee: cannot trace any process of %s", dir);
		free(e);
		errno = ESRCH;
		return NULL;
	}
	e->pid = e->pids[0];
	e->s.ops = &ebee_ops;
	e->s.priv = e;
	return &e->s;
}
