/* SPDX-License-Identifier: MIT */
/*
 * Piecewise-linear request-rate schedules and Poisson arrivals by time rescaling.
 *
 * A schedule is a list of points (t_i seconds, r_i requests/s) with t_0 = 0 and increasing
 * t_i; the rate is linear between points and the schedule ends at the last point. Arrivals of
 * a non-homogeneous Poisson process with rate r(t) are the times T_k with
 * R(T_k) = E_1 + ... + E_k, where R(t) is the integral of r from 0 to t and the E_i are
 * independent Exp(1) (time rescaling): sched_cum() is R and sched_inverse() is R^-1.
 *
 * Pure functions, no I/O: unit tests include schedule.c directly.
 */
#ifndef LG_SCHEDULE_H
#define LG_SCHEDULE_H

#include <stddef.h>

#define SCHED_MAX_POINTS 256

struct sched {
	int n;
	double t[SCHED_MAX_POINTS];
	double r[SCHED_MAX_POINTS];
	/* cum[i]: integral of the rate from 0 to t[i] */
	double cum[SCHED_MAX_POINTS];
};

/*
 * Parse "T0:R0,T1:R1,..." (seconds:requests per second). T0 must be 0, times strictly
 * increasing, rates >= 0, at least two points. Returns 0, or -EINVAL with a reason in err.
 */
int sched_parse(struct sched *s, const char *text, char *err, size_t errlen);

/* A constant rate for duration_s seconds. Returns 0 or -EINVAL. */
int sched_constant(struct sched *s, double rate, double duration_s);

/* Multiply every rate by k (k >= 0). */
void sched_scale(struct sched *s, double k);

/* Length of the schedule in seconds (its last point). */
double sched_duration(const struct sched *s);

/* Rate at time t (0 before the start and after the end). */
double sched_rate(const struct sched *s, double t);

/* Expected number of arrivals in [0, t]: the integral of the rate. */
double sched_cum(const struct sched *s, double t);

/*
 * The time t with sched_cum(s, t) == u, the first such time if the rate is 0 somewhere.
 * Returns a negative value if u is beyond the end of the schedule (u > total).
 */
double sched_inverse(const struct sched *s, double u);

#endif
