/* SPDX-License-Identifier: MIT */
/*
 * Framers: how a protocol delimits its requests, one file each behind this
 * ops table (as the controller's policies are), one line each in the list
 * (EBEE_FRAME_LIST, bpf/frame/frame.h) that makes the table and the names. The
 * parsers themselves are the headers under bpf/frame/, shared with the
 * kernel, which runs them on the bytes of each connection
 * (bpf/frame/frame_skb.bpf.h, dispatched by id, bpf/frame/dispatch.h); user
 * space names them, says what their figures are worth, and runs the same
 * step functions on byte strings (unit tests, tools).
 */
#ifndef EBEE_FRAME_OPS_H
#define EBEE_FRAME_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ebee.h"
#include "ebee_common.h"
#include "frame/dispatch.h"

/* One reason a framer's counters give (enum ebee_warn): it applies when its
 * counter, a __u64 of struct ebee_fstat, is not 0, and reads "<name> on
 * <conns> connection(s): <counter> <text>" (metrics/src/warn.c). */
struct ebee_frame_reason {
	enum ebee_warn kind;
	size_t off; /* offsetof(struct ebee_fstat, the counter) */
	const char *text;
};

/* A framer's user half, ebee_frame_<stem> in metrics/src/frame/<stem>.c
 * (its id and name are its line of the list). */
struct ebee_frame_ops {
	/* One byte of one direction (resp: server -> client); EBEE_FEV_*.
	 * NULL: recognised only (kind ONLY), counted by length; else its
	 * parser's ebee_<stem>_frame_step. */
	int (*step)(struct ebee_fdir *d, uint8_t c, int resp, uint32_t *head_bits);
	/* NULL, or which request (HTTP/2: the stream id) the event the step
	 * just returned belongs to, for framers that pair by id. */
	uint32_t (*event_id)(const struct ebee_fdir *d);
	/* NULL, or what the kernel's counters of a workload with connections
	 * framed so say cannot be trusted: a list ended by a NULL text. */
	const struct ebee_frame_reason *reasons;
};

#define EBEE_FRAME_DECL_(ID, stem, name, kind) extern const struct ebee_frame_ops ebee_frame_##stem;
EBEE_FRAME_LIST(EBEE_FRAME_DECL_)
#undef EBEE_FRAME_DECL_

/* The framer of an id, or NULL. */
const struct ebee_frame_ops *ebee_frame_get(int id);
/* Its name (the list's); "" for EBEE_FRAME_NONE or an unknown id. */
const char *ebee_frame_name(int id);

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
int ebee_frame_feed(const struct ebee_frame_ops *ops, struct ebee_fdir *d, const uint8_t *b,
		    size_t n, int resp, uint32_t *head_bits, struct ebee_frame_counts *out);

#endif
