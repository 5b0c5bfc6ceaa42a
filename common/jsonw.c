// SPDX-License-Identifier: MIT
/*
 * The JSON line writer (see jsonw.h).
 */
#include <math.h>
#include <time.h>

#include "jsonw.h"

static void put_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

static void sep(struct jw *j, const char *key)
{
	if (!j->first[j->depth])
		fputc(',', j->f);
	j->first[j->depth] = false;
	if (key) {
		put_str(j->f, key);
		fputc(':', j->f);
	}
}

void jw_begin(struct jw *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->first[0] = true;
	j->kind[0] = '}';
	fputc('{', f);
}

void jw_end(struct jw *j)
{
	while (j->depth > 0)
		jw_close(j);
	fputs("}\n", j->f);
	fflush(j->f);
}

static void open_(struct jw *j, const char *key, char open, char close)
{
	sep(j, key);
	fputc(open, j->f);
	if (j->depth < JW_DEPTH - 1)
		j->depth++;
	j->first[j->depth] = true;
	j->kind[j->depth] = close;
}

void jw_obj(struct jw *j, const char *key)
{
	open_(j, key, '{', '}');
}

void jw_arr(struct jw *j, const char *key)
{
	open_(j, key, '[', ']');
}

void jw_close(struct jw *j)
{
	if (j->depth == 0)
		return;
	fputc(j->kind[j->depth], j->f);
	j->depth--;
}

void jw_str(struct jw *j, const char *key, const char *val)
{
	sep(j, key);
	if (val)
		put_str(j->f, val);
	else
		fputs("null", j->f);
}

void jw_num(struct jw *j, const char *key, double val, int prec)
{
	sep(j, key);
	if (isfinite(val))
		fprintf(j->f, "%.*f", prec, val);
	else
		fputs("null", j->f);
}

void jw_int(struct jw *j, const char *key, long long val)
{
	sep(j, key);
	fprintf(j->f, "%lld", val);
}

void jw_uint(struct jw *j, const char *key, unsigned long long val)
{
	sep(j, key);
	fprintf(j->f, "%llu", val);
}

void jw_bool(struct jw *j, const char *key, bool val)
{
	sep(j, key);
	fputs(val ? "true" : "false", j->f);
}

void jw_null(struct jw *j, const char *key)
{
	sep(j, key);
	fputs("null", j->f);
}

void jw_time(struct jw *j, const char *key)
{
	struct timespec ts;
	struct tm tm;
	char buf[40];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	sep(j, key);
	fprintf(j->f, "\"%s.%03ldZ\"", buf, ts.tv_nsec / 1000000);
}
