// SPDX-License-Identifier: MIT
/*
 * The client metric source: the last complete line of a feed file written by
 * the load generator ("t_ms p99_us rps", one line every 100 ms). Freshness is
 * judged by the file's modification time, since t_ms is on the writer's
 * clock; a line with rps 0 (or p99 0) means the client sent nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "source.h"

struct client {
	struct src s;
	char path[256];
	unsigned int stale_ms;
};

/*
 * The documented bounds of a feed line (configs/example.ini): t_ms, p99_us
 * and rps are plain decimals (digits, optionally '.' and more digits: no
 * sign, exponent, hex, inf or nan), separated by one space, nothing else on
 * the line. p99_us and rps at most 1e9 (1000 s; a billion requests per
 * second): anything above is a broken writer, not a latency to act on.
 */
#define FEED_T_MAX	1e15
#define FEED_P99_US_MAX 1e9
#define FEED_RPS_MAX	1e9

/* One field at *p, up to the next space or the end; *p moves past it. NULL,
 * or why the field is refused. */
static const char *parse_field(const char **p, const char *end, double max, double *out)
{
	const char *s = *p, *q = s;
	char tmp[32];
	size_t n;

	while (q < end && *q >= '0' && *q <= '9')
		q++;
	if (q == s)
		return "not a decimal";
	if (q < end && *q == '.') {
		const char *f = ++q;

		while (q < end && *q >= '0' && *q <= '9')
			q++;
		if (q == f)
			return "not a decimal";
	}
	if (q < end && *q != ' ')
		return "trailing characters";
	n = q - s;
	if (n >= sizeof(tmp))
		return "too many digits";
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	*out = strtod(tmp, NULL); /* only digits and one '.': finite */
	if (!(*out <= max))
		return "above the bound";
	*p = q;
	return NULL;
}

/* "t_ms p99_us [rps]" in line[0..len): the number of fields (2 or 3, v[2] NAN
 * if absent), or -1 with *why set. */
static int parse_line(const char *line, size_t len, double v[3], const char **why)
{
	static const double max[3] = { FEED_T_MAX, FEED_P99_US_MAX, FEED_RPS_MAX };
	const char *p = line, *end = line + len;
	int k = 0;

	v[2] = NAN;
	if (memchr(line, '\0', len)) {
		*why = "NUL byte";
		return -1;
	}
	for (;;) {
		*why = parse_field(&p, end, max[k], &v[k]);
		if (*why)
			return -1;
		k++;
		if (p == end)
			break;
		if (k == 3) {
			*why = "more than 3 fields";
			return -1;
		}
		p++; /* the one space */
	}
	if (k < 2) {
		*why = "fewer than 2 fields";
		return -1;
	}
	return k;
}

static int client_read(struct src *s, uint64_t now_ms, struct src_sample *out)
{
	struct client *c = s->priv;
	char buf[4096], *end, *line;
	const char *reason;
	struct timespec now;
	struct stat st;
	double v[3], p99, rps, age_ms;
	size_t len;
	ssize_t n;
	off_t off;
	int fd, k;

	/* non-blocking: a FIFO put in place of the feed must not stall the loop;
	 * no symlink: one put in place of the feed must not make us read (and
	 * log) whatever it points to */
	fd = open(c->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
	if (fd < 0) {
		snprintf(out->why, sizeof(out->why), "feed %.40s: %s", c->path,
			 errno == ELOOP ? "a symlink, refused" : strerror(errno));
		return -errno;
	}
	if (fstat(fd, &st)) {
		int err = -errno;

		close(fd);
		return err;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		snprintf(out->why, sizeof(out->why), "feed %.40s: not a regular file", c->path);
		return -EINVAL;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	age_ms = (double)(now.tv_sec - st.st_mtim.tv_sec) * 1e3 +
		 (double)(now.tv_nsec - st.st_mtim.tv_nsec) / 1e6;
	off = st.st_size > (off_t)sizeof(buf) - 1 ? st.st_size - (off_t)sizeof(buf) + 1 : 0;
	n = pread(fd, buf, sizeof(buf) - 1, off);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	/* the last complete line: the writer may be mid-line. memrchr, not
	 * strrchr: a NUL byte must not hide the lines after it */
	end = memrchr(buf, '\n', n);
	if (!end) {
		snprintf(out->why, sizeof(out->why), "feed %.40s: no complete line yet", c->path);
		return 0;
	}
	*end = '\0';
	line = memrchr(buf, '\n', end - buf);
	line = line ? line + 1 : (off ? NULL : buf);
	if (!line) {
		snprintf(out->why, sizeof(out->why), "feed %.40s: last line too long", c->path);
		return 0;
	}
	len = end - line;
	if (age_ms > c->stale_ms) {
		snprintf(out->why, sizeof(out->why), "feed %.40s not written for %.0f ms", c->path,
			 age_ms);
		return 0;
	}
	k = parse_line(line, len, v, &reason);
	if (k < 0) {
		snprintf(out->why, sizeof(out->why), "feed %.24s: line refused (%s): '%.24s'",
			 c->path, reason, line);
		return 0;
	}
	p99 = v[1];
	rps = v[2];
	out->rps = rps;
	if (p99 == 0 || rps == 0) {
		out->state = POL_LAT_IDLE;
		snprintf(out->why, sizeof(out->why), "feed %.40s: no requests", c->path);
		return 0;
	}
	out->state = POL_LAT_FRESH;
	out->p99_ns = p99 * 1e3; /* the feed's us */
	return 0;
}

static void client_close(struct src *s)
{
	free(s->priv);
}

static const struct src_ops client_ops = {
	.name = "client",
	.kind = SRC_CLIENT,
	.read = client_read,
	.close = client_close,
};

struct src *src_client_open(const char *path, unsigned int stale_ms)
{
	struct client *c;
	struct stat st;

	if (lstat(path, &st))
		return NULL;
	if (S_ISLNK(st.st_mode)) {
		errno = ELOOP; /* as the O_NOFOLLOW open of each read would say */
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	snprintf(c->path, sizeof(c->path), "%s", path);
	c->stale_ms = stale_ms;
	c->s.ops = &client_ops;
	c->s.priv = c;
	return &c->s;
}
