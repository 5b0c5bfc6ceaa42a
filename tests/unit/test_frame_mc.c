// SPDX-License-Identifier: MIT
/*
 * The memcached framers (bpf/frame/mctext.h, bpf/frame/mcbin.h), the code the
 * kernel runs, fed byte strings through the registry's driver. Every stream
 * is also fed cut in two at every byte, and in three at every pair of cuts
 * for the short ones, as TCP may cut it: the counts must not change.
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
#include "frame/mctext.h"
#include "../../metrics/src/warn.h"

struct want {
	uint64_t starts, ends, unanswered;
	bool err;
	uint32_t bits; /* head_bits after */
};

/* Feed s (len bytes) cut at c1 <= c2. */
static struct ebee_frame_counts feed3(int fr, const uint8_t *s, size_t len, int resp, size_t c1,
				      size_t c2, uint32_t *bits)
{
	const struct ebee_frame_ops *o = ebee_frame_get(fr);
	struct ebee_frame_counts n = { 0 };
	struct ebee_fdir d = { 0 };

	assert_int_equal(ebee_frame_feed(o, &d, s, c1, resp, bits, &n), 0);
	assert_int_equal(ebee_frame_feed(o, &d, s + c1, c2 - c1, resp, bits, &n), 0);
	assert_int_equal(ebee_frame_feed(o, &d, s + c2, len - c2, resp, bits, &n), 0);
	/* What the kernel's walk takes (d->unans) is what the events say. */
	assert_int_equal(d.unans, n.unanswered);
	return n;
}

static void check(int fr, const uint8_t *s, size_t len, int resp, size_t c1, size_t c2,
		  const struct want *w)
{
	uint32_t bits = 0;
	struct ebee_frame_counts n = feed3(fr, s, len, resp, c1, c2, &bits);

	if (n.starts != w->starts || n.ends != w->ends || n.unanswered != w->unanswered ||
	    n.err != w->err || bits != w->bits)
		fail_msg("cuts %zu %zu of %zu bytes: starts %llu ends %llu unanswered %llu err %d "
			 "bits %u, want %llu %llu %llu %d %u",
			 c1, c2, len, (unsigned long long)n.starts, (unsigned long long)n.ends,
			 (unsigned long long)n.unanswered, n.err, bits,
			 (unsigned long long)w->starts, (unsigned long long)w->ends,
			 (unsigned long long)w->unanswered, w->err, w->bits);
}

/* The counts of len bytes at s, the same at every cut (every pair of cuts
 * up to 300 bytes). */
static void expect_n(int fr, const void *s, size_t len, int resp, struct want w)
{
	for (size_t c1 = 0; c1 <= len; c1++) {
		if (len > 300) {
			check(fr, s, len, resp, c1, c1, &w);
			continue;
		}
		for (size_t c2 = c1; c2 <= len; c2++)
			check(fr, s, len, resp, c1, c2, &w);
	}
}

static void expect(int fr, const char *s, int resp, struct want w)
{
	expect_n(fr, s, strlen(s), resp, w);
}

#define REQ(s, st, un) expect(EBEE_FRAME_MCTEXT, s, 0, (struct want){ st, 0, un, false, 0 })
#define RSP(s, en)     expect(EBEE_FRAME_MCTEXT, s, 1, (struct want){ 0, en, 0, false, 0 })

static void test_detect(void **state)
{
	static const struct {
		const char *b;
		int fr;
	} cases[] = {
		{ "get k\r\n", EBEE_FRAME_MCTEXT },
		{ "gets k1 k2\r\n", EBEE_FRAME_MCTEXT },
		{ "gat 10 k\r\n", EBEE_FRAME_MCTEXT },
		{ "set k 0 0 1\r\n", EBEE_FRAME_MCTEXT },
		{ "cas k 0 0 1 5\r\n", EBEE_FRAME_MCTEXT },
		{ "replace k 0 0 1\r\n", EBEE_FRAME_MCTEXT },
		{ "append k 0 0 1\r\n", EBEE_FRAME_MCTEXT },
		{ "prepend k 0 0 1\r\n", EBEE_FRAME_MCTEXT },
		{ "delete k\r\n", EBEE_FRAME_MCTEXT },
		{ "incr k 1\r\n", EBEE_FRAME_MCTEXT },
		{ "decr k 1\r\n", EBEE_FRAME_MCTEXT },
		{ "touch k 10\r\n", EBEE_FRAME_MCTEXT },
		{ "stats\r\n", EBEE_FRAME_MCTEXT },
		{ "stats slabs\r\n", EBEE_FRAME_MCTEXT },
		{ "version\r\n", EBEE_FRAME_MCTEXT },
		{ "flush_all\r\n", EBEE_FRAME_MCTEXT },
		{ "verbosity 1\r\n", EBEE_FRAME_MCTEXT },
		{ "mg k v\r\n", EBEE_FRAME_MCTEXT },
		{ "ms k 2 T0\r\n", EBEE_FRAME_MCTEXT },
		{ "md k\r\n", EBEE_FRAME_MCTEXT },
		{ "ma k\r\n", EBEE_FRAME_MCTEXT },
		{ "mn\r\n", EBEE_FRAME_MCTEXT },
		{ "me k\r\n", EBEE_FRAME_MCTEXT },
		{ "\x80\x00\x00\x01", EBEE_FRAME_MCBIN },
		/* HTTP stays HTTP: its methods are uppercase. */
		{ "GET / HTTP/1.1\r\n", EBEE_FRAME_HTTP1 },
		{ "DELETE /k HTTP/1.1", EBEE_FRAME_HTTP1 },
		/* Lowercase words that are no memcached command. */
		{ "getaway\r\n", EBEE_FRAME_LENGTH },
		{ "hello world\r\n", EBEE_FRAME_LENGTH },
		{ "settings\r\n", EBEE_FRAME_LENGTH },
		{ "mget k\r\n", EBEE_FRAME_LENGTH },
		{ "statistics\r\n", EBEE_FRAME_LENGTH },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int fr = ebee_frame_detect((const uint8_t *)cases[i].b, strlen(cases[i].b));

		if (fr != cases[i].fr)
			fail_msg("\"%s\": framer %d, want %d", cases[i].b, fr, cases[i].fr);
	}
	assert_string_equal(ebee_frame_name(EBEE_FRAME_MCTEXT), "memcache");
	assert_string_equal(ebee_frame_name(EBEE_FRAME_MCBIN), "memcache-binary");
	assert_null(ebee_frame_get(EBEE_FRAME_MCBIN)->reasons); /* mctext's: test_check */
	/* Resynchronisation: a command word, a response word, a magic. */
	assert_true(ebee_frame_may_start(EBEE_FRAME_MCTEXT, 0, 'g'));
	assert_false(ebee_frame_may_start(EBEE_FRAME_MCTEXT, 0, 'G'));
	assert_true(ebee_frame_may_start(EBEE_FRAME_MCTEXT, 1, 'V'));
	assert_false(ebee_frame_may_start(EBEE_FRAME_MCTEXT, 1, '\r'));
	assert_true(ebee_frame_may_start(EBEE_FRAME_MCBIN, 0, 0x80));
	assert_false(ebee_frame_may_start(EBEE_FRAME_MCBIN, 0, 0x81));
	assert_true(ebee_frame_may_start(EBEE_FRAME_MCBIN, 1, 0x81));
}

static void test_text_gets(void **state)
{
	/* Pipelined gets, one response each: hits and misses. */
	REQ("get a\r\nget b\r\nget c\r\n", 3, 0);
	RSP("VALUE a 0 3\r\nabc\r\nEND\r\nEND\r\nVALUE c 5 1\r\nx\r\nEND\r\n", 3);
	/* Multi-key get: one request, one response of several VALUE blocks. */
	REQ("get k1 k2 k3\r\ngets k1\r\n", 2, 0);
	RSP("VALUE k1 0 2\r\nv1\r\nVALUE k3 0 2 17\r\nv3\r\nEND\r\n"
	    "VALUE k1 0 2 42\r\nv1\r\nEND\r\n",
	    2);
	/* Data that looks like responses is data: skipped, not parsed. */
	RSP("VALUE k 0 9\r\n\r\nEND\r\nxx\r\nEND\r\n", 1);
	RSP("VALUE k 0 0\r\n\r\nEND\r\n", 1);
	/* LF alone ends a line too. */
	REQ("get a\nget b\n", 2, 0);
	/* A line that does not parse: a data block's missing CRLF. */
	expect(EBEE_FRAME_MCTEXT, "VALUE k 0 2\r\nabc\r\nEND\r\n", 1,
	       (struct want){ 0, 0, 0, true, 0 });
	expect(EBEE_FRAME_MCTEXT, "VALUE k 0 x\r\n", 1, (struct want){ 0, 0, 0, true, 0 });
}

static void test_text_storage(void **state)
{
	/* A data block holding what looks like commands and responses is
	 * skipped: one request each. */
	REQ("set k 0 0 10\r\n\r\nEND\r\nget\r\n"
	    "add k2 5 100 3\r\nxyz\r\n"
	    "cas k 0 0 7 12345\r\nget a\r\n\r\n"
	    "append k 0 0 2\r\nab\r\nprepend k 0 0 2\r\nab\r\nreplace k 0 0 0\r\n\r\n",
	    6, 0);
	RSP("STORED\r\nNOT_STORED\r\nEXISTS\r\nNOT_FOUND\r\nSTORED\r\nSTORED\r\n", 6);
	/* noreply: no response will come; its data still skipped. */
	REQ("set k 0 0 7 noreply\r\nget k\r\n\r\nset k 0 0 1\r\nx\r\n", 1, 1);
	REQ("delete k noreply\r\nincr n 1 noreply\r\ndecr n 1 noreply\r\ntouch k 1 noreply\r\n"
	    "flush_all noreply\r\nverbosity 1 noreply\r\ndelete k\r\n",
	    1, 6);
	/* A key named noreply is a key where noreply does not apply. */
	REQ("get noreply\r\ngets a noreply\r\n", 2, 0);
	/* quit: the server closes, no answer. */
	REQ("get a\r\nquit\r\n", 1, 1);
	/* The length token is not a number: lost. */
	expect(EBEE_FRAME_MCTEXT, "set k 0 0 1x\r\nx\r\n", 0, (struct want){ 0, 0, 0, true, 0 });
	/* The data block is not followed by its CRLF: lost. */
	expect(EBEE_FRAME_MCTEXT, "set k 0 0 1\r\nxx\r\n", 0, (struct want){ 1, 0, 0, true, 0 });
}

static void test_text_others(void **state)
{
	REQ("incr n 5\r\ndecr n 100\r\ndelete k\r\ntouch k 10\r\nversion\r\nverbosity 1\r\n"
	    "flush_all\r\nstats\r\nstats slabs\r\nbogus\r\n",
	    10, 0);
	RSP("6\r\n0\r\nDELETED\r\nTOUCHED\r\nVERSION 1.6.18\r\nOK\r\nOK\r\n"
	    "STAT pid 1\r\nSTAT uptime 2\r\nSTAT version 1.6.18\r\nEND\r\n"
	    "STAT 1:chunk_size 96\r\nSTAT active_slabs 1\r\nEND\r\nERROR\r\n",
	    10);
	RSP("CLIENT_ERROR bad data chunk\r\nSERVER_ERROR out of memory storing object\r\n"
	    "ERROR\r\nNOT_FOUND\r\n",
	    4);
	/* Blank lines between commands are nothing. */
	REQ("\r\nget a\r\n\r\n", 1, 0);
}

static void test_text_meta(void **state)
{
	/* mg, ms (its data skipped), md, ma, mn, me: one response each. */
	REQ("mg k v f t\r\nms k 11 T0 F5\r\n\r\nEND\r\nmn\r\n\r\nmd k\r\nma n D2\r\nmn\r\nme k\r\n",
	    6, 0);
	RSP("VA 3 f0 t-1\r\nabc\r\nHD\r\nNF\r\nHD\r\nMN\r\nME k exp=-1 la=1 cas=2\r\n", 6);
	/* Miss, not stored, exists, a VA holding what looks like lines. */
	RSP("EN\r\nNS\r\nEX\r\nVA 6\r\nHD\r\nEN\r\nVA 0\r\n\r\n", 5);
	/* Quiet mode (q): answered only sometimes; unanswered, and flagged. */
	expect(EBEE_FRAME_MCTEXT, "mg k1 v q\r\nmg k2 v q\r\nms k 1 q\r\nx\r\nmn\r\n", 0,
	       (struct want){ 1, 0, 3, false, EBEE_MC_QUIET });
	/* A key named q is no flag; noreply is no meta flag. */
	REQ("mg q v\r\nmd k noreply\r\n", 2, 0);
	/* The datalen of ms is a number. */
	expect(EBEE_FRAME_MCTEXT, "ms k T0\r\n", 0, (struct want){ 0, 0, 0, true, 0 });
}

/* A binary header: magic, opcode, key length, extras length, body length;
 * the body (zeros) after it. Returns the bytes written. */
static size_t bin(uint8_t *p, uint8_t magic, uint8_t op, uint16_t klen, uint8_t elen, uint32_t blen)
{
	memset(p, 0, 24 + blen);
	p[0] = magic;
	p[1] = op;
	p[2] = klen >> 8;
	p[3] = klen;
	p[4] = elen;
	p[8] = blen >> 24;
	p[9] = blen >> 16;
	p[10] = blen >> 8;
	p[11] = blen;
	/* The body holds a response's magic where a header would be, and
	 * data: skipped, never parsed. */
	if (blen)
		p[24] = magic ^ 1;
	return 24 + blen;
}

static void test_binary(void **state)
{
	uint8_t b[4096];
	size_t n = 0;

	/* set, get, getq (a miss: no response), getq (a hit), noop. */
	n += bin(b + n, 0x80, 0x01, 1, 8, 8 + 1 + 5); /* SET */
	n += bin(b + n, 0x80, 0x00, 1, 0, 1);	      /* GET */
	n += bin(b + n, 0x80, 0x09, 1, 0, 1);	      /* GETQ */
	n += bin(b + n, 0x80, 0x09, 1, 0, 1);	      /* GETQ */
	n += bin(b + n, 0x80, 0x11, 1, 8, 8 + 1 + 2); /* SETQ */
	n += bin(b + n, 0x80, 0x0a, 0, 0, 0);	      /* NOOP */
	expect_n(EBEE_FRAME_MCBIN, b, n, 0, (struct want){ 3, 0, 3, false, 0 });

	n = 0;
	n += bin(b + n, 0x81, 0x01, 0, 0, 0);	  /* SET: stored */
	n += bin(b + n, 0x81, 0x00, 0, 4, 4 + 5); /* GET: a hit */
	n += bin(b + n, 0x81, 0x09, 0, 4, 4 + 5); /* GETQ's hit: not paired */
	n += bin(b + n, 0x81, 0x0a, 0, 0, 0);	  /* NOOP */
	expect_n(EBEE_FRAME_MCBIN, b, n, 1, (struct want){ 0, 3, 0, false, 0 });

	/* STAT: one packet per statistic, the empty one ends it. */
	n = bin(b, 0x80, 0x10, 0, 0, 0);
	expect_n(EBEE_FRAME_MCBIN, b, n, 0, (struct want){ 1, 0, 0, false, 0 });
	n = 0;
	n += bin(b + n, 0x81, 0x10, 3, 0, 3 + 4);
	n += bin(b + n, 0x81, 0x10, 6, 0, 6 + 2);
	n += bin(b + n, 0x81, 0x10, 0, 0, 0);
	expect_n(EBEE_FRAME_MCBIN, b, n, 1, (struct want){ 0, 1, 0, false, 0 });
	/* An unknown statistics group: an error, with a body, ends it. */
	n = bin(b, 0x81, 0x10, 0, 0, 9);
	b[7] = 0x01; /* status: key not found */
	expect_n(EBEE_FRAME_MCBIN, b, n, 1, (struct want){ 0, 1, 0, false, 0 });
	n = 0;
	n += bin(b + n, 0x81, 0x10, 3, 0, 3 + 4);
	b[6] = 0x00; /* status 0 */
	n += bin(b + n, 0x81, 0x10, 0, 0, 0);
	expect_n(EBEE_FRAME_MCBIN, b, n, 1, (struct want){ 0, 1, 0, false, 0 });

	/* Every quiet opcode gets no START. */
	static const uint8_t quiet[] = { 0x09, 0x0d, 0x11, 0x12, 0x13, 0x14, 0x15,
					 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1e, 0x24 };
	n = 0;
	for (size_t i = 0; i < sizeof(quiet); i++)
		n += bin(b + n, 0x80, quiet[i], 1, 0, 1);
	for (int op = 0; op < 0x30; op++)
		if (!memchr(quiet, op, sizeof(quiet)))
			n += bin(b + n, 0x80, op, 0, 0, 0);
	expect_n(EBEE_FRAME_MCBIN, b, n, 0,
		 (struct want){ 0x30 - sizeof(quiet), 0, sizeof(quiet), false, 0 });

	/* A large body is skipped whole, split anywhere. */
	static uint8_t big[24 + 100000];

	n = bin(big, 0x81, 0x00, 0, 4, 100000);
	expect_n(EBEE_FRAME_MCBIN, big, n, 1, (struct want){ 0, 1, 0, false, 0 });

	/* A wrong magic loses sync: a response's magic on the client side, a
	 * text command. */
	n = bin(b, 0x80, 0x00, 1, 0, 1);
	n += bin(b + n, 0x81, 0x00, 1, 0, 1);
	expect_n(EBEE_FRAME_MCBIN, b, n, 0, (struct want){ 1, 0, 0, true, 0 });
	expect(EBEE_FRAME_MCBIN, "get k\r\n", 0, (struct want){ 0, 0, 0, true, 0 });
	n = bin(b, 0x80, 0x00, 0, 0, 0);
	expect_n(EBEE_FRAME_MCBIN, b, n, 1, (struct want){ 0, 0, 0, true, 0 });
}

/* What user space says of a workload's counters (metrics/src/warn.c). */
static void test_check(void **state)
{
	struct ebee_fstat f = { 0 };
	struct ebee_warns ws = {};

	f.conns[EBEE_FRAME_MCTEXT] = 3;
	ebee_warns_framing(&ws, &f);
	assert_int_equal(ws.on, 0);
	f.unanswered = 5; /* informational: no warning */
	f.conns[EBEE_FRAME_MCBIN] = 1;
	ebee_warns_framing(&ws, &f);
	assert_int_equal(ws.on, 0);
	f.mc_quiet = 2;
	ebee_warns_framing(&ws, &f);
	assert_int_equal(ws.on, 1ull << EBEE_WARN_MC_QUIET);
	assert_int_equal(ws.count[EBEE_WARN_MC_QUIET], 2);
	assert_string_equal(ebee_warns_text(&ws, EBEE_WARN_MC_QUIET),
			    "memcache on 3 connection(s): 2 of them sent meta commands in quiet "
			    "mode (q flag), answered only sometimes: responses may pair with the "
			    "wrong requests");
	ebee_warns_free(&ws);
	/* Only where the framer is in use. */
	f.conns[EBEE_FRAME_MCTEXT] = 0;
	ebee_warns_framing(&ws, &f);
	assert_int_equal(ws.on, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_detect),	     cmocka_unit_test(test_text_gets),
		cmocka_unit_test(test_text_storage), cmocka_unit_test(test_text_others),
		cmocka_unit_test(test_text_meta),    cmocka_unit_test(test_binary),
		cmocka_unit_test(test_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
