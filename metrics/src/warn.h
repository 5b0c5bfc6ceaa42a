/* SPDX-License-Identifier: MIT */
/*
 * The reasons a workload's figures cannot be taken as exact (enum ebee_warn),
 * gathered one kind at a time, each with its count and its text whole, then
 * handed out: to ebee_get_warnings()'s callback one by one, and joined into
 * the fixed-size warning of ebee_stats and ebee_trust, whole reasons only.
 * Plain C over the kernel's counters (struct ebee_fstat), so unit tests drive
 * it without BPF.
 */
#ifndef EBEE_WARN_H
#define EBEE_WARN_H

#include <stddef.h>
#include <stdint.h>

#include "ebee.h"
#include "ebee_common.h"

struct ebee_warns {
	uint64_t on; /* bit (1 << kind) for each reason that applies */
	uint64_t count[EBEE_WARN_COUNT];
	char *text[EBEE_WARN_COUNT]; /* allocated; NULL when out of memory (the id stands in) */
};

/* One reason, its text formatted whole; a kind added twice keeps the first. */
__attribute__((format(printf, 4, 5))) void
ebee_warns_add(struct ebee_warns *ws, enum ebee_warn kind, uint64_t count, const char *fmt, ...);
/* dgram: rx datagrams received, none answered (expired of them unanswered). */
void ebee_warns_udp(struct ebee_warns *ws, uint64_t rx, uint64_t expired);
/* Of requests over the window, lost whose records a full ring lost. */
void ebee_warns_lost(struct ebee_warns *ws, uint64_t requests, uint64_t lost);
/* A workload's I/O with no request counted, and what ebee knows of why. */
struct ebee_silent {
	enum ebee_mode mode; /* in force (AUTO: undecided) */
	uint64_t requests;   /* counted over the span */
	uint64_t
	    span_ns; /* the span: the last span_ns (the window's age); 0: since tracing began */
	uint64_t io_bytes;	    /* moved by the workload's connections over the span */
	uint64_t io_calls;	    /* ... in so many reads and writes */
	uint64_t adopted;	    /* connections open when tracing began (adopted) */
	bool syscall;		    /* syscall path: no bytes looked into */
	bool framing;		    /* socket path, framing on: f says what it saw */
	const struct ebee_fstat *f; /* framing counters (zero before any connection's);
				     * NULL without framing */
};
/* I/O and no request (z->requests 0, z->io_bytes > 0): a reason
 * (EBEE_WARN_NO_REQUESTS, its count the bytes) saying what ebee knows of why:
 * the mode's pattern, the framing, connections open before tracing. A zero
 * that is no measurement is never silent. Nothing otherwise. */
void ebee_warns_silent(struct ebee_warns *ws, const struct ebee_silent *z);
/* Clients that sent while a response was being written (with or without framing). */
void ebee_warns_overlap(struct ebee_warns *ws, const struct ebee_fstat *f);
/* Everything the framing counters say cannot be counted exactly (overlap included). */
void ebee_warns_framing(struct ebee_warns *ws, const struct ebee_fstat *f);
/* A reason's text: its own, or its id when it could not be allocated. */
const char *ebee_warns_text(const struct ebee_warns *ws, enum ebee_warn kind);
/* The reasons into buf ("" for none), "; " between, in the order of the kinds,
 * each whole: from the first that does not fit on, they are left out and
 * counted ("; +N more reasons (ebee_get_warnings())"). */
void ebee_warns_join(const struct ebee_warns *ws, char *buf, size_t len);
/* fn for each reason in kind order: 0, or fn's first non-zero return. */
int ebee_warns_each(const struct ebee_warns *ws, ebee_warning_fn fn, void *ctx);
/* Free the texts; ws is empty again. */
void ebee_warns_free(struct ebee_warns *ws);

#endif /* EBEE_WARN_H */
