/* SPDX-License-Identifier: MIT */
/*
 * dgram: the dgram BPF object (bpf/ebee_dgram.bpf.c), UDP request/response
 * pairs (internal). Like the grpc object it shares the traced-process tables
 * and the ring buffer consumer of the main object (loader.h).
 */
#ifndef EBEE_DGRAM_INT_H
#define EBEE_DGRAM_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "loader.h"

struct ebee_dgram;

/* What the pattern saw of one workload (sums of the kernel's counters and
 * the sweep's). */
struct ebee_dgram_counts {
	uint64_t socks;	       /* UDP sockets of the workload seen */
	uint64_t client_socks; /* ... used as clients (their replies are not requests) */
	uint64_t rx;	       /* datagrams received on server sockets */
	uint64_t matched;      /* requests answered (records) */
	uint64_t expired;      /* requests never answered (timed out, pushed out) */
	uint64_t unsolicited;  /* sends to a peer that had no request pending */
	uint64_t nopeer;       /* datagrams of unknown peer */
	uint64_t full;	       /* requests not tracked: pending table full */
	uint64_t pending;      /* requests waiting for their response now */
};

/* Load the dgram object next to k, nothing attached. attach: how the socket
 * path's I/O and arrival hooks attach (their fentry programs are used when
 * it says fentry), NULL for the tracepoints. timeout_ns: how long a request
 * waits for its response before it expires. msg: one line why not (no
 * cgroup v2 mount, a kernel without the socket tracepoints or fentry). */
int ebee_dgram_open(struct ebee_loader *k, const struct ebee_sock_attach *attach,
		    size_t ringbuf_size, unsigned int max_pending, uint64_t timeout_ns,
		    struct ebee_dgram **out, char *msg, size_t msg_len);
void ebee_dgram_close(struct ebee_dgram *d);

/* Attach (on) or detach every program. */
int ebee_dgram_set_probes(struct ebee_dgram *d, bool on, char *msg, size_t msg_len);
bool ebee_dgram_probes(const struct ebee_dgram *d);

/* Expire pending requests older than the timeout whose peer sent nothing
 * since (one-way traffic), counting them against their workload. now_ns:
 * CLOCK_MONOTONIC. Walks the table: call it about once a second. */
void ebee_dgram_sweep(struct ebee_dgram *d, uint64_t now_ns);

/* Counters of workload wid; -ENOENT when it has none yet. */
int ebee_dgram_counts(struct ebee_dgram *d, uint32_t wid, struct ebee_dgram_counts *c);
/* Forget workload wid's pending requests and counters. */
void ebee_dgram_workload_del(struct ebee_dgram *d, uint32_t wid);

#endif
