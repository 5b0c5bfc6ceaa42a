// SPDX-License-Identifier: MIT
/*
 * The reasons a workload's figures cannot be trusted (metrics/src/warn.c):
 * each kind with its count and its text whole however many reasons apply and
 * however long their figures make them, handed out one by one
 * (ebee_get_warnings()'s walk), and the fixed-size warning of ebee_stats made
 * of whole reasons only, what did not fit counted, never a reason cut (it
 * once was: "...counted as one request; 1").
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../metrics/src/warn.h"
#include "frame/frame.h"

/* A connection that moved bytes in conn mode and never closed: n bytes, n
 * calls, no request. */
static void silent(struct ebee_warns *ws, uint64_t n)
{
	struct ebee_silent z = { .mode = EBEE_MODE_CONN, .io_bytes = n, .io_calls = n };

	ebee_warns_silent(ws, &z);
}

/* A workload with every framing reason at once: tls muxed and written
 * again, memcached quiet, unseen, lost sync, late, overlap, untimed and
 * unmatched; with v for every count (UINT64_MAX: the longest figures). */
static void busy(struct ebee_fstat *f, uint64_t v)
{
	memset(f, 0, sizeof(*f));
	f->conns[EBEE_FRAME_TLS] = v;
	f->conns[EBEE_FRAME_MCTEXT] = v;
	f->tls_mux = f->tls_again = f->mc_quiet = v;
	f->unseen = f->desync_conns = f->desync = f->late = f->overlap = v;
	f->untimed = f->unmatched = v;
	f->lapses = f->gap_lost = v;
	f->desync_gap = v / 2;
	f->desync_cut = v / 4;
}

struct seen {
	int n;
	enum ebee_warn kind[EBEE_WARN_COUNT];
	uint64_t count[EBEE_WARN_COUNT];
	char *text[EBEE_WARN_COUNT];
	int stop_after; /* return 7 once this many are seen; 0: never */
};

static int collect(const struct ebee_warning *w, void *ctx)
{
	struct seen *s = ctx;

	assert_true(s->n < EBEE_WARN_COUNT);
	assert_string_equal(w->id, ebee_warn_str(w->kind));
	s->kind[s->n] = w->kind;
	s->count[s->n] = w->count;
	s->text[s->n] = strdup(w->text);
	s->n++;
	return s->stop_after && s->n == s->stop_after ? 7 : 0;
}

static void seen_free(struct seen *s)
{
	for (int i = 0; i < s->n; i++)
		free(s->text[i]);
}

/* Each reason whole: the exact text its figures make, the tail a cut would
 * lose included. */
static void test_each_whole(void **state)
{
	static const struct {
		enum ebee_warn kind;
		const char *text;
	} want[] = {
		{ EBEE_WARN_UDP_UNANSWERED,
		  "UDP: 900 datagrams received, none answered to its sender (12 expired "
		  "unanswered): no request/response pattern to count" },
		{ EBEE_WARN_TLS_MUX,
		  "tls on 41 connection(s): 41 of them offered h2 (ALPN) or a ClientHello ebee "
		  "could not read: requests multiplexed in encrypted records count as one" },
		{ EBEE_WARN_TLS_AGAIN,
		  "tls on 41 connection(s): 41 had a client that wrote again before a reply "
		  "(pipelined, or a request in pieces): counted as one request" },
		{ EBEE_WARN_MC_QUIET,
		  "memcache on 41 connection(s): 41 of them sent meta commands in quiet mode (q "
		  "flag), answered only sometimes: responses may pair with the wrong requests" },
		{ EBEE_WARN_UNSEEN,
		  "41 connection(s) began with bytes ebee did not see (they came with the "
		  "handshake and were lost, or did not parse, or the connection was open before "
		  "tracing) and showed no message start to frame from in their next client "
		  "segments: counted by length" },
		{ EBEE_WARN_DESYNC,
		  "41 framed connection(s) lost sync (41 time(s): 20 at a sequence gap, 11 at "
		  "bytes that did not parse, 10 at a walk cut short), 41 not trusted again yet "
		  "(16 requests answered in sync after the loss): requests in the gap are not "
		  "counted (41 HTTP/2 stream(s) known opened in a gap)" },
		{ EBEE_WARN_LATE,
		  "41 connection(s) counted by length once their requests came one at a time later "
		  "sent several together: the bursts read before a sample (one in 16 segments "
		  "arriving between requests) saw it may count as one request each" },
		{ EBEE_WARN_OVERLAP,
		  "41 connection(s) counted by length had a client that sent more while a response "
		  "was being written (pipelining, streaming): requests read together count as "
		  "one" },
		{ EBEE_WARN_UNTIMED,
		  "41 HTTP/2 stream(s) beyond 64 in flight on a connection were not counted" },
		{ EBEE_WARN_UNMATCHED, "41 response(s) had no request to pair with" },
		{ EBEE_WARN_LOST,
		  "5.0% of the window's requests (41 of 820) lost their records (the ring buffer "
		  "was full: give it more room, ebee_opts.ringbuf_size): requests and rps are "
		  "exact, the latencies are over the rest" },
		{ EBEE_WARN_NO_REQUESTS,
		  "41 bytes in 41 reads and writes on its connections since tracing began and no "
		  "request counted: conn mode counts a request when its connection closes: none "
		  "has" },
	};
	struct ebee_warns ws = {};
	struct ebee_fstat f;
	struct seen s = {};
	size_t joined = 0;

	assert_int_equal(sizeof(want) / sizeof(want[0]), EBEE_WARN_COUNT);
	busy(&f, 41);
	ebee_warns_udp(&ws, 900, 12);
	ebee_warns_framing(&ws, &f);
	ebee_warns_lost(&ws, 820, 41);
	silent(&ws, 41);
	assert_int_equal(ebee_warns_each(&ws, collect, &s), 0);
	assert_int_equal(s.n, EBEE_WARN_COUNT);
	for (int i = 0; i < s.n; i++) {
		assert_int_equal(s.kind[i], want[i].kind); /* in the order of the kinds */
		assert_string_equal(s.text[i], want[i].text);
		assert_int_equal(s.count[i], want[i].kind == EBEE_WARN_UDP_UNANSWERED ? 900 : 41);
		joined += strlen(s.text[i]) + 2;
	}
	/* What one 256-byte string could not hold whole. */
	assert_true(joined > 255);
	seen_free(&s);
	ebee_warns_free(&ws);
	assert_int_equal(ws.on, 0);
}

/* A loss of sync is a reason until every connection that lost it was
 * trusted again (regained): one still regaining keeps it, with count 1. */
static void test_desync_regained(void **state)
{
	struct ebee_warns ws = {};
	struct ebee_fstat f = {};

	f.conns[EBEE_FRAME_HTTP2] = 1;
	f.desync_conns = 1;
	f.desync = f.desync_gap = f.lapses = 28;
	f.gap_lost = 28;
	f.regained = 27;
	ebee_warns_framing(&ws, &f);
	assert_true(ws.on & (1ull << EBEE_WARN_DESYNC));
	assert_int_equal(ws.count[EBEE_WARN_DESYNC], 1);
	assert_non_null(strstr(ws.text[EBEE_WARN_DESYNC], "1 not trusted again yet"));
	assert_non_null(strstr(ws.text[EBEE_WARN_DESYNC], "28 HTTP/2 stream(s) known"));
	ebee_warns_free(&ws);
	f.regained = 28;
	ebee_warns_framing(&ws, &f);
	assert_int_equal(ws.on, 0);
	ebee_warns_free(&ws);
	/* RESP: its gaps are not a number. */
	f.conns[EBEE_FRAME_HTTP2] = 0;
	f.conns[EBEE_FRAME_RESP] = 1;
	f.gap_lost = 0;
	f.regained = 0;
	ebee_warns_framing(&ws, &f);
	assert_non_null(strstr(ws.text[EBEE_WARN_DESYNC], "(their number is not known)"));
	assert_int_equal(ws.count[EBEE_WARN_DESYNC], 28);
	ebee_warns_free(&ws);
}

/* The longest figures a counter can have: still whole. */
static void test_longest_figures(void **state)
{
	struct ebee_warns ws = {};
	struct ebee_fstat f;
	struct seen s = {};

	busy(&f, UINT64_MAX);
	ebee_warns_udp(&ws, UINT64_MAX, UINT64_MAX);
	ebee_warns_framing(&ws, &f);
	ebee_warns_lost(&ws, UINT64_MAX, UINT64_MAX);
	{
		/* Every cause it can give at once, with the longest figures. */
		struct ebee_silent z = { .mode = EBEE_MODE_AUTO,
					 .io_bytes = UINT64_MAX,
					 .io_calls = UINT64_MAX,
					 .adopted = UINT64_MAX,
					 .span_ns = UINT64_MAX,
					 .syscall = true,
					 .framing = true,
					 .f = &f };

		f.midstream = UINT64_MAX;
		ebee_warns_silent(&ws, &z);
	}
	ebee_warns_each(&ws, collect, &s);
	assert_int_equal(s.n, EBEE_WARN_COUNT);
	assert_non_null(strstr(s.text[EBEE_WARN_DESYNC],
			       "at a walk cut short), 18446744073709551615 not trusted again yet"));
	assert_non_null(strstr(s.text[EBEE_WARN_DESYNC], "18446744073709551615 framed"));
	assert_non_null(strstr(s.text[EBEE_WARN_LATE], "may count as one request each"));
	assert_non_null(strstr(s.text[EBEE_WARN_NO_REQUESTS], "18446744073709551615 TLS conn"));
	assert_non_null(strstr(s.text[EBEE_WARN_NO_REQUESTS], "framed from mid-stream"));
	assert_non_null(strstr(s.text[EBEE_WARN_NO_REQUESTS],
			       ". syscall path: no bytes looked into, no framing"));
	for (int i = 0; i < s.n; i++)
		assert_int_equal(s.count[i], UINT64_MAX);
	seen_free(&s);
	ebee_warns_free(&ws);
}

/* Split a joined warning at "; " into whole reasons; *more: the count the
 * trailer gives (0 without one). */
static int split(char *buf, char **part, int max, int *more)
{
	int n = 0;
	char *p = buf;

	*more = 0;
	while (*p && n < max) {
		char *e = strstr(p, "; ");

		if (e)
			*e = 0;
		if (sscanf(p, "+%d more reason", more) == 1)
			break;
		part[n++] = p;
		if (!e)
			break;
		p = e + 2;
	}
	return n;
}

/* The fixed-size warning: whole reasons, in order, then how many were left
 * out; each reason in it is one the walk gives, whole. */
static void test_join_whole(void **state)
{
	struct ebee_warns ws = {};
	struct ebee_fstat f;
	struct seen s = {};
	char buf[256], *part[EBEE_WARN_COUNT];
	int n, more;

	busy(&f, 41);
	ebee_warns_udp(&ws, 900, 12);
	ebee_warns_framing(&ws, &f);
	ebee_warns_lost(&ws, 820, 41);
	silent(&ws, 41);
	ebee_warns_each(&ws, collect, &s);
	ebee_warns_join(&ws, buf, sizeof(buf));
	assert_true(strlen(buf) < sizeof(buf));
	n = split(buf, part, EBEE_WARN_COUNT, &more);
	assert_true(n >= 1);
	assert_int_equal(n + more, EBEE_WARN_COUNT);
	for (int i = 0; i < n; i++)
		assert_string_equal(part[i], s.text[i]);
	/* With room enough, all of them and no trailer. */
	{
		char big[4096];

		ebee_warns_join(&ws, big, sizeof(big));
		n = split(big, part, EBEE_WARN_COUNT, &more);
		assert_int_equal(n, EBEE_WARN_COUNT);
		assert_int_equal(more, 0);
		for (int i = 0; i < n; i++)
			assert_string_equal(part[i], s.text[i]);
	}
	seen_free(&s);
	ebee_warns_free(&ws);
}

/* The trailer needs room: reasons that would leave none go too, whole; a
 * buffer too small for a first reason says how many there are; none: "". */
static void test_join_edges(void **state)
{
#define LONG "a first reason longer by far than the trailer that would count it"
	struct ebee_warns ws = {};
	char buf[256];
	size_t len;

	ebee_warns_join(&ws, buf, sizeof(buf));
	assert_string_equal(buf, "");
	ebee_warns_add(&ws, EBEE_WARN_UNMATCHED, 1, "%s", LONG);
	ebee_warns_add(&ws, EBEE_WARN_UNMATCHED, 9, "%s", "a second of the same kind");
	assert_int_equal(ws.count[EBEE_WARN_UNMATCHED], 1); /* the first kept */
	ebee_warns_join(&ws, buf, sizeof(buf));
	assert_string_equal(buf, LONG);
	ebee_warns_join(&ws, buf, 5);
	assert_string_equal(buf, ""); /* no room even to count it */
	ebee_warns_join(&ws, buf, 40);
	assert_string_equal(buf, "+1 more reason (ebee_get_warnings())");
	/* In kind order: "second", "third, ...", LONG. Room for the
	 * first two, not for a trailer after them: the second goes too. */
	ebee_warns_add(&ws, EBEE_WARN_UNSEEN, 1, "%s", "second");
	ebee_warns_add(&ws, EBEE_WARN_UNTIMED, 1, "%s", "third, too long for what is left");
	len = strlen("second; +2 more reasons (ebee_get_warnings())") + 1;
	ebee_warns_join(&ws, buf, len);
	assert_string_equal(buf, "second; +2 more reasons (ebee_get_warnings())");
	/* No room for a trailer after the first either. */
	ebee_warns_join(&ws, buf, 40);
	assert_string_equal(buf, "+3 more reasons (ebee_get_warnings())");
	ebee_warns_free(&ws);
#undef LONG
}

/* A non-zero return stops the walk and is what it returns. */
static void test_each_stops(void **state)
{
	struct ebee_warns ws = {};
	struct ebee_fstat f;
	struct seen s = { .stop_after = 2 };

	busy(&f, 3);
	ebee_warns_framing(&ws, &f);
	assert_int_equal(ebee_warns_each(&ws, collect, &s), 7);
	assert_int_equal(s.n, 2);
	assert_int_equal(ebee_warns_each(&ws, NULL, NULL), 0);
	seen_free(&s);
	ebee_warns_free(&ws);
}

/* The no_requests reason's text for z ("" when it gives none); its count
 * must be the bytes. */
static void silent_text(const struct ebee_silent *z, char *out, size_t len)
{
	struct ebee_warns ws = {};

	ebee_warns_silent(&ws, z);
	snprintf(out, len, "%s",
		 ws.on & (1ull << EBEE_WARN_NO_REQUESTS)
		     ? ebee_warns_text(&ws, EBEE_WARN_NO_REQUESTS)
		     : "");
	if (ws.on) {
		assert_int_equal(ws.on, 1ull << EBEE_WARN_NO_REQUESTS);
		assert_int_equal(ws.count[EBEE_WARN_NO_REQUESTS], z->io_bytes);
	}
	ebee_warns_free(&ws);
}

#define HAS(t, w)   assert_non_null(strstr((t), (w)))
#define HASNT(t, w) assert_null(strstr((t), (w)))

/* A zero with I/O says why, from the state given; requests, or no I/O:
 * nothing to say. */
static void test_silent(void **state)
{
	struct ebee_fstat f = {};
	struct ebee_silent z = { .mode = EBEE_MODE_CONN, .io_bytes = 4800, .io_calls = 120 };
	char t[1024];

	silent_text(&z, t, sizeof(t));
	assert_string_equal(t, "4800 bytes in 120 reads and writes on its connections since "
			       "tracing began and no request counted: conn mode counts a request "
			       "when its connection closes: none has");
	/* Requests counted, or no bytes: no reason. */
	z.requests = 1;
	silent_text(&z, t, sizeof(t));
	assert_string_equal(t, "");
	z.requests = 0;
	z.io_bytes = 0;
	silent_text(&z, t, sizeof(t));
	assert_string_equal(t, "");
	/* Connections open before tracing: said, with their number. */
	z.io_bytes = 10;
	z.adopted = 2;
	silent_text(&z, t, sizeof(t));
	HAS(t, "none has. 2 connection(s) were open before tracing began");
	HASNT(t, "framing"); /* conn mode: the framing is not what counts */
	/* auto, framing on and no connection noted: its first bytes unseen. */
	z.mode = EBEE_MODE_AUTO;
	z.framing = true;
	z.f = &f;
	silent_text(&z, t, sizeof(t));
	HAS(t, "no request counted: framing not decided: ebee saw no connection's first "
	       "bytes (its connections were open before tracing began). mode auto is "
	       "undecided");
	/* io, framed by a framer that paired nothing: that, not the io pattern. */
	z.mode = EBEE_MODE_IO;
	z.adopted = 0;
	f.conns[EBEE_FRAME_HTTP2] = 3;
	silent_text(&z, t, sizeof(t));
	HAS(t, "no request counted: http2 on 3 connection(s) has paired no request with its "
	       "response");
	HASNT(t, "reads without answers");
	HASNT(t, "open before tracing");
	/* TLS offering h2. */
	f.conns[EBEE_FRAME_HTTP2] = 0;
	f.conns[EBEE_FRAME_TLS] = 4;
	f.tls_mux = 4;
	silent_text(&z, t, sizeof(t));
	HAS(t, "4 TLS connection(s), counted by record turns (h2 offered");
	/* io counted by length (no framer's pairs): reads without answers. */
	f.conns[EBEE_FRAME_TLS] = 0;
	f.conns[EBEE_FRAME_LENGTH] = 1;
	f.tls_mux = 0;
	silent_text(&z, t, sizeof(t));
	assert_string_equal(t, "10 bytes in 120 reads and writes on its connections since "
			       "tracing began and no request counted: io mode counts a request "
			       "at the read that follows its response: none did (reads without "
			       "answers, or a response still being written)");
	/* Over a window of age. */
	z.span_ns = 1500000000;
	silent_text(&z, t, sizeof(t));
	HAS(t, "connections in the last 1.5 s and no request counted");
	/* gRPC. */
	z.mode = EBEE_MODE_GRPC;
	silent_text(&z, t, sizeof(t));
	HAS(t, "grpc mode counts completed server streams: none has");
}

/* Ids: one each, short, label-safe; none past the kinds. */
static void test_ids(void **state)
{
	for (int k = 0; k < EBEE_WARN_COUNT; k++) {
		const char *id = ebee_warn_str(k);

		assert_non_null(id);
		assert_true(strlen(id) > 0 && strlen(id) < 24);
		assert_int_equal(strspn(id, "abcdefghijklmnopqrstuvwxyz_"), strlen(id));
		for (int j = 0; j < k; j++)
			assert_string_not_equal(id, ebee_warn_str(j));
	}
	assert_null(ebee_warn_str(EBEE_WARN_COUNT));
	assert_null(ebee_warn_str((enum ebee_warn) - 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_whole),
		cmocka_unit_test(test_desync_regained),
		cmocka_unit_test(test_longest_figures),
		cmocka_unit_test(test_join_whole),
		cmocka_unit_test(test_join_edges),
		cmocka_unit_test(test_each_stops),
		cmocka_unit_test(test_ids),
		cmocka_unit_test(test_silent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
