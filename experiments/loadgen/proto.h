/* SPDX-License-Identifier: MIT */
/*
 * Request builders and incremental reply parsers for the protocols the load generator speaks:
 * HTTP/1.1 GET and the memcached text protocol (get, set). Parsers look at the bytes received
 * so far and say whether one complete reply is there; no I/O.
 */
#ifndef LG_PROTO_H
#define LG_PROTO_H

#include <stdbool.h>
#include <stddef.h>

enum lg_proto {
	LG_HTTP,
	LG_MEMCACHED,
};

/* Result of a parser: a complete reply, not yet, or garbage (close the connection). */
enum lg_parse {
	LG_MORE = 0,
	LG_DONE = 1,
	LG_BAD = -1,
};

/* "GET path HTTP/1.1" with Host and, unless keepalive, "Connection: close". */
int http_build_get(char *buf, size_t len, const char *path, int port, bool keepalive);

/*
 * One HTTP response at the start of buf[0..len): LG_DONE with *consumed = its size and
 * *status its status code once headers and the Content-Length body are there.
 */
enum lg_parse http_parse_response(const char *buf, size_t len, size_t *consumed, int *status);

/* "get KEY\r\n". Returns the length, or -1 if it does not fit. */
int mc_build_get(char *buf, size_t len, const char *key);

/* "set KEY 0 0 N\r\n" + N bytes of value + "\r\n". Returns the length, or -1. */
int mc_build_set(char *buf, size_t len, const char *key, const char *value, size_t n);

/*
 * One reply to a get (END, or VALUE ... data END) or a set (STORED). *ok is false for an
 * error reply (ERROR, CLIENT_ERROR, SERVER_ERROR, NOT_STORED, ...), which still completes the
 * request; *hit tells a get hit from a miss.
 */
enum lg_parse mc_parse_reply(const char *buf, size_t len, bool is_get, size_t *consumed, bool *ok,
			     bool *hit);

#endif
