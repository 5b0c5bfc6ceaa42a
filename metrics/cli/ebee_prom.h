/* SPDX-License-Identifier: MIT */
/*
 * `ebee trace --listen`: per-workload latency histograms built from every
 * request as the library consumes it (ebee_opts.on_request), and the
 * Prometheus page rendered from them and from the library's queries.
 */
#ifndef EBEE_PROM_H
#define EBEE_PROM_H

#include <stdint.h>
#include <sys/types.h>

#include "ebee.h"
#include "latbuckets.h"
#include "prom.h"

#define EPROM_MAX_WL   64
#define EPROM_NAME_LEN 64

struct eprom_wl {
	pid_t pid;
	char name[EPROM_NAME_LEN];
	/* written by the consumer thread, read by the HTTP thread: relaxed
	 * atomics, the page sums the buckets for _count so it stays consistent */
	uint64_t counts[LATB_COUNT + 1];
	uint64_t sum_ns;
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
/* promhttp_render_fn; ctx is the struct eprom. */
int eprom_render(struct prom_buf *b, void *ctx);

#endif /* EBEE_PROM_H */
