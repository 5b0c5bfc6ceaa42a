// SPDX-License-Identifier: MIT
/*
 * The metrics `ebee trace --listen` serves. Names follow the Prometheus
 * conventions: seconds, _total on counters, one `workload` label (plus `pid`,
 * since a tracer is bound to processes).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ebee_prom.h"

int eprom_add(struct eprom *p, pid_t pid, const char *name)
{
	struct eprom_wl *w;

	if (p->nwl == EPROM_MAX_WL)
		return -ENOSPC;
	w = &p->wl[p->nwl];
	memset(w, 0, sizeof(*w));
	w->pid = pid;
	snprintf(w->name, sizeof(w->name), "%s", name);
	/* --cgroup adds workloads while the consumer and HTTP threads read the
	 * table: publish the entry before the count that makes it visible */
	__atomic_store_n(&p->nwl, p->nwl + 1, __ATOMIC_RELEASE);
	return 0;
}

void eprom_on_request(pid_t pid, uint64_t lat_ns, void *ctx)
{
	struct eprom *p = ctx;
	int n = __atomic_load_n(&p->nwl, __ATOMIC_ACQUIRE);

	for (int i = 0; i < n; i++) {
		struct eprom_wl *w = &p->wl[i];

		if (w->pid != pid)
			continue;
		__atomic_fetch_add(&w->counts[latb_index(lat_ns)], 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&w->sum_ns, lat_ns, __ATOMIC_RELAXED);
		__atomic_fetch_add(&w->log2_us[eprom_log2_slot(lat_ns)], 1, __ATOMIC_RELAXED);
		return;
	}
}

int eprom_log2_slot(uint64_t lat_ns)
{
	uint64_t us = lat_ns / 1000;
	int k = us ? 64 - __builtin_clzll(us) : 1;

	return k < EPROM_LOG2_SLOTS ? k : EPROM_LOG2_SLOTS - 1;
}

int eprom_print_log2(const struct eprom *p, pid_t pid, FILE *f)
{
	static const char stars[] = "****************************************";
	const struct eprom_wl *w = NULL;
	uint64_t v[EPROM_LOG2_SLOTS], max = 0;
	int n = __atomic_load_n(&p->nwl, __ATOMIC_ACQUIRE), last = 0;

	for (int i = 0; i < n && !w; i++)
		if (p->wl[i].pid == pid)
			w = &p->wl[i];
	if (!w)
		return 0;
	for (int k = 0; k < EPROM_LOG2_SLOTS; k++) {
		v[k] = __atomic_load_n(&w->log2_us[k], __ATOMIC_RELAXED);
		if (v[k]) {
			last = k;
			if (v[k] > max)
				max = v[k];
		}
	}
	fprintf(f, "%-24s : count     distribution\n", "     usecs");
	for (int k = 1; k <= last; k++) {
		unsigned long long lo = (1ull << k) >> 1, hi = (1ull << k) - 1;
		int bar = max ? (int)(v[k] * 40 / max) : 0;

		if (lo == hi)
			lo--;
		fprintf(f, "%10llu -> %-10llu : %-8llu |%-40.*s|\n", lo, hi,
			(unsigned long long)v[k], bar, stars);
	}
	return last;
}

static const double quantiles[] = { 0.5, 0.9, 0.99, 0.999 };
#define NQ (int)(sizeof(quantiles) / sizeof(quantiles[0]))

struct snap {
	int ok; /* the workload is traced */
	struct ebee_stats st;
	uint64_t counts[LATB_COUNT + 1];
	uint64_t count;
	double sum_s;
	double q[NQ]; /* seconds; NaN when the window is empty */
	double rps;
	uint64_t warn[EBEE_WARN_COUNT]; /* each reason's count; 0 where it does not apply */
};

static int warn_count(const struct ebee_warning *w, void *ctx)
{
	struct snap *s = ctx;

	if ((unsigned int)w->kind < EBEE_WARN_COUNT)
		s->warn[w->kind] = w->count;
	return 0;
}

static void take(struct eprom *p, int i, struct snap *s)
{
	struct eprom_wl *w = &p->wl[i];

	memset(s, 0, sizeof(*s));
	s->st.sz = sizeof(s->st);
	s->ok = p->eb && !ebee_get_warnings(p->eb, w->pid, &s->st, warn_count, s);
	if (!s->ok)
		return;
	for (int k = 0; k <= LATB_COUNT; k++) {
		s->counts[k] = __atomic_load_n(&w->counts[k], __ATOMIC_RELAXED);
		s->count += s->counts[k];
	}
	s->sum_s = (double)__atomic_load_n(&w->sum_ns, __ATOMIC_RELAXED) / 1e9;
	for (int k = 0; k < NQ; k++) {
		double ns;

		s->q[k] = ebee_get_latency_percentile(p->eb, w->pid, quantiles[k] * 100, &ns)
			      ? NAN
			      : ns / 1e9;
	}
	if (ebee_get_rps(p->eb, w->pid, &s->rps))
		s->rps = 0;
}

/* One scrape: the workloads' snapshots and labels (workload, pid, and a
 * third slot the mode and framing series fill in). */
struct scrape {
	struct prom_buf *b;
	int nwl;
	struct snap *s;
	struct prom_label (*l)[3];
};

/* Every workload still traced. */
#define EACH(x, i)                         \
	for (int i = 0; i < (x)->nwl; i++) \
		if ((x)->s[i].ok)

static void render_latency(struct scrape *x)
{
	struct prom_buf *b = x->b;

	prom_family(b, "ebee_request_duration_seconds", PROM_HISTOGRAM,
		    "Server-side request latency, every request since tracing began.");
	EACH(x, i)
	prom_histogram(b, x->l[i], 2, latb_bound_s, x->s[i].counts, LATB_COUNT, x->s[i].sum_s);

	prom_family(b, "ebee_request_duration_window_seconds", PROM_SUMMARY,
		    "Exact latency quantiles over ebee's window (--window, --window-age); "
		    "_sum and _count since tracing began.");
	EACH(x, i)
	prom_summary(b, x->l[i], 2, quantiles, x->s[i].q, NQ, x->s[i].sum_s, x->s[i].count);
}

static void render_counts(struct scrape *x)
{
	struct prom_buf *b = x->b;

	prom_family(b, "ebee_requests_total", PROM_COUNTER,
		    "Requests completed while traced, counted in the kernel (lost records "
		    "included).");
	EACH(x, i) prom_sample(b, x->l[i], 2, (double)x->s[i].st.requests);

	prom_family(b, "ebee_lost_records_total", PROM_COUNTER,
		    "Request records the kernel could not queue for this workload.");
	EACH(x, i) prom_sample(b, x->l[i], 2, (double)x->s[i].st.dropped);

	prom_family(b, "ebee_expired_total", PROM_COUNTER,
		    "dgram: datagrams received that were never answered (one-way traffic, not "
		    "requests).");
	EACH(x, i) prom_sample(b, x->l[i], 2, (double)x->s[i].st.expired);

	prom_family(b, "ebee_window_requests_per_second", PROM_GAUGE,
		    "Throughput over ebee's window.");
	EACH(x, i) prom_sample(b, x->l[i], 2, x->s[i].rps);

	prom_family(b, "ebee_window_requests", PROM_GAUGE, "Requests in ebee's window.");
	EACH(x, i) prom_sample(b, x->l[i], 2, (double)x->s[i].st.window_count);

	prom_family(b, "ebee_window_covered_ratio", PROM_GAUGE,
		    "Share of the window's requests (as the kernel counted them) whose records "
		    "reached ebee: the quantiles are over these; 1 when none was lost, below "
		    "0.99 untrusted.");
	EACH(x, i) prom_sample(b, x->l[i], 2, x->s[i].st.covered);
}

/* Why the counts cannot be trusted: one series per reason the library knows
 * (a 0 where it does not apply, so each series is there from the first
 * scrape), the ids from libebee so a new reason needs no edit here. */
static void render_warnings(struct scrape *x)
{
	struct prom_buf *b = x->b;
	char help[768];
	int off;

	off = snprintf(help, sizeof(help),
		       "Why ebee cannot count this workload's requests exactly, one series per "
		       "reason (");
	for (int k = 0; k < EBEE_WARN_COUNT && off < (int)sizeof(help); k++)
		off += snprintf(help + off, sizeof(help) - off, "%s%s", k ? ", " : "",
				ebee_warn_str(k));
	if (off < (int)sizeof(help))
		snprintf(help + off, sizeof(help) - off,
			 "): what it counts, connections (udp_unanswered: datagrams, untimed: "
			 "HTTP/2 streams, unmatched: responses, lost: requests, no_requests: "
			 "bytes), 0 when it "
			 "does not apply; each "
			 "reason's text: ebee trace --json, warnings.");
	prom_family(b, "ebee_warning", PROM_GAUGE, help);
	EACH(x, i) for (int k = 0; k < EBEE_WARN_COUNT; k++)
	{
		x->l[i][2] = (struct prom_label){ "reason", ebee_warn_str(k) };
		prom_sample(b, x->l[i], 3, (double)x->s[i].warn[k]);
	}
}

/* How ebee finds requests: mode, framing, whether the counts can be trusted. */
static void render_method(struct scrape *x)
{
	struct prom_buf *b = x->b;
	char help[256];

	prom_family(b, "ebee_mode", PROM_GAUGE,
		    "How request boundaries are found: 1 for the mode in force (auto while "
		    "undecided), 0 for the others.");
	EACH(x, i) for (int m = 0; m < EBEE_MODE_COUNT; m++)
	{
		x->l[i][2] = (struct prom_label){ "mode", ebee_mode_str(m) };
		prom_sample(b, x->l[i], 3, x->s[i].st.mode == (enum ebee_mode)m);
	}

	/* The names from libebee (its framer list), so a new framer needs no edit here. */
	snprintf(help, sizeof(help),
		 "How requests are delimited: 1 with the framing in force (%s; none: no "
		 "connection yet; ebee(8) says what each counts).",
		 ebee_framing_list());
	prom_family(b, "ebee_framing", PROM_GAUGE, help);
	EACH(x, i)
	{
		x->l[i][2] =
		    (struct prom_label){ "framing",
					 x->s[i].st.framing[0] ? x->s[i].st.framing : "none" };
		prom_sample(b, x->l[i], 3, 1);
	}

	prom_family(b, "ebee_untrusted", PROM_GAUGE,
		    "1 when ebee cannot count this workload's requests exactly (the reasons: "
		    "ebee_warning).");
	EACH(x, i) prom_sample(b, x->l[i], 2, x->s[i].st.untrusted);

	render_warnings(x);

	prom_family(b, "ebee_mode_switches_total", PROM_COUNTER,
		    "Times the automatic mode choice changed.");
	EACH(x, i) prom_sample(b, x->l[i], 2, (double)x->s[i].st.mode_switches);
}

static void render_processes(struct scrape *x)
{
	struct prom_buf *b = x->b;

	prom_family(b, "ebee_processes", PROM_GAUGE,
		    "Processes in the workload (the pid and its descendants).");
	EACH(x, i) prom_sample(b, x->l[i], 2, (double)x->s[i].st.nprocs);

	prom_family(b, "ebee_exited", PROM_GAUGE, "1 once the traced process has exited.");
	EACH(x, i) prom_sample(b, x->l[i], 2, x->s[i].st.exited);
}
#undef EACH

/* Series over all workloads, without labels. */
static void render_global(struct prom_buf *b, struct ebee *eb)
{
	struct ebee_global_stats g = { .sz = sizeof(g) };

	if (!eb || ebee_get_global_stats(eb, &g))
		return;
	prom_family(b, "ebee_records_total", PROM_COUNTER,
		    "Records consumed from the ring buffer, all workloads.");
	prom_sample(b, NULL, 0, (double)g.records);
	prom_family(b, "ebee_ringbuf_lost_records_total", PROM_COUNTER,
		    "Ring buffer reservations that failed, all CPUs and workloads.");
	prom_sample(b, NULL, 0, (double)g.dropped);
	prom_family(b, "ebee_workloads", PROM_GAUGE, "Workloads traced.");
	prom_sample(b, NULL, 0, g.workloads);
}

int eprom_render(struct prom_buf *b, void *ctx)
{
	static struct snap snaps[EPROM_MAX_WL]; /* one scrape at a time (promhttp.h) */
	struct eprom *p = ctx;
	char pids[EPROM_MAX_WL][16];
	struct prom_label l[EPROM_MAX_WL][3];
	struct scrape x = {
		.b = b, .nwl = __atomic_load_n(&p->nwl, __ATOMIC_ACQUIRE), .s = snaps, .l = l
	};

	for (int i = 0; i < x.nwl; i++) {
		take(p, i, &snaps[i]);
		snprintf(pids[i], sizeof(pids[i]), "%d", (int)p->wl[i].pid);
		l[i][0] = (struct prom_label){ "workload", p->wl[i].name };
		l[i][1] = (struct prom_label){ "pid", pids[i] };
	}
	render_latency(&x);
	render_counts(&x);
	render_method(&x);
	render_processes(&x);
	render_global(b, p->eb);
	return b->err;
}
