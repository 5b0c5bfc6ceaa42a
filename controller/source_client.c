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

static int client_read(struct src *s, uint64_t now_ms, struct src_sample *out)
{
	struct client *c = s->priv;
	char buf[4096], *end, *line;
	struct timespec now;
	struct stat st;
	double t, p99, rps = NAN, age_ms;
	ssize_t n;
	off_t off;
	int fd, k;

	/* non-blocking: a FIFO put in place of the feed must not stall the loop */
	fd = open(c->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		snprintf(out->why, sizeof(out->why), "feed %.40s: %s", c->path, strerror(errno));
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
	/* the last complete line: the writer may be mid-line */
	end = strrchr(buf, '\n');
	if (!end) {
		snprintf(out->why, sizeof(out->why), "feed %.40s: no complete line yet", c->path);
		return 0;
	}
	*end = '\0';
	line = strrchr(buf, '\n');
	line = line ? line + 1 : (off ? NULL : buf);
	if (!line) {
		snprintf(out->why, sizeof(out->why), "feed %.40s: last line too long", c->path);
		return 0;
	}
	if (age_ms > c->stale_ms) {
		snprintf(out->why, sizeof(out->why), "feed %.40s not written for %.0f ms", c->path,
			 age_ms);
		return 0;
	}
	k = sscanf(line, "%lf %lf %lf", &t, &p99, &rps);
	if (k < 2 || !isfinite(p99) || p99 < 0) {
		snprintf(out->why, sizeof(out->why), "feed %.40s: cannot parse '%.32s'", c->path,
			 line);
		return 0;
	}
	out->rps = k == 3 ? rps : NAN;
	if (p99 == 0 || (k == 3 && rps == 0)) {
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

	if (stat(path, &st))
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	snprintf(c->path, sizeof(c->path), "%s", path);
	c->stale_ms = stale_ms;
	c->s.ops = &client_ops;
	c->s.priv = c;
	return &c->s;
}
