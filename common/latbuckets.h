/* SPDX-License-Identifier: MIT */
/*
 * The latency buckets of ebee_request_duration_seconds: the E24 series
 * (1.0, 1.1, 1.2, 1.3, 1.5, ... 9.1; about 10% apart) in every decade from
 * 1 us to 10 s. 10% steps keep histogram_quantile() within a few percent of
 * the exact percentile at the targets PARTIES deployments use (1 ms is an
 * edge; 25 ms lies between the edges 24 ms and 27 ms), at 170 series per
 * workload.
 */
#ifndef LATBUCKETS_H
#define LATBUCKETS_H

#include <stdint.h>

#define LATB_COUNT (7 * 24 + 1) /* finite upper bounds; +Inf is extra */

/* Upper bounds in ns (exact integers) and in seconds. */
extern const uint64_t latb_bound_ns[LATB_COUNT];
extern const double latb_bound_s[LATB_COUNT];

/* Index of the bucket holding lat_ns: the first bound >= lat_ns, or
 * LATB_COUNT for the +Inf bucket. */
int latb_index(uint64_t lat_ns);

#endif /* LATBUCKETS_H */
