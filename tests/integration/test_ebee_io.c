// SPDX-License-Identifier: MIT
/*
 * ebee io pattern and automatic selection against real servers (root):
 * memcached's own counters, nginx's access log, a server writing responses in
 * pieces with known pauses, and abandoned connections.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "ebee.h"
#include "../lib/testutil.h"
#include "../lib/ebee_paths.h"

static struct ebee *eb;
static char logbuf[8192];
static size_t logoff;
static unsigned int nwarn; /* messages logged at EBEE_LOG_WARN */

/* Keep what the library logs, so tests can check that switches are logged
 * and count its warnings (a failed attach is one). */
static void log_cb(enum ebee_log_level lvl, const char *msg, void *ctx)
{
	int n = snprintf(logbuf + logoff, sizeof(logbuf) - logoff, "%s\n", msg);

	if (n > 0 && logoff + n < sizeof(logbuf))
		logoff += n;
	if (lvl == EBEE_LOG_WARN)
		nwarn++;
	printf("  [log]%s %s\n", lvl == EBEE_LOG_WARN ? " WARN" : "", msg);
}

static struct ebee *open_ebee(unsigned int max_conns, unsigned int recheck_ms)
{
	struct ebee_opts o = { .sz = sizeof(o),
			       .max_conns = max_conns,
			       .auto_recheck_ms = recheck_ms,
			       .auto_recheck_len_ms = recheck_ms ? recheck_ms / 2 : 0,
			       .log = log_cb,
			       .log_level = EBEE_LOG_INFO };

	return tp_open(&o);
}

static int group_setup(void **state)
{
	tu_init();
	if (geteuid() != 0)
		return 0;
	eb = open_ebee(0, 0);
	return eb || tp_skip[0] ? 0 : -1;
}

static int group_teardown(void **state)
{
	return tp_teardown(&eb);
}

static struct ebee_trace_opts topts(enum ebee_mode m)
{
	return (struct ebee_trace_opts){ .sz = sizeof(struct ebee_trace_opts), .mode = m };
}

/*
 * Records in flight, and the last request of each connection, which ends only
 * when the server sees the client's close: wait until requests (the kernel's
 * count, lost records included) reach want (0: no count known), bounded, then
 * until they stop changing for 300 ms (a fixed 250 ms missed 7 of 40 000 on a
 * busy machine), and at least one housekeeping round for the mode.
 */
static struct ebee_stats settle_want(struct ebee *e, pid_t pid, unsigned long long want)
{
	struct ebee_stats st = { .sz = sizeof(st) };
	unsigned long long last = ~0ULL;
	double t0 = tu_now(), still = 0;

	tu_sleep_ms(250);
	while (tu_now() - t0 < 20) {
		assert_int_equal(ebee_flush(e), 0);
		assert_int_equal(ebee_get_stats(e, pid, &st), 0);
		if (st.requests != last) {
			last = st.requests;
			still = tu_now();
		} else if (last >= want && tu_now() - still >= 0.3) {
			break;
		}
		tu_sleep_ms(50);
	}
	return st;
}

static struct ebee_stats settle(struct ebee *e, pid_t pid)
{
	return settle_want(e, pid, 0);
}

static long long mc_cmds(int port)
{
	return tu_memcached_stat(port, "cmd_get") + tu_memcached_stat(port, "cmd_set");
}

/* memcached over K persistent connections: ebee's count equals memcached's
 * own cmd_get + cmd_set increase, and auto mode picks io. The stats queries
 * run while memcached is not traced. */
static void test_memcached_exact(void **state)
{
	struct ebee_trace_opts to = topts(EBEE_MODE_AUTO);
	long long before, after;
	struct ebee_stats st;
	int port;
	pid_t pid;

	NEED_ROOT();
	pid = tu_start_memcached(&port);
	assert_true(pid > 0);
	before = mc_cmds(port);
	assert_int_equal(ebee_start_tracing(eb, pid, &to), 0);
	assert_int_equal(tu_mc_client(port, 4, 2000), 2000);
	st = settle(eb, pid);
	assert_int_equal(ebee_stop_tracing(eb, pid), 0);
	after = mc_cmds(port);
	printf("  ebee %llu, memcached cmd_get+cmd_set +%lld, client 2000, mode %s\n",
	       (unsigned long long)st.requests, after - before, ebee_mode_str(st.mode));
	assert_int_equal(after - before, 2000);
	assert_int_equal(st.requests, 2000);
	assert_int_equal(st.mode, EBEE_MODE_IO);
	assert_true(st.probes & tp_io_framed_probe());
	/* framing on: its hook stamps the arrivals, sk_data_ready stays off */
	if (tp_path == EBEE_PATH_SOCKET)
		assert_false(st.probes & EBEE_PROBE_SOCK_ARRIVE);
	tu_stop(pid);
}

/* Send "get k" and read up to END on a connected memcached socket. */
static int mc_get(int fd, int i)
{
	char req[64], buf[4096];
	size_t off = 0;
	int n = snprintf(req, sizeof(req), "get adopt:%d\r\n", i);

	if (write(fd, req, n) != n)
		return -1;
	while (off + 1 < sizeof(buf)) {
		ssize_t r = read(fd, buf + off, sizeof(buf) - off - 1);

		if (r <= 0)
			return -1;
		off += r;
		buf[off] = 0;
		if (strstr(buf, "END\r\n"))
			return 0;
	}
	return -1;
}

/* n connections to memcached on 127.0.0.1:port, each with one request answered
 * (before tracing, in the tests that adopt them). */
static void mc_connect(int port, int *fds, int n)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				 .sin_port = htons(port) };

	for (int c = 0; c < n; c++) {
		fds[c] = socket(AF_INET, SOCK_STREAM, 0);
		assert_int_equal(connect(fds[c], (struct sockaddr *)&a, sizeof(a)), 0);
		assert_int_equal(mc_get(fds[c], -1), 0);
	}
}

/* Connections that memcached accepted BEFORE tracing began are adopted from
 * /proc: their later requests count, exactly. */
static void test_preexisting_connections_adopted(void **state)
{
	struct ebee_trace_opts to = topts(EBEE_MODE_AUTO);
	long long before, after;
	struct ebee_stats st;
	int port, fds[3];
	pid_t pid;

	NEED_ROOT();
	pid = tu_start_memcached(&port);
	assert_true(pid > 0);
	mc_connect(port, fds, 3);
	before = mc_cmds(port);
	logoff = 0;
	assert_int_equal(ebee_start_tracing(eb, pid, &to), 0);
	assert_non_null(strstr(logbuf, "3 open connections adopted"));
	for (int i = 0; i < 300; i++)
		assert_int_equal(mc_get(fds[i % 3], i), 0);
	for (int c = 0; c < 3; c++)
		close(fds[c]);
	st = settle(eb, pid);
	assert_int_equal(ebee_stop_tracing(eb, pid), 0);
	after = mc_cmds(port);
	printf("  adopted connections: ebee %llu, memcached +%lld, mode %s\n",
	       (unsigned long long)st.requests, after - before, ebee_mode_str(st.mode));
	assert_int_equal(after - before, 300);
	assert_int_equal(st.requests, 300);
	assert_int_equal(st.mode, EBEE_MODE_IO);
	tu_stop(pid);
}

/* nginx with keep-alive on and a keep-alive client: count equals the lines
 * nginx logged. */
static void test_nginx_keepalive(void **state)
{
	struct ebee_trace_opts to = topts(EBEE_MODE_AUTO);
	char log[600];
	struct ebee_stats st;
	long before, after;
	int port;
	pid_t m;

	NEED_ROOT();
	m = tu_start_nginx("nginx-ka", &port, true, 2, log, sizeof(log));
	assert_true(m > 0);
	before = tu_count_lines(log);
	assert_int_equal(ebee_start_tracing(eb, m, &to), 0);
	assert_int_equal(tu_http_client(port, 600, 4, 4), 600);
	st = settle(eb, m);
	after = tu_count_lines(log);
	printf("  nginx keep-alive: ebee %llu, access.log +%ld, mode %s\n",
	       (unsigned long long)st.requests, after - before, ebee_mode_str(st.mode));
	assert_int_equal(after - before, 600);
	assert_int_equal(st.requests, 600);
	assert_int_equal(st.mode, EBEE_MODE_IO);
	assert_int_equal(ebee_stop_tracing(eb, m), 0);
	tu_stop(m);
}

/* Responses written in three pieces 6 ms apart: one request each, whose
 * latency runs to the last piece, as the server's own clock says (>= 12 ms of
 * pauses; ending at the first piece would be 12 ms short, at the second 6). */
static void test_three_piece_response(void **state)
{
	struct ebee_trace_opts to = topts(EBEE_MODE_AUTO);
	const char *extra[] = { "--keepalive", "--pieces",     "3",  "--piece-gap-ms",
				"6",	       "--stats-file", NULL, NULL };
	char stats[600];
	struct ebee_stats st;
	long long srv;
	double p50;
	int port;
	pid_t pid;

	NEED_ROOT();
	snprintf(stats, sizeof(stats), "%s/pieces.stats", tu_tmpdir());
	extra[6] = stats;
	pid = tu_start_cpr(&port, extra);
	assert_true(pid > 0);
	assert_int_equal(ebee_start_tracing(eb, pid, &to), 0);
	assert_int_equal(tu_curl_get(port, 120, 2), 120); /* Debian's curl: its 200s */
	st = settle(eb, pid);
	assert_int_equal(ebee_get_latency_percentile(eb, pid, 50, &p50), 0);
	srv = tu_server_svc_us(stats, 120, "p50_us", 10);
	printf("  requests %llu of 120, mode %s\n", (unsigned long long)st.requests,
	       ebee_mode_str(st.mode));
	assert_int_equal(st.requests, 120);
	assert_int_equal(st.mode, EBEE_MODE_IO);
	assert_true(tu_svc_near("p50", p50, srv));
	assert_int_equal(ebee_stop_tracing(eb, pid), 0);
	tu_stop(pid);
}

/* memcached and a connection-per-request server in auto mode at once: one
 * io, the other conn, both exact; memcached's by its own count too. */
static void test_mixed_modes(void **state)
{
	struct ebee_trace_opts to = topts(EBEE_MODE_AUTO);
	const char *extra[] = { "--delay-ms", "1", NULL };
	struct ebee_stats sm, sc;
	long long before, after;
	int pm, pc;
	pid_t m, c;

	NEED_ROOT();
	m = tu_start_memcached(&pm);
	c = tu_start_cpr(&pc, extra);
	assert_true(m > 0 && c > 0);
	before = mc_cmds(pm);
	assert_int_equal(ebee_start_tracing(eb, m, &to), 0);
	assert_int_equal(ebee_start_tracing(eb, c, &to), 0);
	assert_int_equal(tu_mc_client(pm, 3, 900), 900);
	assert_int_equal(tu_curl_get(pc, 150, 2), 150); /* Debian's curl: its 200s */
	sm = settle(eb, m);
	sc = settle(eb, c);
	printf("  memcached %llu/900 %s, cpr %llu/150 %s\n", (unsigned long long)sm.requests,
	       ebee_mode_str(sm.mode), (unsigned long long)sc.requests, ebee_mode_str(sc.mode));
	assert_int_equal(sm.mode, EBEE_MODE_IO);
	assert_int_equal(sc.mode, EBEE_MODE_CONN);
	assert_int_equal(sm.requests, 900);
	assert_int_equal(sc.requests, 150);
	/* memcached still needs the io probes, so they stay attached; the
	 * conn workload does not. On the socket path with framing on, the
	 * framing hook carries io's arrivals and conn keeps it too, so there
	 * no group is io's alone: sk_data_ready is off for both. */
	assert_true(sm.probes & tp_io_framed_probe());
	if (tp_path == EBEE_PATH_SOCKET) {
		assert_true(sc.probes & EBEE_PROBE_SOCK_FRAME);
		assert_false((sm.probes | sc.probes) & EBEE_PROBE_SOCK_ARRIVE);
	} else {
		assert_false(sc.probes & tp_io_probe());
	}
	assert_int_equal(ebee_stop_tracing(eb, m), 0);
	assert_int_equal(ebee_stop_tracing(eb, c), 0);
	after = mc_cmds(pm); /* untraced now: the stats requests are not ebee's */
	printf("  memcached cmd_get+cmd_set +%lld\n", after - before);
	assert_int_equal(after - before, 900);
	tu_stop(m);
	tu_stop(c);
}

/* Without framing the socket path's io arrivals come from sk_data_ready, the
 * one group that is io's alone: attached for the io workload (its sojourn
 * measured), not for a conn one (pruned), and the framing hook not at all.
 * (With framing, test_memcached_exact: the framing hook stamps them.) */
static void test_arrival_hook_without_framing(void **state)
{
	struct ebee_opts o = { .sz = sizeof(o), .no_framing = true };
	struct ebee_trace_opts conn = topts(EBEE_MODE_CONN), io = topts(EBEE_MODE_IO);
	struct ebee_stats st;
	double soj = 0, svc = 0;
	long long before, after;
	struct ebee *e2;
	int pm;
	pid_t m;

	NEED_ROOT();
	NEED_SOCKET_PATH("no arrival hook (no sojourn latency)");
	e2 = tp_open(&o);
	assert_non_null(e2);
	m = tu_start_memcached(&pm);
	assert_true(m > 0);
	assert_int_equal(ebee_start_tracing(e2, m, &conn), 0);
	assert_int_equal(tu_mc_client(pm, 2, 20), 20);
	st = settle(e2, m);
	printf("  conn: probes 0x%x\n", st.probes);
	assert_false(st.probes & (EBEE_PROBE_SOCK_ARRIVE | EBEE_PROBE_SOCK_FRAME));
	assert_int_equal(ebee_stop_tracing(e2, m), 0);
	before = mc_cmds(pm);
	assert_int_equal(ebee_start_tracing(e2, m, &io), 0);
	assert_int_equal(tu_mc_client(pm, 2, 200), 200);
	st = settle_want(e2, m, 200);
	assert_int_equal(ebee_get_latency_percentile_of(e2, m, EBEE_LAT_SOJOURN, 50, &soj), 0);
	assert_int_equal(ebee_get_latency_percentile_of(e2, m, EBEE_LAT_SERVICE, 50, &svc), 0);
	printf("  io: probes 0x%x, %llu requests, p50 service %.1f us, sojourn %.1f us\n",
	       st.probes, (unsigned long long)st.requests, svc / 1e3, soj / 1e3);
	assert_true(st.probes & EBEE_PROBE_SOCK_ARRIVE);
	assert_false(st.probes & EBEE_PROBE_SOCK_FRAME);
	assert_int_equal(st.requests, 200);
	assert_true(soj > 0 && soj >= svc);
	assert_int_equal(ebee_stop_tracing(e2, m), 0);
	after = mc_cmds(pm);
	printf("  memcached cmd_get+cmd_set +%lld\n", after - before);
	assert_int_equal(after - before, 200);
	ebee_close(e2);
	tu_stop(m);
}

/* Forced modes: conn on memcached counts connections, not commands: as many
 * as memcached's own total_connections went up by. */
static void test_forced_modes(void **state)
{
	struct ebee_trace_opts conn = topts(EBEE_MODE_CONN), io = topts(EBEE_MODE_IO);
	long long before, after;
	struct ebee_stats st;
	int pm, pc;
	pid_t m, c;

	NEED_ROOT();
	/* --noise: pipe I/O in the io workload, which must never count */
	m = tu_start_memcached(&pm);
	c = tu_start_cpr(&pc, (const char *[]){ "--noise", NULL });
	assert_true(m > 0 && c > 0);
	before = tu_memcached_stat(pm, "total_connections");
	assert_int_equal(ebee_start_tracing(eb, m, &conn), 0);
	assert_int_equal(ebee_start_tracing(eb, c, &io), 0);
	assert_int_equal(tu_mc_client(pm, 3, 300), 300);
	assert_int_equal(tu_curl_get(pc, 70, 1), 70); /* Debian's curl: its 200s */
	st = settle(eb, m);
	printf("  memcached forced conn: %llu connections\n", (unsigned long long)st.requests);
	assert_int_equal(st.mode, EBEE_MODE_CONN);
	assert_int_equal(st.requests, 3);
	st = settle(eb, c);
	printf("  cpr forced io: %llu requests\n", (unsigned long long)st.requests);
	assert_int_equal(st.mode, EBEE_MODE_IO);
	assert_int_equal(st.requests, 70);
	assert_int_equal(ebee_stop_tracing(eb, m), 0);
	assert_int_equal(ebee_stop_tracing(eb, c), 0);
	/* untraced now; the connection that asks is in its own answer */
	after = tu_memcached_stat(pm, "total_connections") - 1;
	printf("  memcached total_connections +%lld\n", after - before);
	assert_int_equal(after - before, 3);
	tu_stop(m);
	tu_stop(c);
}

/* Traffic that changes pattern: nginx first gets connection-per-request
 * clients (conn), then keep-alive clients: the periodic recheck must switch
 * it to io, and log the switch. Every recheck attaches the io probes and its
 * end detaches them (the syscall path's read and write tracepoints): none of
 * that may fail, so no warning at all. After the switch ebee counts what
 * nginx's own access log counts. */
static void test_pattern_change_revisited(void **state)
{
	struct ebee_trace_opts to = topts(EBEE_MODE_AUTO);
	struct ebee_stats st = { .sz = sizeof(st) };
	unsigned long long switches;
	long lines0, lines1, before;
	struct ebee *e2;
	char log[600];
	double t0, end;
	int port;
	pid_t m;

	NEED_ROOT();
	e2 = open_ebee(0, 600); /* recheck every 600 ms for 300 ms */
	assert_non_null(e2);
	m = tu_start_nginx("nginx-switch", &port, true, 1, log, sizeof(log));
	assert_true(m > 0);
	logoff = 0;
	logbuf[0] = 0;
	nwarn = 0;
	t0 = tu_now();
	before = tu_count_lines(log);
	assert_int_equal(ebee_start_tracing(e2, m, &to), 0);
	assert_int_equal(tu_http_client(port, 100, 2, 0), 100);
	st = settle(e2, m);
	assert_int_equal(st.mode, EBEE_MODE_CONN);
	assert_int_equal(st.requests, 100);
	/* nginx's own count of the connection-per-request phase */
	assert_true(before >= 0);
	assert_int_equal(tu_count_lines(log) - before, 100);
	/* 10 s, or 5 times what tracing and settling the first 100 took in this
	 * run: in a busy emulated guest the switch once came after 10 s. */
	end = tu_now() + 10;
	if (5 * (tu_now() - t0) > 10)
		end = tu_now() + 5 * (tu_now() - t0);
	do {
		assert_int_equal(tu_http_client(port, 200, 2, 2), 200);
		assert_int_equal(ebee_get_stats(e2, m, &st), 0);
	} while (st.mode != EBEE_MODE_IO && tu_now() < end);
	printf("  mode %s after keep-alive traffic, %llu switches\n", ebee_mode_str(st.mode),
	       (unsigned long long)st.mode_switches);
	assert_int_equal(st.mode, EBEE_MODE_IO);
	assert_true(st.mode_switches >= 1);
	assert_non_null(strstr(logbuf, "mode conn -> io"));
	/* After the switch: what is in flight counted first (settle), then
	 * 300 keep-alive requests, each in ebee's count once and on one line
	 * of nginx's access log. */
	st = settle(e2, m);
	switches = st.mode_switches;
	lines0 = tu_count_lines(log);
	assert_true(lines0 > 0);
	assert_int_equal(tu_http_client(port, 300, 2, 2), 300);
	{
		struct ebee_stats st2 = settle_want(e2, m, st.requests + 300);

		lines1 = tu_count_lines(log);
		printf("  after the switch: ebee +%llu, nginx access.log +%ld, mode %s\n",
		       (unsigned long long)(st2.requests - st.requests), lines1 - lines0,
		       ebee_mode_str(st2.mode));
		assert_int_equal(lines1 - lines0, 300);
		assert_int_equal(st2.requests - st.requests, lines1 - lines0);
		assert_int_equal(st2.mode, EBEE_MODE_IO);
		assert_int_equal(st2.mode_switches, switches);
	}
	if (nwarn)
		fail_msg("%u warning(s) logged while the pattern changed (above, [log] WARN)",
			 nwarn);
	ebee_close(e2);
	tu_stop(m);
}

/* A ring buffer far too small for the load: records are lost, but never
 * silently, and requests (counted in the kernel) still equals what memcached
 * served, exactly; covered says what share of the window's requests the
 * latencies are over. */
static void test_drops_are_counted(void **state)
{
	struct ebee_opts o = { .sz = sizeof(o), .ringbuf_size = 4096, .drain_ms = 1000 };
	struct ebee_trace_opts io = topts(EBEE_MODE_IO);
	struct ebee_global_stats g = { .sz = sizeof(g) };
	long long before, after;
	struct ebee_stats st;
	struct ebee *e2;
	char msg[256];
	int port;
	pid_t m;

	NEED_ROOT();
	o.path = tp_path;
	o.attach = tp_path == EBEE_PATH_SOCKET ? tp_attach : EBEE_ATTACH_AUTO;
	e2 = ebee_open(&o, msg, sizeof(msg));
	assert_non_null(e2);
	m = tu_start_memcached(&port);
	assert_true(m > 0);
	before = mc_cmds(port);
	assert_int_equal(ebee_start_tracing(e2, m, &io), 0);
	assert_int_equal(tu_mc_client(port, 16, 40000), 40000);
	st = settle_want(e2, m, 40000);
	assert_int_equal(ebee_stop_tracing(e2, m), 0);
	after = mc_cmds(port);
	assert_int_equal(ebee_get_global_stats(e2, &g), 0);
	printf("  4 KiB ring: %llu requests (%llu records dropped, global %llu; covered %.4f), "
	       "memcached +%lld\n",
	       (unsigned long long)st.requests, (unsigned long long)st.dropped,
	       (unsigned long long)g.dropped, st.covered, after - before);
	assert_int_equal(st.requests, after - before);
	assert_int_equal(g.dropped, st.dropped);
	assert_true(st.covered >= 0 && st.covered <= 1);
	if (!st.dropped)
		printf("  note: no record was lost this time; the count still had to match\n");
	ebee_close(e2);
	tu_stop(m);
}

/* Ring sizes that are not a power of two, or that would lock more than
 * 1 GiB over all CPUs (one ring each), are refused with a reason. */
static void test_ring_sizes_refused(void **state)
{
	struct ebee_opts o = { .sz = sizeof(o), .ringbuf_size = 5000 };
	char msg[256];

	NEED_ROOT();
	o.path = tp_path;
	o.attach = tp_path == EBEE_PATH_SOCKET ? tp_attach : EBEE_ATTACH_AUTO;
	assert_null(ebee_open(&o, msg, sizeof(msg)));
	printf("  %s\n", msg);
	assert_non_null(strstr(msg, "power of two"));
	o.ringbuf_size = (size_t)1 << 31;
	assert_null(ebee_open(&o, msg, sizeof(msg)));
	printf("  %s\n", msg);
	assert_non_null(strstr(msg, "at most 1024 MiB in all"));
}

/* More connections open before tracing than the adoption map holds (max_conns
 * 2, 3 open): 2 adopted and the third said, on the socket path, whose map
 * refuses when full (the syscall path's LRU map of (tgid, fd) makes room). */
static void test_adoption_beyond_the_bound(void **state)
{
	struct ebee_trace_opts to = topts(EBEE_MODE_IO);
	struct ebee *e2;
	int port, fds[3];
	pid_t pid;

	NEED_ROOT();
	NEED_SOCKET_PATH("the socket path's adoption map");
	pid = tu_start_memcached(&port);
	assert_true(pid > 0);
	mc_connect(port, fds, 3);
	e2 = open_ebee(2, 0);
	assert_non_null(e2);
	logoff = 0;
	logbuf[0] = 0;
	assert_int_equal(ebee_start_tracing(e2, pid, &to), 0);
	assert_non_null(
	    strstr(logbuf, "1 of 3 connections open before tracing could not be adopted"));
	assert_non_null(strstr(logbuf, "2 open connections adopted"));
	assert_int_equal(ebee_stop_tracing(e2, pid), 0);
	ebee_close(e2);
	for (int c = 0; c < 3; c++)
		close(fds[c]);
	tu_stop(pid);
}

/* 10 000 connections accepted by a traced process that dies without closing
 * them: the connection map stays within its bound (4096 here) and later
 * requests of another server are still counted exactly. */
static void test_abandoned_connections_bounded(void **state)
{
	struct ebee_trace_opts io = topts(EBEE_MODE_IO);
	struct ebee_global_stats g = { .sz = sizeof(g) };
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	struct ebee_stats st;
	long long before, after;
	int lfd, pfd[2], opened = 0, accepted = 0, pm;
	struct ebee *e2;
	pid_t hoarder, m;
	char c;
	/* The socket path keeps handshakes not yet claimed by a traced process
	 * in a second map of the same bound. */
	unsigned int bound = tp_path == EBEE_PATH_SOCKET ? 2 * 4096 : 4096;

	NEED_ROOT();
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &al), 0);
	assert_int_equal(listen(lfd, 4096), 0);
	assert_int_equal(pipe(pfd), 0);
	hoarder = fork();
	if (hoarder == 0) {
		struct rlimit rl = { 20000, 20000 };
		int n = 0;

		setrlimit(RLIMIT_NOFILE, &rl);
		close(pfd[0]);
		/* Accept and keep everything; never read, never close. */
		while (n < 10000 && accept4(lfd, NULL, NULL, 0) >= 0)
			n++;
		if (write(pfd[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(pfd[1]);
	e2 = open_ebee(4096, 0);
	assert_non_null(e2);
	assert_int_equal(ebee_start_tracing(e2, hoarder, &io), 0);
	for (int i = 0; i < 10000; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		if (fd >= 0 && !connect(fd, (struct sockaddr *)&a, sizeof(a)))
			opened++;
		if (fd >= 0)
			close(fd); /* the server never learns: it never reads */
	}
	if (read(pfd[0], &c, 1) == 1)
		accepted = 10000;
	close(pfd[0]);
	close(lfd);
	assert_int_equal(ebee_get_global_stats(e2, &g), 0);
	printf("  opened %d, accepted %d, connection map entries %llu (bound %u)\n", opened,
	       accepted, (unsigned long long)g.conn_entries, bound);
	assert_int_equal(opened, 10000);
	assert_int_equal(accepted, 10000);
	assert_true(g.conn_entries <= bound);
	assert_true(g.conn_entries >= 1000); /* they were tracked, and evicted */
	kill(hoarder, SIGKILL);
	waitpid(hoarder, NULL, 0);

	m = tu_start_memcached(&pm);
	assert_true(m > 0);
	before = mc_cmds(pm);
	assert_int_equal(ebee_start_tracing(e2, m, &io), 0);
	assert_int_equal(tu_mc_client(pm, 4, 1000), 1000);
	st = settle(e2, m);
	assert_int_equal(ebee_get_global_stats(e2, &g), 0);
	assert_int_equal(ebee_stop_tracing(e2, m), 0);
	after = mc_cmds(pm);
	printf("  afterwards: memcached %llu of 1000, its cmd_get+cmd_set +%lld\n",
	       (unsigned long long)st.requests, after - before);
	assert_int_equal(after - before, 1000);
	assert_int_equal(st.requests, 1000);
	assert_true(g.conn_entries <= bound);
	ebee_close(e2);
	tu_stop(m);
}

/* The requests of each pid as the on_request hook saw them (service
 * latency), to check the joint percentile against. */
static struct {
	pid_t pid[2];
	uint64_t *lat;
	size_t n, cap;
} seen;

static void on_request(pid_t pid, uint64_t lat_ns, void *ctx)
{
	if ((pid == seen.pid[0] || pid == seen.pid[1]) && seen.n < seen.cap)
		seen.lat[seen.n++] = lat_ns;
}

/* Two memcached processes traced as two pids (what parties does for the
 * processes of one cgroup): the joint percentile over both equals numpy's
 * percentile of every request either served (as many as the two counted
 * themselves), exactly; the joint percentile of one pid is that pid's own; an
 * untraced pid is -ENOENT. */
static void test_joint_percentile(void **state)
{
	struct ebee_opts o = { .sz = sizeof(o), .on_request = on_request };
	struct ebee_trace_opts io = topts(EBEE_MODE_IO);
	static const double ps[] = { 0, 10, 50, 90, 99, 99.9, 100 };
	long long before[2], after[2];
	struct ebee *e2;
	double v, one;
	pid_t m[2];
	int port[2];

	NEED_ROOT();
	seen.cap = 10000;
	seen.n = 0;
	seen.lat = calloc(seen.cap, sizeof(*seen.lat));
	assert_non_null(seen.lat);
	e2 = tp_open(&o);
	assert_non_null(e2);
	for (int i = 0; i < 2; i++) {
		m[i] = tu_start_memcached(&port[i]);
		assert_true(m[i] > 0);
		seen.pid[i] = m[i];
		before[i] = mc_cmds(port[i]);
		assert_int_equal(ebee_start_tracing(e2, m[i], &io), 0);
	}
	assert_int_equal(tu_mc_client(port[0], 4, 1500), 1500);
	assert_int_equal(tu_mc_client(port[1], 2, 700), 700);
	settle(e2, m[0]);
	settle(e2, m[1]);
	assert_int_equal(seen.n, 2200);
	qsort(seen.lat, seen.n, sizeof(*seen.lat), tu_cmp_u64);
	for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
		assert_int_equal(
		    ebee_get_latency_percentile_joint(e2, m, 2, EBEE_LAT_SERVICE, ps[i], &v), 0);
		if (v != tu_np_linear(seen.lat, seen.n, ps[i]))
			fail_msg("p%g over both: ebee %.17g, requests seen %.17g", ps[i], v,
				 tu_np_linear(seen.lat, seen.n, ps[i]));
		assert_int_equal(
		    ebee_get_latency_percentile_joint(e2, m, 1, EBEE_LAT_SERVICE, ps[i], &one), 0);
		assert_int_equal(
		    ebee_get_latency_percentile_of(e2, m[0], EBEE_LAT_SERVICE, ps[i], &v), 0);
		assert_true(one == v);
	}
	assert_int_equal(ebee_get_latency_percentile_joint(e2, m, 2, EBEE_LAT_SERVICE, 99, &v), 0);
	printf("  joint p99 %.1f us over %zu requests of two processes\n", v / 1e3, seen.n);
	if (tp_path == EBEE_PATH_SOCKET)
		assert_int_equal(
		    ebee_get_latency_percentile_joint(e2, m, 2, EBEE_LAT_SOJOURN, 99, &v), 0);
	{
		pid_t bad[2] = { m[0], getpid() }, twice[3] = { m[0], m[1], m[0] };

		/* a pid listed twice counts once */
		assert_int_equal(
		    ebee_get_latency_percentile_joint(e2, twice, 3, EBEE_LAT_SERVICE, 99, &one), 0);
		assert_int_equal(
		    ebee_get_latency_percentile_joint(e2, m, 2, EBEE_LAT_SERVICE, 99, &v), 0);
		assert_true(one == v);

		assert_int_equal(
		    ebee_get_latency_percentile_joint(e2, bad, 2, EBEE_LAT_SERVICE, 99, &v),
		    -ENOENT);
		assert_int_equal(
		    ebee_get_latency_percentile_joint(e2, m, 0, EBEE_LAT_SERVICE, 99, &v), -EINVAL);
		assert_int_equal(
		    ebee_get_latency_percentile_joint(e2, m, 2, EBEE_LAT_SERVICE, 101, &v),
		    -EINVAL);
	}
	ebee_close(e2);
	/* untraced now: the stats requests are not in seen */
	for (int i = 0; i < 2; i++)
		after[i] = mc_cmds(port[i]);
	printf("  memcached cmd_get+cmd_set +%lld and +%lld\n", after[0] - before[0],
	       after[1] - before[1]);
	assert_int_equal(after[0] - before[0] + after[1] - before[1], seen.n);
	assert_int_equal(after[0] - before[0], 1500);
	assert_int_equal(after[1] - before[1], 700);
	for (int i = 0; i < 2; i++)
		tu_stop(m[i]);
	free(seen.lat);
	seen.lat = NULL;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memcached_exact),
		cmocka_unit_test(test_joint_percentile),
		cmocka_unit_test(test_preexisting_connections_adopted),
		cmocka_unit_test(test_nginx_keepalive),
		cmocka_unit_test(test_three_piece_response),
		cmocka_unit_test(test_mixed_modes),
		cmocka_unit_test(test_arrival_hook_without_framing),
		cmocka_unit_test(test_forced_modes),
		cmocka_unit_test(test_pattern_change_revisited),
		cmocka_unit_test(test_drops_are_counted),
		cmocka_unit_test(test_ring_sizes_refused),
		cmocka_unit_test(test_adoption_beyond_the_bound),
		cmocka_unit_test(test_abandoned_connections_bounded),
	};

	return TP_RUN_BOTH(tests, group_setup, group_teardown);
}
