/* SPDX-License-Identifier: MIT */
/*
 * One small JSON writer for every JSON line the project prints: the parties
 * decision log (controller/log.h wraps it), `ebee trace --json`, the load
 * generator's --json summary. It knows commas, nesting and string escaping;
 * numbers that are not finite are written as null, so a missing latency
 * never reads as 0.
 */
#ifndef JSONW_H
#define JSONW_H

#include <stdbool.h>
#include <stdio.h>

#define JW_DEPTH 8

struct jw {
	FILE *f;
	int depth;
	bool first[JW_DEPTH];
	char kind[JW_DEPTH]; /* closing character of each open level */
};

void jw_begin(struct jw *j, FILE *f);	    /* { */
void jw_end(struct jw *j);		    /* closes what is open, }\n, flush */
void jw_obj(struct jw *j, const char *key); /* key NULL inside arrays */
void jw_arr(struct jw *j, const char *key);
void jw_close(struct jw *j);					  /* } or ] */
void jw_str(struct jw *j, const char *key, const char *val);	  /* NULL: null */
void jw_num(struct jw *j, const char *key, double val, int prec); /* fixed decimals */
void jw_int(struct jw *j, const char *key, long long val);
void jw_uint(struct jw *j, const char *key, unsigned long long val);
void jw_bool(struct jw *j, const char *key, bool val);
void jw_null(struct jw *j, const char *key);
/* The wall clock as RFC 3339 UTC with milliseconds: "2026-11-30T18:55:53.123Z". */
void jw_time(struct jw *j, const char *key);

#endif /* JSONW_H */
