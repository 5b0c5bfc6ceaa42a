// SPDX-License-Identifier: MIT
/*
 * The open-loop event loop. Arrivals are generated ahead of time by time rescaling (a unit
 * Poisson process mapped through the inverse of the schedule's cumulative rate) and dispatched
 * at their intended time, whatever happened to earlier requests: a free connection takes the
 * request; otherwise a new connection is opened, up to --max-conns; otherwise the arrival waits
 * in a FIFO queue for the next free connection (up to --max-queue, then it is dropped). Every
 * latency is measured from the intended send time, so time spent queued, connecting or behind
 * schedule counts (no coordinated omission). One request is outstanding per connection at a
 * time: no pipelining, so each request is one read..write exchange on the server.
 *
 * Single-threaded: one epoll loop with a nanosecond timeout (epoll_pwait2). Known limits: at
 * rates where the loop itself saturates a CPU, sends fall behind and are counted as late; the
 * loop's wake-up jitter (tens of microseconds) is included in every latency (timer slack is
 * set to 1 ns so that sleeps are not up to 50 us longer).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "loadgen.h"
#include "zipf.h"

enum conn_state {
	C_FREE,
	C_CONNECTING,
	C_IDLE,
	C_BUSY,
};

struct conn {
	int fd;
	enum conn_state state;
	bool has_req;
	bool written;
	bool is_get;
	int64_t intended;
	char *out;
	size_t out_len, out_off, out_cap;
	char *in;
	size_t in_len, in_cap;
};

struct loop {
	const struct lg_config *cfg;
	struct lg_result *res;
	int epfd;
	int64_t start;
	struct conn *conns;
	int nconns;
	int *free_slots, nfree;
	int *idle, nidle;
	int open;
	int inflight; /* requests assigned to a connection, reply not yet complete */
	/* FIFO of intended times waiting for a connection */
	int64_t *queue;
	long qhead, qlen;
	uint64_t rng;
	struct zipf zipf;
	char *value;
	char http_req[1024];
	int http_req_len;
	struct lg_window win;
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static uint64_t rnd64(uint64_t *s)
{
	/* splitmix64 */
	uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

/* Uniform in [0, 1). */
static double rnd_unit(uint64_t *s)
{
	return (double)(rnd64(s) >> 11) * (1.0 / 9007199254740992.0);
}

static bool persistent(const struct lg_config *cfg)
{
	return cfg->proto == LG_MEMCACHED || cfg->keepalive;
}

static void record(struct loop *l, int64_t now, int64_t intended, bool ok)
{
	double lat = (double)(now - intended) / 1000.0;

	if (!ok) {
		l->res->errors++;
		return;
	}
	l->res->ok++;
	lg_samples_add(&l->res->lat_us, lat);
	lg_window_add(&l->win, now, lat);
}

static void conn_close(struct loop *l, struct conn *c)
{
	int idx = c - l->conns;

	if (c->state == C_IDLE) {
		for (int i = 0; i < l->nidle; i++) {
			if (l->idle[i] == idx) {
				l->idle[i] = l->idle[--l->nidle];
				break;
			}
		}
	}
	if (c->has_req)
		l->inflight--;
	close(c->fd);
	c->fd = -1;
	c->state = C_FREE;
	c->has_req = false;
	c->in_len = 0;
	l->free_slots[l->nfree++] = idx;
	l->open--;
}

/* Fail the connection's request (if any) and close it. */
static void conn_fail(struct loop *l, struct conn *c, const char *why, int err)
{
	if (l->cfg->verbose)
		fprintf(stderr, "loadgen: connection %d: %s: %s\n", (int)(c - l->conns), why,
			strerror(err));
	if (c->has_req)
		l->res->errors++;
	conn_close(l, c);
}

/*
 * After send() or recv() returned -1: true to call it again at once (EINTR). Otherwise false,
 * and the connection has failed unless it is only not ready yet (EAGAIN: epoll says when).
 */
static bool io_again(struct loop *l, struct conn *c, const char *what)
{
	if (errno == EINTR)
		return true;
	if (errno != EAGAIN)
		conn_fail(l, c, what, errno);
	return false;
}

static struct conn *conn_open(struct loop *l)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(l->cfg->port) };
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET };
	struct conn *c;
	int fd, one = 1;

	if (!l->nfree)
		return NULL;
	sa.sin_addr = l->cfg->addr;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		if (l->cfg->verbose)
			fprintf(stderr, "loadgen: socket: %s\n", strerror(errno));
		return NULL;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) && errno != EINPROGRESS) {
		if (l->cfg->verbose)
			fprintf(stderr, "loadgen: connect %s:%d: %s\n", l->cfg->host, l->cfg->port,
				strerror(errno));
		close(fd);
		return NULL;
	}
	c = &l->conns[l->free_slots[--l->nfree]];
	c->fd = fd;
	c->state = C_CONNECTING;
	c->has_req = false;
	c->in_len = 0;
	l->open++;
	ev.data.u32 = c - l->conns;
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		fprintf(stderr, "loadgen: epoll_ctl: %s\n", strerror(errno));
		conn_close(l, c);
		return NULL;
	}
	l->res->conns_opened++;
	if (l->open > l->res->max_open)
		l->res->max_open = l->open;
	return c;
}

static void build_request(struct loop *l, struct conn *c)
{
	const struct lg_config *cfg = l->cfg;
	char key[48];
	size_t vlen;
	int n;

	if (cfg->proto == LG_HTTP) {
		memcpy(c->out, l->http_req, l->http_req_len);
		c->out_len = l->http_req_len;
		return;
	}
	snprintf(key, sizeof(key), "lg:%zu", zipf_sample(&l->zipf, rnd_unit(&l->rng)));
	c->is_get = rnd_unit(&l->rng) < cfg->get_ratio;
	if (c->is_get) {
		n = mc_build_get(c->out, c->out_cap, key);
	} else {
		/* Value sizes uniform in [size/2, 3*size/2]: mean size. */
		vlen = cfg->value_size / 2 + rnd64(&l->rng) % (cfg->value_size + 1);
		if (vlen == 0)
			vlen = 1;
		n = mc_build_set(c->out, c->out_cap, key, l->value, vlen);
	}
	c->out_len = n > 0 ? n : 0;
}

/* Write what is pending; marks the request sent when its last byte is written. */
static void conn_write(struct loop *l, struct conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);

		if (n < 0) {
			if (io_again(l, c, "send"))
				continue;
			return;
		}
		c->out_off += n;
	}
	if (!c->written) {
		int64_t now = now_ns();

		c->written = true;
		l->res->sent++;
		if ((double)(now - c->intended) > l->cfg->late_us * 1000)
			l->res->late++;
	}
}

static void start_request(struct loop *l, struct conn *c, int64_t intended)
{
	c->has_req = true;
	c->written = false;
	c->intended = intended;
	c->out_off = 0;
	l->inflight++;
	build_request(l, c);
	if (c->state == C_IDLE || c->state == C_BUSY) {
		c->state = C_BUSY;
		conn_write(l, c);
	}
}

static bool queue_pop(struct loop *l, int64_t *intended)
{
	if (!l->qlen)
		return false;
	*intended = l->queue[l->qhead];
	l->qhead = (l->qhead + 1) % l->cfg->max_queue;
	l->qlen--;
	return true;
}

static void dispatch(struct loop *l, int64_t intended)
{
	struct conn *c = NULL;

	if (persistent(l->cfg) && l->nidle) {
		c = &l->conns[l->idle[--l->nidle]];
		start_request(l, c, intended);
		return;
	}
	if (l->open < l->cfg->max_conns)
		c = conn_open(l);
	if (c) {
		start_request(l, c, intended);
		return;
	}
	if (l->qlen == l->cfg->max_queue) {
		l->res->dropped++;
		l->res->errors++;
		return;
	}
	l->queue[(l->qhead + l->qlen) % l->cfg->max_queue] = intended;
	l->qlen++;
}

/* A connection has nothing to do: give it queued work, keep it idle, or close it. */
static void conn_release(struct loop *l, struct conn *c)
{
	int64_t intended;

	if (!persistent(l->cfg)) {
		conn_close(l, c);
		/* The slot is free again: the oldest queued arrival gets a new connection. */
		if (l->qlen && (c = conn_open(l)) && queue_pop(l, &intended))
			start_request(l, c, intended);
		return;
	}
	c->state = C_IDLE;
	if (queue_pop(l, &intended)) {
		start_request(l, c, intended);
		return;
	}
	l->idle[l->nidle++] = c - l->conns;
}

static void conn_read(struct loop *l, struct conn *c)
{
	for (;;) {
		enum lg_parse r;
		size_t consumed = 0;
		bool ok = false, hit = false;
		int status = 0;
		ssize_t n;

		if (c->in_len == c->in_cap) {
			size_t cap = c->in_cap * 2;
			char *p = realloc(c->in, cap);

			if (!p) {
				conn_fail(l, c, "reply buffer", ENOMEM);
				return;
			}
			c->in = p;
			c->in_cap = cap;
		}
		n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
		if (n < 0) {
			if (io_again(l, c, "recv"))
				continue;
			return;
		}
		if (n == 0) {
			/* The server closed. Fine between requests; a failure in the middle of one.
			 */
			if (c->has_req)
				conn_fail(l, c, "server closed before the reply was complete",
					  EPIPE);
			else
				conn_close(l, c);
			return;
		}
		c->in_len += n;
		if (!c->has_req || !c->written) {
			conn_fail(l, c, "unexpected data from the server", EPROTO);
			return;
		}
		if (l->cfg->proto == LG_HTTP) {
			r = http_parse_response(c->in, c->in_len, &consumed, &status);
			ok = status == 200;
		} else {
			r = mc_parse_reply(c->in, c->in_len, c->is_get, &consumed, &ok, &hit);
		}
		if (r == LG_MORE)
			continue;
		if (r == LG_BAD) {
			conn_fail(l, c, "malformed reply", EPROTO);
			return;
		}
		if (c->is_get && l->cfg->proto == LG_MEMCACHED) {
			l->res->gets++;
			l->res->hits += hit;
		}
		record(l, now_ns(), c->intended, ok);
		c->has_req = false;
		l->inflight--;
		if (consumed != c->in_len) {
			conn_fail(l, c, "more bytes than one reply", EPROTO);
			return;
		}
		c->in_len = 0;
		conn_release(l, c);
		return;
	}
}

static void on_event(struct loop *l, struct conn *c, uint32_t ev)
{
	if (c->state == C_FREE)
		return;
	if (c->state == C_CONNECTING && (ev & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
		int err = 0;
		socklen_t len = sizeof(err);

		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) || err) {
			conn_fail(l, c, "connect", err ? err : errno);
			return;
		}
		if (c->has_req) {
			c->state = C_BUSY;
			conn_write(l, c);
			if (c->state == C_FREE)
				return;
		} else {
			conn_release(l, c);
			return;
		}
	} else if (c->state == C_BUSY && (ev & EPOLLOUT) && c->out_off < c->out_len) {
		conn_write(l, c);
		if (c->state == C_FREE)
			return;
	}
	if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		conn_read(l, c);
}

/* Requests older than req_timeout (from their intended time) fail; so do stale queued ones. */
static void expire(struct loop *l, int64_t now)
{
	int64_t limit = (int64_t)(l->cfg->req_timeout * 1e9);
	int64_t intended;

	for (int i = 0; i < l->nconns; i++) {
		struct conn *c = &l->conns[i];

		if (c->state != C_FREE && c->has_req && now - c->intended > limit) {
			l->res->timeouts++;
			conn_fail(l, c, "reply timed out", ETIMEDOUT);
		}
	}
	while (l->qlen && now - l->queue[l->qhead] > limit) {
		queue_pop(l, &intended);
		l->res->timeouts++;
		l->res->errors++;
	}
	/* Closed persistent connections are reopened for the queue when slots are free. */
	while (l->qlen && l->open < l->cfg->max_conns) {
		struct conn *c = conn_open(l);

		if (!c || !queue_pop(l, &intended))
			break;
		start_request(l, c, intended);
	}
}

static void feed_line(struct loop *l, int64_t now)
{
	const struct lg_config *cfg = l->cfg;
	double p99, rps;

	/* No line before the first completion: a p99 of 0 would read as "all is well". */
	if (!lg_window_query(&l->win, l->start, now, (int64_t)(cfg->feed_window_s * 1e9),
			     cfg->feed_min_samples, 99, &p99, &rps))
		return;
	if (cfg->feed) {
		fprintf(cfg->feed, "%lld %.1f %.1f\n", (long long)((now - l->start) / 1000000), p99,
			rps);
		fflush(cfg->feed);
	}
}

/* Set every key once, pipelined in batches, so gets hit (CloudSuite warms up the same way). */
static int preload(struct loop *l)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(l->cfg->port) };
	struct timeval tv = { .tv_sec = 5 };
	size_t cap = 64 * ((size_t)l->cfg->value_size * 2 + 128), in_cap = 64 * 64;
	char *out = malloc(cap), *in = malloc(in_cap);
	int fd, err = 0;

	sa.sin_addr = l->cfg->addr;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (!out || !in || fd < 0) {
		err = -ENOMEM;
		goto out;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		fprintf(stderr, "loadgen: preload: connect %s:%d: %s\n", l->cfg->host, l->cfg->port,
			strerror(errno));
		goto out;
	}
	for (size_t k = 0; k < l->cfg->keys; k += 64) {
		size_t batch = l->cfg->keys - k < 64 ? l->cfg->keys - k : 64, len = 0, got = 0;

		for (size_t i = 0; i < batch; i++) {
			char key[48];

			snprintf(key, sizeof(key), "lg:%zu", k + i);
			len +=
			    mc_build_set(out + len, cap - len, key, l->value, l->cfg->value_size);
		}
		for (size_t off = 0; off < len;) {
			ssize_t n = send(fd, out + off, len - off, MSG_NOSIGNAL);

			if (n <= 0) {
				err = n < 0 ? -errno : -EPIPE;
				goto fail;
			}
			off += n;
		}
		/* batch replies of "STORED\r\n" */
		while (got < batch * 8) {
			ssize_t n = recv(fd, in + got, batch * 8 - got, 0);

			if (n <= 0) {
				err = n < 0 ? -errno : -EPIPE;
				goto fail;
			}
			got += n;
		}
		for (size_t i = 0; i < batch; i++) {
			if (memcmp(in + 8 * i, "STORED\r\n", 8)) {
				err = -EPROTO;
				goto fail;
			}
		}
	}
	goto out;
fail:
	fprintf(stderr, "loadgen: preload of %zu keys failed: %s\n", l->cfg->keys, strerror(-err));
out:
	if (fd >= 0)
		close(fd);
	free(out);
	free(in);
	return err;
}

static int loop_init(struct loop *l)
{
	const struct lg_config *cfg = l->cfg;
	size_t out_cap = cfg->proto == LG_MEMCACHED ? (size_t)cfg->value_size * 2 + 256 : 1024;
	int err;

	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	l->nconns = cfg->max_conns;
	l->conns = calloc(l->nconns, sizeof(*l->conns));
	l->free_slots = calloc(l->nconns, sizeof(int));
	l->idle = calloc(l->nconns, sizeof(int));
	l->queue = calloc(cfg->max_queue, sizeof(*l->queue));
	l->value = malloc(cfg->value_size * 2 + 2);
	if (l->epfd < 0 || !l->conns || !l->free_slots || !l->idle || !l->queue || !l->value)
		return -ENOMEM;
	memset(l->value, 'v', cfg->value_size * 2 + 2);
	for (int i = 0; i < l->nconns; i++) {
		struct conn *c = &l->conns[i];

		c->fd = -1;
		c->out_cap = out_cap;
		c->in_cap = 4096;
		c->out = malloc(c->out_cap);
		c->in = malloc(c->in_cap);
		if (!c->out || !c->in)
			return -ENOMEM;
		l->free_slots[l->nfree++] = l->nconns - 1 - i;
	}
	l->rng = cfg->seed * 0x2545F4914F6CDD1DULL + 1;
	if (cfg->proto == LG_MEMCACHED) {
		err = zipf_init(&l->zipf, cfg->keys, cfg->zipf_alpha);
		if (err)
			return err;
	} else {
		l->http_req_len = http_build_get(l->http_req, sizeof(l->http_req), cfg->path,
						 cfg->port, cfg->keepalive);
		if (l->http_req_len < 0)
			return -EINVAL;
	}
	return 0;
}

static void loop_free(struct loop *l)
{
	for (int i = 0; l->conns && i < l->nconns; i++) {
		if (l->conns[i].fd >= 0)
			close(l->conns[i].fd);
		free(l->conns[i].out);
		free(l->conns[i].in);
	}
	free(l->conns);
	free(l->free_slots);
	free(l->idle);
	free(l->queue);
	free(l->value);
	zipf_free(&l->zipf);
	lg_window_free(&l->win);
	if (l->epfd >= 0)
		close(l->epfd);
}

/* Persistent connections are all established before time 0, so they do not count as load. */
static int open_initial(struct loop *l)
{
	int64_t until = now_ns() + 5000000000LL;

	for (int i = 0; i < l->cfg->conns; i++) {
		if (!conn_open(l)) {
			fprintf(stderr, "loadgen: cannot open connection %d to %s:%d\n", i,
				l->cfg->host, l->cfg->port);
			return -ECONNREFUSED;
		}
	}
	while (l->nidle < l->cfg->conns) {
		struct epoll_event evs[64];
		int n;

		if (now_ns() > until || l->open < l->cfg->conns) {
			fprintf(stderr,
				"loadgen: only %d of %d connections to %s:%d "
				"established\n",
				l->nidle, l->cfg->conns, l->cfg->host, l->cfg->port);
			return -ECONNREFUSED;
		}
		n = epoll_wait(l->epfd, evs, 64, 100);
		for (int i = 0; i < n; i++)
			on_event(l, &l->conns[evs[i].data.u32], evs[i].events);
	}
	return 0;
}

/* Everything before time 0: the loop, the memcached preload, the persistent
 * connections. 0 or a negative errno, said on stderr. */
static int lg_setup(struct loop *l)
{
	const struct lg_config *cfg = l->cfg;
	int err;

	err = loop_init(l);
	if (err) {
		fprintf(stderr, "loadgen: setup failed: %s\n", strerror(-err));
		return err;
	}
	/* Sleeps end at the next send time, not up to the default 50 us of timer
	 * slack later: that lateness would be in every latency measured. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	if (cfg->proto == LG_MEMCACHED && cfg->preload) {
		err = preload(l);
		if (err)
			return err;
	}
	if (persistent(cfg))
		return open_initial(l);
	return 0;
}

/* The next Poisson arrival of the schedule: one more unit-rate exponential
 * gap in u, mapped through the schedule's inverse cumulative rate. False once
 * the schedule has no more arrivals. */
static bool next_arrival(struct loop *l, double *u, int64_t *next)
{
	double t;

	*u += -log1p(-rnd_unit(&l->rng));
	t = sched_inverse(&l->cfg->sched, *u);
	*next = l->start + (int64_t)(t * 1e9);
	return t >= 0;
}

/* How long to sleep: until the next feed line, send or the drain's end,
 * whichever is first; zero if one is already due. */
static struct timespec wake_in(int64_t now, int64_t feed_next, bool more, int64_t next,
			       int64_t drain_end)
{
	int64_t wake = feed_next;
	struct timespec ts;

	if (more && next < wake)
		wake = next;
	if (drain_end && drain_end < wake)
		wake = drain_end;
	wake -= now;
	if (wake < 0)
		wake = 0;
	ts.tv_sec = wake / 1000000000LL;
	ts.tv_nsec = wake % 1000000000LL;
	return ts;
}

/* Handle n ready connections; *last_done moves to now if one of them
 * completed a request (the run's duration ends at the last completion). */
static void on_events(struct loop *l, const struct epoll_event *evs, int n, int64_t *last_done)
{
	struct lg_result *res = l->res;

	for (int i = 0; i < n; i++) {
		long long ok = res->ok + res->errors;

		on_event(l, &l->conns[evs[i].data.u32], evs[i].events);
		if (res->ok + res->errors != ok)
			*last_done = now_ns();
	}
}

/* The result's tail once the loop ends: what is still outstanding or queued
 * is an error; the run lasted until the schedule's end or the last completion,
 * or until the stop if it was stopped. */
static void lg_finish(struct loop *l, int64_t end, int64_t last_done, volatile int *stop)
{
	struct lg_result *res = l->res;

	res->errors += l->inflight + l->qlen;
	res->unsent = l->qlen;
	res->abandoned = l->inflight;
	feed_line(l, now_ns());
	res->duration_s = (double)((last_done > end ? last_done : end) - l->start) / 1e9;
	if (*stop)
		res->duration_s = (double)(now_ns() - l->start) / 1e9;
}

int lg_run(const struct lg_config *cfg, struct lg_result *res, volatile int *stop)
{
	struct loop l = { .cfg = cfg, .res = res, .epfd = -1 };
	int64_t next = 0, feed_next, drain_end = 0, last_done = 0, end;
	double u = 0;
	bool more = true;
	int err;

	err = lg_setup(&l);
	if (err)
		goto out;
	l.start = now_ns();
	end = l.start + (int64_t)(sched_duration(&cfg->sched) * 1e9);
	feed_next = l.start + (int64_t)(cfg->feed_ms * 1e6);
	res->offered = sched_cum(&cfg->sched, sched_duration(&cfg->sched));

	more = next_arrival(&l, &u, &next);
	while (!*stop) {
		struct epoll_event evs[256];
		struct timespec ts;
		int64_t now = now_ns();
		int n;

		/* Dispatch everything that is due, even if we woke late: open loop. */
		while (more && next <= now) {
			dispatch(&l, next);
			more = next_arrival(&l, &u, &next);
		}
		if (now >= feed_next) {
			expire(&l, now);
			feed_line(&l, now);
			while (feed_next <= now)
				feed_next += (int64_t)(cfg->feed_ms * 1e6);
		}
		if (!more && !drain_end)
			drain_end = (now > end ? now : end) + (int64_t)(cfg->drain_s * 1e9);
		if (!more && ((!l.inflight && !l.qlen) || now >= drain_end))
			break;
		ts = wake_in(now, feed_next, more, next, drain_end);
		n = epoll_pwait2(l.epfd, evs, 256, &ts, NULL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			fprintf(stderr, "loadgen: epoll_pwait2: %s\n", strerror(errno));
			goto out;
		}
		on_events(&l, evs, n, &last_done);
	}
	lg_finish(&l, end, last_done, stop);
out:
	loop_free(&l);
	return err;
}
