// SPDX-License-Identifier: MIT
/*
 * Soak: ebee tracing a cpr_server under a steady open-loop load (loadgen,
 * SOAK_RPS requests/s, one request per connection), for SOAK_S seconds
 * (default 300, the 5-minute soak; SOAK_S=3600 is the hour, SOAK_S=60 a quick look).
 * Every 100 ms the p99 is queried the way parties does and the query is
 * timed; every 5 s this process's RSS is sampled. Printed per slice (a
 * sixth of the run each): RSS, query latency p50/p99/max, requests counted.
 * The figures that matter are ratios of the last slice to the first (RSS
 * growth, query p99 drift): on a shared machine absolute values are noise.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ebee.h"
#include "../lib/testutil.h"

#define SLICES 6

static long rss_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double pct(double *v, size_t n, double p)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp);
	return v[(size_t)(p * (double)(n - 1))];
}

int main(void)
{
	double secs = getenv("SOAK_S") ? atof(getenv("SOAK_S")) : 300;
	int rps = getenv("SOAK_RPS") ? atoi(getenv("SOAK_RPS")) : 500;
	struct ebee_opts eo = { .sz = sizeof(eo) };

	struct ebee_trace_opts to = { .sz = sizeof(to), .mode = EBEE_MODE_AUTO };
	const char *const extra[] = { "--threads", "2", "--delay-ms", "1", NULL };
	char msg[256], rate[32], dur[32], port_s[16];
	double slice = secs / SLICES, q_first_p99 = 0, q_last_p99 = 0;
	long rss_first = 0, rss_last = 0, rss_max = 0;
	double q_max = 0;
	struct ebee *eb;
	pid_t srv, lg;
	int port;

	if (tu_need_root())
		return 77;
	if (!(secs >= 6)) {
		fprintf(stderr, "SOAK_S must be at least 6 seconds\n");
		return 1;
	}
	tu_init();
	srv = tu_start_cpr(&port, extra);
	if (srv <= 0) {
		printf("SKIP: cannot start cpr_server\n");
		tu_cleanup();
		return 77;
	}
	/* SOAK_RING: each CPU's ring in bytes (default: ebee's), for RSS side by side */
	if (getenv("SOAK_RING"))
		eo.ringbuf_size = strtoul(getenv("SOAK_RING"), NULL, 0);
	eb = ebee_open(&eo, msg, sizeof(msg));
	if (!eb || ebee_start_tracing(eb, srv, &to)) {
		printf("SKIP: ebee cannot trace here: %s\n", msg);
		ebee_close(eb);
		tu_cleanup();
		return 77;
	}
	snprintf(port_s, sizeof(port_s), "%d", port);
	snprintf(rate, sizeof(rate), "%d", rps);
	snprintf(dur, sizeof(dur), "%.0f", secs + 2);
	{
		char *const argv[] = { "build/loadgen", "--port", port_s,	   "--rate", rate,
				       "--duration",	dur,	  "--req-timeout", "2",	     NULL };

		lg = tu_spawn(argv, "/dev/null");
	}
	printf("soak: %.0f s at %d rps (one request per connection) on cpr_server, ebee auto mode;"
	       " p99 queried every 100 ms\n",
	       secs, rps);
	printf("%6s %10s %12s %12s %12s %10s\n", "slice", "rss_kb", "query_p50_us", "query_p99_us",
	       "query_max_us", "requests");
	for (int s = 0; s < SLICES; s++) {
		size_t n = 0, cap = (size_t)(slice * 10) + 16;
		double *q = calloc(cap, sizeof(*q)), end = tu_now() + slice, next_rss = 0;
		struct ebee_stats st = { .sz = sizeof(st) };
		long rss = 0;

		while (tu_now() < end) {
			struct timespec a, b;
			double v;

			clock_gettime(CLOCK_MONOTONIC, &a);
			ebee_get_latency_percentile(eb, srv, 99, &v);
			clock_gettime(CLOCK_MONOTONIC, &b);
			if (n < cap)
				q[n++] = (double)(b.tv_sec - a.tv_sec) * 1e6 +
					 (double)(b.tv_nsec - a.tv_nsec) / 1e3;
			if (tu_now() >= next_rss) {
				rss = rss_kb();
				rss_max = rss > rss_max ? rss : rss_max;
				next_rss = tu_now() + 5;
			}
			tu_sleep_ms(100);
		}
		ebee_get_stats(eb, srv, &st);
		{
			double p50 = pct(q, n, 0.5), p99 = pct(q, n, 0.99), mx = pct(q, n, 1.0);

			printf("%6d %10ld %12.1f %12.1f %12.1f %10llu\n", s + 1, rss, p50, p99, mx,
			       (unsigned long long)st.requests);
			fflush(stdout);
			if (s == 0) {
				q_first_p99 = p99;
				rss_first = rss;
			}
			q_last_p99 = p99;
			q_max = mx > q_max ? mx : q_max;
			rss_last = rss;
		}
		free(q);
	}
	printf("soak: RSS last/first slice %.3f (max %ld kB); query p99 last/first slice %.2f; "
	       "slowest query %.0f us\n",
	       rss_first > 0 ? (double)rss_last / (double)rss_first : 0.0, rss_max,
	       q_first_p99 > 0 ? q_last_p99 / q_first_p99 : 0.0, q_max);
	ebee_close(eb);
	if (lg > 0)
		tu_stop(lg);
	tu_stop(srv);
	tu_cleanup();
	return 0;
}
