/* SPDX-License-Identifier: MIT */
/*
 * Small helpers shared by the project's servers: the experiment workloads
 * (experiments/workloads/<name>/) and the test server (tests/fixtures/
 * cpr_server.c). Header-only, because each of them is built as its own
 * program from its own folder.
 */
#ifndef SRV_UTIL_H
#define SRV_UTIL_H

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* Write all of p to fd, retrying short writes and EINTR. 0 or -errno. */
static inline int srv_write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= n;
	}
	return 0;
}

/* Replace path's content with text atomically (temporary file, then rename),
 * so a reader never sees a half-written number. 0 or -errno. */
static inline int srv_write_file_atomic(const char *path, const char *text)
{
	char tmp[PATH_MAX];
	FILE *f;
	int err = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	if (fputs(text, f) < 0)
		err = -EIO;
	if (fclose(f) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

/* Spin until this thread has used us microseconds of CPU: CPU time, not wall
 * time, so a thread that is preempted does not stop early and the work per
 * request stays the same however many cores the server gets. */
static inline void srv_burn_cpu_us(double us)
{
	struct timespec t0, t;
	volatile unsigned long x = 0;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	do {
		for (int i = 0; i < 1000; i++)
			x += i;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1e6 + (t.tv_nsec - t0.tv_nsec) / 1e3 < us);
}

#endif
