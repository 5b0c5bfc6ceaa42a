/* SPDX-License-Identifier: MIT */
/*
 * Latency statistics for the load generator: exact percentiles (numpy's default "linear"
 * interpolation, the rule ebee uses too) and a trailing window of recent completions for the
 * feed file. Pure functions apart from memory allocation: unit tests include stats.c.
 */
#ifndef LG_STATS_H
#define LG_STATS_H

#include <stddef.h>
#include <stdint.h>

/*
 * The p-th percentile (0..100) of v[0..n-1] sorted ascending, interpolating linearly between
 * the two closest ranks (numpy.percentile's default). 0 if n == 0.
 */
double lg_percentile_sorted(const double *v, size_t n, double p);

/* Same for unsorted v; v is reordered (sorted) in place. */
double lg_percentile(double *v, size_t n, double p);

/*
 * Index of the first sample in the trailing window of samples with completion times t[0..n-1]
 * (ascending): every sample newer than now - span, or the last min_count samples if that
 * covers more (a longer span). Samples older than the window can be dropped.
 */
size_t lg_window_start(const int64_t *t, size_t n, int64_t now, int64_t span, size_t min_count);

/* Recent completions: times (ns) and latencies (us), oldest first. */
struct lg_window {
	int64_t *t;
	double *lat;
	size_t head, len, cap;
	double *scratch;
	size_t scratch_cap;
};

int lg_window_add(struct lg_window *w, int64_t t, double lat_us);

/*
 * Drop samples that fell out of the window (see lg_window_start), then report the window's
 * p-th percentile and its completion rate: samples per second over the time the window covers
 * (span, or back to the oldest sample kept if min_count reached further, or back to start if
 * the run is younger than span). Returns the number of samples in the window (0: *pct and
 * *rps are 0).
 */
size_t lg_window_query(struct lg_window *w, int64_t start, int64_t now, int64_t span,
		       size_t min_count, double p, double *pct, double *rps);

void lg_window_free(struct lg_window *w);

/* Every latency of the run, for the summary. Bounded: past max samples it stops recording. */
struct lg_samples {
	double *v;
	size_t n, cap, max;
	size_t dropped;
};

int lg_samples_add(struct lg_samples *s, double lat_us);
void lg_samples_free(struct lg_samples *s);

#endif
