/* SPDX-License-Identifier: MIT */
/*
 * The open-loop load generator: configuration and results shared by main.c (options, output)
 * and loop.c (the event loop).
 */
#ifndef LG_LOADGEN_H
#define LG_LOADGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <netinet/in.h>

#include "proto.h"
#include "schedule.h"
#include "stats.h"

struct lg_config {
	enum lg_proto proto;
	const char *host;    /* IPv4 address of the server, dotted quad */
	struct in_addr addr; /* host, parsed */
	int port;
	struct sched sched;
	bool keepalive;	    /* http: persistent connections */
	int conns;	    /* persistent connections opened at start */
	int max_conns;	    /* cap on open connections */
	long max_queue;	    /* arrivals waiting for a connection before they are dropped */
	double late_us;	    /* a send this much after its intended time is "late" */
	double req_timeout; /* seconds from the intended send time */
	double drain_s;	    /* after the schedule, wait this long for replies */
	uint64_t seed;
	const char *path;
	/* memcached */
	size_t keys;
	double zipf_alpha;
	double get_ratio;
	int value_size;
	bool preload;
	/* output */
	FILE *feed;
	double feed_ms;
	double feed_window_s;
	size_t feed_min_samples;
	bool verbose;
};

struct lg_result {
	long long sent;	      /* requests written (completely) to a connection */
	long long ok;	      /* complete, well-formed, successful replies */
	long long errors;     /* failed, timed out, dropped or never sent */
	long long late;	      /* sent more than late_us after the intended time */
	long long dropped;    /* arrivals that found the queue full */
	long long timeouts;   /* replies that did not arrive within req_timeout */
	long long unsent;     /* still queued when the run ended */
	long long abandoned;  /* sent or connecting, no reply when the run ended */
	long long hits, gets; /* memcached */
	long long conns_opened;
	int max_open;
	double offered;	   /* arrivals generated */
	double duration_s; /* from start to the last completion (at least the schedule) */
	struct lg_samples lat_us;
};

/* Run the schedule. Returns 0, or a negative errno on a setup failure (message printed). */
int lg_run(const struct lg_config *cfg, struct lg_result *res, volatile int *stop);

#endif
