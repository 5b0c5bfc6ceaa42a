/* SPDX-License-Identifier: MIT */
/*
 * A minimal memcached text-protocol client for the hotel workload's rate cache (mc.c): one
 * persistent TCP connection per worker thread to 127.0.0.1, blocking I/O with a timeout.
 */
#ifndef HOTEL_MC_H
#define HOTEL_MC_H

#include <stdbool.h>
#include <stddef.h>

#include "search.h"

#define MC_BUF 8192

struct mc_conn {
	int fd; /* -1 while not connected */
	int port;
	int timeout_ms;	    /* per send/recv */
	long long retry_ns; /* no reconnect before this CLOCK_MONOTONIC time */
	char buf[MC_BUF];
};

void mc_init(struct mc_conn *m, int port, int timeout_ms);
void mc_close(struct mc_conn *m);

/*
 * One multi-key "get rate:<id> ..." for ids[0..n). For each key answered with a value we
 * wrote, out[i] is filled and hit[i] set. 0, or a negative errno when the connection failed
 * (it is then closed; the caller falls back to the database).
 */
int mc_get_rates(struct mc_conn *m, const int *ids, int n, struct hotel_rate *out, bool *hit);

/* "set rate:<id>" for each rates[i] with store[i], pipelined. 0 or a negative errno. */
int mc_set_rates(struct mc_conn *m, const struct hotel_rate *rates, const bool *store, int n);

/*
 * Parse a reply to a get of ids[0..n) in buf[0..len). Returns the bytes of a complete reply
 * (through "END\r\n"), 0 if more bytes are needed, or -EPROTO.
 */
int mc_parse_get(const char *buf, size_t len, const int *ids, int n, struct hotel_rate *out,
		 bool *hit);

#endif
