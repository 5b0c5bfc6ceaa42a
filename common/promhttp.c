// SPDX-License-Identifier: MIT
/*
 * The /metrics endpoint. We bind the socket ourselves (so a taken port is a
 * clear "address in use" at start-up, and PORT 0 works) and hand it to
 * libmicrohttpd, which runs one polling thread. That thread is created with
 * every signal blocked: the daemons rely on SIGINT/SIGTERM/SIGHUP waking
 * their main thread's sleep.
 */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "promhttp.h"

struct promhttp {
	struct MHD_Daemon *d;
	int fd;
	int port;
	promhttp_render_fn fn;
	void *ctx;
	struct prom_buf buf;
};

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
	if (bind(fd, res->ai_addr, res->ai_addrlen) || listen(fd, 64))
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

struct promhttp *promhttp_start(const char *addr, promhttp_render_fn fn, void *ctx, char *msg,
				size_t msg_len)
{
	struct promhttp *h = calloc(1, sizeof(*h));
	sigset_t all, old;
	int fd;

	if (!h) {
		snprintf(msg, msg_len, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	fd = listen_on(addr, &h->port, msg, msg_len);
	if (fd < 0) {
		free(h);
		errno = -fd;
		return NULL;
	}
	h->fd = fd;
	h->fn = fn;
	h->ctx = ctx;
	prom_init(&h->buf);
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	h->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO, 0, NULL, NULL,
				handler, h, MHD_OPTION_LISTEN_SOCKET, fd,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)10,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned int)32, MHD_OPTION_END);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!h->d) {
		snprintf(msg, msg_len, "cannot start the HTTP server on %s", addr);
		close(fd);
		free(h);
		errno = EIO;
		return NULL;
	}
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
	MHD_stop_daemon(h->d);
	close(h->fd); /* a socket given with LISTEN_SOCKET stays ours */
	prom_free(&h->buf);
	free(h);
}
