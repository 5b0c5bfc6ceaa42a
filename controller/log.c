// SPDX-License-Identifier: MIT
#include <math.h>

#include "log.h"

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

static void sep(struct log_json *j, const char *key)
{
	if (!j->first[j->depth])
		fputc(',', j->f);
	j->first[j->depth] = false;
	if (key) {
		put_str(j->f, key);
		fputc(':', j->f);
	}
}

void log_json_begin(struct log_json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->first[0] = true;
	j->kind[0] = '}';
	fputc('{', f);
}

void log_json_end(struct log_json *j)
{
	while (j->depth > 0)
		log_json_close(j);
	fputs("}\n", j->f);
	fflush(j->f);
}

static void open_(struct log_json *j, const char *key, char open, char close)
{
	sep(j, key);
	fputc(open, j->f);
	if (j->depth < LOG_DEPTH - 1)
		j->depth++;
	j->first[j->depth] = true;
	j->kind[j->depth] = close;
}

void log_json_obj(struct log_json *j, const char *key)
{
	open_(j, key, '{', '}');
}

void log_json_arr(struct log_json *j, const char *key)
{
	open_(j, key, '[', ']');
}

void log_json_close(struct log_json *j)
{
	if (j->depth == 0)
		return;
	fputc(j->kind[j->depth], j->f);
	j->depth--;
}

void log_json_str(struct log_json *j, const char *key, const char *val)
{
	sep(j, key);
	if (val)
		put_str(j->f, val);
	else
		fputs("null", j->f);
}

void log_json_num(struct log_json *j, const char *key, double val, int prec)
{
	sep(j, key);
	if (isfinite(val))
		fprintf(j->f, "%.*f", prec, val);
	else
		fputs("null", j->f);
}

void log_json_int(struct log_json *j, const char *key, long long val)
{
	sep(j, key);
	fprintf(j->f, "%lld", val);
}

void log_json_bool(struct log_json *j, const char *key, bool val)
{
	sep(j, key);
	fputs(val ? "true" : "false", j->f);
}
