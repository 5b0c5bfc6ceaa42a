// SPDX-License-Identifier: MIT
/*
 * The HTTP/2 framer (bpf/frame/http2.h), the very parser and stream table the
 * kernel runs, on frames built here byte by byte: every stream is fed also
 * split at every byte boundary and one byte at a time, as TCP may cut it, and
 * the events (kind, stream id, offset of the byte) must not change. Pairing by
 * stream id is checked with streams that end out of order.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../metrics/src/frame/frame_ops.h"
#include "../../bpf/frame/http2.h"

#define PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

struct buf {
	uint8_t *b;
	size_t n, cap;
};

static void put(struct buf *w, const void *p, size_t n)
{
	if (w->n + n > w->cap) {
		w->cap = (w->n + n) * 2;
		w->b = realloc(w->b, w->cap);
		assert_non_null(w->b);
	}
	memcpy(w->b + w->n, p, n);
	w->n += n;
}

/* A frame: its header, then len payload bytes of fill. Returns the offset
 * of its last byte. */
static size_t frame(struct buf *w, uint8_t type, uint8_t flags, uint32_t sid, uint32_t len,
		    uint8_t fill)
{
	uint8_t h[9] = {
		len >> 16, len >> 8, len, type, flags, sid >> 24, sid >> 16, sid >> 8, sid
	};
	uint8_t chunk[4096];

	put(w, h, sizeof(h));
	memset(chunk, fill, sizeof(chunk));
	for (uint32_t k = 0; k < len; k += sizeof(chunk))
		put(w, chunk, len - k < sizeof(chunk) ? len - k : sizeof(chunk));
	return w->n - 1;
}

#define MAXEV 256
struct evs {
	size_t n;
	struct {
		int ev;
		uint32_t id;
		size_t off;
	} e[MAXEV];
	size_t base; /* offset of the piece being fed in the whole stream */
};

static void on_ev(void *arg, int ev, uint32_t id, size_t off)
{
	struct evs *v = arg;

	assert_true(v->n < MAXEV);
	v->e[v->n].ev = ev;
	v->e[v->n].id = id;
	v->e[v->n].off = v->base + off;
	v->n++;
}

/* Feed b in pieces ending at the cuts (ascending, the last one n). */
static struct ebee_frame_counts feed_cuts(const struct buf *b, int resp, const size_t *cuts,
					  size_t ncuts, struct evs *v)
{
	const struct ebee_frame_ops *o = ebee_frame_get(EBEE_FRAME_HTTP2);
	struct ebee_frame_counts n = { .on_event = on_ev, .arg = v };
	struct ebee_fdir d = { 0 };
	size_t from = 0;

	v->n = 0;
	for (size_t i = 0; i < ncuts; i++) {
		v->base = from;
		assert_int_equal(
		    ebee_frame_feed(o, &d, b->b + from, cuts[i] - from, resp, NULL, &n), 0);
		from = cuts[i];
	}
	return n;
}

/* Feed b in two pieces cut at `cut` as the kernel's walk does: a frame
 * header whole in a piece in one call (ebee_h2_header9), the rest a byte
 * at a time, skips passed over. */
static struct ebee_frame_counts feed_bulk(const struct buf *b, int resp, size_t cut, struct evs *v)
{
	struct ebee_frame_counts n = { 0 };
	struct ebee_fdir d = { 0 };
	size_t ends[2] = { cut, b->n }, pos = 0;

	v->n = 0;
	v->base = 0;
	for (int piece = 0; piece < 2; piece++) {
		while (pos < ends[piece] && !n.err) {
			int ev;

			if (d.skip) {
				size_t k = ends[piece] - pos < d.skip ? ends[piece] - pos : d.skip;

				d.skip -= k;
				pos += k;
				continue;
			}
			if (ebee_h2_at_header(&d) && pos + H2_HDR_LEN <= ends[piece]) {
				pos += H2_HDR_LEN - 1;
				ev = ebee_h2_header9(&d, b->b + pos - (H2_HDR_LEN - 1), resp);
			} else {
				ev = ebee_h2_step(&d, b->b[pos], resp);
			}
			if (ev == EBEE_FEV_ERR)
				n.err = true;
			else if (ev != EBEE_FEV_NONE)
				on_ev(v, ev, ebee_h2_event_id(&d), pos);
			pos++;
		}
	}
	return n;
}

/* The events of b, checked the same whole, cut in two at every offset and
 * fed a byte at a time, and the same cut in two with whole frame headers
 * taken at once; err as expected. */
static void expect(const struct buf *b, int resp, const struct evs *want, bool err)
{
	struct evs got;
	size_t *cuts = malloc((b->n + 1) * sizeof(*cuts));

	assert_non_null(cuts);
	for (size_t cut = 0; cut <= b->n + 1; cut++) {
		size_t nc;
		struct ebee_frame_counts n;

		if (cut <= b->n) {
			cuts[0] = cut;
			cuts[1] = b->n;
			nc = 2;
		} else { /* one byte at a time */
			for (size_t k = 0; k < b->n; k++)
				cuts[k] = k + 1;
			nc = b->n;
		}
		for (int bulk = 0; bulk < 2; bulk++) {
			if (bulk && cut > b->n)
				break;
			n = bulk ? feed_bulk(b, resp, cut, &got)
				 : feed_cuts(b, resp, cuts, nc, &got);
			if (n.err != err)
				fail_msg("cut %zu%s: err %d, want %d", cut, bulk ? " (bulk)" : "",
					 n.err, err);
			if (got.n != want->n)
				fail_msg("cut %zu%s: %zu events, want %zu", cut,
					 bulk ? " (bulk)" : "", got.n, want->n);
			for (size_t i = 0; i < got.n; i++)
				if (got.e[i].ev != want->e[i].ev || got.e[i].id != want->e[i].id ||
				    got.e[i].off != want->e[i].off)
					fail_msg(
					    "cut %zu%s, event %zu: %d on %u at %zu, want %d on "
					    "%u at %zu",
					    cut, bulk ? " (bulk)" : "", i, got.e[i].ev, got.e[i].id,
					    got.e[i].off, want->e[i].ev, want->e[i].id,
					    want->e[i].off);
		}
	}
	free(cuts);
}

static void want_ev(struct evs *w, int ev, uint32_t id, size_t off)
{
	w->e[w->n].ev = ev;
	w->e[w->n].id = id;
	w->e[w->n].off = off;
	w->n++;
}

static void test_detect_trusted(void **state)
{
	assert_int_equal(ebee_frame_detect((const uint8_t *)PREFACE, 24), EBEE_FRAME_HTTP2);
	assert_string_equal(ebee_frame_name(EBEE_FRAME_HTTP2), "http2");
	/* Framed now: no warning of its own. */
	assert_null(ebee_frame_get(EBEE_FRAME_HTTP2)->reasons);
	assert_non_null(ebee_frame_get(EBEE_FRAME_HTTP2)->step);
	/* A server's SETTINGS may come before the client's preface. */
	assert_true(ebee_h2_is_settings((const uint8_t *)"\0\0\x12\x04\0\0\0\0\0", 9));
	assert_true(ebee_h2_is_settings((const uint8_t *)"\0\0\0\x04\0\0\0\0\0", 9));
	assert_false(ebee_h2_is_settings((const uint8_t *)"\0\0\0\x04\x01\0\0\0\0", 9));
	assert_false(ebee_h2_is_settings((const uint8_t *)"\0\0\x05\x04\0\0\0\0\0", 9));
	assert_false(ebee_h2_is_settings((const uint8_t *)"\0\0\x06\x04\0\0\0\0\x01", 9));
	assert_false(ebee_h2_is_settings((const uint8_t *)"\0\0\x06\x04\0\0", 6));
	assert_false(ebee_h2_is_settings((const uint8_t *)"+OK\r\n\0\0\0\0", 9));
}

static void test_client_streams(void **state)
{
	struct buf b = { 0 };
	struct evs want = { 0 };
	size_t end;

	put(&b, PREFACE, 24);
	frame(&b, H2_SETTINGS, 0, 0, 18, 0);
	frame(&b, H2_WINDOW_UPDATE, 0, 0, 4, 1);
	/* A GET: HEADERS with END_STREAM; the request is known at the
	 * frame header's last byte. */
	end = frame(&b, H2_HEADERS, H2_END_STREAM | H2_END_HEADERS, 1, 20, 0x82);
	want_ev(&want, EBEE_FEV_START, 1, end - 20);
	/* A POST whose header block continues, interleaved with stream 1's
	 * nothing: HEADERS + CONTINUATION, then its DATA. */
	end = frame(&b, H2_HEADERS, 0, 3, 7, 0x83);
	want_ev(&want, EBEE_FEV_START, 3, end - 7);
	frame(&b, H2_CONTINUATION, H2_END_HEADERS, 3, 5, 0x84);
	/* PADDED and PRIORITY flags: the payload is skipped whatever it holds. */
	end = frame(&b, H2_HEADERS, 0x08 | 0x20 | H2_END_HEADERS, 5, 40, 0xff);
	want_ev(&want, EBEE_FEV_START, 5, end - 40);
	frame(&b, H2_DATA, 0x08, 3, 300, 0);
	frame(&b, H2_PING, 0, 0, 8, 7);
	frame(&b, H2_DATA, H2_END_STREAM, 3, 0, 0);
	/* Trailers of stream 5 (not a new stream), a PRIORITY, an unknown
	 * extension frame (PRIORITY_UPDATE, 0x10), a SETTINGS ACK. */
	frame(&b, H2_HEADERS, H2_END_STREAM | H2_END_HEADERS, 5, 3, 0x40);
	frame(&b, H2_PRIORITY, 0, 7, 5, 0);
	frame(&b, 0x10, 0, 0, 6, 0);
	frame(&b, H2_SETTINGS, 1, 0, 0, 0);
	/* The client gives up on stream 3: its reset ends it (aborted). */
	end = frame(&b, H2_RST_STREAM, 0, 3, 4, 8);
	want_ev(&want, EBEE_FEV_ABORT, 3, end);
	/* It refuses a pushed stream (even id): no event. */
	frame(&b, H2_RST_STREAM, 0, 2, 4, 7);
	end = frame(&b, H2_HEADERS, H2_END_HEADERS, 7, 1, 0x82);
	want_ev(&want, EBEE_FEV_START, 7, end - 1);
	frame(&b, H2_GOAWAY, 0, 0, 8, 0);
	expect(&b, 0, &want, false);
	free(b.b);
}

static void test_server_ends(void **state)
{
	struct buf b = { 0 };
	struct evs want = { 0 };
	size_t end;

	/* No preface on the server side: its SETTINGS come first. */
	frame(&b, H2_SETTINGS, 0, 0, 12, 0);
	frame(&b, H2_SETTINGS, 1, 0, 0, 0);
	/* Stream 3's response headers, then stream 1 answered at once with a
	 * trailers-only response (gRPC's, for an error): HEADERS with
	 * END_STREAM. */
	frame(&b, H2_HEADERS, H2_END_HEADERS, 3, 10, 0x88);
	end = frame(&b, H2_HEADERS, H2_END_STREAM | H2_END_HEADERS, 1, 30, 0x88);
	want_ev(&want, EBEE_FEV_END, 1, end);
	/* A 1xx (no END_STREAM), then stream 5's final headers. */
	frame(&b, H2_HEADERS, H2_END_HEADERS, 5, 4, 0x08);
	/* Stream 3: DATA (padded), then trailers with END_STREAM (gRPC). */
	frame(&b, H2_DATA, 0x08, 3, 100, 0);
	frame(&b, H2_WINDOW_UPDATE, 0, 3, 4, 0);
	end = frame(&b, H2_HEADERS, H2_END_STREAM | H2_END_HEADERS, 3, 15, 0x40);
	want_ev(&want, EBEE_FEV_END, 3, end);
	/* A push: PUSH_PROMISE on 5 for stream 2 (with a CONTINUATION), the
	 * pushed response on 2: no events. */
	frame(&b, H2_PUSH_PROMISE, 0, 5, 8, 0);
	frame(&b, H2_CONTINUATION, H2_END_HEADERS, 5, 3, 0);
	frame(&b, H2_HEADERS, H2_END_HEADERS, 2, 3, 0x88);
	frame(&b, H2_DATA, H2_END_STREAM, 2, 50, 0);
	/* Stream 5 ends with trailers whose block spans two CONTINUATIONs:
	 * the end is the last byte of the block. */
	frame(&b, H2_HEADERS, H2_END_STREAM, 5, 6, 0x40);
	frame(&b, H2_CONTINUATION, 0, 5, 6, 0x41);
	end = frame(&b, H2_CONTINUATION, H2_END_HEADERS, 5, 6, 0x42);
	want_ev(&want, EBEE_FEV_END, 5, end);
	/* DATA with END_STREAM and no payload; a server reset. */
	end = frame(&b, H2_DATA, H2_END_STREAM, 9, 0, 0);
	want_ev(&want, EBEE_FEV_END, 9, end);
	end = frame(&b, H2_RST_STREAM, 0, 7, 4, 7);
	want_ev(&want, EBEE_FEV_ABORT, 7, end);
	frame(&b, H2_PING, 1, 0, 8, 0);
	frame(&b, H2_GOAWAY, 0, 0, 12, 0);
	expect(&b, 1, &want, false);
	free(b.b);
}

/* What a conforming peer never sends: lost sync. */
static void test_errors(void **state)
{
	static const struct {
		int resp;
		uint8_t type, flags;
		uint32_t sid, len;
	} bad[] = {
		{ 1, H2_DATA, 0, 0, 4 },	  /* a stream frame on stream 0 */
		{ 1, H2_HEADERS, 4, 0, 4 },	  /* ... */
		{ 0, H2_RST_STREAM, 0, 0, 4 },	  /* ... */
		{ 1, H2_SETTINGS, 0, 1, 6 },	  /* a connection frame on a stream */
		{ 1, H2_SETTINGS, 0, 0, 5 },	  /* a wrong length */
		{ 1, H2_PING, 0, 0, 7 },	  /* ... */
		{ 1, H2_RST_STREAM, 0, 1, 3 },	  /* ... */
		{ 1, H2_WINDOW_UPDATE, 0, 0, 5 }, /* ... */
		{ 0, H2_PRIORITY, 0, 3, 4 },	  /* ... */
		{ 1, H2_GOAWAY, 0, 0, 4 },	  /* ... */
		{ 1, H2_CONTINUATION, 4, 1, 2 },  /* outside a header block */
		{ 0, H2_HEADERS, 4, 2, 2 },	  /* a client opening an even stream */
	};
	struct evs none = { 0 };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct buf b = { 0 };

		if (!bad[i].resp)
			put(&b, PREFACE, 24);
		frame(&b, bad[i].type, bad[i].flags, bad[i].sid, bad[i].len, 0);
		expect(&b, bad[i].resp, &none, true);
		free(b.b);
	}
	{
		/* A header block interrupted by another frame. */
		struct buf b = { 0 };

		frame(&b, H2_HEADERS, H2_END_STREAM, 1, 4, 0);
		frame(&b, H2_DATA, 0, 1, 4, 0);
		expect(&b, 1, &none, true);
		free(b.b);
	}
	{
		/* Not the preface after "PRI ". */
		struct buf b = { 0 };

		put(&b, "PRI * HTTP/2.1\r\n\r\nSM\r\n\r\n", 24);
		expect(&b, 0, &none, true);
		free(b.b);
	}
}

static int nsteps;
static int counting_step(struct ebee_fdir *d, uint8_t c, int resp, uint32_t *head_bits)
{
	nsteps++;
	return ebee_frame_http2.step(d, c, resp, head_bits);
}

static void test_huge_data_skipped(void **state)
{
	/* The largest frame there is (16 MiB - 1), fed in 64 KiB segments:
	 * 10 steps (its header and its last byte), one END. */
	struct ebee_frame_ops o = ebee_frame_http2;
	struct buf b = { 0 };
	struct ebee_frame_counts n = { 0 };
	struct ebee_fdir d = { 0 };

	o.step = counting_step;
	frame(&b, H2_DATA, H2_END_STREAM, 1, (1u << 24) - 1, 'x');
	for (size_t off = 0; off < b.n; off += 65536) {
		size_t k = b.n - off < 65536 ? b.n - off : 65536;

		ebee_frame_feed(&o, &d, b.b + off, k, 1, NULL, &n);
		if (off + k < b.n)
			assert_int_equal(n.ends, 0);
	}
	assert_int_equal(n.ends, 1);
	assert_false(n.err);
	assert_int_equal(nsteps, 10);
	free(b.b);
}

/* A connection as the kernel pairs it: client events add streams to the
 * table at their arrival, server events end them. */
struct conn {
	struct ebee_h2tab t;
	uint64_t now;
	int nrec, aborted, untimed, unknown;
	uint32_t rec_id[256];
	uint64_t rec_lat[256];
};

static void conn_ev(void *arg, int ev, uint32_t id, size_t off)
{
	struct conn *c = arg;
	int j;

	if (ev == EBEE_FEV_START) {
		if (ebee_h2_add(&c->t, id, c->now, (uint32_t)off) < 0)
			c->untimed++;
		return;
	}
	j = ebee_h2_find(&c->t, id);
	if (j < 0) {
		c->unknown++;
		return;
	}
	assert_int_equal(c->t.s[j].id, id);
	c->rec_id[c->nrec] = id;
	c->rec_lat[c->nrec++] = c->now - c->t.s[j].arr_ns;
	if (ev == EBEE_FEV_ABORT)
		c->aborted++;
	assert_true(ebee_h2_take(&c->t, j, id));
}

static void conn_feed(struct conn *c, const struct buf *b, int resp, struct ebee_fdir *d,
		      uint64_t now)
{
	struct ebee_frame_counts n = { .on_event = conn_ev, .arg = c };

	c->now = now;
	assert_int_equal(ebee_frame_feed(&ebee_frame_http2, d, b->b, b->n, resp, NULL, &n), 0);
	assert_false(n.err);
}

static void test_pairing_out_of_order(void **state)
{
	static struct conn c;
	struct ebee_fdir in = { 0 }, out = { 0 };
	struct buf b = { 0 };
	/* h2load -m 8 style: eight streams opened at 10, 20, ..., 80 us;
	 * answered 5, 1, 7, 3, 15, 9, 13, 11 at 100, 200, ... us. */
	static const uint32_t order[] = { 5, 1, 7, 3, 15, 9, 13, 11 };

	memset(&c, 0, sizeof(c));
	b.n = 0;
	put(&b, PREFACE, 24);
	frame(&b, H2_SETTINGS, 0, 0, 0, 0);
	conn_feed(&c, &b, 0, &in, 0);
	for (uint32_t i = 0; i < 8; i++) {
		b.n = 0;
		frame(&b, H2_HEADERS, H2_END_STREAM | H2_END_HEADERS, 2 * i + 1, 12, 0x82);
		conn_feed(&c, &b, 0, &in, 10 * (i + 1));
	}
	assert_int_equal(c.t.live, 8);
	b.n = 0;
	frame(&b, H2_SETTINGS, 0, 0, 0, 0);
	conn_feed(&c, &b, 1, &out, 90);
	for (int i = 0; i < 8; i++) {
		b.n = 0;
		frame(&b, H2_HEADERS, H2_END_HEADERS, order[i], 5, 0x88);
		frame(&b, H2_DATA, H2_END_STREAM, order[i], 100, 'x');
		conn_feed(&c, &b, 1, &out, 100 * (i + 1));
	}
	assert_int_equal(c.nrec, 8);
	for (int i = 0; i < 8; i++) {
		assert_int_equal(c.rec_id[i], order[i]);
		/* Its own start, not the oldest's: a FIFO would give 100 - 10. */
		assert_int_equal(c.rec_lat[i], 100 * (i + 1) - 10 * ((order[i] + 1) / 2));
	}
	assert_int_equal(c.t.live, 0);
	assert_int_equal(c.t.unread, 0);
	/* A reset from the client ends its stream (aborted); the server's
	 * frames for it after that find nothing. */
	b.n = 0;
	frame(&b, H2_HEADERS, H2_END_HEADERS, 17, 3, 0x82);
	conn_feed(&c, &b, 0, &in, 1000);
	b.n = 0;
	frame(&b, H2_RST_STREAM, 0, 17, 4, 8);
	conn_feed(&c, &b, 0, &in, 1500);
	b.n = 0;
	frame(&b, H2_DATA, H2_END_STREAM, 17, 4, 0);
	conn_feed(&c, &b, 1, &out, 1600);
	assert_int_equal(c.nrec, 9);
	assert_int_equal(c.aborted, 1);
	assert_int_equal(c.rec_lat[8], 500);
	assert_int_equal(c.unknown, 1);
	free(b.b);
}

static void test_table_bound(void **state)
{
	static struct ebee_h2tab t;
	int slot[EBEE_H2_SLOTS + 6];

	memset(&t, 0, sizeof(t));
	/* More in flight than slots: the extra ones do not fit (counted as
	 * untimed by the caller), never evict another. */
	for (int i = 0; i < EBEE_H2_SLOTS + 6; i++)
		slot[i] = ebee_h2_add(&t, 2 * i + 1, i, i);
	for (int i = 0; i < EBEE_H2_SLOTS + 6; i++) {
		if (i < EBEE_H2_SLOTS) {
			assert_true(slot[i] >= 0);
			assert_int_equal(ebee_h2_find(&t, 2 * i + 1), slot[i]);
		} else {
			assert_int_equal(slot[i], -1);
			assert_int_equal(ebee_h2_find(&t, 2 * i + 1), -1);
		}
	}
	assert_int_equal(t.live, EBEE_H2_SLOTS);
	/* One ends: a new stream whose home slot is taken finds the free one. */
	assert_true(ebee_h2_take(&t, ebee_h2_find(&t, 41), 41));
	assert_true(ebee_h2_add(&t, 1001, 0, 0) >= 0);
	assert_true(ebee_h2_find(&t, 1001) >= 0);
	assert_int_equal(t.live, EBEE_H2_SLOTS);

	/* Ids sharing a home slot (1, 129, 257), one removed in the middle. */
	memset(&t, 0, sizeof(t));
	assert_int_equal(ebee_h2_add(&t, 1, 1, 100), 0);
	assert_int_equal(ebee_h2_add(&t, 129, 2, 200), 1);
	assert_int_equal(ebee_h2_add(&t, 3, 3, 300), 2); /* 3's home (1) is taken */
	assert_int_equal(ebee_h2_add(&t, 257, 4, 400), 3);
	assert_true(ebee_h2_take(&t, ebee_h2_find(&t, 129), 129));
	/* The other side ending it too, or one naming another stream's slot,
	 * frees nothing. */
	assert_false(ebee_h2_take(&t, 1, 129));
	assert_false(ebee_h2_take(&t, 2, 129));
	assert_int_equal(t.live, 3);
	assert_int_equal(ebee_h2_find(&t, 3), 2);
	assert_int_equal(ebee_h2_find(&t, 257), 3);
	assert_int_equal(ebee_h2_find(&t, 129), -1);
	assert_int_equal(ebee_h2_find(&t, 0), -1);

	/* The server's reads passing a stream's frame header start its
	 * service time; sequence numbers wrap. */
	assert_int_equal(t.unread, 3);
	ebee_h2_mark_read(&t, 301, 77);
	assert_int_equal(t.s[0].svc_ns, 77);
	assert_int_equal(t.s[2].svc_ns, 77);
	assert_int_equal(t.s[3].svc_ns, 0);
	assert_int_equal(t.unread, 1);
	t.s[3].seq = 0xfffffff0u;
	ebee_h2_mark_read(&t, 0x10, 88);
	assert_int_equal(t.s[3].svc_ns, 88);
	assert_int_equal(t.unread, 0);
	assert_true(ebee_h2_take(&t, 3, 257));
	assert_int_equal(t.unread, 0);
	assert_int_equal(t.live, 2);
}

/* Two threads end the same streams at once, as a client's RST_STREAM on one
 * CPU and the server's END_STREAM on another do (a gRPC deadline run out on
 * both sides): each stream is taken by exactly one of them, and the table's
 * counters come back to zero. A round's streams are added, then both
 * threads race to take each one; a barrier starts them together. Without
 * the atomic swap, 4 runs in 5 here end with a stream counted twice. */
#define RACE_ROUNDS 20000

struct race {
	struct ebee_h2tab t;
	pthread_barrier_t go, done;
	uint32_t base; /* the round's first stream id */
	int won[2];
};

struct racer {
	struct race *r;
	int side;
};

static void *race_side(void *arg)
{
	struct racer *me = arg;
	struct race *r = me->r;

	for (int round = 0; round < RACE_ROUNDS; round++) {
		pthread_barrier_wait(&r->go);
		for (uint32_t k = 0; k < EBEE_H2_SLOTS / 2; k++) {
			/* Both sides walk the round's streams in one order,
			 * so that they contend for each. */
			uint32_t id = r->base + 2 * k;
			int j = ebee_h2_find(&r->t, id);

			if (j >= 0 && ebee_h2_take(&r->t, (uint32_t)j, id))
				r->won[me->side]++;
		}
		pthread_barrier_wait(&r->done);
	}
	return NULL;
}

static void test_take_race(void **state)
{
	static struct race r;
	struct racer a = { &r, 0 }, b = { &r, 1 };
	pthread_t ta, tb;
	uint32_t id = 1;

	(void)state;
	memset(&r, 0, sizeof(r));
	pthread_barrier_init(&r.go, NULL, 3);
	pthread_barrier_init(&r.done, NULL, 3);
	assert_int_equal(pthread_create(&ta, NULL, race_side, &a), 0);
	assert_int_equal(pthread_create(&tb, NULL, race_side, &b), 0);
	for (int round = 0; round < RACE_ROUNDS; round++) {
		r.base = id;
		for (uint32_t k = 0; k < EBEE_H2_SLOTS / 2; k++, id += 2)
			assert_true(ebee_h2_add(&r.t, id, 1, k) >= 0);
		pthread_barrier_wait(&r.go);
		pthread_barrier_wait(&r.done);
		assert_int_equal(r.t.live, 0);
	}
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	assert_int_equal(r.won[0] + r.won[1], RACE_ROUNDS * (EBEE_H2_SLOTS / 2));
	assert_int_equal(r.t.unread, 0);
	print_message("take race: %d streams, %d taken by one side, %d by the other\n",
		      RACE_ROUNDS * (EBEE_H2_SLOTS / 2), r.won[0], r.won[1]);
	pthread_barrier_destroy(&r.go);
	pthread_barrier_destroy(&r.done);
}

/* A connection framed from mid-stream (frame/mid.bpf.h) starts at a frame
 * header that ebee_h2_header_ok takes for one: each type with its own
 * flags, stream id and length; payload and other protocols' bytes not. */
static void test_header_ok(void **state)
{
	static const struct {
		uint8_t type, flags;
		uint32_t sid, len;
		int resp, ok;
	} c[] = {
		{ H2_DATA, H2_END_STREAM, 1, 5, 0, 1 },
		{ H2_DATA, 0x09, 3, 100, 1, 1 },
		{ H2_DATA, 0x02, 3, 100, 1, 0 }, /* a flag DATA does not have */
		{ H2_DATA, 0, 0, 100, 0, 0 },	 /* on stream 0 */
		{ H2_HEADERS, H2_END_HEADERS, 7, 40, 0, 1 },
		{ H2_HEADERS, H2_END_HEADERS, 8, 40, 0, 0 }, /* a client opens odd ids */
		{ H2_HEADERS, H2_END_HEADERS | H2_END_STREAM, 8, 40, 1, 1 },
		{ H2_PRIORITY, 0, 5, 5, 0, 1 },
		{ H2_PRIORITY, 0, 5, 6, 0, 0 },
		{ H2_RST_STREAM, 0, 5, 4, 1, 1 },
		{ H2_SETTINGS, 0, 0, 18, 1, 1 },
		{ H2_SETTINGS, 1, 0, 0, 0, 1 },
		{ H2_SETTINGS, 1, 0, 6, 0, 0 }, /* an ACK with a payload */
		{ H2_SETTINGS, 0, 0, 7, 0, 0 },
		{ H2_PUSH_PROMISE, H2_END_HEADERS, 3, 10, 1, 1 },
		{ H2_PUSH_PROMISE, H2_END_HEADERS, 3, 10, 0, 0 }, /* clients do not push */
		{ H2_PING, 1, 0, 8, 0, 1 },
		{ H2_PING, 0, 1, 8, 0, 0 },
		{ H2_GOAWAY, 0, 0, 8, 1, 1 },
		{ H2_WINDOW_UPDATE, 0, 0, 4, 0, 1 },
		{ H2_WINDOW_UPDATE, 0, 3, 4, 1, 1 },
		{ H2_CONTINUATION, H2_END_HEADERS, 3, 9, 0, 1 },
		{ 0x0a, 0, 0, 4, 0, 0 },	   /* an extension type: not a start */
		{ H2_DATA, 0, 1, 16385, 0, 0 }, /* past the default maximum size */
	};
	static const char *other[] = { "*3\r\n$3\r\nSET\r\n", "GET / HTTP/1.1\r\nHost:",
				       "\x17\x03\x03\x00\x20" "abcdefgh", "get key0001\r\n",
				       "\0\0\0\0\0\0\0\0\0", PREFACE };

	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct buf w = {};

		frame(&w, c[i].type, c[i].flags, c[i].sid, 0, 0);
		w.b[0] = c[i].len >> 16;
		w.b[1] = c[i].len >> 8;
		w.b[2] = c[i].len;
		if (ebee_h2_header_ok(w.b, c[i].resp) != c[i].ok)
			fail_msg("case %zu: type %u flags %#x sid %u len %u resp %d: want %d", i,
				 c[i].type, c[i].flags, c[i].sid, c[i].len, c[i].resp, c[i].ok);
		free(w.b);
	}
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
		for (int resp = 0; resp < 2; resp++)
			assert_false(ebee_h2_header_ok((const uint8_t *)other[i], resp));
}

/* From mid-stream, the client's side parsed from a frame header (st H2_HDR,
 * as frame_mid_start sets it): the streams it then opens are requests. */
static void test_mid_stream_client(void **state)
{
	struct buf w = {};
	struct evs got = {}, want = {};
	size_t last;

	(void)state;
	frame(&w, H2_DATA, H2_END_STREAM, 41, 12, 'x'); /* of a stream opened unseen */
	last = frame(&w, H2_HEADERS, H2_END_HEADERS, 43, 30, 'h');
	want_ev(&want, EBEE_FEV_START, 43, last - 30);
	frame(&w, H2_DATA, H2_END_STREAM, 43, 5, 'd');
	last = frame(&w, H2_HEADERS, H2_END_HEADERS, 45, 30, 'h');
	want_ev(&want, EBEE_FEV_START, 45, last - 30);
	{
		const struct ebee_frame_ops *o = ebee_frame_get(EBEE_FRAME_HTTP2);
		struct ebee_frame_counts n = { .on_event = on_ev, .arg = &got };
		struct ebee_fdir d = { .st = H2_HDR };

		assert_int_equal(ebee_frame_feed(o, &d, w.b, w.n, 0, NULL, &n), 0);
		assert_false(n.err);
	}
	assert_int_equal(got.n, want.n);
	for (size_t i = 0; i < got.n; i++) {
		assert_int_equal(got.e[i].ev, want.e[i].ev);
		assert_int_equal(got.e[i].id, want.e[i].id);
	}
	free(w.b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_detect_trusted),
		cmocka_unit_test(test_client_streams),
		cmocka_unit_test(test_server_ends),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_huge_data_skipped),
		cmocka_unit_test(test_pairing_out_of_order),
		cmocka_unit_test(test_table_bound),
		cmocka_unit_test(test_take_race),
		cmocka_unit_test(test_header_ok),
		cmocka_unit_test(test_mid_stream_client),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
