/* SPDX-License-Identifier: MIT */
/*
 * Zipf key popularity: rank k (0-based) is drawn with probability proportional to
 * 1 / (k + 1)^alpha over n keys, by binary search in a precomputed CDF (8 bytes per key).
 * Pure functions given a uniform number: unit tests include zipf.c directly.
 */
#ifndef LG_ZIPF_H
#define LG_ZIPF_H

#include <stddef.h>

struct zipf {
	size_t n;
	double alpha;
	double *cdf; /* cdf[k] = P(rank <= k); cdf[n-1] == 1 */
};

/* Returns 0, -EINVAL (n == 0, alpha < 0) or -ENOMEM. */
int zipf_init(struct zipf *z, size_t n, double alpha);
void zipf_free(struct zipf *z);

/* The rank for a uniform u in [0, 1): the smallest k with cdf[k] > u. */
size_t zipf_sample(const struct zipf *z, double u);

/* P(rank == k). */
double zipf_pmf(const struct zipf *z, size_t k);

#endif
