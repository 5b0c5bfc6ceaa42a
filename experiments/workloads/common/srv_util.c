// SPDX-License-Identifier: MIT
/* Helpers shared by the project's servers (srv_util.h says which). */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "srv_util.h"

#define SRV_WAIT_TICK_NS 20000000L

int srv_write_all(int fd, const char *p, size_t len)
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

int srv_write_file_atomic(const char *path, const char *text)
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

void srv_burn_cpu_us(double us)
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

long long srv_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int srv_wait(const struct srv_wait *w)
{
	unsigned long long last = ~0ULL;
	long long last_write = 0;
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	if (w->child_exited)
		sigaddset(&set, SIGCHLD);
	for (;;) {
		struct timespec ts = { 0, SRV_WAIT_TICK_NS };
		unsigned long long cur;
		long long now;
		int sig = sigtimedwait(&set, NULL, &ts);

		if (sig == SIGTERM || sig == SIGINT)
			return sig;
		if (sig == SIGCHLD && w->child_exited(w->ctx))
			return SIGCHLD;
		now = srv_now_ns();
		if (w->wake_ns && now >= w->wake_ns)
			return SRV_WAIT_WAKE;
		if (w->deadline_ns && now >= w->deadline_ns)
			return 0;
		if (!w->served || !w->write_count)
			continue;
		cur = atomic_load(w->served);
		if (cur != last && now - last_write >= SRV_COUNT_PERIOD_NS) {
			w->write_count(w->ctx);
			last = cur;
			last_write = now;
		}
	}
}
