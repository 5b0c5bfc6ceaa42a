// SPDX-License-Identifier: MIT
/*
 * The /metrics endpoint. We bind the socket ourselves (so a taken port is a
 * clear "address in use" at start-up, and PORT 0 works) and hand it to
 * libmicrohttpd, which runs one epoll thread. That thread is created with
 * every signal blocked: the daemons rely on SIGINT/SIGTERM/SIGHUP waking
 * their main thread's sleep.
 *
 * Slow clients. libmicrohttpd's connection timeout is an idle timeout: a
 * client that sends one header line every few seconds is never idle, and
 * once such clients hold every connection slot no scrape gets in
 * (slowloris). So, as node_exporter does with Go's per-connection read
 * deadlines, each request has an absolute deadline: a connection has
 * REQ_DEADLINE_S from its accept, or from the end of its previous request,
 * to complete the next one, active or not; a reaper thread shuts down the
 * socket of one that has not (libmicrohttpd then closes it as a client
 * hang-up). And the pool is large (CONN_MAX, one epoll thread, no thread
 * per connection) and cannot be held whole: when a connection arrives with
 * the pool nearly full, the oldest one is shut down to make room, so a new
 * scrape always gets a slot and an attacker only ever holds connections
 * younger than the deadline.
 */
#include <errno.h>
#include <stdbool.h>
#include <time.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "promhttp.h"

#define REQ_DEADLINE_S 5   /* accept (or the previous response) to the response */
#define IDLE_TIMEOUT_S 5   /* libmicrohttpd's own: no byte for this long */
#define CONN_MAX       512 /* open connections, at most half the fd limit */
#define CONN_SPARE     16  /* slots kept free by closing the oldest */
#define REAP_PERIOD_MS 200

/* One open connection, in the list ordered by the start of its request. */
struct conn {
	struct conn *prev, *next;
	int fd;
	bool listed; /* false once shut down: waiting for libmicrohttpd to close it */
	struct timespec start;
};

struct promhttp {
	struct MHD_Daemon *d;
	int fd;
	int port;
	promhttp_render_fn fn;
	void *ctx;
	struct prom_buf buf;
	/* the connections, oldest request first; the reaper */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct conn *head, *tail;
	unsigned int nlisted, conn_max;
	bool stop, reaper_started;
	pthread_t reaper;
};

static void unlink_conn(struct promhttp *h, struct conn *c)
{
	if (!c->listed)
		return;
	if (c->prev)
		c->prev->next = c->next;
	else
		h->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		h->tail = c->prev;
	c->prev = c->next = NULL;
	c->listed = false;
	h->nlisted--;
}

static void append_conn(struct promhttp *h, struct conn *c)
{
	clock_gettime(CLOCK_MONOTONIC, &c->start);
	c->prev = h->tail;
	c->next = NULL;
	if (h->tail)
		h->tail->next = c;
	else
		h->head = c;
	h->tail = c;
	c->listed = true;
	h->nlisted++;
}

/* Make libmicrohttpd see a hang-up on c (it closes c on its own thread). The
 * fd is still open: it is closed only after the CLOSED notification, which
 * takes the lock we hold. */
static void shut_conn(struct promhttp *h, struct conn *c)
{
	shutdown(c->fd, SHUT_RDWR);
	unlink_conn(h, c);
}

static void on_connection(void *cls, struct MHD_Connection *mc, void **socket_ctx,
			  enum MHD_ConnectionNotificationCode code)
{
	struct promhttp *h = cls;
	struct conn *c = *socket_ctx;

	pthread_mutex_lock(&h->lock);
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
		    MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);

		c = calloc(1, sizeof(*c));
		if (c && ci) {
			c->fd = ci->connect_fd;
			if (h->nlisted + CONN_SPARE >= h->conn_max && h->head)
				shut_conn(h, h->head); /* room for this one */
			append_conn(h, c);
		} else if (ci) {
			shutdown(ci->connect_fd, SHUT_RDWR); /* untracked: not kept */
		}
		*socket_ctx = c;
	} else if (code == MHD_CONNECTION_NOTIFY_CLOSED && c) {
		unlink_conn(h, c);
		free(c);
		*socket_ctx = NULL;
	}
	pthread_mutex_unlock(&h->lock);
}

/* A request answered: the connection's next request gets a full deadline. */
static void on_completed(void *cls, struct MHD_Connection *mc, void **req_ctx,
			 enum MHD_RequestTerminationCode code)
{
	struct promhttp *h = cls;
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn *c = ci ? ci->socket_context : NULL;

	if (!c || code != MHD_REQUEST_TERMINATED_COMPLETED_OK)
		return;
	pthread_mutex_lock(&h->lock);
	if (c->listed) {
		unlink_conn(h, c);
		append_conn(h, c);
	}
	pthread_mutex_unlock(&h->lock);
}

static double age_s(const struct timespec *t, const struct timespec *now)
{
	return (double)(now->tv_sec - t->tv_sec) + (double)(now->tv_nsec - t->tv_nsec) / 1e9;
}

/* Shut down every connection past its deadline, oldest first. */
static void *reaper(void *arg)
{
	struct promhttp *h = arg;
	struct timespec now, until;

	pthread_mutex_lock(&h->lock);
	while (!h->stop) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		while (h->head && age_s(&h->head->start, &now) >= REQ_DEADLINE_S)
			shut_conn(h, h->head);
		until = now;
		until.tv_nsec += REAP_PERIOD_MS * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&h->wake, &h->lock, &until);
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

/* CONN_MAX, or half the fd limit if that is lower: the rest of the process
 * needs fds too. */
static unsigned int conn_max(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur / 2 < CONN_MAX)
		return rl.rlim_cur / 2 > 2 * CONN_SPARE ? rl.rlim_cur / 2 : 2 * CONN_SPARE;
	return CONN_MAX;
}

static const char index_page[] = "<html><head><title>Metrics</title></head><body>"
				 "<a href=\"/metrics\">/metrics</a></body></html>\n";

static enum MHD_Result reply(struct MHD_Connection *c, unsigned int code, const char *type,
			     const char *body, size_t len)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
			       const char *method, const char *version, const char *upload,
			       size_t *upload_len, void **con_cls)
{
	struct promhttp *h = cls;
	char msg[256];
	int err;

	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD)) {
		static const char m[] = "only GET\n";

		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", m, sizeof(m) - 1);
	}
	if (!strcmp(url, "/"))
		return reply(c, MHD_HTTP_OK, "text/html", index_page, sizeof(index_page) - 1);
	if (strcmp(url, "/metrics")) {
		static const char m[] = "not found: try /metrics\n";

		return reply(c, MHD_HTTP_NOT_FOUND, "text/plain", m, sizeof(m) - 1);
	}
	prom_reset(&h->buf);
	err = h->fn(&h->buf, h->ctx);
	if (!err)
		err = h->buf.err;
	if (err) {
		int n = snprintf(msg, sizeof(msg), "cannot render metrics: %s\n",
				 h->buf.errmsg[0] ? h->buf.errmsg : strerror(-err));

		return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain", msg, n);
	}
	return reply(c, MHD_HTTP_OK, PROM_CONTENT_TYPE, h->buf.p ? h->buf.p : "", h->buf.len);
}

static int split_addr(const char *addr, char *host, size_t hlen, char *port, size_t plen)
{
	const char *colon;
	size_t n;

	if (addr[0] == '[') {
		const char *end = strchr(addr, ']');

		if (!end || end[1] != ':')
			return -EINVAL;
		n = end - addr - 1;
		colon = end + 1;
		addr++;
	} else {
		colon = strrchr(addr, ':');
		if (!colon)
			return -EINVAL;
		n = colon - addr;
	}
	if (n >= hlen || strlen(colon + 1) >= plen || !colon[1])
		return -EINVAL;
	memcpy(host, addr, n);
	host[n] = 0;
	strcpy(port, colon + 1);
	for (const char *p = port; *p; p++)
		if (*p < '0' || *p > '9')
			return -EINVAL;
	return 0;
}

static int listen_on(const char *addr, int *port_out, char *msg, size_t msg_len)
{
	struct addrinfo hints = { .ai_flags = AI_PASSIVE | AI_NUMERICSERV,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[256], port[16];
	int fd = -1, one = 1, e;

	if (split_addr(addr, host, sizeof(host), port, sizeof(port)) || atoi(port) > 65535) {
		snprintf(msg, msg_len, "bad listen address '%s' (HOST:PORT, :PORT or [V6]:PORT)",
			 addr);
		return -EINVAL;
	}
	e = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
	if (e) {
		snprintf(msg, msg_len, "listen address '%s': %s", addr, gai_strerror(e));
		return -EINVAL;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto syserr;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (res->ai_family == AF_INET6 && !host[0]) {
		int zero = 0; /* ":PORT" means IPv4 too */

		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	}
	if (bind(fd, res->ai_addr, res->ai_addrlen) || listen(fd, SOMAXCONN))
		goto syserr;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl))
		goto syserr;
	*port_out = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						   : ((struct sockaddr_in *)&ss)->sin_port);
	freeaddrinfo(res);
	return fd;
syserr:
	e = -errno;
	snprintf(msg, msg_len, "cannot listen on %s: %s", addr, strerror(-e));
	if (fd >= 0)
		close(fd);
	freeaddrinfo(res);
	return e;
}

static void free_h(struct promhttp *h)
{
	pthread_mutex_destroy(&h->lock);
	pthread_cond_destroy(&h->wake);
	prom_free(&h->buf);
	free(h);
}

struct promhttp *promhttp_start(const char *addr, promhttp_render_fn fn, void *ctx, char *msg,
				size_t msg_len)
{
	struct promhttp *h = calloc(1, sizeof(*h));
	pthread_condattr_t ca;
	sigset_t all, old;
	int fd, err;

	if (!h) {
		snprintf(msg, msg_len, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&h->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&h->wake, &ca);
	pthread_condattr_destroy(&ca);
	prom_init(&h->buf);
	h->conn_max = conn_max();
	fd = listen_on(addr, &h->port, msg, msg_len);
	if (fd < 0) {
		free_h(h);
		errno = -fd;
		return NULL;
	}
	h->fd = fd;
	h->fn = fn;
	h->ctx = ctx;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	h->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0, NULL, NULL,
				handler, h, MHD_OPTION_LISTEN_SOCKET, fd,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)IDLE_TIMEOUT_S,
				MHD_OPTION_CONNECTION_LIMIT, h->conn_max,
				MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_END);
	err = h->d ? pthread_create(&h->reaper, NULL, reaper, h) : 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!h->d || err) {
		snprintf(msg, msg_len, "cannot start the HTTP server on %s%s%s", addr,
			 err ? ": " : "", err ? strerror(err) : "");
		if (h->d)
			MHD_stop_daemon(h->d);
		close(fd);
		free_h(h);
		errno = err ? err : EIO;
		return NULL;
	}
	h->reaper_started = true;
	return h;
}

int promhttp_port(const struct promhttp *h)
{
	return h ? h->port : -1;
}

void promhttp_stop(struct promhttp *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&h->lock);
	h->stop = true;
	pthread_cond_signal(&h->wake);
	pthread_mutex_unlock(&h->lock);
	if (h->reaper_started)
		pthread_join(h->reaper, NULL);
	MHD_stop_daemon(h->d); /* every connection's CLOSED frees its entry */
	close(h->fd);	       /* a socket given with LISTEN_SOCKET stays ours */
	free_h(h);
}
