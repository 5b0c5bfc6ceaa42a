/* SPDX-License-Identifier: MIT */
/*
 * Metric sources: where a workload's p99 comes from, behind one interface.
 *
 *   ebee    the in-process tracing library (server-side latency); its window
 *           is bounded by age (set from the interval) so p99 reflects the
 *           requests of the last moments, not the whole run;
 *   client  the last line of a feed file written by the load generator,
 *           "t_ms p99_us rps" every 100 ms, the way the original PARTIES read
 *           its clients (us there, ns here).
 *
 * Switching a workload between the two is one config line (source = ebee or
 * source = client:PATH): the Figure 11 comparison.
 *
 * A read never invents a latency: no fresh data is reported as
 * POL_LAT_STALE (or POL_LAT_IDLE when the source works but saw no request),
 * with the reason in `why`.
 */
#ifndef PARTIES_SOURCE_H
#define PARTIES_SOURCE_H

#include <stdint.h>
#include <sys/types.h>

#include "ebee.h"
#include "policy.h"

enum src_kind { SRC_EBEE = 0, SRC_CLIENT, SRC_OTHER };

/* Latencies in ns, whatever unit the source reads. */
struct src_sample {
	enum pol_lat_state state;
	double p99_ns; /* valid when FRESH */
	double rps;    /* requests per second if known, else NAN */
	/* both server-side p99s when the source knows them, else NAN (p99_ns is
	 * the one that drives) */
	double p99_service_ns, p99_sojourn_ns;
	char why[96]; /* when not FRESH: why */
};

struct src;

struct src_ops {
	const char *name;
	enum src_kind kind;
	/* now_ms: CLOCK_MONOTONIC in ms. 0, or a negative errno (then out is
	 * STALE with why set). */
	int (*read)(struct src *s, uint64_t now_ms, struct src_sample *out);
	void (*close)(struct src *s);
};

struct src {
	const struct src_ops *ops;
	void *priv;
};

int src_read(struct src *s, uint64_t now_ms, struct src_sample *out);
/* A workload's samples by what their sources are: *ebee the sample of its
 * ebee source, *client that of its client feed, NULL where it has none of
 * that kind (src and aux may be NULL; the kind is the sources' own, so the
 * loop need not know the kinds). */
void src_by_kind(const struct src *src, const struct src_sample *s, const struct src *aux,
		 const struct src_sample *a, const struct src_sample **ebee,
		 const struct src_sample **client);
/* NULL is fine. */
void src_close(struct src *s);

/* Client feed. stale_ms: a feed not written for this long is STALE. NULL
 * with errno (ENOENT if the file does not exist). */
struct src *src_client_open(const char *path, unsigned int stale_ms);

/* ebee: one library handle for the daemon, one source per workload. */
struct src_ebee;
/* window_ms bounds the window by age. NULL with errno; msg gets the reason. */
struct src_ebee *src_ebee_lib_open(unsigned int window_ms, char *msg, size_t msg_len);
void src_ebee_lib_close(struct src_ebee *lib);
/* Start tracing pid (and its descendants). NULL with errno; msg says why. */
/* lat: which latency feeds the policy. Sojourn needs ebee's socket path; on
 * the syscall path an explicit choice (lat_explicit) is an error, the default
 * falls back to service with a warning on stderr. */
struct src *src_ebee_open(struct src_ebee *lib, pid_t pid, enum ebee_mode mode,
			  enum ebee_latency lat, bool lat_explicit, char *msg, size_t msg_len);
/* An ebee source acts on figures ebee marks untrusted (ebee_stats.untrusted:
 * requests its framing cannot count exactly) only if told so; otherwise such
 * an interval is STALE with the reason, logged once. Any other source: a
 * no-op. */
void src_ebee_trust_unframed(struct src *s, bool trust);
/*
 * An in-place workload: trace every process of the cgroup directory dir and
 * of its descendants (cgfs_procs(), the set `ebee trace --cgroup` traces) now,
 * and on every read the ones that joined since (a re-read once per interval;
 * children of traced processes are followed by ebee itself). The p99 fed to the policy is the p99
 * of all their requests together (ebee_get_latency_percentile_joint(): exact over the union of the
 * per-process windows); rps is the sum.
 */
struct src *src_ebee_open_cgroup(struct src_ebee *lib, const char *dir, enum ebee_mode mode,
				 enum ebee_latency lat, bool lat_explicit, char *msg,
				 size_t msg_len);

/*
 * The daemon's sources, wired as the config says: a workload's `source`
 * drives the policy, the other kind it has (ebee when [controller] ebee =
 * true, a client `feed`) is logged only.
 */
struct cfg;
/* ebee's library when some workload needs it, its window bounded by the
 * config's ebee_window_ms (default two intervals); *eb NULL when none does.
 * 0, or a negative errno with msg set. */
int src_open_lib(const struct cfg *c, struct src_ebee **eb, char *msg, size_t msg_len);
/*
 * Workload i's sources: the one that drives into *src, the other into *aux
 * (each stays NULL when there is none). ebee only when eb is open and pid > 0
 * (a dry run's unstarted command has no process); cgdir: an in-place
 * workload's cgroup directory, or "". 0, or a negative errno with msg set
 * ("workload NAME: ..."); a source opened before the failure is in *src or
 * *aux, still the caller's.
 */
int src_open_workload(const struct cfg *c, int i, struct src_ebee *eb, pid_t pid, const char *cgdir,
		      struct src **src, struct src **aux, char *msg, size_t msg_len);

#endif /* PARTIES_SOURCE_H */
