/* SPDX-License-Identifier: MIT */
/*
 * Helpers for integration tests: real processes, ports, files. Every process
 * started here is registered and killed by tu_cleanup() (called at exit and
 * from tu_stop), so a failing test leaves nothing behind; a test killed by
 * SIGTERM, SIGINT or SIGHUP (tests/run.sh's timeout) kills their process
 * groups first, and one killed by SIGKILL takes them along (PR_SET_PDEATHSIG).
 */
#ifndef TESTUTIL_H
#define TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Print "SKIP: why" and return true when not root. */
bool tu_need_root(void);
/* Path of a built program: build/fixtures/NAME etc., relative to the repo root
 * (the test's working directory is set to it by tu_init()). */
void tu_init(void);

/* Start argv[0] with stdout+stderr to log (may be NULL: /dev/null). */
pid_t tu_spawn(char *const argv[], const char *log);
/* SIGTERM, wait up to 5 s, then SIGKILL; reaps. 0 if it exited by itself. */
int tu_stop(pid_t pid);
/* Kill and reap everything tu_spawn started. */
void tu_cleanup(void);

/* Run argv to completion (bounded by timeout_s), stdout into out. Exit status
 * or -1. */
int tu_run(char *const argv[], char *out, size_t out_len, double timeout_s);

/* A free TCP port on 127.0.0.1 (bound and released). */
int tu_free_port(void);
/* Wait until file path exists and is non-empty (timeout_s); 0 or -ETIMEDOUT. */
int tu_wait_file(const char *path, double timeout_s);
/* Wait until 127.0.0.1:port accepts a connection. NOTE: the probe is itself a
 * connection: call it before tracing starts. */
int tu_wait_port(int port, double timeout_s);
/* Read a decimal number from a file; -1 on failure. */
long long tu_read_num(const char *path);
/* Count lines of a file; -1 on failure. */
long tu_count_lines(const char *path);
/* Find "key N" in text; -1 if absent. */
long long tu_field(const char *text, const char *key);
/* A fresh temporary directory (removed by tu_cleanup). */
const char *tu_tmpdir(void);

/* A fixture's own service-time percentile (key "p50_us", "p90_us" or "p99_us") from its
 * --stats-file, once that says it counted at least `want` requests (waits up to timeout_s:
 * the fixture rewrites it at most every 100 ms); -1 on timeout. */
long long tu_server_svc_us(const char *stats_file, long long want, const char *key,
			   double timeout_s);
/* Whether ebee's latency (ns) is within TU_SVC_REL of the server's own (us) plus TU_SVC_ABS_US;
 * prints both. The server's clock starts when accept or the request's first read returned and
 * stops when the response's last write returned; ebee's covers the same span plus the syscall
 * entries and exits around it (conn: up to the close right after). The relative part covers a
 * thread preempted between those returns and ebee's hooks on a loaded host or a slow guest
 * (the p50 moves with it, both sides alike); the absolute part covers the few syscalls. It is
 * small enough to catch the errors that matter: a client's think time or close delay counted,
 * two requests merged into one, a response ended before its last piece, each at least the
 * server's own time or 2 ms in the tests that use it. */
#define TU_SVC_REL    0.10
#define TU_SVC_ABS_US 500.0
bool tu_svc_near(const char *what, double ebee_ns, long long server_us);

/* cpr_server from build/fixtures with extra args; waits until ready and
 * returns its pid, port in *port. */
pid_t tu_start_cpr(int *port, const char *const extra[]);
/* The same for any fixture server taking --ready-file and --timeout
 * (build/fixtures/NAME). */
pid_t tu_start_server(const char *name, int *port, const char *const extra[]);
/* memcached -t 2 on a free port, waits until it accepts. */
pid_t tu_start_memcached(int *port);
/* One memcached 'stats' counter (its own connection: a request too). */
long long tu_memcached_stat(int port, const char *name);
/* nginx master (daemon off) with `workers` workers in a new directory `name`
 * under tu_tmpdir(); keepalive on/off. Waits until it accepts and its workers
 * settle; the path of its access log goes to access_log. */
pid_t tu_start_nginx(const char *name, int *port, bool keepalive, int workers, char *access_log,
		     size_t len);

/* Run build/fixtures/http_client (keepalive 0: a connection per request);
 * the number of ok responses, or -1 (printed) if it failed. */
long long tu_http_client(int port, int requests, int concurrency, int keepalive);
/* The same with --latency: the clients' p50 (connect, or with keep-alive
 * send, to the end of the response) in microseconds goes to *p50_us. */
long long tu_http_client_lat(int port, int requests, int concurrency, int keepalive,
			     long long *p50_us);
/* Debian's curl fetching http://127.0.0.1:port/ `requests` times, `parallel`
 * at a time (curl -Z; on keep-alive connections where the server keeps them,
 * a new connection each where it closes): the number of 200 responses, or -1
 * (printed) if curl failed. A client count that no fixture makes, for ebee's
 * counts on a fixture server (issue 40). */
long long tu_curl_get(int port, int requests, int parallel);
/* Run build/fixtures/mc_client over `conns` persistent connections. */
long long tu_mc_client(int port, int conns, int requests);

double tu_now(void);
void tu_sleep_ms(double ms);

/* qsort() comparator of uint64_t. */
int tu_cmp_u64(const void *a, const void *b);
/* numpy's "linear" interpolation between neighbours a <= b at fraction g,
 * from the upper one when g >= 0.5, as numpy's _lerp() does. */
double tu_np_lerp(uint64_t a, uint64_t b, double g);
/* np.percentile(x, p) of sorted x[0..n), n >= 1, as numpy >= 1.22 evaluates
 * it: the reference ebee's percentiles are checked against, bit for bit. */
double tu_np_linear(const uint64_t *x, size_t n, double p);

#endif
