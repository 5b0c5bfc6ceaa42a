// SPDX-License-Identifier: MIT
/* HTTP/1.1 and memcached text protocol: builders and incremental parsers (see proto.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proto.h"

int http_build_get(char *buf, size_t len, const char *path, int port, bool keepalive)
{
	int n = snprintf(buf, len, "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%s\r\n", path, port,
			 keepalive ? "" : "Connection: close\r\n");

	return n < 0 || (size_t)n >= len ? -1 : n;
}

enum lg_parse http_parse_response(const char *buf, size_t len, size_t *consumed, int *status)
{
	const char *end = memmem(buf, len, "\r\n\r\n", 4);
	const char *p = buf;
	size_t hdr, clen = 0;
	bool have_len = false;

	if (!end)
		return len > 65536 ? LG_BAD : LG_MORE;
	hdr = end + 4 - buf;
	if (len < 12 || memcmp(buf, "HTTP/1.", 7))
		return LG_BAD;
	*status = atoi(buf + 9);
	/* Header lines: find Content-Length (case-insensitive), inside the header only. */
	while (p < end) {
		const char *eol = memmem(p, end + 2 - p, "\r\n", 2);

		if (!eol)
			break;
		if (eol - p > 15 && !strncasecmp(p, "Content-Length:", 15)) {
			char *e;

			clen = strtoul(p + 15, &e, 10);
			have_len = true;
		}
		p = eol + 2;
	}
	if (!have_len)
		return LG_BAD; /* every server here sends one; chunked is not supported */
	if (len - hdr < clen)
		return LG_MORE;
	*consumed = hdr + clen;
	return LG_DONE;
}

int mc_build_get(char *buf, size_t len, const char *key)
{
	int n = snprintf(buf, len, "get %s\r\n", key);

	return n < 0 || (size_t)n >= len ? -1 : n;
}

int mc_build_set(char *buf, size_t len, const char *key, const char *value, size_t vlen)
{
	int n = snprintf(buf, len, "set %s 0 0 %zu\r\n", key, vlen);

	if (n < 0 || (size_t)n + vlen + 2 > len)
		return -1;
	memcpy(buf + n, value, vlen);
	memcpy(buf + n + vlen, "\r\n", 2);
	return n + (int)vlen + 2;
}

enum lg_parse mc_parse_reply(const char *buf, size_t len, bool is_get, size_t *consumed, bool *ok,
			     bool *hit)
{
	const char *eol = memmem(buf, len, "\r\n", 2);
	size_t line;

	*hit = false;
	if (!eol)
		return len > 4096 ? LG_BAD : LG_MORE;
	line = eol + 2 - buf;
	if (is_get && line >= 6 && !memcmp(buf, "VALUE ", 6)) {
		/* VALUE <key> <flags> <bytes> [<cas>]\r\n<data>\r\nEND\r\n */
		const char *p = buf + 6, *sp;
		unsigned long bytes;
		size_t need;
		char *e;

		sp = memchr(p, ' ', eol - p); /* after the key */
		if (!sp)
			return LG_BAD;
		sp = memchr(sp + 1, ' ', eol - sp - 1); /* after the flags */
		if (!sp)
			return LG_BAD;
		bytes = strtoul(sp + 1, &e, 10);
		if (e == sp + 1)
			return LG_BAD;
		need = line + bytes + 2 + 5;
		if (len < need)
			return LG_MORE;
		if (memcmp(buf + line + bytes, "\r\nEND\r\n", 7))
			return LG_BAD;
		*consumed = need;
		*ok = *hit = true;
		return LG_DONE;
	}
	*consumed = line;
	if (is_get)
		*ok = line == 5 && !memcmp(buf, "END\r\n", 5);
	else
		*ok = line == 8 && !memcmp(buf, "STORED\r\n", 8);
	return LG_DONE;
}
