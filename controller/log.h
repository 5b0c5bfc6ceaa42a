/* SPDX-License-Identifier: MIT */
/*
 * The decision log: one JSON object per line (JSONL). A tiny writer that
 * knows commas and string escaping; numbers that are not finite are written
 * as null, so a missing latency never reads as 0.
 */
#ifndef PARTIES_LOG_H
#define PARTIES_LOG_H

#include <stdbool.h>
#include <stdio.h>

#define LOG_DEPTH 8

struct log_json {
	FILE *f;
	int depth;
	bool first[LOG_DEPTH];
	char kind[LOG_DEPTH]; /* closing character of each open level */
};

void log_json_begin(struct log_json *j, FILE *f);	/* { */
void log_json_end(struct log_json *j);			/* }\n and flush */
void log_json_obj(struct log_json *j, const char *key); /* key may be NULL in arrays */
void log_json_arr(struct log_json *j, const char *key);
void log_json_close(struct log_json *j);				 /* } or ] */
void log_json_str(struct log_json *j, const char *key, const char *val); /* NULL: null */
void log_json_num(struct log_json *j, const char *key, double val, int prec);
void log_json_int(struct log_json *j, const char *key, long long val);
void log_json_bool(struct log_json *j, const char *key, bool val);

#endif /* PARTIES_LOG_H */
