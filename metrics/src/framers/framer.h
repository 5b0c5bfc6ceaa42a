/* SPDX-License-Identifier: MIT */
/*
 * Framers: how a protocol delimits its requests, one file each behind this
 * ops table (as the controller's policies are). The parsers themselves are
 * the headers under bpf/frame/, shared with the kernel, which runs them on
 * the bytes of each connection (bpf/frame/frame_skb.bpf.h, dispatched by
 * id); user space names them, says what their figures are worth, and runs
 * the same step functions on byte strings (unit tests, tools).
 */
#ifndef EBEE_FRAMER_H
#define EBEE_FRAMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ebee_common.h"

struct ebee_framer_ops {
	int id;		  /* enum ebee_fr */
	const char *name; /* ebee_stats.framing */
	/* One byte of one direction (resp: server -> client); EBEE_FEV_*.
	 * NULL: recognised only, counted by length. */
	int (*step)(struct ebee_fdir *d, uint8_t c, int resp, uint32_t *head_bits);
	/* NULL, or which request (HTTP/2: the stream id) the event the step
	 * just returned belongs to, for framers that pair by id. */
	uint32_t (*event_id)(const struct ebee_fdir *d);
	/* NULL, or why a workload with connections framed so has figures that
	 * cannot be trusted (the warning of ebee_stats). */
	const char *warning;
	/* NULL, or what the kernel's counters of the workload (f) say cannot
	 * be trusted: written to buf like snprintf, 0 when nothing. */
	int (*check)(const struct ebee_fstat *f, char *buf, size_t len);
};

extern const struct ebee_framer_ops ebee_framer_length, ebee_framer_resp, ebee_framer_http1,
    ebee_framer_http2, ebee_framer_tls, ebee_framer_mctext, ebee_framer_mcbin;

/* The framer of an id, or NULL. */
const struct ebee_framer_ops *ebee_framer_get(int id);
/* Its name; "" for EBEE_FR_NONE or an unknown id. */
const char *ebee_framer_name(int id);
/* Its warning, or NULL. */
const char *ebee_framer_warning(int id);
/* Its check of a workload's counters (ops.check), 0 when it has none. */
int ebee_framer_check(int id, const struct ebee_fstat *f, char *buf, size_t len);
/* Which framer a client stream starting with these bytes gets (the
 * kernel's choice, ebee_fr_detect); n >= 1. */
int ebee_framer_detect(const uint8_t *b, size_t n);

/* What feeding bytes found. */
struct ebee_frame_counts {
	uint64_t starts;     /* requests begun (client side) */
	uint64_t ends;	     /* responses finished (server side) */
	uint64_t aborts;     /* requests reset (either side) */
	uint64_t unanswered; /* requests no response will answer (memcached noreply, quiet) */
	bool err;	     /* the bytes did not parse: out of sync from there */
	/* NULL, or called at every START, END and ABORT with the event's id
	 * (ops->event_id; 0 without) and its offset in the bytes fed. */
	void (*on_event)(void *arg, int ev, uint32_t id, size_t off);
	void *arg;
};

/* Feed n bytes of one direction through ops->step, passing over what the
 * parser skips, exactly as the kernel's walk does (its per-skb step budget
 * aside). 0, or -EINVAL for a framer without a step. */
int ebee_framer_feed(const struct ebee_framer_ops *ops, struct ebee_fdir *d, const uint8_t *b,
		     size_t n, int resp, uint32_t *head_bits, struct ebee_frame_counts *out);

#endif
