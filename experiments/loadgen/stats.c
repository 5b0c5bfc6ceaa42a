// SPDX-License-Identifier: MIT
/* Percentiles and the trailing window (see stats.h). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

double lg_percentile_sorted(const double *v, size_t n, double p)
{
	double pos, frac;
	size_t i;

	if (n == 0)
		return 0;
	if (p <= 0)
		return v[0];
	if (p >= 100)
		return v[n - 1];
	pos = p / 100.0 * (double)(n - 1);
	i = (size_t)pos;
	frac = pos - (double)i;
	if (i + 1 >= n)
		return v[n - 1];
	return v[i] + (v[i + 1] - v[i]) * frac;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double lg_percentile(double *v, size_t n, double p)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return lg_percentile_sorted(v, n, p);
}

size_t lg_window_start(const int64_t *t, size_t n, int64_t now, int64_t span, size_t min_count)
{
	size_t lo = 0, hi = n;

	/* First sample with t > now - span. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t[mid] > now - span)
			hi = mid;
		else
			lo = mid + 1;
	}
	if (n - lo < min_count)
		lo = n > min_count ? n - min_count : 0;
	return lo;
}

int lg_window_add(struct lg_window *w, int64_t t, double lat_us)
{
	if (w->head + w->len == w->cap) {
		if (w->head > w->cap / 2) {
			/* Reuse the space of dropped samples. */
			memmove(w->t, w->t + w->head, w->len * sizeof(*w->t));
			memmove(w->lat, w->lat + w->head, w->len * sizeof(*w->lat));
			w->head = 0;
		} else {
			size_t cap = w->cap ? 2 * w->cap : 1024;
			int64_t *nt = realloc(w->t, cap * sizeof(*nt));
			double *nl;

			if (!nt)
				return -ENOMEM;
			w->t = nt;
			nl = realloc(w->lat, cap * sizeof(*nl));
			if (!nl)
				return -ENOMEM;
			w->lat = nl;
			w->cap = cap;
		}
	}
	w->t[w->head + w->len] = t;
	w->lat[w->head + w->len] = lat_us;
	w->len++;
	return 0;
}

size_t lg_window_query(struct lg_window *w, int64_t start, int64_t now, int64_t span,
		       size_t min_count, double p, double *pct, double *rps)
{
	int64_t covered;
	size_t first;

	*pct = *rps = 0;
	if (!w->len)
		return 0;
	first = lg_window_start(w->t + w->head, w->len, now, span, min_count);
	w->head += first;
	w->len -= first;
	if (!w->len)
		return 0;
	if (w->scratch_cap < w->len) {
		double *s = realloc(w->scratch, w->len * 2 * sizeof(*s));

		if (!s)
			return 0;
		w->scratch = s;
		w->scratch_cap = w->len * 2;
	}
	memcpy(w->scratch, w->lat + w->head, w->len * sizeof(*w->scratch));
	*pct = lg_percentile(w->scratch, w->len, p);
	/* The window covers span, or more if min_count reached further back, or less early on. */
	covered = now - w->t[w->head];
	if (covered < span)
		covered = now - start < span ? now - start : span;
	*rps = covered > 0 ? (double)w->len * 1e9 / (double)covered : 0;
	return w->len;
}

void lg_window_free(struct lg_window *w)
{
	free(w->t);
	free(w->lat);
	free(w->scratch);
	memset(w, 0, sizeof(*w));
}

int lg_samples_add(struct lg_samples *s, double lat_us)
{
	if (s->max && s->n >= s->max) {
		s->dropped++;
		return 0;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 4096;
		double *v = realloc(s->v, cap * sizeof(*v));

		if (!v) {
			s->dropped++;
			return -ENOMEM;
		}
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = lat_us;
	return 0;
}

void lg_samples_free(struct lg_samples *s)
{
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}
