// SPDX-License-Identifier: MIT
/*
 * The reasons a workload's figures cannot be taken as exact (warn.h): one
 * kind each (enum ebee_warn), with its count and its text formatted whole,
 * however long its figures make it. The fixed-size warning of ebee_stats is
 * made from them last, whole reasons only, so nothing is ever cut in the
 * middle of a reason (it used to be: one string cut at 255 characters).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame/frame_ops.h"
#include "frame/http2.h"
#include "warn.h"

static const char *const ids[EBEE_WARN_COUNT] = {
	[EBEE_WARN_UDP_UNANSWERED] = "udp_unanswered",
	[EBEE_WARN_TLS_MUX] = "tls_mux",
	[EBEE_WARN_TLS_AGAIN] = "tls_again",
	[EBEE_WARN_MC_QUIET] = "memcache_quiet",
	[EBEE_WARN_UNSEEN] = "unseen",
	[EBEE_WARN_DESYNC] = "desync",
	[EBEE_WARN_LATE] = "late",
	[EBEE_WARN_OVERLAP] = "overlap",
	[EBEE_WARN_UNTIMED] = "untimed",
	[EBEE_WARN_UNMATCHED] = "unmatched",
	[EBEE_WARN_LOST] = "lost",
	[EBEE_WARN_NO_REQUESTS] = "no_requests",
};

const char *ebee_warn_str(enum ebee_warn kind)
{
	return (unsigned int)kind < EBEE_WARN_COUNT ? ids[kind] : NULL;
}

void ebee_warns_add(struct ebee_warns *ws, enum ebee_warn kind, uint64_t count, const char *fmt,
		    ...)
{
	va_list ap;

	if ((unsigned int)kind >= EBEE_WARN_COUNT || ws->on & (1ull << kind))
		return;
	ws->on |= 1ull << kind;
	ws->count[kind] = count;
	va_start(ap, fmt);
	if (vasprintf(&ws->text[kind], fmt, ap) < 0)
		ws->text[kind] = NULL;
	va_end(ap);
}

void ebee_warns_udp(struct ebee_warns *ws, uint64_t rx, uint64_t expired)
{
	ebee_warns_add(ws, EBEE_WARN_UDP_UNANSWERED, rx,
		       "UDP: %llu datagrams received, none answered to its sender (%llu expired "
		       "unanswered): no request/response pattern to count",
		       (unsigned long long)rx, (unsigned long long)expired);
}

void ebee_warns_lost(struct ebee_warns *ws, uint64_t requests, uint64_t lost)
{
	ebee_warns_add(ws, EBEE_WARN_LOST, lost,
		       "%.1f%% of the window's requests (%llu of %llu) lost their records (the "
		       "ring buffer was full: give it more room, ebee_opts.ringbuf_size): "
		       "requests and rps are exact, the latencies are over the rest",
		       requests ? 100.0 * (double)lost / (double)requests : 0.0,
		       (unsigned long long)lost, (unsigned long long)requests);
}

/* One cause more into a text being built (". " between: "; " is what
 * separates whole reasons in ebee_warns_join()'s text). */
__attribute__((format(printf, 3, 4))) static void cause(char *buf, size_t len, const char *fmt, ...)
{
	size_t off = strlen(buf);
	va_list ap;

	if (off + 2 >= len)
		return;
	if (off) {
		memcpy(buf + off, ". ", 3);
		off += 2;
	}
	va_start(ap, fmt);
	vsnprintf(buf + off, len - off, fmt, ap);
	va_end(ap);
}

/* What the framing counters say of a zero (io or auto mode): a connection
 * whose first bytes were not seen has no framer; TLS hides what it carries;
 * a framer that has pairs to make made none. */
static bool silent_framing(char *buf, size_t len, const struct ebee_silent *z)
{
	const struct ebee_fstat *f = z->f;
	uint64_t n = 0;
	bool said = false;

	for (int i = EBEE_FRAME_LENGTH; i < EBEE_FRAME_MAX; i++)
		n += f->conns[i];
	if (!n) {
		cause(buf, len, "framing not decided: ebee saw no connection's first bytes%s",
		      z->adopted ? " (its connections were open before tracing began)" : "");
		return true;
	}
	if (f->conns[EBEE_FRAME_TLS]) {
		cause(buf, len, "%llu TLS connection(s), counted by record turns%s",
		      (unsigned long long)f->conns[EBEE_FRAME_TLS],
		      f->tls_mux ? " (h2 offered: its streams are hidden in the records)" : "");
		said = true;
	}
	if (f->unseen) {
		cause(buf, len,
		      "%llu connection(s) began with bytes ebee did not see (counted by length)",
		      (unsigned long long)f->unseen);
		said = true;
	}
	if (f->midstream) {
		cause(buf, len, "%llu connection(s) framed from mid-stream",
		      (unsigned long long)f->midstream);
		said = true;
	}
	for (int i = EBEE_FRAME_RESP; i < EBEE_FRAME_MAX; i++)
		if (f->conns[i] && i != EBEE_FRAME_TLS) {
			cause(buf, len,
			      "%s on %llu connection(s) has paired no request with its response",
			      ebee_frame_name(i), (unsigned long long)f->conns[i]);
			said = true;
		}
	return said;
}

void ebee_warns_silent(struct ebee_warns *ws, const struct ebee_silent *z)
{
	char buf[1024], span[64];
	bool framed = false;

	if (z->requests || !z->io_bytes)
		return;
	if (z->span_ns)
		snprintf(span, sizeof(span), "in the last %.1f s", (double)z->span_ns / 1e9);
	else
		snprintf(span, sizeof(span), "since tracing began");
	buf[0] = 0;
	if (z->framing && z->f && (z->mode == EBEE_MODE_AUTO || z->mode == EBEE_MODE_IO))
		framed = silent_framing(buf, sizeof(buf), z);
	switch (z->mode) {
	case EBEE_MODE_AUTO:
		cause(buf, sizeof(buf),
		      "mode auto is undecided: neither pattern completed a request (no "
		      "connection closed, no read followed a response)");
		break;
	case EBEE_MODE_CONN:
		cause(buf, sizeof(buf),
		      "conn mode counts a request when its connection closes: none has");
		break;
	case EBEE_MODE_IO:
		if (!framed)
			cause(buf, sizeof(buf),
			      "io mode counts a request at the read that follows its response: "
			      "none did (reads without answers, or a response still being "
			      "written)");
		break;
	case EBEE_MODE_GRPC:
		cause(buf, sizeof(buf), "grpc mode counts completed server streams: none has");
		break;
	case EBEE_MODE_DGRAM:
		cause(buf, sizeof(buf),
		      "dgram mode counts answered UDP datagrams, not the TCP connections' bytes");
		break;
	default:
		break;
	}
	if (z->adopted && z->mode != EBEE_MODE_DGRAM && z->mode != EBEE_MODE_GRPC)
		cause(buf, sizeof(buf),
		      "%llu connection(s) were open before tracing began (their start unseen: "
		      "conn mode counts none of them)",
		      (unsigned long long)z->adopted);
	if (z->syscall)
		cause(buf, sizeof(buf), "syscall path: no bytes looked into, no framing");
	ebee_warns_add(ws, EBEE_WARN_NO_REQUESTS, z->io_bytes,
		       "%llu bytes in %llu reads and writes on its connections %s and no "
		       "request counted: %s",
		       (unsigned long long)z->io_bytes, (unsigned long long)z->io_calls, span, buf);
}

void ebee_warns_overlap(struct ebee_warns *ws, const struct ebee_fstat *f)
{
	if (f->overlap)
		ebee_warns_add(ws, EBEE_WARN_OVERLAP, f->overlap,
			       "%llu connection(s) counted by length had a client that sent more "
			       "while a response was being written (pipelining, streaming): "
			       "requests read together count as one",
			       (unsigned long long)f->overlap);
}

/* What each framer in use says of its own counters (its ops' reasons). */
static void framer_reasons(struct ebee_warns *ws, const struct ebee_fstat *f)
{
	for (int i = EBEE_FRAME_LENGTH; i < EBEE_FRAME_MAX; i++) {
		const struct ebee_frame_ops *o = ebee_frame_get(i);

		if (!f->conns[i] || !o || !o->reasons)
			continue;
		for (const struct ebee_frame_reason *r = o->reasons; r->text; r++) {
			uint64_t n;

			memcpy(&n, (const char *)f + r->off, sizeof(n));
			if (n)
				ebee_warns_add(ws, r->kind, n, "%s on %llu connection(s): %llu %s",
					       ebee_frame_name(i), (unsigned long long)f->conns[i],
					       (unsigned long long)n, r->text);
		}
	}
}

void ebee_warns_framing(struct ebee_warns *ws, const struct ebee_fstat *f)
{
	framer_reasons(ws, f);
	if (f->unseen)
		ebee_warns_add(ws, EBEE_WARN_UNSEEN, f->unseen,
			       "%llu connection(s) began with bytes ebee did not see (they came "
			       "with the handshake and were lost, or did not parse, or the "
			       "connection was open before tracing) and showed no message start "
			       "to frame from in their next client segments: counted by length",
			       (unsigned long long)f->unseen);
	/* A loss of sync is a reason while a connection that lost it is not
	 * trusted again yet (EBEE_FRAME_REGAIN requests answered in sync since):
	 * once all are, the counts stay said (JSON desync, resync, gap_lost,
	 * regained), the figures from then on are exact again. */
	if (f->desync_conns && f->lapses > f->regained) {
		char lost[96] = "their number is not known";

		/* HTTP/2's are, from the client's stream ids (gap_lost). */
		if (f->conns[EBEE_FRAME_HTTP2] || f->gap_lost)
			snprintf(lost, sizeof(lost), "%llu HTTP/2 stream(s) known opened in a gap",
				 (unsigned long long)f->gap_lost);
		ebee_warns_add(ws, EBEE_WARN_DESYNC, f->lapses - f->regained,
			       "%llu framed connection(s) lost sync (%llu time(s): %llu at a "
			       "sequence gap, %llu at bytes that did not parse, %llu at a walk cut "
			       "short), %llu not trusted again yet (%d requests answered in sync "
			       "after the loss): requests in the gap are not counted (%s)",
			       (unsigned long long)f->desync_conns, (unsigned long long)f->desync,
			       (unsigned long long)f->desync_gap,
			       (unsigned long long)(f->desync - f->desync_gap - f->desync_cut),
			       (unsigned long long)f->desync_cut,
			       (unsigned long long)(f->lapses - f->regained), EBEE_FRAME_REGAIN,
			       lost);
	}
	if (f->late)
		ebee_warns_add(ws, EBEE_WARN_LATE, f->late,
			       "%llu connection(s) counted by length once their requests came one "
			       "at a time later sent several together: the bursts read before a "
			       "sample (one in %d segments arriving between requests) saw it may "
			       "count as one request each",
			       (unsigned long long)f->late, EBEE_FV_SAMPLE);
	ebee_warns_overlap(ws, f);
	if (f->untimed)
		ebee_warns_add(ws, EBEE_WARN_UNTIMED, f->untimed,
			       "%llu HTTP/2 stream(s) beyond %d in flight on a connection were "
			       "not counted",
			       (unsigned long long)f->untimed, EBEE_H2_SLOTS);
	if (f->unmatched)
		ebee_warns_add(ws, EBEE_WARN_UNMATCHED, f->unmatched,
			       "%llu response(s) had no request to pair with",
			       (unsigned long long)f->unmatched);
}

const char *ebee_warns_text(const struct ebee_warns *ws, enum ebee_warn kind)
{
	return ws->text[kind] ? ws->text[kind] : ids[kind];
}

void ebee_warns_join(const struct ebee_warns *ws, char *buf, size_t len)
{
	size_t off = 0, end[EBEE_WARN_COUNT];
	int in = 0, total = 0;

	if (!len)
		return;
	buf[0] = 0;
	for (int k = 0; k < EBEE_WARN_COUNT; k++) {
		const char *t = ebee_warns_text(ws, k);
		size_t need = (off ? 2 : 0) + strlen(t);

		if (!(ws->on & (1ull << k)))
			continue;
		if (total++ == in && off + need < len) {
			snprintf(buf + off, len - off, "%s%s", off ? "; " : "", t);
			off += need;
			end[in++] = off;
		}
	}
	/* What was left out is counted; to make room for saying so, the last
	 * reasons in go too, whole. */
	while (in < total) {
		char more[64];
		size_t base = in ? end[in - 1] : 0;
		int n = snprintf(more, sizeof(more), "%s+%d more reason%s (ebee_get_warnings())",
				 in ? "; " : "", total - in, total - in > 1 ? "s" : "");

		if (base + n < len) {
			memcpy(buf + base, more, n + 1);
			break;
		}
		if (!in) {
			buf[0] = 0;
			break;
		}
		in--;
	}
}

int ebee_warns_each(const struct ebee_warns *ws, ebee_warning_fn fn, void *ctx)
{
	for (int k = 0; k < EBEE_WARN_COUNT && fn; k++) {
		struct ebee_warning w = {
			.kind = k,
			.id = ids[k],
			.count = ws->count[k],
			.text = ebee_warns_text(ws, k),
		};
		int err;

		if (!(ws->on & (1ull << k)))
			continue;
		err = fn(&w, ctx);
		if (err)
			return err;
	}
	return 0;
}

void ebee_warns_free(struct ebee_warns *ws)
{
	for (int k = 0; k < EBEE_WARN_COUNT; k++)
		free(ws->text[k]);
	memset(ws, 0, sizeof(*ws));
}
