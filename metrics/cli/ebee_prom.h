/* SPDX-License-Identifier: MIT */
/*
 * `ebee trace --listen`: per-workload latency histograms built from every
 * request as the library consumes it (ebee_opts.on_request), and the
 * Prometheus page rendered from them and from the library's queries.
 */
#ifndef EBEE_PROM_H
#define EBEE_PROM_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "ebee.h"
#include "latbuckets.h"
#include "prom.h"

#define EPROM_MAX_WL	 64
#define EPROM_NAME_LEN	 64
#define EPROM_LOG2_SLOTS 40

struct eprom_wl {
	pid_t pid;
	char name[EPROM_NAME_LEN];
	/* written by the consumer thread, read by the HTTP thread: relaxed
	 * atomics, the page sums the buckets for _count so it stays consistent */
	uint64_t counts[LATB_COUNT + 1];
	uint64_t sum_ns;
	/* --hist: log2 slots of the latency in us, as bcc's tools count them:
	 * slot k >= 1 holds [2^(k-1), 2^k - 1] us (0 us counts in slot 1) */
	uint64_t log2_us[EPROM_LOG2_SLOTS];
};

struct eprom {
	struct ebee *eb; /* set once tracing runs; NULL renders nothing per workload */
	int nwl;
	struct eprom_wl wl[EPROM_MAX_WL];
};

/* Add a workload before ebee_open; -ENOSPC when full. */
int eprom_add(struct eprom *p, pid_t pid, const char *name);
/* The ebee_opts.on_request hook; ctx is the struct eprom. */
void eprom_on_request(pid_t pid, uint64_t lat_ns, void *ctx);
/* The log2 slot of a latency (see struct eprom_wl). */
int eprom_log2_slot(uint64_t lat_ns);
/* Print pid's log2 histogram as bcc's runqlat does; returns slots printed. */
int eprom_print_log2(const struct eprom *p, pid_t pid, FILE *f);
/* promhttp_render_fn; ctx is the struct eprom. */
int eprom_render(struct prom_buf *b, void *ctx);

#endif /* EBEE_PROM_H */
