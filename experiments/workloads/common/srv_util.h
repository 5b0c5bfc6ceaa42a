/* SPDX-License-Identifier: MIT */
/*
 * Small helpers shared by the project's servers: the experiment workloads
 * (experiments/workloads/<name>/) and the test servers (tests/fixtures/
 * cpr_server.c, loop_server.c). srv_util.c is linked into each of them.
 */
#ifndef SRV_UTIL_H
#define SRV_UTIL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

/* Write all of p to fd, retrying short writes and EINTR. 0 or -errno. */
int srv_write_all(int fd, const char *p, size_t len);

/* Replace path's content with text atomically (temporary file, then rename),
 * so a reader never sees a half-written number. 0 or -errno. */
int srv_write_file_atomic(const char *path, const char *text);

/* Spin until this thread has used us microseconds of CPU: CPU time, not wall
 * time, so a thread that is preempted does not stop early and the work per
 * request stays the same however many cores the server gets. */
void srv_burn_cpu_us(double us);

/* CLOCK_MONOTONIC in nanoseconds. */
long long srv_now_ns(void);

/* What srv_wait() waits for besides SIGTERM and SIGINT. Zero fields are off. */
struct srv_wait {
	long long deadline_ns; /* srv_now_ns() time: return 0 then */
	long long wake_ns;     /* srv_now_ns() time: return SRV_WAIT_WAKE then */
	/* The count of requests served; while it changes, write_count(ctx) publishes it
	 * at most every SRV_COUNT_PERIOD_NS. */
	const atomic_ullong *served;
	void (*write_count)(void *ctx);
	/* On SIGCHLD: reap children; true stops the wait (srv_wait returns SIGCHLD).
	 * NULL: SIGCHLD is not waited for. */
	bool (*child_exited)(void *ctx);
	void *ctx;
};

#define SRV_WAIT_WAKE	    (-1)
#define SRV_COUNT_PERIOD_NS 100000000LL

/*
 * The main thread of a server whose workers do the serving: wait, waking every 20 ms,
 * until a stop signal, a dead child or a time in w, publishing the served count as it
 * changes. The signals must be blocked in every thread (block them before starting
 * any), so only this wait takes them. Returns SIGTERM or SIGINT (the signal that
 * stopped it), SIGCHLD, 0 at the deadline, or SRV_WAIT_WAKE at wake_ns.
 */
int srv_wait(const struct srv_wait *w);

#endif
