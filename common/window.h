/* SPDX-License-Identifier: MIT */
/*
 * The per-workload window of recent requests: libebee's (compiled into it, not
 * exported) and the simulator's (controller/sim_model.c, which must measure
 * exactly as ebee does), so it lives in common/ where both may include it.
 *
 * A ring of at most `cap` records {end_ns, lat_ns}, optionally also bounded by
 * age, with O(1) rps / latest / average (running sum) and an order-statistic
 * structure over the latencies so that ANY percentile is exact in O(log n).
 * Not thread-safe: the caller (metrics/src/core.h: struct ebee) holds the workload lock.
 */
#ifndef EBEE_WINDOW_H
#define EBEE_WINDOW_H

#include <stddef.h>
#include <stdint.h>

struct ebee_window;

/* cap >= 1; max_age_ns == 0 means no age limit. NULL with errno on failure. */
struct ebee_window *ebee_window_new(size_t cap, uint64_t max_age_ns);
void ebee_window_free(struct ebee_window *w);
void ebee_window_reset(struct ebee_window *w);

/* Append one record; evicts the oldest when full and, when an age limit is
 * set, every record whose end is older than end_ns - max_age_ns. */
void ebee_window_push(struct ebee_window *w, uint64_t end_ns, uint64_t lat_ns);
/* Drop records whose end is older than now_ns - max_age_ns (no-op without an
 * age limit). Lets a query ask for "the last T" even when traffic stopped. */
void ebee_window_expire(struct ebee_window *w, uint64_t now_ns);

size_t ebee_window_count(const struct ebee_window *w);
/* 0 or -ENODATA. rps = count / (newest end - oldest end); needs >= 2 records
 * and a non-zero span. */
int ebee_window_rps(const struct ebee_window *w, double *rps);
int ebee_window_latest(const struct ebee_window *w, uint64_t *lat_ns);
int ebee_window_average(const struct ebee_window *w, double *avg_ns);
/* p in [0, 100] else -EINVAL; numpy "linear" interpolation. */
int ebee_window_percentile(const struct ebee_window *w, double p, double *val_ns);
/* The same over the union of the latencies of nw windows, as if they were one
 * window (the requests of several processes of one workload): exact, in
 * O(nw log(n) * 64) for 64-bit latencies. -EINVAL for nw == 0, -ENODATA when
 * all are empty. */
int ebee_window_percentile_union(struct ebee_window *const *ws, size_t nw, double p,
				 double *val_ns);
/* The ends of the oldest and newest records, in the order they were pushed;
 * 0 or -ENODATA when the window is empty. */
int ebee_window_ends(const struct ebee_window *w, uint64_t *oldest, uint64_t *newest);
/* newest end - oldest end; 0 with fewer than two records. */
uint64_t ebee_window_span(const struct ebee_window *w);

#endif
