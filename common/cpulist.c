// SPDX-License-Identifier: MIT
/* Fixed-size CPU sets and kernel cpu-list parsing/formatting (cpulist.h). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpulist.h"

static bool cpu_ok(int cpu)
{
	return cpu >= 0 && cpu < ACT_CPUMASK_MAX;
}

void act_cpumask_zero(struct act_cpumask *m)
{
	memset(m, 0, sizeof(*m));
}

void act_cpumask_set(struct act_cpumask *m, int cpu)
{
	if (cpu_ok(cpu))
		m->w[cpu / 64] |= 1ull << (cpu % 64);
}

void act_cpumask_clear(struct act_cpumask *m, int cpu)
{
	if (cpu_ok(cpu))
		m->w[cpu / 64] &= ~(1ull << (cpu % 64));
}

bool act_cpumask_isset(const struct act_cpumask *m, int cpu)
{
	return cpu_ok(cpu) && (m->w[cpu / 64] >> (cpu % 64)) & 1;
}

int act_cpumask_count(const struct act_cpumask *m)
{
	int n = 0;

	for (int i = 0; i < ACT_CPUMASK_WORDS; i++)
		n += __builtin_popcountll(m->w[i]);
	return n;
}

bool act_cpumask_empty(const struct act_cpumask *m)
{
	for (int i = 0; i < ACT_CPUMASK_WORDS; i++)
		if (m->w[i])
			return false;
	return true;
}

bool act_cpumask_equal(const struct act_cpumask *a, const struct act_cpumask *b)
{
	return memcmp(a, b, sizeof(*a)) == 0;
}

bool act_cpumask_intersects(const struct act_cpumask *a, const struct act_cpumask *b)
{
	for (int i = 0; i < ACT_CPUMASK_WORDS; i++)
		if (a->w[i] & b->w[i])
			return true;
	return false;
}

bool act_cpumask_subset(const struct act_cpumask *a, const struct act_cpumask *b)
{
	for (int i = 0; i < ACT_CPUMASK_WORDS; i++)
		if (a->w[i] & ~b->w[i])
			return false;
	return true;
}

void act_cpumask_and(struct act_cpumask *dst, const struct act_cpumask *a,
		     const struct act_cpumask *b)
{
	for (int i = 0; i < ACT_CPUMASK_WORDS; i++)
		dst->w[i] = a->w[i] & b->w[i];
}

void act_cpumask_or(struct act_cpumask *dst, const struct act_cpumask *a,
		    const struct act_cpumask *b)
{
	for (int i = 0; i < ACT_CPUMASK_WORDS; i++)
		dst->w[i] = a->w[i] | b->w[i];
}

void act_cpumask_andnot(struct act_cpumask *dst, const struct act_cpumask *a,
			const struct act_cpumask *b)
{
	for (int i = 0; i < ACT_CPUMASK_WORDS; i++)
		dst->w[i] = a->w[i] & ~b->w[i];
}

int act_cpumask_next(const struct act_cpumask *m, int cpu)
{
	for (int c = cpu < 0 ? 0 : cpu + 1; c < ACT_CPUMASK_MAX; c++) {
		uint64_t w = m->w[c / 64] >> (c % 64);

		if (!w) {
			c = (c / 64) * 64 + 63; /* skip the rest of this word */
			continue;
		}
		return c + __builtin_ctzll(w);
	}
	return -1;
}

int act_cpumask_first(const struct act_cpumask *m)
{
	return act_cpumask_next(m, -1);
}

int act_cpumask_nth(const struct act_cpumask *m, int n)
{
	int cpu;

	if (n < 0)
		return -1;
	act_cpumask_for_each(cpu, m)
	{
		if (n-- == 0)
			return cpu;
	}
	return -1;
}

static int parse_num(const char **p, long *out)
{
	char *end;
	long v;

	if (!isdigit((unsigned char)**p))
		return -EINVAL;
	errno = 0;
	v = strtol(*p, &end, 10);
	if (errno)
		return -ERANGE;
	*p = end;
	*out = v;
	return 0;
}

int act_cpumask_parse(const char *str, struct act_cpumask *m)
{
	const char *p = str;
	int err;

	act_cpumask_zero(m);
	if (!str)
		return -EINVAL;
	while (isspace((unsigned char)*p))
		p++;
	if (!*p)
		return 0;
	for (;;) {
		long lo, hi;

		err = parse_num(&p, &lo);
		if (err)
			goto bad;
		hi = lo;
		if (*p == '-') {
			p++;
			err = parse_num(&p, &hi);
			if (err)
				goto bad;
			if (hi < lo) {
				err = -EINVAL;
				goto bad;
			}
		}
		if (hi >= ACT_CPUMASK_MAX) {
			err = -ERANGE;
			goto bad;
		}
		for (long c = lo; c <= hi; c++)
			act_cpumask_set(m, (int)c);
		if (*p == ',') {
			p++;
			continue;
		}
		while (isspace((unsigned char)*p))
			p++;
		if (*p) {
			err = -EINVAL;
			goto bad;
		}
		return 0;
	}
bad:
	act_cpumask_zero(m);
	return err;
}

int act_cpumask_format(const struct act_cpumask *m, char *buf, size_t len)
{
	size_t off = 0;
	int cpu = act_cpumask_first(m);
	bool trunc = false;

	if (len)
		buf[0] = '\0';
	while (cpu >= 0) {
		int end = cpu, n;

		while (act_cpumask_isset(m, end + 1))
			end++;
		if (end == cpu)
			n = snprintf(off < len ? buf + off : NULL, off < len ? len - off : 0,
				     "%s%d", off ? "," : "", cpu);
		else
			n = snprintf(off < len ? buf + off : NULL, off < len ? len - off : 0,
				     "%s%d-%d", off ? "," : "", cpu, end);
		if (off + (size_t)n >= len)
			trunc = true;
		off += (size_t)n;
		cpu = act_cpumask_next(m, end);
	}
	if (trunc) {
		if (len)
			buf[len - 1] = '\0';
		return -ENOSPC;
	}
	return (int)off;
}

void act_cpumask_from_u64(struct act_cpumask *m, uint64_t bits)
{
	act_cpumask_zero(m);
	m->w[0] = bits;
}
