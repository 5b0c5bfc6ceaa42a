// SPDX-License-Identifier: MIT
/*
 * The hotel workload's rate cache client: memcached's text protocol on one persistent
 * connection per worker thread, as the original's rate service keeps a memcached client.
 * A search costs one round trip (a multi-key get of the nearest hotels, like the original's
 * GetMulti), plus one pipelined batch of sets for the keys that missed.
 *
 * Blocking sockets with SO_RCVTIMEO/SO_SNDTIMEO bound every call, so a stuck memcached delays
 * a request by at most the timeout before the caller falls back to the database. After a
 * failed connect the client waits a second before trying again, so a missing memcached costs
 * a connect() per worker per second, not one per request.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mc.h"

#define MC_RETRY_NS 1000000000LL

static long long mc_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void mc_init(struct mc_conn *m, int port, int timeout_ms)
{
	m->fd = -1;
	m->port = port;
	m->timeout_ms = timeout_ms;
	m->retry_ns = 0;
}

void mc_close(struct mc_conn *m)
{
	if (m->fd >= 0)
		close(m->fd);
	m->fd = -1;
}

static int mc_connect(struct mc_conn *m)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(m->port) };
	struct timeval tv = { m->timeout_ms / 1000, (m->timeout_ms % 1000) * 1000 };
	int fd, one = 1, err;

	if (m->fd >= 0)
		return 0;
	if (mc_now_ns() < m->retry_ns)
		return -EAGAIN;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* SO_SNDTIMEO also bounds connect(). */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		close(fd);
		m->retry_ns = mc_now_ns() + MC_RETRY_NS;
		return err;
	}
	m->fd = fd;
	return 0;
}

static int mc_send_all(struct mc_conn *m, const char *p, size_t len)
{
	while (len) {
		ssize_t n = send(m->fd, p, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		}
		p += n;
		len -= n;
	}
	return 0;
}

/* Read more into m->buf[*have..). 0, or -errno (-ECONNRESET on EOF). */
static int mc_recv_more(struct mc_conn *m, size_t *have)
{
	for (;;) {
		ssize_t n;

		if (*have >= sizeof(m->buf))
			return -EPROTO;
		n = recv(m->fd, m->buf + *have, sizeof(m->buf) - *have, 0);
		if (n > 0) {
			*have += n;
			return 0;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno != EINTR)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
	}
}

int mc_parse_get(const char *buf, size_t len, const int *ids, int n, struct hotel_rate *out,
		 bool *hit)
{
	size_t p = 0;

	for (;;) {
		const char *eol = memmem(buf + p, len - p, "\r\n", 2);
		char key[64];
		unsigned int flags;
		size_t bytes, data;
		int id, used = 0;

		if (!eol)
			return 0;
		if (eol - (buf + p) == 3 && !memcmp(buf + p, "END", 3))
			return (int)(eol + 2 - buf);
		if (eol - (buf + p) >= 100 || len - p < 6 || memcmp(buf + p, "VALUE ", 6))
			return -EPROTO;
		{
			char line[100];

			memcpy(line, buf + p, eol - (buf + p));
			line[eol - (buf + p)] = '\0';
			if (sscanf(line, "VALUE %63s %u %zu%n", key, &flags, &bytes, &used) != 3 ||
			    (line[used] != '\0' && line[used] != ' '))
				return -EPROTO;
		}
		data = eol + 2 - buf;
		if (len < data + bytes + 2)
			return 0;
		if (memcmp(buf + data + bytes, "\r\n", 2))
			return -EPROTO;
		if (sscanf(key, "rate:%d", &id) == 1) {
			for (int i = 0; i < n; i++) {
				if (ids[i] == id && !hit[i] &&
				    !hotel_rate_decode(id, buf + data, bytes, &out[i]))
					hit[i] = true;
			}
		}
		p = data + bytes + 2;
	}
}

int mc_get_rates(struct mc_conn *m, const int *ids, int n, struct hotel_rate *out, bool *hit)
{
	char req[32 + HOTEL_K * 16];
	size_t off, have = 0;
	int err;

	for (int i = 0; i < n; i++)
		hit[i] = false;
	if (n > HOTEL_K)
		return -EINVAL;
	err = mc_connect(m);
	if (err)
		return err;
	off = snprintf(req, sizeof(req), "get");
	for (int i = 0; i < n; i++)
		off += snprintf(req + off, sizeof(req) - off, " rate:%d", ids[i]);
	off += snprintf(req + off, sizeof(req) - off, "\r\n");
	err = mc_send_all(m, req, off);
	while (!err) {
		int r = mc_parse_get(m->buf, have, ids, n, out, hit);

		if (r > 0) {
			/* One request in flight: anything after END is a protocol error. */
			if ((size_t)r != have)
				err = -EPROTO;
			break;
		}
		err = r < 0 ? r : mc_recv_more(m, &have);
	}
	if (err) {
		for (int i = 0; i < n; i++)
			hit[i] = false;
		mc_close(m);
	}
	return err;
}

int mc_set_rates(struct mc_conn *m, const struct hotel_rate *rates, const bool *store, int n)
{
	char req[HOTEL_K * (HOTEL_RATE_VALMAX + 64)];
	size_t off = 0, have = 0, p = 0;
	int err, want = 0;

	for (int i = 0; i < n && i < HOTEL_K; i++) {
		char val[HOTEL_RATE_VALMAX + 1];
		int len;

		if (!store[i])
			continue;
		len = hotel_rate_encode(&rates[i], val, sizeof(val));
		if (len < 0)
			return len;
		off += snprintf(req + off, sizeof(req) - off, "set rate:%d 0 0 %d\r\n%s\r\n",
				rates[i].id, len, val);
		want++;
	}
	if (!want)
		return 0;
	err = mc_connect(m);
	if (err)
		return err;
	err = mc_send_all(m, req, off);
	/* One reply line per set. */
	while (!err && want) {
		const char *eol = memmem(m->buf + p, have - p, "\r\n", 2);

		if (!eol) {
			err = mc_recv_more(m, &have);
			continue;
		}
		if (!(eol - (m->buf + p) == 6 && !memcmp(m->buf + p, "STORED", 6)) &&
		    !(eol - (m->buf + p) == 10 && !memcmp(m->buf + p, "NOT_STORED", 10)))
			err = -EPROTO;
		p = eol + 2 - m->buf;
		want--;
	}
	if (!err && p != have)
		err = -EPROTO;
	if (err)
		mc_close(m);
	return err;
}
