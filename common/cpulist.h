/* SPDX-License-Identifier: MIT */
/*
 * A fixed-size CPU set with parse/format of kernel cpu lists ("0-1,3").
 *
 * Plain value type (copy with =), no allocation, no global state. It lives in
 * common/ because the actuators, the controller and the policy interface
 * (controller/policy.h, which policies include and which may not reach the
 * actuators) all carry cpu sets. Every name keeps the act_cpumask_ prefix it
 * had when it was the actuators' alone. CPU numbers are logical CPU ids as the kernel
 * numbers them (/sys/devices/system/cpu/cpuN); valid ids are
 * 0 .. ACT_CPUMASK_MAX - 1. Calls taking an out-of-range CPU id ignore it
 * (setters) or answer false (tests).
 */
#ifndef ACT_CPULIST_H
#define ACT_CPULIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ACT_CPUMASK_MAX	  1024
#define ACT_CPUMASK_WORDS (ACT_CPUMASK_MAX / 64)

struct act_cpumask {
	uint64_t w[ACT_CPUMASK_WORDS];
};

/* Empty the set. */
void act_cpumask_zero(struct act_cpumask *m);
/* Add / remove one CPU. */
void act_cpumask_set(struct act_cpumask *m, int cpu);
void act_cpumask_clear(struct act_cpumask *m, int cpu);
/* Is cpu in the set? */
bool act_cpumask_isset(const struct act_cpumask *m, int cpu);
/* Number of CPUs in the set. */
int act_cpumask_count(const struct act_cpumask *m);
bool act_cpumask_empty(const struct act_cpumask *m);
bool act_cpumask_equal(const struct act_cpumask *a, const struct act_cpumask *b);
/* Do a and b share at least one CPU? */
bool act_cpumask_intersects(const struct act_cpumask *a, const struct act_cpumask *b);
/* Is every CPU of a also in b? */
bool act_cpumask_subset(const struct act_cpumask *a, const struct act_cpumask *b);
/* dst = a & b, a | b, a & ~b. dst may alias a or b. */
void act_cpumask_and(struct act_cpumask *dst, const struct act_cpumask *a,
		     const struct act_cpumask *b);
void act_cpumask_or(struct act_cpumask *dst, const struct act_cpumask *a,
		    const struct act_cpumask *b);
void act_cpumask_andnot(struct act_cpumask *dst, const struct act_cpumask *a,
			const struct act_cpumask *b);
/* Lowest CPU in the set, or -1 when empty. */
int act_cpumask_first(const struct act_cpumask *m);
/* Lowest CPU greater than cpu in the set, or -1. */
int act_cpumask_next(const struct act_cpumask *m, int cpu);
/* The n-th CPU (0-based) in ascending order, or -1. */
int act_cpumask_nth(const struct act_cpumask *m, int n);

#define act_cpumask_for_each(cpu, m) \
	for ((cpu) = act_cpumask_first(m); (cpu) >= 0; (cpu) = act_cpumask_next((m), (cpu)))

/*
 * Parse a kernel cpu list: comma-separated CPUs and inclusive ranges, e.g.
 * "0-3,8,10-11". Surrounding whitespace and a trailing newline are accepted;
 * an empty string (or only whitespace) is the empty set. Returns 0, -EINVAL
 * on bad syntax (the set is then left empty) or -ERANGE for a CPU id
 * >= ACT_CPUMASK_MAX.
 */
int act_cpumask_parse(const char *str, struct act_cpumask *m);
/*
 * Format as a canonical cpu list ("0-3,8"); the empty set is "". Returns the
 * string length (excluding NUL) or -ENOSPC if len is too small (buf then holds
 * a truncated, NUL-terminated prefix when len > 0).
 */
int act_cpumask_format(const struct act_cpumask *m, char *buf, size_t len);
/* Convenience for small machines and tests: CPUs 0..63 from a bit mask. */
void act_cpumask_from_u64(struct act_cpumask *m, uint64_t bits);

#ifdef __cplusplus
}
#endif

#endif /* ACT_CPULIST_H */
