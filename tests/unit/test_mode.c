// SPDX-License-Identifier: MIT
/*
 * Automatic pattern selection on synthetic event sequences (no root): the
 * records a workload's traffic would produce, fed one by one.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "ebee.h"
#include "ebee_common.h"
#include "../../metrics/src/mode.h"

static const struct ebee_mode_params P = { .min_conns = 8, .min_requests = 32 };

/* A connection carrying `nreq` io requests, then closed: the io records at
 * each response's end and the conn record at the close. */
static void conn_with(struct ebee_evidence *ev, unsigned int nreq)
{
	for (unsigned int i = 0; i < nreq; i++)
		ebee_evidence_add(ev, EBEE_REC_IO, 0);
	ebee_evidence_add(ev, EBEE_REC_CONN, nreq);
}

static void test_nothing_is_undecided(void **state)
{
	struct ebee_evidence ev = { 0 };

	assert_int_equal(ebee_mode_decide(&ev, &P), EBEE_MODE_AUTO);
}

static void test_one_request_per_connection_is_conn(void **state)
{
	struct ebee_evidence ev = { 0 };

	for (int i = 0; i < 7; i++) {
		conn_with(&ev, 1);
		assert_int_equal(ebee_mode_decide(&ev, &P), EBEE_MODE_AUTO);
	}
	conn_with(&ev, 1);
	assert_int_equal(ebee_mode_decide(&ev, &P), EBEE_MODE_CONN);
}

/* A server whose I/O the io probes do not see (sendfile-only, splice): closes
 * carry zero requests; accept..close is all there is. */
static void test_invisible_io_is_conn(void **state)
{
	struct ebee_evidence ev = { 0 };

	for (int i = 0; i < 20; i++)
		conn_with(&ev, 0);
	assert_int_equal(ebee_mode_decide(&ev, &P), EBEE_MODE_CONN);
}

static void test_keepalive_connections_are_io(void **state)
{
	struct ebee_evidence ev = { 0 };

	for (int i = 0; i < 8; i++)
		conn_with(&ev, 3);
	assert_int_equal(ebee_mode_decide(&ev, &P), EBEE_MODE_IO);
}

/* memcached: a few connections, never closed while requests flow. */
static void test_deferred_closes_are_io(void **state)
{
	struct ebee_evidence ev = { 0 };

	for (int i = 0; i < 31; i++) {
		ebee_evidence_add(&ev, EBEE_REC_IO, 0);
		assert_int_equal(ebee_mode_decide(&ev, &P), EBEE_MODE_AUTO);
	}
	ebee_evidence_add(&ev, EBEE_REC_IO, 0);
	assert_int_equal(ebee_mode_decide(&ev, &P), EBEE_MODE_IO);
	/* ... and the bulk close at the end does not change the verdict */
	for (int i = 0; i < 4; i++)
		ebee_evidence_add(&ev, EBEE_REC_CONN, 8);
	assert_int_equal(ebee_mode_decide(&ev, &P), EBEE_MODE_IO);
}

/* Early in a connection-per-request run, io records and closes arrive
 * together: they must not look like persistent connections. */
static void test_cpr_io_records_do_not_fool(void **state)
{
	struct ebee_evidence ev = { 0 };

	for (int i = 0; i < 40; i++)
		ebee_evidence_add(&ev, EBEE_REC_IO, 0);
	for (int i = 0; i < 39; i++)
		ebee_evidence_add(&ev, EBEE_REC_CONN, 1);
	assert_int_equal(ebee_mode_decide(&ev, &P), EBEE_MODE_CONN);
}

/* Mixed traffic: the majority of closed connections decides. */
static void test_majority(void **state)
{
	struct ebee_evidence a = { 0 }, b = { 0 };

	for (int i = 0; i < 6; i++)
		conn_with(&a, 1);
	for (int i = 0; i < 4; i++)
		conn_with(&a, 5);
	assert_int_equal(ebee_mode_decide(&a, &P), EBEE_MODE_CONN);
	for (int i = 0; i < 4; i++)
		conn_with(&b, 1);
	for (int i = 0; i < 6; i++)
		conn_with(&b, 5);
	assert_int_equal(ebee_mode_decide(&b, &P), EBEE_MODE_IO);
}

static void test_nreq_saturates_at_two(void **state)
{
	struct ebee_evidence ev = { 0 };

	ebee_evidence_add(&ev, EBEE_REC_CONN, 0xffff);
	ebee_evidence_add(&ev, EBEE_REC_CONN, 2);
	ebee_evidence_add(&ev, EBEE_REC_CONN, 1);
	assert_int_equal(ev.conns_closed, 3);
	assert_int_equal(ev.conns_multi, 2);
	ebee_evidence_add(&ev, EBEE_REC_GRPC, 0);
	assert_int_equal(ev.io_reqs, 0);
}

static void test_mode_names(void **state)
{
	enum ebee_mode m;
	char buf[64];

	assert_int_equal(ebee_mode_parse("io", &m), 0);
	assert_int_equal(m, EBEE_MODE_IO);
	assert_int_equal(ebee_mode_parse("conn", &m), 0);
	assert_int_equal(m, EBEE_MODE_CONN);
	assert_int_equal(ebee_mode_parse("IO", &m), -22);
	assert_int_equal(ebee_mode_parse(NULL, &m), -22);
	/* a NULL result pointer is refused, not written through */
	assert_int_equal(ebee_mode_parse("io", NULL), -EINVAL);
	assert_int_equal(ebee_path_parse("socket", NULL), -EINVAL);
	assert_int_equal(ebee_latency_parse("service", NULL), -EINVAL);
	assert_int_equal(ebee_path_parse(NULL, &(enum ebee_path){ 0 }), -EINVAL);
	assert_int_equal(ebee_latency_parse(NULL, &(enum ebee_latency){ 0 }), -EINVAL);
	assert_string_equal(ebee_mode_str(EBEE_MODE_AUTO), "auto");
	assert_null(ebee_mode_str(EBEE_MODE_COUNT));
	assert_string_equal(ebee_probes_str(EBEE_PROBE_ACCEPT | EBEE_PROBE_READ, buf, sizeof(buf)),
			    "accept,read");
	assert_string_equal(ebee_probes_str(0, buf, sizeof(buf)), "");
	/* truncation never overruns */
	assert_int_equal(ebee_probes_str(0x3f, buf, 8)[7], 0);
}

/* gRPC: one completed server stream decides grpc, whatever the
 * syscalls of its multiplexed connection looked like. */
static void test_grpc_streams_decide_grpc(void **state)
{
	struct ebee_evidence ev = { 0 };

	for (int i = 0; i < 100; i++)
		ebee_evidence_add(&ev, EBEE_REC_IO, 0);
	assert_int_equal(ebee_mode_decide(&ev, &P), EBEE_MODE_IO);
	ebee_evidence_add(&ev, EBEE_REC_GRPC, 0);
	assert_int_equal(ev.grpc_reqs, 1);
	assert_int_equal(ebee_mode_decide(&ev, &P), EBEE_MODE_GRPC);

	memset(&ev, 0, sizeof(ev));
	for (int i = 0; i < 20; i++)
		conn_with(&ev, 1);
	ebee_evidence_add(&ev, EBEE_REC_GRPC, 0);
	assert_int_equal(ebee_mode_decide(&ev, &P), EBEE_MODE_GRPC);
}

/* dgram: answered UDP datagrams decide dgram only while no accepted TCP
 * connection shows a request; too few decide nothing. */
static void test_udp_only_is_dgram(void **state)
{
	struct ebee_evidence ev = { 0 };
	enum ebee_mode m;

	for (int i = 0; i < 31; i++)
		ebee_evidence_add(&ev, EBEE_REC_DGRAM, 0);
	assert_int_equal(ev.dgram_reqs, 31);
	assert_int_equal(ebee_mode_decide(&ev, &P), EBEE_MODE_AUTO);
	ebee_evidence_add(&ev, EBEE_REC_DGRAM, 0);
	assert_int_equal(ebee_mode_decide(&ev, &P), EBEE_MODE_DGRAM);
	/* one TCP request on an accepted connection: not UDP-only */
	ebee_evidence_add(&ev, EBEE_REC_IO, 0);
	assert_int_equal(ebee_mode_decide(&ev, &P), EBEE_MODE_AUTO);
	memset(&ev, 0, sizeof(ev));
	for (int i = 0; i < 100; i++)
		ebee_evidence_add(&ev, EBEE_REC_DGRAM, 0);
	for (int i = 0; i < 8; i++)
		conn_with(&ev, 1);
	assert_int_equal(ebee_mode_decide(&ev, &P), EBEE_MODE_CONN);
	assert_int_equal(ebee_mode_parse("dgram", &m), 0);
	assert_int_equal(m, EBEE_MODE_DGRAM);
	assert_string_equal(ebee_mode_str(EBEE_MODE_DGRAM), "dgram");
}

static void test_path_and_latency_names(void **state)
{
	enum ebee_latency l = EBEE_LAT_SERVICE;
	enum ebee_path p = EBEE_PATH_AUTO;
	char buf[128];

	assert_int_equal(ebee_path_parse("syscall", &p), 0);
	assert_int_equal(p, EBEE_PATH_SYSCALL);
	assert_int_equal(ebee_path_parse("socket", &p), 0);
	assert_int_equal(p, EBEE_PATH_SOCKET);
	assert_int_equal(ebee_path_parse("kprobe", &p), -22);
	assert_int_equal(p, EBEE_PATH_SOCKET); /* untouched on error */
	assert_int_equal(ebee_path_parse(NULL, &p), -22);
	assert_string_equal(ebee_path_str(EBEE_PATH_AUTO), "auto");
	assert_null(ebee_path_str(EBEE_PATH_SYSCALL + 1));
	assert_int_equal(ebee_latency_parse("sojourn", &l), 0);
	assert_int_equal(l, EBEE_LAT_SOJOURN);
	assert_int_equal(ebee_latency_parse("Service", &l), -22);
	assert_string_equal(ebee_latency_str(EBEE_LAT_SERVICE), "service");
	assert_null(ebee_latency_str(EBEE_LAT_SOJOURN + 1));
	assert_string_equal(ebee_probes_str(EBEE_PROBE_FORK | EBEE_PROBE_SOCK_STATE |
						EBEE_PROBE_SOCK_IO | EBEE_PROBE_SOCK_ARRIVE,
					    buf, sizeof(buf)),
			    "fork,sock_state,sock_io,sock_arrive");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nothing_is_undecided),
		cmocka_unit_test(test_one_request_per_connection_is_conn),
		cmocka_unit_test(test_invisible_io_is_conn),
		cmocka_unit_test(test_keepalive_connections_are_io),
		cmocka_unit_test(test_deferred_closes_are_io),
		cmocka_unit_test(test_cpr_io_records_do_not_fool),
		cmocka_unit_test(test_majority),
		cmocka_unit_test(test_nreq_saturates_at_two),
		cmocka_unit_test(test_mode_names),
		cmocka_unit_test(test_grpc_streams_decide_grpc),
		cmocka_unit_test(test_path_and_latency_names),
		cmocka_unit_test(test_udp_only_is_dgram),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
