// SPDX-License-Identifier: MIT
/*
 * The TLS record framer (bpf/frame/tls.h), the very parser the kernel runs,
 * fed whole conversations: both directions, in the order they were on the
 * wire, every flight also cut at every byte offset (a record split across
 * segments anywhere). Hellos built here field by field, and TLS 1.2 and 1.3
 * conversations captured from openssl s_server and s_client
 * (tls_captures.h, made by tests/lib/tls_capture.py).
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
#include "../../metrics/src/warn.h"
#include "../../bpf/frame/tls.h"
#include "tls_captures.h"

/* A conversation being built: flights, each one direction's bytes. */
#define MAXF 64
struct conv {
	uint8_t buf[1 << 17];
	size_t len;
	struct {
		size_t off, len;
		int resp;
	} fl[MAXF];
	int nfl;
};

/* What the framer found in a conversation. */
struct seen {
	uint64_t starts; /* client: requests begun */
	uint64_t overs;	 /* client: responses over (END on the client side) */
	uint64_t recs;	 /* server: response records (END on the server side) */
	bool err;
	uint32_t bits;
};

/* The server's byte of the shared word. */
static uint8_t sbyte(uint32_t bits)
{
	return ((const uint8_t *)&bits)[1];
}

static void put(struct conv *cv, const void *p, size_t n)
{
	assert_true(cv->len + n <= sizeof(cv->buf));
	memcpy(cv->buf + cv->len, p, n);
	cv->len += n;
}

static void put8(struct conv *cv, unsigned v)
{
	uint8_t b = v;

	put(cv, &b, 1);
}

static void put16(struct conv *cv, unsigned v)
{
	put8(cv, v >> 8);
	put8(cv, v);
}

/* Begin a flight of one side. */
static void flight(struct conv *cv, int resp)
{
	if (cv->nfl && cv->fl[cv->nfl - 1].resp == resp)
		return;
	assert_true(cv->nfl < MAXF);
	cv->fl[cv->nfl].off = cv->len;
	cv->fl[cv->nfl].resp = resp;
	cv->nfl++;
}

static void end_flights(struct conv *cv)
{
	for (int i = 0; i < cv->nfl; i++)
		cv->fl[i].len = (i + 1 < cv->nfl ? cv->fl[i + 1].off : cv->len) - cv->fl[i].off;
}

/* A record of type t with n bytes of opaque payload. */
static void rec(struct conv *cv, int resp, unsigned t, unsigned n)
{
	flight(cv, resp);
	put8(cv, t);
	put16(cv, 0x0303);
	put16(cv, n);
	for (unsigned i = 0; i < n; i++)
		put8(cv, 0x17 + i); /* ciphertext that looks like headers now and then */
}

/* A ClientHello (resp 0) or ServerHello (resp 1) in a record of its own:
 * alpn a list of names ("h2", "http/1.1", NULL-terminated) or NULL for no
 * extension; v13: supported_versions. cut_at: end the record after that
 * many bytes of the message (a hello split across records), 0: whole. */
static void hello(struct conv *cv, int resp, const char *const *alpn, int v13, size_t cut_at)
{
	uint8_t m[1024];
	size_t n = 0, extl, alpnl = 0, e0;

#define M8(v)  (m[n++] = (uint8_t)(v))
#define M16(v) (M8((v) >> 8), M8(v))
	M8(resp ? 2 : 1);
	M8(0), M16(0); /* length, below */
	M16(0x0303);
	for (int i = 0; i < 32; i++)
		M8(0xa0 + i);
	M8(32); /* session id */
	for (int i = 0; i < 32; i++)
		M8(i);
	if (resp) {
		M16(0x1301), M8(0);
	} else {
		M16(6), M16(0x1301), M16(0x1302), M16(0xc02f);
		M8(1), M8(0);
	}
	extl = n;
	M16(0);
	e0 = n;
	M16(0), M16(5), M8(0), M16(2), M16(0x6869); /* server_name, not looked into */
	if (alpn) {
		size_t l0;

		M16(16);
		l0 = n;
		M16(0), M16(0);
		for (int i = 0; alpn[i]; i++) {
			M8(strlen(alpn[i]));
			memcpy(m + n, alpn[i], strlen(alpn[i]));
			n += strlen(alpn[i]);
		}
		alpnl = n - l0 - 4;
		m[l0] = (alpnl + 2) >> 8, m[l0 + 1] = alpnl + 2;
		m[l0 + 2] = alpnl >> 8, m[l0 + 3] = alpnl;
	}
	if (resp && v13)
		M16(43), M16(2), M16(0x0304);
	if (!resp)
		M16(43), M16(5), M8(4), M16(0x0304), M16(0x0303);
	M16(0x0a0a), M16(0); /* GREASE, empty */
	m[extl] = (n - e0) >> 8, m[extl + 1] = n - e0;
	m[1] = 0, m[2] = (n - 4) >> 8, m[3] = n - 4;
#undef M8
#undef M16
	if (cut_at && cut_at < n)
		n = cut_at;
	flight(cv, resp);
	put8(cv, 22);
	put16(cv, 0x0301);
	put16(cv, n);
	put(cv, m, n);
}

/* Feed the conversation, every flight cut in two at `cut` (all of it in one
 * piece when cut is past its end). */
static struct seen run(const struct conv *cv, size_t cut)
{
	const struct ebee_frame_ops *o = ebee_frame_get(EBEE_FRAME_TLS);
	struct ebee_fdir in = { 0 }, out = { 0 };
	struct seen s = { 0 };

	for (int i = 0; i < cv->nfl; i++) {
		const uint8_t *b = cv->buf + cv->fl[i].off;
		size_t n = cv->fl[i].len, k = cut < n ? cut : n;
		int resp = cv->fl[i].resp;
		struct ebee_frame_counts c = { 0 };

		assert_int_equal(ebee_frame_feed(o, resp ? &out : &in, b, k, resp, &s.bits, &c), 0);
		assert_int_equal(
		    ebee_frame_feed(o, resp ? &out : &in, b + k, n - k, resp, &s.bits, &c), 0);
		if (resp) {
			s.recs += c.ends;
			assert_int_equal(c.starts, 0);
		} else {
			s.starts += c.starts;
			s.overs += c.ends;
		}
		s.err |= c.err;
	}
	return s;
}

#define ANY UINT64_MAX /* a count not checked */

/* The same counts at every cut; a byte at a time too. */
static struct seen expect(struct conv *cv, uint64_t starts, uint64_t overs, uint64_t recs)
{
	size_t max = 0;
	struct seen s0;

	end_flights(cv);
	for (int i = 0; i < cv->nfl; i++)
		max = cv->fl[i].len > max ? cv->fl[i].len : max;
	s0 = run(cv, max);
	for (size_t cut = 0; cut <= max; cut++) {
		struct seen s = run(cv, cut);

		if (s.starts != starts || s.overs != overs || (recs != ANY && s.recs != recs) ||
		    s.err || s.bits != s0.bits)
			fail_msg("cut %zu: requests %llu, responses over %llu, response records "
				 "%llu, err %d, bits %#x (want %llu %llu %llu, bits %#x)",
				 cut, (unsigned long long)s.starts, (unsigned long long)s.overs,
				 (unsigned long long)s.recs, s.err, s.bits,
				 (unsigned long long)starts, (unsigned long long)overs,
				 (unsigned long long)recs, s0.bits);
	}
	{
		/* One byte a segment. */
		const struct ebee_frame_ops *o = ebee_frame_get(EBEE_FRAME_TLS);
		struct ebee_fdir in = { 0 }, out = { 0 };
		uint32_t bits = 0;
		uint64_t st = 0;

		for (int i = 0; i < cv->nfl; i++)
			for (size_t j = 0; j < cv->fl[i].len; j++) {
				struct ebee_frame_counts c = { 0 };
				int resp = cv->fl[i].resp;

				ebee_frame_feed(o, resp ? &out : &in, cv->buf + cv->fl[i].off + j,
						1, resp, &bits, &c);
				st += resp ? 0 : c.starts;
				assert_false(c.err);
			}
		assert_int_equal(st, starts);
		assert_int_equal(bits, s0.bits);
	}
	return s0;
}

static const char *const alpn_h2[] = { "h2", "http/1.1", NULL };
static const char *const alpn_h1[] = { "http/1.1", NULL };
static const char *const alpn_hh[] = { "hh", "x2", "spdy/3.1", NULL }; /* near misses */

/* A TLS 1.3 handshake as OpenSSL runs it: the server's encrypted flight
 * as application-data records, the client's Finished (53 bytes), two
 * NewSessionTickets before the first request. */
static void hs13(struct conv *cv, const char *const *alpn)
{
	hello(cv, 0, alpn, 1, 0);
	hello(cv, 1, NULL, 1, 0);
	rec(cv, 1, 20, 1);
	rec(cv, 1, 23, 27);   /* EncryptedExtensions */
	rec(cv, 1, 23, 1100); /* Certificate */
	rec(cv, 1, 23, 281);  /* CertificateVerify */
	rec(cv, 1, 23, 53);   /* Finished */
	rec(cv, 0, 20, 1);
	rec(cv, 0, 23, 53); /* the client's Finished */
	rec(cv, 1, 23, 250);
	rec(cv, 1, 23, 250);
}

/* A TLS 1.2 full handshake: handshake and change_cipher_spec records only. */
static void hs12(struct conv *cv, const char *const *alpn, const char *const *sel)
{
	hello(cv, 0, alpn, 0, 0);
	hello(cv, 1, sel, 0, 0);
	rec(cv, 1, 22, 1200); /* Certificate, ServerKeyExchange, ServerHelloDone */
	rec(cv, 0, 22, 37);   /* ClientKeyExchange */
	rec(cv, 0, 20, 1);
	rec(cv, 0, 22, 40);  /* Finished, encrypted */
	rec(cv, 1, 22, 200); /* NewSessionTicket */
	rec(cv, 1, 20, 1);
	rec(cv, 1, 22, 40);
}

/* k requests of one record, answered by a header record and a body of
 * 20000 bytes (two records), then the client's close_notify. */
static void requests(struct conv *cv, int k)
{
	for (int i = 0; i < k; i++) {
		rec(cv, 0, 23, 100 + i);
		rec(cv, 1, 23, 300);
		rec(cv, 1, 23, 16401);
		rec(cv, 1, 23, 3617);
	}
	rec(cv, 0, 21, 19);
}

static struct conv cv;

static void test_tls13_handshake_is_no_request(void **state)
{
	struct seen s;

	memset(&cv, 0, sizeof(cv));
	hs13(&cv, alpn_h1);
	requests(&cv, 4);
	s = expect(&cv, 4, 4, 12);
	assert_false(ebee_tls_mux(&s.bits));
	assert_false(s.bits & EBEE_TLS_C_AGAIN);
	assert_true(sbyte(s.bits) & EBEE_TLS_S_13);

	/* TLS 1.3 encrypts close_notify as application data (19 bytes): the
	 * server's after its response, then the client's, are no records of
	 * a response, nor a request. */
	memset(&cv, 0, sizeof(cv));
	hs13(&cv, alpn_h1);
	rec(&cv, 0, 23, 100);
	rec(&cv, 1, 23, 300);
	rec(&cv, 1, 23, 19);
	rec(&cv, 0, 23, 19);
	expect(&cv, 1, 1, 1);
}

static void test_tls12_handshake_is_no_request(void **state)
{
	struct seen s;

	memset(&cv, 0, sizeof(cv));
	hs12(&cv, NULL, NULL);
	requests(&cv, 3);
	s = expect(&cv, 3, 3, 9);
	assert_false(ebee_tls_mux(&s.bits));
	assert_false(sbyte(s.bits) & EBEE_TLS_S_13);
}

/* Only handshakes (a connection per request elsewhere, a health check): no
 * request, no response. */
static void test_handshake_only(void **state)
{
	memset(&cv, 0, sizeof(cv));
	hs13(&cv, NULL);
	rec(&cv, 0, 21, 19);
	expect(&cv, 0, 0, 0);
	memset(&cv, 0, sizeof(cv));
	hs12(&cv, NULL, NULL);
	rec(&cv, 0, 21, 26);
	rec(&cv, 1, 21, 26);
	expect(&cv, 0, 0, 0);
}

/* The tickets may leave after the first request arrived: part of its
 * response, still one request. A server's greeting before any request is
 * no response. */
static void test_tickets_late_and_greeting(void **state)
{
	memset(&cv, 0, sizeof(cv));
	hello(&cv, 0, NULL, 1, 0);
	hello(&cv, 1, NULL, 1, 0);
	rec(&cv, 1, 23, 1500);
	rec(&cv, 0, 23, 69); /* Finished, SHA-384 */
	rec(&cv, 0, 23, 80); /* the request, in the same flight */
	rec(&cv, 1, 23, 250);
	rec(&cv, 1, 23, 250);
	rec(&cv, 1, 23, 400); /* the response */
	rec(&cv, 0, 23, 80);
	rec(&cv, 1, 23, 400);
	expect(&cv, 2, 1, 4);

	memset(&cv, 0, sizeof(cv));
	hs12(&cv, NULL, NULL);
	rec(&cv, 1, 23, 60); /* "* OK IMAP4rev1 ready" */
	rec(&cv, 0, 23, 40);
	rec(&cv, 1, 23, 90);
	rec(&cv, 0, 21, 26);
	expect(&cv, 1, 1, 1);
}

/* TLS 1.3 with a client certificate: Certificate, CertificateVerify and
 * Finished, each in a record, are handshake. */
static void test_tls13_client_certificate(void **state)
{
	memset(&cv, 0, sizeof(cv));
	hello(&cv, 0, NULL, 1, 0);
	hello(&cv, 1, NULL, 1, 0);
	rec(&cv, 1, 23, 2000);
	rec(&cv, 0, 20, 1);
	rec(&cv, 0, 23, 900);
	rec(&cv, 0, 23, 281);
	rec(&cv, 0, 23, 53);
	requests(&cv, 2);
	expect(&cv, 2, 2, 6);
}

/* Renegotiation (TLS 1.2): handshake records between requests end the
 * response, begin none. Alerts likewise. */
static void test_renegotiation_and_alerts(void **state)
{
	memset(&cv, 0, sizeof(cv));
	hs12(&cv, NULL, NULL);
	rec(&cv, 0, 23, 100);
	rec(&cv, 1, 23, 100);
	rec(&cv, 0, 22, 500); /* the client's new ClientHello, encrypted */
	rec(&cv, 1, 22, 1500);
	rec(&cv, 0, 22, 100);
	rec(&cv, 0, 20, 1);
	rec(&cv, 0, 22, 40);
	rec(&cv, 1, 20, 1);
	rec(&cv, 1, 22, 40);
	rec(&cv, 0, 23, 100);
	rec(&cv, 1, 23, 100);
	rec(&cv, 1, 21, 26); /* the server's close_notify: no response record */
	rec(&cv, 0, 21, 26);
	expect(&cv, 2, 2, 2);
}

/* A request of several records: continued after a full one (one request,
 * trusted); two short ones before any reply: pipelined, or in pieces. */
static void test_again(void **state)
{
	struct seen s;

	memset(&cv, 0, sizeof(cv));
	hs13(&cv, NULL);
	rec(&cv, 0, 23, 16401);
	rec(&cv, 0, 23, 16401);
	rec(&cv, 0, 23, 200);
	rec(&cv, 1, 23, 100);
	rec(&cv, 0, 23, 100);
	rec(&cv, 1, 23, 100);
	s = expect(&cv, 2, 1, 2);
	assert_false(s.bits & EBEE_TLS_C_AGAIN);

	memset(&cv, 0, sizeof(cv));
	hs13(&cv, NULL);
	rec(&cv, 0, 23, 100);
	rec(&cv, 0, 23, 100);
	rec(&cv, 1, 23, 100);
	s = expect(&cv, 1, 0, 1);
	assert_true(s.bits & EBEE_TLS_C_AGAIN);
}

/* Multiplexing: h2 offered, where the server's choice is encrypted (1.3)
 * or in the clear (1.2); not offered; a ClientHello split across records
 * cannot say. */
static void test_alpn(void **state)
{
	static const struct {
		const char *const *offer, *const *sel;
		int v13;
		size_t cut;
		bool mux;
	} cases[] = {
		{ alpn_h2, NULL, 1, 0, true },	   { alpn_h1, NULL, 1, 0, false },
		{ NULL, NULL, 1, 0, false },	   { alpn_hh, NULL, 1, 0, false },
		{ alpn_h2, alpn_h1, 0, 0, false }, { alpn_h2, alpn_h2 + 0, 0, 0, true },
		{ alpn_h2, NULL, 0, 0, true },	   { alpn_h1, NULL, 1, 60, true },
	};
	static const char *const only_h2[] = { "h2", NULL };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct seen s;

		memset(&cv, 0, sizeof(cv));
		hello(&cv, 0, cases[i].offer, 1, cases[i].cut);
		hello(&cv, 1, cases[i].sel == alpn_h2 ? only_h2 : cases[i].sel, cases[i].v13, 0);
		rec(&cv, 1, 23, 2000);
		rec(&cv, 0, 23, 53);
		if (!cases[i].v13) {
			memset(&cv, 0, sizeof(cv));
			hello(&cv, 0, cases[i].offer, 0, cases[i].cut);
			hello(&cv, 1, cases[i].sel == alpn_h2 ? only_h2 : cases[i].sel, 0, 0);
			rec(&cv, 0, 22, 40);
			rec(&cv, 1, 22, 40);
		}
		rec(&cv, 0, 23, 100);
		rec(&cv, 1, 23, 100);
		s = expect(&cv, 1, 0, 1);
		if (ebee_tls_mux(&s.bits) != cases[i].mux)
			fail_msg("case %zu: mux %d, want %d (bits %#x)", i, ebee_tls_mux(&s.bits),
				 cases[i].mux, s.bits);
	}
}

/* Not TLS records: out of sync. */
static void test_not_records(void **state)
{
	static const struct {
		const char *b;
		size_t n;
	} bad[] = {
		{ "\x30\x03\x03\x00\x01x", 6 }, /* content type */
		{ "\x17\x02\x03\x00\x01x", 6 }, /* version */
		{ "\x17\x03\x03\x48\x01", 5 },	/* longer than a record may be */
	};
	const struct ebee_frame_ops *o = ebee_frame_get(EBEE_FRAME_TLS);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ebee_fdir d = { 0 };
		struct ebee_frame_counts c = { 0 };
		uint32_t bits = 0;

		ebee_frame_feed(o, &d, (const uint8_t *)bad[i].b, bad[i].n, (int)(i & 1), &bits,
				&c);
		assert_true(c.err);
	}
	assert_true(ebee_frame_may_start(EBEE_FRAME_TLS, 0, 0x17));
	assert_true(ebee_frame_may_start(EBEE_FRAME_TLS, 1, 0x15));
	assert_false(ebee_frame_may_start(EBEE_FRAME_TLS, 1, 'H'));
}

/* What user space says of a workload's counters (metrics/src/warn.c): one
 * reason each, whole. */
static void test_check(void **state)
{
	struct ebee_fstat f = { 0 };
	struct ebee_warns ws = {};

	f.conns[EBEE_FRAME_TLS] = 4;
	ebee_warns_framing(&ws, &f);
	assert_int_equal(ws.on, 0);
	f.tls_mux = 2;
	ebee_warns_framing(&ws, &f);
	assert_int_equal(ws.on, 1ull << EBEE_WARN_TLS_MUX);
	assert_string_equal(ebee_warns_text(&ws, EBEE_WARN_TLS_MUX),
			    "tls on 4 connection(s): 2 of them offered h2 (ALPN) or a ClientHello "
			    "ebee could not read: requests multiplexed in encrypted records count "
			    "as one");
	ebee_warns_free(&ws);
	f.tls_again = 1;
	ebee_warns_framing(&ws, &f);
	assert_int_equal(ws.on, (1ull << EBEE_WARN_TLS_MUX) | (1ull << EBEE_WARN_TLS_AGAIN));
	assert_int_equal(ws.count[EBEE_WARN_TLS_AGAIN], 1);
	assert_string_equal(
	    ebee_warns_text(&ws, EBEE_WARN_TLS_AGAIN),
	    "tls on 4 connection(s): 1 had a client that wrote again before a reply "
	    "(pipelined, or a request in pieces): counted as one request");
	ebee_warns_free(&ws);
}

/* Conversations captured from openssl s_server and s_client (TLS 1.2 and
 * 1.3, tls_captures.h): as many requests as the client made. */
static void test_captured(void **state)
{
	for (size_t i = 0; i < sizeof(tls_captures) / sizeof(tls_captures[0]); i++) {
		const struct tls_capture *t = &tls_captures[i];
		struct seen s;

		memset(&cv, 0, sizeof(cv));
		for (size_t j = 0; j < t->nchunks; j++) {
			flight(&cv, t->chunks[j].resp);
			put(&cv, t->chunks[j].b, t->chunks[j].n);
		}
		/* Response records: how OpenSSL cut the writes, and whether the
		 * tickets left before the first request came, are not known. */
		s = expect(&cv, t->requests, t->requests, ANY);
		assert_true(s.recs >= t->requests);
		assert_int_equal(!!(sbyte(s.bits) & EBEE_TLS_S_13), t->v13);
		assert_int_equal(ebee_tls_mux(&s.bits), t->mux);
		assert_false(s.bits & EBEE_TLS_C_AGAIN);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tls13_handshake_is_no_request),
		cmocka_unit_test(test_tls12_handshake_is_no_request),
		cmocka_unit_test(test_handshake_only),
		cmocka_unit_test(test_tickets_late_and_greeting),
		cmocka_unit_test(test_tls13_client_certificate),
		cmocka_unit_test(test_renegotiation_and_alerts),
		cmocka_unit_test(test_again),
		cmocka_unit_test(test_alpn),
		cmocka_unit_test(test_not_records),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_captured),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
