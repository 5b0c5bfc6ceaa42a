/* SPDX-License-Identifier: MIT */
/*
 * A workload's requests as the BPF programs count them (struct ebee_kcount,
 * map kcounts: per CPU, incremented where each request record is made,
 * whether or not the ring takes it), sampled by user space: the latest reading
 * gives `requests` exactly; a short history of readings gives the requests
 * and the lost ones over any span of time, by linear interpolation between
 * the readings around each end.
 *
 * Over the window's span, the kernel's count is the records that arrived in
 * it (the window's) plus the rise of its lost count: every request either
 * reached the ring or was counted lost. Only the lost part needs the
 * readings, so rps over the window (that count over the span) and the share
 * of it whose records arrived (covered) are exact without a loss, whatever
 * the sampling: interpolating the request count itself between readings
 * 100 ms apart was off by half on a 200-request burst. Pure logic, no locks:
 * the caller (struct wl) holds the workload lock.
 */
#ifndef EBEE_KCOUNT_H
#define EBEE_KCOUNT_H

#include <stdbool.h>
#include <stdint.h>

#include "ebee_common.h"

/* Above this share of a window's requests lost (their records dropped: the
 * ring was full), the percentiles are over a sample the losses may have bent
 * (a ring fills in bursts, which is when latencies are unusual), so the
 * workload is untrusted. 1%: the p99 is then still decided by requests that
 * arrived in at least 99 cases of 100; a bigger loss could hide the whole tail
 * the p99 is about. */
#define EBEE_KC_LOST_MAX 0.01

/* History: a fine level (a reading every 100 ms, 12.8 s of them) for short
 * windows, a coarse one (every 2 s, 256 s) for long ones; beyond that the
 * workload's start (all zero) is the oldest point. */
#define EBEE_KC_LEVELS 2
#define EBEE_KC_RING   128

struct ebee_kc_sample {
	uint64_t t_ns; /* CLOCK_MONOTONIC, the records' clock */
	struct ebee_kcount c;
};

struct ebee_kc {
	struct ebee_kc_sample start; /* the workload's add: zero */
	struct ebee_kc_sample last;  /* the latest reading */
	struct {
		struct ebee_kc_sample s[EBEE_KC_RING];
		unsigned int head, n; /* oldest slot, samples held */
	} lv[EBEE_KC_LEVELS];
};

/* What the counters say about one pattern's requests over a span. */
struct ebee_kc_span {
	double requests; /* completed in the span (interpolated at its ends) */
	double lost;	 /* ... of them, whose records were lost */
	double covered;	 /* share of them whose records arrived, 0..1; 1 with none */
};

void ebee_kc_init(struct ebee_kc *h, uint64_t now_ns);
/* One reading at t_ns; older than the latest one: ignored. */
void ebee_kc_update(struct ebee_kc *h, uint64_t t_ns, const struct ebee_kcount *c);
/* Pattern k's (EBEE_KC_*) counters between lo_ns and hi_ns. */
void ebee_kc_between(const struct ebee_kc *h, int k, uint64_t lo_ns, uint64_t hi_ns,
		     struct ebee_kc_span *out);
/* The window's span lo_ns..hi_ns holding nrec records of pattern k: its
 * requests are nrec plus the lost count's rise over the span. */
void ebee_kc_window(const struct ebee_kc *h, int k, uint64_t lo_ns, uint64_t hi_ns, uint64_t nrec,
		    struct ebee_kc_span *out);
/* The socket I/O the programs saw over a span, and the requests of every
 * pattern counted in it: I/O with no request is a zero that must say why
 * (warn.h, ebee_warns_silent()). Not interpolated: the requests are those of
 * the readings around the span (widened), the bytes those of the readings
 * inside it (narrowed), so bytes with no request are never an artefact of
 * where a span's end falls between two readings. */
struct ebee_kc_io {
	uint64_t bytes;	 /* moved by reads and writes of the workload's connections */
	uint64_t calls;	 /* ... by so many reads and writes (that moved bytes) */
	double requests; /* completed in the span, all patterns (whole readings) */
};
void ebee_kc_io_between(const struct ebee_kc *h, uint64_t lo_ns, uint64_t hi_ns,
			struct ebee_kc_io *out);
/* 1 - lost / requests, clamped to 0..1; 1 when requests is 0. */
double ebee_kc_covered(double requests, double lost);
/* More than EBEE_KC_LOST_MAX of requests lost. */
bool ebee_kc_lossy(double requests, double lost);

#endif /* EBEE_KCOUNT_H */
