// SPDX-License-Identifier: MIT
/*
 * Prometheus text exposition: see prom.h for the rules enforced.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prom.h"

void prom_init(struct prom_buf *b)
{
	memset(b, 0, sizeof(*b));
}

void prom_free(struct prom_buf *b)
{
	free(b->p);
	prom_init(b);
}

void prom_reset(struct prom_buf *b)
{
	char *p = b->p;
	size_t cap = b->cap;

	prom_init(b);
	b->p = p;
	b->cap = cap;
	if (p)
		p[0] = 0;
}

static int fail(struct prom_buf *b, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct prom_buf *b, int err, const char *fmt, ...)
{
	va_list ap;

	if (!b->err) {
		b->err = err;
		va_start(ap, fmt);
		vsnprintf(b->errmsg, sizeof(b->errmsg), fmt, ap);
		va_end(ap);
	}
	return err;
}

static int reserve(struct prom_buf *b, size_t more)
{
	size_t need = b->len + more + 1;
	char *p;

	if (need <= b->cap)
		return 0;
	if (need < 2 * b->cap)
		need = 2 * b->cap;
	if (need < 4096)
		need = 4096;
	p = realloc(b->p, need);
	if (!p)
		return fail(b, -ENOMEM, "out of memory");
	b->p = p;
	b->cap = need;
	return 0;
}

static void put(struct prom_buf *b, const char *s, size_t n)
{
	if (b->err || reserve(b, n))
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

static void puts_(struct prom_buf *b, const char *s)
{
	put(b, s, strlen(s));
}

static void putf(struct prom_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void putf(struct prom_buf *b, const char *fmt, ...)
{
	char tmp[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	put(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/*
 * The length of the well-formed UTF-8 sequence at s (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF), or 0 if s does not start
 * one. s is NUL-terminated, so a truncated sequence stops at the NUL.
 */
static int utf8_len(const unsigned char *s)
{
	unsigned char lo = 0x80, hi = 0xbf;
	int n;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0; /* a continuation byte, C0/C1 (overlong) or F5..FF */
	/* the second byte's range is what excludes overlongs, surrogates and
	 * code points above U+10FFFF */
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (int i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

/*
 * Label values escape \ " and newline; help text escapes \ and newline.
 * Both must be UTF-8 (a scraper rejects the whole page otherwise), and what
 * we print is not always ours: a process name set with prctl(PR_SET_NAME)
 * is any bytes. Each byte that does not start a well-formed sequence is
 * written as U+FFFD, the replacement character, as Go's
 * strings.ToValidUTF8 and most decoders do, so the rest stays readable.
 */
static void put_escaped(struct prom_buf *b, const char *s, int quotes)
{
	while (*s) {
		int n = utf8_len((const unsigned char *)s);

		if (!n) {
			puts_(b, "\xef\xbf\xbd");
			s++;
			continue;
		}
		if (*s == '\\')
			puts_(b, "\\\\");
		else if (*s == '\n')
			puts_(b, "\\n");
		else if (*s == '"' && quotes)
			puts_(b, "\\\"");
		else
			put(b, s, n);
		s += n;
	}
}

/* The shortest %g spelling that reads back as the same double: 0.0022, not
 * 0.0022000000000000001. */
static void shortest(char *buf, size_t len, double v)
{
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
}

static void put_shortest(struct prom_buf *b, double v)
{
	char tmp[40];

	shortest(tmp, sizeof(tmp), v);
	puts_(b, tmp);
}

/* Values: integers exactly, others round-trip; the format's spellings of
 * the non-finite ones. */
static void put_value(struct prom_buf *b, double v)
{
	if (isnan(v))
		puts_(b, "NaN");
	else if (isinf(v))
		puts_(b, v > 0 ? "+Inf" : "-Inf");
	else if (v == floor(v) && fabs(v) < 9007199254740992.0)
		putf(b, "%.0f", v);
	else
		put_shortest(b, v);
}

int prom_valid_metric_name(const char *s)
{
	if (!s || !*s)
		return 0;
	for (const char *c = s; *c; c++) {
		int alpha =
		    (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_' || *c == ':';

		if (!alpha && !(c > s && *c >= '0' && *c <= '9'))
			return 0;
	}
	return 1;
}

int prom_valid_label_name(const char *s)
{
	if (!s || !*s || !strncmp(s, "__", 2))
		return 0;
	for (const char *c = s; *c; c++) {
		int alpha = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_';

		if (!alpha && !(c > s && *c >= '0' && *c <= '9'))
			return 0;
	}
	return 1;
}

static const char *type_name(enum prom_type t)
{
	static const char *const n[] = { "counter", "gauge", "histogram", "summary", "untyped" };

	return t <= PROM_UNTYPED ? n[t] : NULL;
}

int prom_family(struct prom_buf *b, const char *name, enum prom_type type, const char *help)
{
	if (b->err)
		return b->err;
	if (!prom_valid_metric_name(name) || strlen(name) >= PROM_NAME_LEN)
		return fail(b, -EINVAL, "bad metric name '%s'", name ? name : "(null)");
	if (!type_name(type))
		return fail(b, -EINVAL, "%s: bad type %d", name, (int)type);
	for (int i = 0; i < b->nfam; i++)
		if (!strcmp(b->fam[i], name))
			return fail(b, -EEXIST, "family %s written twice", name);
	if (b->nfam == PROM_MAX_FAMILIES)
		return fail(b, -ENOSPC, "more than %d families", PROM_MAX_FAMILIES);
	strcpy(b->fam[b->nfam++], name);
	b->type = type;
	puts_(b, "# HELP ");
	puts_(b, name);
	puts_(b, " ");
	put_escaped(b, help ? help : "", 0);
	puts_(b, "\n# TYPE ");
	puts_(b, name);
	puts_(b, " ");
	puts_(b, type_name(type));
	puts_(b, "\n");
	return b->err;
}

static int check_labels(struct prom_buf *b, const struct prom_label *l, int nl, const char *extra)
{
	for (int i = 0; i < nl; i++) {
		if (!prom_valid_label_name(l[i].name) || !l[i].value)
			return fail(b, -EINVAL, "%s: bad label '%s'", b->fam[b->nfam - 1],
				    l[i].name ? l[i].name : "(null)");
		if (extra && !strcmp(l[i].name, extra))
			return fail(b, -EINVAL, "%s: label '%s' is reserved here",
				    b->fam[b->nfam - 1], extra);
		for (int j = 0; j < i; j++)
			if (!strcmp(l[i].name, l[j].name))
				return fail(b, -EINVAL, "%s: label '%s' given twice",
					    b->fam[b->nfam - 1], l[i].name);
	}
	return 0;
}

/* name{labels,extra="xv"} value */
static void line(struct prom_buf *b, const char *suffix, const struct prom_label *l, int nl,
		 const char *extra, const char *xv, double v)
{
	int n = 0;

	puts_(b, b->fam[b->nfam - 1]);
	puts_(b, suffix);
	if (nl || extra)
		puts_(b, "{");
	for (int i = 0; i < nl; i++, n++) {
		putf(b, "%s%s=\"", n ? "," : "", l[i].name);
		put_escaped(b, l[i].value, 1);
		puts_(b, "\"");
	}
	if (extra) {
		putf(b, "%s%s=\"", n ? "," : "", extra);
		put_escaped(b, xv, 1);
		puts_(b, "\"");
	}
	if (nl || extra)
		puts_(b, "}");
	puts_(b, " ");
	put_value(b, v);
	puts_(b, "\n");
}

/* want: mask of 1 << enum prom_type */
static int begin(struct prom_buf *b, unsigned int want)
{
	if (b->err)
		return b->err;
	if (!b->nfam)
		return fail(b, -EINVAL, "sample before any family");
	if (!(want & (1u << b->type)))
		return fail(b, -EINVAL, "%s: a %s family takes no such sample", b->fam[b->nfam - 1],
			    type_name(b->type));
	return 0;
}

int prom_sample(struct prom_buf *b, const struct prom_label *l, int nl, double v)
{
	if (begin(b, 1u << PROM_COUNTER | 1u << PROM_GAUGE | 1u << PROM_UNTYPED) ||
	    check_labels(b, l, nl, NULL))
		return b->err;
	if (b->type == PROM_COUNTER && !(v >= 0))
		return fail(b, -EINVAL, "%s: counter value %g", b->fam[b->nfam - 1], v);
	line(b, "", l, nl, NULL, NULL, v);
	return b->err;
}

int prom_histogram(struct prom_buf *b, const struct prom_label *l, int nl, const double *bounds,
		   const uint64_t *counts, int nb, double sum)
{
	uint64_t cum = 0;
	char le[40];

	if (begin(b, 1u << PROM_HISTOGRAM) || check_labels(b, l, nl, "le"))
		return b->err;
	for (int i = 0; i < nb; i++)
		if (!isfinite(bounds[i]) || (i && !(bounds[i] > bounds[i - 1])))
			return fail(b, -EINVAL, "%s: bucket bounds must increase",
				    b->fam[b->nfam - 1]);
	for (int i = 0; i < nb; i++) {
		cum += counts[i];
		shortest(le, sizeof(le), bounds[i]);
		line(b, "_bucket", l, nl, "le", le, (double)cum);
	}
	cum += counts[nb];
	line(b, "_bucket", l, nl, "le", "+Inf", (double)cum);
	line(b, "_sum", l, nl, NULL, NULL, sum);
	line(b, "_count", l, nl, NULL, NULL, (double)cum);
	return b->err;
}

int prom_summary(struct prom_buf *b, const struct prom_label *l, int nl, const double *q,
		 const double *v, int nq, double sum, uint64_t count)
{
	char qs[40];

	if (begin(b, 1u << PROM_SUMMARY) || check_labels(b, l, nl, "quantile"))
		return b->err;
	for (int i = 0; i < nq; i++) {
		if (!(q[i] >= 0 && q[i] <= 1) || (i && !(q[i] > q[i - 1])))
			return fail(b, -EINVAL, "%s: quantiles must increase within [0, 1]",
				    b->fam[b->nfam - 1]);
	}
	for (int i = 0; i < nq; i++) {
		shortest(qs, sizeof(qs), q[i]);
		line(b, "", l, nl, "quantile", qs, v[i]);
	}
	line(b, "_sum", l, nl, NULL, NULL, sum);
	line(b, "_count", l, nl, NULL, NULL, (double)count);
	return b->err;
}
