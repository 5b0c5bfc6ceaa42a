// SPDX-License-Identifier: MIT
/*
 * Piecewise-linear rate schedules: parsing, rate, its integral and the integral's inverse
 * (see schedule.h). Within a segment starting at t0 with rate a and slope b the integral is
 * cum0 + a*x + b*x^2/2 for x = t - t0; its inverse is solved in the cancellation-free form
 * x = 2d / (a + sqrt(a^2 + 2bd)), which also holds for b < 0 and b == 0.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule.h"

static void fill_cum(struct sched *s)
{
	s->cum[0] = 0;
	for (int i = 1; i < s->n; i++)
		s->cum[i] = s->cum[i - 1] + (s->r[i - 1] + s->r[i]) / 2 * (s->t[i] - s->t[i - 1]);
}

int sched_parse(struct sched *s, const char *text, char *err, size_t errlen)
{
	const char *p = text;

	s->n = 0;
	while (*p) {
		char *end;
		double t, r;

		if (s->n == SCHED_MAX_POINTS) {
			snprintf(err, errlen, "more than %d points", SCHED_MAX_POINTS);
			return -EINVAL;
		}
		t = strtod(p, &end);
		if (end == p || *end != ':') {
			snprintf(err, errlen, "point %d: expected TIME_S:RPS at '%s'", s->n + 1, p);
			return -EINVAL;
		}
		p = end + 1;
		r = strtod(p, &end);
		if (end == p || (*end && *end != ',')) {
			snprintf(err, errlen, "point %d: bad rate at '%s'", s->n + 1, p);
			return -EINVAL;
		}
		if (!isfinite(t) || !isfinite(r) || r < 0) {
			snprintf(err, errlen, "point %d: time and rate must be finite, rate >= 0",
				 s->n + 1);
			return -EINVAL;
		}
		if (s->n == 0 && t != 0) {
			snprintf(err, errlen, "the first point must be at time 0, not %g", t);
			return -EINVAL;
		}
		if (s->n > 0 && t <= s->t[s->n - 1]) {
			snprintf(err, errlen, "point %d: time %g is not after %g", s->n + 1, t,
				 s->t[s->n - 1]);
			return -EINVAL;
		}
		s->t[s->n] = t;
		s->r[s->n] = r;
		s->n++;
		p = *end ? end + 1 : end;
		if (*end == ',' && !*p) {
			snprintf(err, errlen, "trailing comma");
			return -EINVAL;
		}
	}
	if (s->n < 2) {
		snprintf(err, errlen, "need at least two points (0:RPS,END_S:RPS)");
		return -EINVAL;
	}
	fill_cum(s);
	return 0;
}

int sched_constant(struct sched *s, double rate, double duration_s)
{
	if (!(rate >= 0) || !(duration_s > 0) || !isfinite(rate) || !isfinite(duration_s))
		return -EINVAL;
	s->n = 2;
	s->t[0] = 0;
	s->t[1] = duration_s;
	s->r[0] = s->r[1] = rate;
	fill_cum(s);
	return 0;
}

void sched_scale(struct sched *s, double k)
{
	for (int i = 0; i < s->n; i++)
		s->r[i] *= k;
	fill_cum(s);
}

double sched_duration(const struct sched *s)
{
	return s->t[s->n - 1];
}

/* The segment [t[i], t[i+1]] holding t; t must be within the schedule. */
static int segment_of(const struct sched *s, double t)
{
	int lo = 0, hi = s->n - 2;

	while (lo < hi) {
		int mid = (lo + hi + 1) / 2;

		if (s->t[mid] <= t)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

double sched_rate(const struct sched *s, double t)
{
	int i;

	if (t < 0 || t > sched_duration(s))
		return 0;
	i = segment_of(s, t);
	return s->r[i] + (s->r[i + 1] - s->r[i]) * (t - s->t[i]) / (s->t[i + 1] - s->t[i]);
}

double sched_cum(const struct sched *s, double t)
{
	double a, b, x;
	int i;

	if (t <= 0)
		return 0;
	if (t >= sched_duration(s))
		return s->cum[s->n - 1];
	i = segment_of(s, t);
	a = s->r[i];
	b = (s->r[i + 1] - s->r[i]) / (s->t[i + 1] - s->t[i]);
	x = t - s->t[i];
	return s->cum[i] + a * x + b * x * x / 2;
}

double sched_inverse(const struct sched *s, double u)
{
	int lo = 0, hi = s->n - 1;
	double a, b, d, disc, x;

	if (u <= 0)
		return 0;
	if (u > s->cum[s->n - 1])
		return -1;
	/* First segment i with cum[i+1] >= u: zero-rate stretches are skipped. */
	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (s->cum[mid + 1] >= u)
			hi = mid;
		else
			lo = mid + 1;
	}
	a = s->r[lo];
	b = (s->r[lo + 1] - s->r[lo]) / (s->t[lo + 1] - s->t[lo]);
	d = u - s->cum[lo];
	disc = a * a + 2 * b * d;
	if (disc < 0)
		disc = 0; /* rounding at the segment's end */
	if (a + sqrt(disc) <= 0)
		return s->t[lo];
	x = 2 * d / (a + sqrt(disc));
	if (x > s->t[lo + 1] - s->t[lo])
		x = s->t[lo + 1] - s->t[lo];
	return s->t[lo] + x;
}
