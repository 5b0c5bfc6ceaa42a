// SPDX-License-Identifier: MIT
/*
 * The rule, and why. A connection-per-request server closes each connection
 * after one response, so closed connections carry at most one io request (0
 * when the server uses calls the io probes do not see). A persistent-
 * connection server either closes connections that carried many requests
 * (keep-alive HTTP) or hardly closes at all while requests flow (memcached,
 * the paper's deferred bulk closes); judging by closes alone would wait
 * forever there, so io requests far outnumbering closes also mean io.
 */
#include "mode.h"
#include "ebee_common.h"

void ebee_evidence_add(struct ebee_evidence *ev, unsigned int rec_kind, unsigned int nreq)
{
	if (rec_kind == EBEE_REC_CONN || rec_kind == EBEE_REC_CONN_ADOPTED) {
		ev->conns_closed++;
		if (nreq >= 2)
			ev->conns_multi++;
	} else if (rec_kind == EBEE_REC_IO) {
		ev->io_reqs++;
	} else if (rec_kind == EBEE_REC_FRAMED) {
		ev->io_reqs += nreq; /* requests a framer delimited, on persistent connections */
	} else if (rec_kind == EBEE_REC_GRPC) { /* gRPC */
		ev->grpc_reqs++;
	} else if (rec_kind == EBEE_REC_DGRAM) {
		ev->dgram_reqs++;
	}
}

enum ebee_mode ebee_mode_decide(const struct ebee_evidence *ev, const struct ebee_mode_params *p)
{
	uint64_t closed = ev->conns_closed;

	/* gRPC: a completed server stream is proof enough. */
	if (ev->grpc_reqs)
		return EBEE_MODE_GRPC;
	/* UDP only: no accepted connection closed or carried a request. */
	if (ev->dgram_reqs >= p->min_requests && !closed && !ev->io_reqs)
		return EBEE_MODE_DGRAM;
	if (closed >= p->min_conns && closed > 0)
		return ev->conns_multi * 2 > closed ? EBEE_MODE_IO : EBEE_MODE_CONN;
	/* Few closes: requests on connections that stay open. */
	if (ev->io_reqs >= p->min_requests && ev->io_reqs >= 4 * (closed ? closed : 1))
		return EBEE_MODE_IO;
	return EBEE_MODE_AUTO;
}
