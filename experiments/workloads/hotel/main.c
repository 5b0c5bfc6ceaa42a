// SPDX-License-Identifier: MIT
/*
 * hotel: the Hotel App Search workload of the Figure 11 study (docs/workloads.md 3). It does
 * the work of vSwarm's hotel "search" service (geo k-nearest over the 80-hotel dataset, then a
 * rate lookup per hotel, cache-aside in the app's own memcached) behind HTTP/1.1 with one
 * request per connection: accept4 -> read the request -> work -> write the response -> close,
 * the `conn` pattern, as the original's Go gRPC clients open a new connection per request.
 *
 * Worker threads block in accept4() on one listening socket; each keeps its own persistent
 * memcached connection. If memcached is down, rates come from the in-memory table (the
 * "database") and the request is counted as a fallback; the workload keeps serving.
 *
 * Binds 127.0.0.1 unless --addr names another local IPv4 address (the Figure 11 study
 * serves load generators in another network namespace over a veth pair). The pure logic lives in
 * search.c and mc.c (unit tested).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mc.h"
#include "search.h"
#include "../common/srv_util.h"

#define MAX_REQ	       8192
#define MAX_THREADS    256
#define CLIENT_TIMEOUT 10 /* s: a silent client cannot hold a worker longer */
#define MC_TIMEOUT_MS  1000

static const char usage_text[] =
    "usage: hotel [--addr A] [--port P] [--threads T] [--memcached-port P] [--work-us W]\n"
    "             [--ready-file F] [--count-file F] [--timeout S]\n"
    "\n"
    "Hotel App Search (vSwarm hotel-app \"search\") over HTTP/1.1 on 127.0.0.1, one request\n"
    "per connection. Prints the port it listens on as the first line of stdout.\n"
    "\n"
    "  GET /search?lat=37.7963&lon=-122.4015&inDate=2015-04-09&outDate=2015-04-11\n"
    "      -> 200 {\"hotelIds\":[\"2\",\"1\",\"3\"]}   (missing parameters: these values)\n"
    "      bad parameters -> 400; another path -> 404; another method -> 405\n"
    "\n"
    "  --addr A            local IPv4 address to listen on (default 127.0.0.1)\n"
    "  --port P            TCP port (default 0: pick a free one and print it)\n"
    "  --threads T         worker threads, each blocking in accept4 (default 4, max 256)\n"
    "  --memcached-port P  the app's own memcached on 127.0.0.1, the rate cache (default\n"
    "                      11211). Unreachable: rates come from the in-memory table, counted\n"
    "                      as fallbacks, and the server retries once a second per thread\n"
    "  --work-us W         extra CPU per request: spin W us of thread CPU time (default 0)\n"
    "  --ready-file F      write \"PORT\\n\" to F once listening (atomically)\n"
    "  --count-file F      write the number of responses sent to F: at most every 100 ms\n"
    "                      while it changes, and on exit (atomically)\n"
    "  --timeout S         exit by itself after S seconds (default 0: never)\n"
    "\n"
    "Exits 0 on SIGTERM/SIGINT or timeout, printing the request and cache counts to stderr.\n";

struct opts {
	const char *addr;
	struct in_addr sin_addr;
	int port;
	int threads;
	int mc_port;
	double work_us;
	const char *ready_file;
	const char *count_file;
	double timeout_s;
};

static struct opts opt = { .addr = "127.0.0.1", .threads = 4, .mc_port = 11211 };

struct worker {
	pthread_t tid;
	pthread_mutex_t lock; /* guards conn_fd against a stop that shuts it down */
	int conn_fd;
	struct mc_conn mc;
};

struct stats {
	atomic_ullong served;	 /* responses completely written */
	atomic_ullong bad;	 /* of which 4xx */
	atomic_ullong hits;	 /* rate keys found in memcached */
	atomic_ullong misses;	 /* rate keys read from the database, then set */
	atomic_ullong fallbacks; /* searches that could not use memcached */
};

static struct stats st;
static struct hotel_geo geo;
static struct worker *workers;
static int listen_fd = -1;
static atomic_bool stopping;

static void write_count(void)
{
	char buf[32];
	int err;

	if (!opt.count_file)
		return;
	snprintf(buf, sizeof(buf), "%llu\n", (unsigned long long)atomic_load(&st.served));
	err = srv_write_file_atomic(opt.count_file, buf);
	if (err)
		fprintf(stderr, "hotel: cannot write count file %s: %s\n", opt.count_file,
			strerror(-err));
}

/* srv_wait()'s write_count */
static void publish_count(void *ctx)
{
	write_count();
}

/* Rates of ids[0..n): cache-aside through this worker's memcached connection. */
static void lookup_rates(struct worker *w, const int *ids, int n, struct hotel_rate *rates)
{
	bool hit[HOTEL_K], store[HOTEL_K];
	int err, missed = 0;

	if (n == 0)
		return; /* nothing near: no lookup, as in the original */
	err = mc_get_rates(&w->mc, ids, n, rates, hit);
	for (int i = 0; i < n; i++) {
		store[i] = !err && !hit[i];
		if (hit[i])
			continue;
		hotel_rate_db(ids[i], &rates[i]);
		missed++;
	}
	if (err) {
		atomic_fetch_add(&st.fallbacks, 1);
		return;
	}
	atomic_fetch_add(&st.hits, n - missed);
	atomic_fetch_add(&st.misses, missed);
	if (missed && mc_set_rates(&w->mc, rates, store, n))
		atomic_fetch_add(&st.fallbacks, 1);
}

/* The body for a GET /search query string; the HTTP status. */
static int search(struct worker *w, const char *qs, char *body, size_t len)
{
	struct hotel_hit near[HOTEL_K];
	struct hotel_rate rates[HOTEL_K];
	struct hotel_query q;
	int ids[HOTEL_K], n;
	const char *why;

	if (hotel_parse_query(qs, &q, &why)) {
		snprintf(body, len, "{\"error\":\"bad parameter: %s\"}", why);
		return 400;
	}
	n = hotel_geo_nearest(&geo, q.lat, q.lon, HOTEL_K, near);
	for (int i = 0; i < n; i++)
		ids[i] = near[i].id;
	lookup_rates(w, ids, n, rates);
	n = hotel_rank(rates, n, ids);
	if (opt.work_us > 0)
		srv_burn_cpu_us(opt.work_us);
	if (hotel_json_ids(ids, n, body, len) < 0) {
		snprintf(body, len, "{\"error\":\"response too long\"}");
		return 500;
	}
	return 200;
}

/* Route one request (its header NUL-terminated in req). Returns the HTTP status. */
static int route(struct worker *w, char *req, char *body, size_t len)
{
	char *sp1 = strchr(req, ' '), *sp2, *eol = strstr(req, "\r\n"), *qs;

	if (!sp1 || !eol || sp1 > eol) {
		snprintf(body, len, "{\"error\":\"malformed request line\"}");
		return 400;
	}
	*eol = '\0';
	sp2 = strchr(sp1 + 1, ' ');
	if (!sp2 || strncmp(sp2 + 1, "HTTP/1.", 7)) {
		snprintf(body, len, "{\"error\":\"malformed request line\"}");
		return 400;
	}
	*sp2 = '\0';
	if (sp1 - req != 3 || memcmp(req, "GET", 3)) {
		snprintf(body, len, "{\"error\":\"only GET\"}");
		return 405;
	}
	qs = strchr(sp1 + 1, '?');
	if (qs)
		*qs++ = '\0';
	if (strcmp(sp1 + 1, "/search")) {
		snprintf(body, len, "{\"error\":\"not found: try /search\"}");
		return 404;
	}
	return search(w, qs, body, len);
}

static const char *reason(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 400:
		return "Bad Request";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	default:
		return "Internal Server Error";
	}
}

/* One request on fd: read its header, answer, return (the caller closes). */
static void serve_conn(struct worker *w, int fd)
{
	char req[MAX_REQ + 1], body[512], resp[1024];
	size_t have = 0;
	int status, len;

	for (;;) {
		ssize_t n;

		req[have] = '\0';
		if (strstr(req, "\r\n\r\n"))
			break;
		if (have == MAX_REQ) {
			fprintf(stderr, "hotel: request header over %d bytes, closing\n", MAX_REQ);
			return;
		}
		n = read(fd, req + have, MAX_REQ - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n < 0 && errno != ECONNRESET && !atomic_load(&stopping))
				fprintf(stderr, "hotel: read: %s\n", strerror(errno));
			return;
		}
		if (memchr(req + have, '\0', n))
			return;
		have += n;
	}
	status = route(w, req, body, sizeof(body));
	len = snprintf(resp, sizeof(resp),
		       "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
		       "Connection: close\r\n\r\n%s",
		       status, reason(status), strlen(body), body);
	if (srv_write_all(fd, resp, len)) {
		if (!atomic_load(&stopping))
			fprintf(stderr, "hotel: write: %s\n", strerror(errno));
		return;
	}
	/* Counted before close(): a client that saw the close sees the count. */
	if (status != 200)
		atomic_fetch_add(&st.bad, 1);
	atomic_fetch_add(&st.served, 1);
}

static void set_conn(struct worker *w, int fd)
{
	pthread_mutex_lock(&w->lock);
	w->conn_fd = fd;
	pthread_mutex_unlock(&w->lock);
	/* A stop that raced with the accept must still reach this connection. */
	if (fd >= 0 && atomic_load(&stopping))
		shutdown(fd, SHUT_RDWR);
}

static void *worker_main(void *arg)
{
	struct timeval tv = { CLIENT_TIMEOUT, 0 };
	struct worker *w = arg;

	while (!atomic_load(&stopping)) {
		int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (atomic_load(&stopping) || errno == EINVAL)
				break;
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			fprintf(stderr, "hotel: accept4: %s\n", strerror(errno));
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				usleep(10000);
				continue;
			}
			break;
		}
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		set_conn(w, fd);
		serve_conn(w, fd);
		/* Unset before close() so a stop never shuts down a reused fd number. */
		set_conn(w, -1);
		close(fd);
	}
	mc_close(&w->mc);
	return NULL;
}

/* optarg as the value of numeric option c (--name): within [lo, hi] and,
 * but for --work-us and --timeout, whole; exits 2 saying so otherwise. */
static double number_arg(int c, const char *name, double lo, double hi)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(optarg, &end);
	if (errno || end == optarg || *end || !(v >= lo && v <= hi) ||
	    (c != 'w' && c != 'T' && v != (int)v)) {
		fprintf(stderr, "hotel: bad value '%s' for --%s (expected %g..%g%s)\n", optarg,
			name, lo, hi, c == 'w' || c == 'T' ? "" : ", an integer");
		exit(2);
	}
	return v;
}

/* Keep numeric option c's checked value v in opt. */
static void store_number(int c, double v)
{
	if (c == 'p')
		opt.port = (int)v;
	else if (c == 'm')
		opt.mc_port = (int)v;
	else if (c == 't')
		opt.threads = (int)v;
	else if (c == 'w')
		opt.work_us = v;
	else
		opt.timeout_s = v;
}

static void parse_args(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "addr", required_argument, NULL, 'a' },
		{ "port", required_argument, NULL, 'p' },
		{ "threads", required_argument, NULL, 't' },
		{ "memcached-port", required_argument, NULL, 'm' },
		{ "work-us", required_argument, NULL, 'w' },
		{ "ready-file", required_argument, NULL, 'r' },
		{ "count-file", required_argument, NULL, 'c' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c, idx;

	while ((c = getopt_long(argc, argv, "h", lopts, &idx)) != -1) {
		double lo = 0, hi = 0;

		switch (c) {
		case 'h':
			fputs(usage_text, stdout);
			exit(0);
		case 'a':
			if (inet_pton(AF_INET, optarg, &opt.sin_addr) != 1) {
				fprintf(stderr, "hotel: --addr must be an IPv4 address, not '%s'\n",
					optarg);
				exit(2);
			}
			opt.addr = optarg;
			continue;
		case 'r':
			opt.ready_file = optarg;
			continue;
		case 'c':
			opt.count_file = optarg;
			continue;
		case 'p':
		case 'm':
			lo = c == 'm' ? 1 : 0;
			hi = 65535;
			break;
		case 't':
			lo = 1;
			hi = MAX_THREADS;
			break;
		case 'w':
			hi = 60e6;
			break;
		case 'T':
			hi = 1e7;
			break;
		default:
			fputs(usage_text, stderr);
			exit(2);
		}
		store_number(c, number_arg(c, lopts[idx].name, lo, hi));
	}
	if (optind < argc) {
		fprintf(stderr, "hotel: unexpected argument '%s'\n%s", argv[optind], usage_text);
		exit(2);
	}
}

/* Say once at start-up whether the cache is there; serving does not depend on it. */
static void probe_memcached(void)
{
	struct hotel_rate r;
	struct mc_conn m;
	int id = 1, err;
	bool hit;

	mc_init(&m, opt.mc_port, MC_TIMEOUT_MS);
	err = mc_get_rates(&m, &id, 1, &r, &hit);
	mc_close(&m);
	if (err)
		fprintf(stderr,
			"hotel: memcached on 127.0.0.1:%d: %s; serving rates from the database "
			"until it answers (start it: memcached -l 127.0.0.1 -p %d)\n",
			opt.mc_port, strerror(-err), opt.mc_port);
}

/* The listening socket on opt's address and port (0: a free one, then kept
 * in opt.port). 0, or -1 said on stderr. */
static int open_listener(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t slen = sizeof(sa);
	int one = 1;

	listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (listen_fd < 0) {
		fprintf(stderr, "hotel: socket: %s\n", strerror(errno));
		return -1;
	}
	setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sa.sin_addr = opt.sin_addr;
	sa.sin_port = htons(opt.port);
	if (bind(listen_fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "hotel: bind %s:%d: %s (--port 0 picks a free port)\n", opt.addr,
			opt.port, strerror(errno));
		return -1;
	}
	if (listen(listen_fd, 4096) || getsockname(listen_fd, (struct sockaddr *)&sa, &slen)) {
		fprintf(stderr, "hotel: listen on %s:%d: %s\n", opt.addr, opt.port,
			strerror(errno));
		return -1;
	}
	opt.port = ntohs(sa.sin_port);
	return 0;
}

/* Start the worker threads, each with its own cache connection; how many
 * started goes in *started (they must be stopped even if one failed). 0 or 1. */
static int start_workers(int *started)
{
	for (int i = 0; i < opt.threads; i++) {
		struct worker *w = &workers[i];
		int err;

		pthread_mutex_init(&w->lock, NULL);
		w->conn_fd = -1;
		mc_init(&w->mc, opt.mc_port, MC_TIMEOUT_MS);
		err = pthread_create(&w->tid, NULL, worker_main, w);
		if (err) {
			fprintf(stderr, "hotel: pthread_create: %s\n", strerror(err));
			return 1;
		}
		(*started)++;
	}
	return 0;
}

/* Say the port on stdout and, with --ready-file, in that file: the caller
 * starts its load once it is there. 0 or 1. */
static int announce_port(void)
{
	char buf[32];
	int err;

	snprintf(buf, sizeof(buf), "%d\n", opt.port);
	fputs(buf, stdout);
	fflush(stdout);
	if (opt.ready_file) {
		err = srv_write_file_atomic(opt.ready_file, buf);
		if (err) {
			fprintf(stderr, "hotel: cannot write ready file %s: %s\n", opt.ready_file,
				strerror(-err));
			return 1;
		}
	}
	return 0;
}

/* Serve until SIGTERM, SIGINT or --timeout: the signal, 0 on the timeout. */
static int serve_until_stop(void)
{
	struct srv_wait w = {
		.deadline_ns =
		    opt.timeout_s > 0 ? srv_now_ns() + (long long)(opt.timeout_s * 1e9) : 0,
		.served = opt.count_file ? &st.served : NULL,
		.write_count = publish_count,
	};

	write_count();
	return srv_wait(&w);
}

/* Stop the started workers: shutdown() on the listening socket wakes the
 * threads blocked in accept4, on a connection the ones blocked reading it. */
static void stop_workers(int started)
{
	atomic_store(&stopping, true);
	shutdown(listen_fd, SHUT_RD);
	for (int i = 0; i < started; i++) {
		pthread_mutex_lock(&workers[i].lock);
		if (workers[i].conn_fd >= 0)
			shutdown(workers[i].conn_fd, SHUT_RDWR);
		pthread_mutex_unlock(&workers[i].lock);
	}
	for (int i = 0; i < started; i++)
		pthread_join(workers[i].tid, NULL);
	close(listen_fd);
}

/* The last line on stderr: the counts, and why it stopped if it served. */
static void print_summary(int rc, int sig)
{
	fprintf(stderr,
		"hotel: served %llu (%llu errors); rates: %llu cache hits, %llu misses, "
		"%llu searches fell back to the database%s%s\n",
		(unsigned long long)atomic_load(&st.served),
		(unsigned long long)atomic_load(&st.bad), (unsigned long long)atomic_load(&st.hits),
		(unsigned long long)atomic_load(&st.misses),
		(unsigned long long)atomic_load(&st.fallbacks), rc ? "" : " (",
		rc ? ""
		   : (sig == 0	      ? "timeout)"
		      : sig == SIGINT ? "SIGINT)"
				      : "SIGTERM)"));
}

int main(int argc, char **argv)
{
	int sig = 0, err, started = 0, rc;
	sigset_t set;

	opt.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	parse_args(argc, argv);
	signal(SIGPIPE, SIG_IGN);
	/* Signals are taken by the main thread (sigtimedwait); block them before any thread. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	err = hotel_geo_build(&geo);
	if (err) {
		fprintf(stderr, "hotel: cannot build the geo index: %s\n", strerror(-err));
		return 1;
	}
	workers = calloc(opt.threads, sizeof(*workers));
	if (!workers) {
		fprintf(stderr, "hotel: out of memory for %d workers\n", opt.threads);
		return 1;
	}
	if (open_listener())
		return 1;
	probe_memcached();

	rc = start_workers(&started);
	if (!rc)
		rc = announce_port();
	if (!rc)
		sig = serve_until_stop();

	stop_workers(started);
	write_count();
	print_summary(rc, sig);
	hotel_geo_free(&geo);
	free(workers);
	return rc;
}
