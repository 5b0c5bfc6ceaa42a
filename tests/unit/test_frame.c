// SPDX-License-Identifier: MIT
/*
 * The framers' parsers (the headers of bpf/frame/), the very code the kernel runs on a
 * connection's bytes, fed byte strings through the registry's driver
 * (metrics/src/frame/). Every message is also fed split at every byte
 * boundary, as TCP may cut it: the counts must not change.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "../../metrics/src/frame/frame_ops.h"

/* Feed s in two pieces cut at `cut` (the whole when cut >= len). */
static struct ebee_frame_counts feed2(int fr, const char *s, size_t len, int resp, size_t cut,
				      uint32_t *head_bits)
{
	const struct ebee_frame_ops *o = ebee_frame_get(fr);
	struct ebee_frame_counts n = { 0 };
	struct ebee_fdir d = { 0 };

	if (cut > len)
		cut = len;
	assert_int_equal(ebee_frame_feed(o, &d, (const uint8_t *)s, cut, resp, head_bits, &n), 0);
	assert_int_equal(
	    ebee_frame_feed(o, &d, (const uint8_t *)s + cut, len - cut, resp, head_bits, &n), 0);
	return n;
}

/* The counts of s, checked the same at every cut. */
static void expect(int fr, const char *s, int resp, uint64_t starts, uint64_t ends, bool err,
		   uint32_t head_bits)
{
	size_t len = strlen(s);

	for (size_t cut = 0; cut <= len; cut++) {
		uint32_t hb = head_bits;
		struct ebee_frame_counts n = feed2(fr, s, len, resp, cut, &hb);

		if (n.starts != starts || n.ends != ends || n.err != err)
			fail_msg(
			    "cut %zu of \"%s\": starts %llu ends %llu err %d, want %llu %llu %d",
			    cut, s, (unsigned long long)n.starts, (unsigned long long)n.ends, n.err,
			    (unsigned long long)starts, (unsigned long long)ends, err);
	}
}

static void test_detect(void **state)
{
	static const struct {
		const char *b;
		size_t n;
		int fr;
	} cases[] = {
		{ "*1\r\n$4\r\nPING\r\n", 14, EBEE_FRAME_RESP },
		{ "GET / HTTP/1.1\r\n", 16, EBEE_FRAME_HTTP1 },
		{ "POST /x HTTP/1.1", 16, EBEE_FRAME_HTTP1 },
		{ "HEAD / HTTP/1.0", 15, EBEE_FRAME_HTTP1 },
		{ "DELETE /k", 9, EBEE_FRAME_HTTP1 },
		{ "PRI * HTTP/2.0\r\n", 16, EBEE_FRAME_HTTP2 },
		{ "\x16\x03\x01\x02\x00", 5, EBEE_FRAME_TLS },
		{ "get k\r\n", 7, EBEE_FRAME_MCTEXT }, /* memcached text: test_frame_mc.c */
		{ "\x16\x03\x07", 3, EBEE_FRAME_LENGTH },
		{ "GE", 2, EBEE_FRAME_LENGTH },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(ebee_frame_detect((const uint8_t *)cases[i].b, cases[i].n),
				 cases[i].fr);
	assert_string_equal(ebee_frame_name(EBEE_FRAME_RESP), "resp");
	assert_string_equal(ebee_frame_name(EBEE_FRAME_HTTP1), "http1");
	assert_string_equal(ebee_frame_name(EBEE_FRAME_NONE), "");
	assert_null(ebee_frame_get(EBEE_FRAME_RESP)->reasons);
	assert_null(ebee_frame_get(EBEE_FRAME_HTTP2)->reasons); /* framed: test_frame_http2.c */
	assert_non_null(
	    ebee_frame_get(EBEE_FRAME_TLS)->reasons); /* by its counters: test_frame_tls.c */
	assert_null(ebee_frame_get(EBEE_FRAME_MAX));
}

static void test_resp_pipelined_commands(void **state)
{
	/* redis-benchmark -P 3 style: three commands in one write. */
	expect(EBEE_FRAME_RESP,
	       "*3\r\n$3\r\nSET\r\n$16\r\nkey:__rand_int__\r\n$3\r\nxxx\r\n"
	       "*2\r\n$3\r\nGET\r\n$16\r\nkey:__rand_int__\r\n"
	       "*1\r\n$4\r\nPING\r\n",
	       0, 3, 0, false, 0);
	/* A payload holding what looks like a command is payload. */
	expect(EBEE_FRAME_RESP, "*2\r\n$3\r\nGET\r\n$14\r\n*1\r\n$4\r\nPING\r\n\r\n", 0, 1, 0,
	       false, 0);
	/* Inline commands (redis-cli without RESP, telnet). */
	expect(EBEE_FRAME_RESP, "PING\r\nPING\r\n", 0, 2, 0, false, 0);
	/* Not RESP after all: out of sync. */
	expect(EBEE_FRAME_RESP, "*2\r\nxx\r\n", 0, 1, 0, true, 0);
}

static void test_resp_replies(void **state)
{
	expect(EBEE_FRAME_RESP, "+OK\r\n$3\r\nabc\r\n:42\r\n-ERR no\r\n$-1\r\n*-1\r\n*0\r\n", 1, 0,
	       7, false, 0);
	/* LRANGE: one array of bulk strings is one reply, nested arrays too. */
	expect(EBEE_FRAME_RESP, "*3\r\n$1\r\na\r\n$2\r\nbb\r\n$0\r\n\r\n", 1, 0, 1, false, 0);
	expect(EBEE_FRAME_RESP, "*2\r\n*2\r\n:1\r\n:2\r\n*1\r\n$1\r\nx\r\n+OK\r\n", 1, 0, 2, false,
	       0);
	/* RESP3: a map counts two elements a pair; a push is no reply. */
	expect(EBEE_FRAME_RESP, "%1\r\n+k\r\n:1\r\n>2\r\n+message\r\n+x\r\n_\r\n", 1, 0, 2, false,
	       0);
	/* Deeper than followed: out of sync, said so. */
	expect(EBEE_FRAME_RESP, "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", 1, 0, 0, true, 0);
}

static void test_http_pipelined_requests(void **state)
{
	expect(EBEE_FRAME_HTTP1,
	       "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
	       "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\n"
	       "GET / HTTP/1.1\r\n\r\nxx"
	       "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
	       "4\r\nGET \r\n0\r\nX-Trailer: 1\r\n\r\n"
	       "HEAD /d HTTP/1.1\r\ncontent-LENGTH: 0\r\n\r\n",
	       0, 4, 0, false, 0);
}

static void test_http_responses(void **state)
{
	uint32_t hb = 0;
	const char *reqs = "GET / HTTP/1.1\r\n\r\nHEAD / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n";
	struct ebee_frame_counts n = feed2(EBEE_FRAME_HTTP1, reqs, strlen(reqs), 0, 0, &hb);

	assert_int_equal(n.starts, 3);
	assert_int_equal(hb, 2); /* the second is a HEAD */
	/* The HEAD's response says Content-Length: 3 and has no body. */
	expect(EBEE_FRAME_HTTP1,
	       "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n"
	       "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n"
	       "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n",
	       1, 0, 3, false, hb);
	/* Interim 100 is not the response; 204 and 304 have no body; chunked
	 * with chunk extensions and trailers. */
	expect(EBEE_FRAME_HTTP1,
	       "HTTP/1.1 100 Continue\r\n\r\n"
	       "HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n"
	       "HTTP/1.1 304 Not Modified\r\n\r\n"
	       "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
	       "a;ext=1\r\n0123456789\r\n3\r\nabc\r\n0\r\nX-T: y\r\n\r\n",
	       1, 0, 3, false, 0);
	/* A body read until the server closes has no end in the bytes. */
	expect(EBEE_FRAME_HTTP1, "HTTP/1.0 200 OK\r\n\r\nbody", 1, 0, 0, false, 0);
	/* Not a status line: out of sync. */
	expect(EBEE_FRAME_HTTP1, "xTTP/1.1 200 OK\r\n\r\n", 1, 0, 0, true, 0);
}

static void test_skip_large_bodies(void **state)
{
	/* A 1 MB body costs one step, split anywhere. */
	static char buf[(1 << 20) + 128];
	const struct ebee_frame_ops *o = ebee_frame_get(EBEE_FRAME_HTTP1);
	struct ebee_frame_counts n = { 0 };
	struct ebee_fdir d = { 0 };
	uint32_t hb = 0;
	int h =
	    snprintf(buf, sizeof(buf), "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", 1 << 20);

	memset(buf + h, 'G', 1 << 20);
	for (size_t off = 0, step = 65536; off < (size_t)h + (1 << 20); off += step) {
		size_t k = (size_t)h + (1 << 20) - off < step ? (size_t)h + (1 << 20) - off : step;

		ebee_frame_feed(o, &d, (const uint8_t *)buf + off, k, 1, &hb, &n);
		if (off + k < (size_t)h + (1 << 20))
			assert_int_equal(n.ends, 0);
	}
	assert_int_equal(n.ends, 1);
	assert_false(n.err);
	assert_int_equal(ebee_frame_feed(ebee_frame_get(EBEE_FRAME_LENGTH), &d,
					 (const uint8_t *)"x", 1, 0, &hb, &n),
			 -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_detect),
		cmocka_unit_test(test_resp_pipelined_commands),
		cmocka_unit_test(test_resp_replies),
		cmocka_unit_test(test_http_pipelined_requests),
		cmocka_unit_test(test_http_responses),
		cmocka_unit_test(test_skip_large_bodies),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
