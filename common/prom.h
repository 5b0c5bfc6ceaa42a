/* SPDX-License-Identifier: MIT */
/*
 * Prometheus text exposition format (version 0.0.4), written into a growing
 * buffer. Shared by `ebee trace --listen` and `parties --metrics`.
 *
 * The writer enforces what the format requires and what scrapers reject
 * silently otherwise: one # HELP and # TYPE per family before its samples,
 * every sample of a family contiguous, a family never repeated, valid metric
 * and label names, escaped label values and help text (valid UTF-8: each
 * byte that does not start a well-formed sequence is written as U+FFFD),
 * and histogram buckets
 * written cumulatively with a final le="+Inf" equal to _count. A call that
 * breaks a rule writes nothing and sets the buffer's error (sticky, first one
 * wins), so a program bug shows as a 500 rather than a half-valid page.
 */
#ifndef PROM_H
#define PROM_H

#include <stddef.h>
#include <stdint.h>

enum prom_type { PROM_COUNTER, PROM_GAUGE, PROM_HISTOGRAM, PROM_SUMMARY, PROM_UNTYPED };

struct prom_label {
	const char *name;
	const char *value;
};

#define PROM_MAX_FAMILIES 64
#define PROM_NAME_LEN	  96

struct prom_buf {
	char *p;
	size_t len, cap;
	int err; /* 0 or the first negative errno */
	char errmsg[160];
	/* the family being written and the ones already closed */
	enum prom_type type;
	int nfam;
	char fam[PROM_MAX_FAMILIES][PROM_NAME_LEN];
};

void prom_init(struct prom_buf *b);
void prom_free(struct prom_buf *b);
/* Drop the text but keep the allocation, to render again. */
void prom_reset(struct prom_buf *b);

/* Start a family: # HELP and # TYPE lines. -EEXIST if it was written before,
 * -EINVAL for a bad name. */
int prom_family(struct prom_buf *b, const char *name, enum prom_type type, const char *help);

/* One sample of the current counter, gauge or untyped family. */
int prom_sample(struct prom_buf *b, const struct prom_label *l, int nl, double v);

/* Every series of the current histogram family for one label set. bounds are
 * the upper bounds (strictly increasing, finite); counts[i] is the number of
 * observations in (bounds[i-1], bounds[i]] -- NOT cumulative -- and
 * counts[nb] those above the last bound. */
int prom_histogram(struct prom_buf *b, const struct prom_label *l, int nl, const double *bounds,
		   const uint64_t *counts, int nb, double sum);

/* Every series of the current summary family for one label set: quantiles in
 * [0, 1] with their values (NaN when unknown), then _sum and _count. */
int prom_summary(struct prom_buf *b, const struct prom_label *l, int nl, const double *q,
		 const double *v, int nq, double sum, uint64_t count);

/* Valid metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) / label name ([a-zA-Z_][a-zA-Z0-9_]*,
 * not starting with "__"). */
int prom_valid_metric_name(const char *s);
int prom_valid_label_name(const char *s);

/* The exposition's content type. */
#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

#endif /* PROM_H */
