// SPDX-License-Identifier: MIT
/* Zipf sampler by inverse CDF (see zipf.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "zipf.h"

int zipf_init(struct zipf *z, size_t n, double alpha)
{
	double sum = 0;

	z->cdf = NULL;
	if (n == 0 || !(alpha >= 0) || !isfinite(alpha))
		return -EINVAL;
	z->cdf = malloc(n * sizeof(*z->cdf));
	if (!z->cdf)
		return -ENOMEM;
	z->n = n;
	z->alpha = alpha;
	for (size_t k = 0; k < n; k++) {
		sum += pow((double)(k + 1), -alpha);
		z->cdf[k] = sum;
	}
	for (size_t k = 0; k < n; k++)
		z->cdf[k] /= sum;
	z->cdf[n - 1] = 1.0;
	return 0;
}

void zipf_free(struct zipf *z)
{
	free(z->cdf);
	z->cdf = NULL;
}

size_t zipf_sample(const struct zipf *z, double u)
{
	size_t lo = 0, hi = z->n - 1;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (z->cdf[mid] > u)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

double zipf_pmf(const struct zipf *z, size_t k)
{
	if (k >= z->n)
		return 0;
	return k == 0 ? z->cdf[0] : z->cdf[k] - z->cdf[k - 1];
}
