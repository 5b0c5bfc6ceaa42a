/* SPDX-License-Identifier: MIT */
/*
 * Automatic choice of the request pattern for one workload (pure logic, no
 * I/O, so unit tests drive it with synthetic event sequences).
 *
 * Evidence is gathered from both patterns at once while all probes are live:
 * every closed connection reports how many io requests it carried, and every
 * io request is counted. Connections carrying several requests, or io requests
 * piling up on connections that are not being closed (deferred, bulk closes),
 * mean `io`; connections carrying at most one request mean `conn`.
 * Completed server-side gRPC streams (only seen in a process that maps
 * libgrpc) mean `grpc`, whatever the syscalls say: its connections carry
 * many interleaved requests that syscalls cannot separate.
 * UDP datagrams answered to their peers mean `dgram`, but only while no
 * accepted TCP connection shows any request: a server that speaks both
 * (DNS over UDP and TCP) is judged by its connections.
 */
#ifndef EBEE_MODE_H
#define EBEE_MODE_H

#include <stdint.h>
#include "ebee.h"

struct ebee_evidence {
	uint64_t conns_closed; /* connections closed */
	uint64_t conns_multi;  /* ... that carried two or more io requests */
	uint64_t io_reqs;      /* io requests completed (open or closed connections) */
	uint64_t grpc_reqs;    /* gRPC: server-side streams completed */
	uint64_t dgram_reqs;   /* UDP datagrams answered to their peer */
};

struct ebee_mode_params {
	unsigned int min_conns;	   /* closed connections needed to judge by them */
	unsigned int min_requests; /* io requests needed to judge without closes */
};

/* Feed one record into the evidence. */
void ebee_evidence_add(struct ebee_evidence *ev, unsigned int rec_kind, unsigned int nreq);

/* The mode the evidence supports, or EBEE_MODE_AUTO when it is not enough. */
enum ebee_mode ebee_mode_decide(const struct ebee_evidence *ev, const struct ebee_mode_params *p);

#endif
