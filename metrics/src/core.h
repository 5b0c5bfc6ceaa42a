/* SPDX-License-Identifier: MIT */
/*
 * libebee's core, private to metrics/src: struct ebee, struct wl and the
 * calls between the rooms of the core. Each room is one file:
 *
 *   names.c     the enums' names (ebee_*_str, ebee_*_parse)
 *   workload.c  the workload table and the pattern state machine
 *   ksync.c     keeping the kernel's flags, probes and framing scope in step
 *   scan.c      the gRPC and UDP scanners
 *   threads.c   the consumer and housekeeping threads, the record handler
 *   open.c      ebee_open(), ebee_close()
 *   log.c       the log every room writes through
 *   trace.c     ebee_start_tracing(), ebee_stop_tracing()
 *   query.c     the queries
 *   trust.c     the trust verdict: ebee_get_stats()
 *
 * Two threads. The consumer waits on the ring buffers (one per CPU) for at
 * most drain_ms (the BPF side skips wakeups until a ring is half full) and
 * drains them into the per-workload windows. The housekeeper, every 100 ms,
 * notices exited workloads, makes and revisits the automatic mode choice, and
 * keeps the attached probe set equal to what the workloads need.
 *
 * Two locks, because attaching probes takes up to seconds (each syscall
 * tracepoint is a perf event) and /proc walks take milliseconds, and no query
 * may wait for either: `lock` guards the workload list, the windows and the
 * mode state and is only ever held for O(log n) work; `ctl` serializes the
 * slow control work (start/stop, housekeeping, kernel maps and probes). A
 * thread holding both took ctl first. Mode state is written with both held,
 * so holding either one is enough to read it.
 *
 * Each workload keeps two windows per pattern while both patterns are
 * observed (auto mode before and during a decision): conn and io records,
 * each as service and as sojourn latencies. The queries read the windows of
 * the chosen pattern.
 */
#ifndef EBEE_CORE_H
#define EBEE_CORE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "ebee.h"
#include "cgv2.h"
#include "dgram.h"
#include "grpc.h"
#include "kcount.h"
#include "loader.h"
#include "warn.h"
#include "mode.h"
#include "opts.h"
#include "procfs.h"
#include "window.h"

/* The record patterns a workload's windows hold. */
enum { K_CONN, K_IO, K_GRPC, K_DGRAM, K_NKINDS };
#define NLAT 2 /* enum ebee_latency */
/* The kernel counts requests by pattern in the same order (ebee_common.h). */
_Static_assert(K_CONN == EBEE_KC_CONN && K_IO == EBEE_KC_IO && K_GRPC == EBEE_KC_GRPC &&
		   K_DGRAM == EBEE_KC_DGRAM && K_NKINDS == EBEE_KC_MAX,
	       "K_* and EBEE_KC_* differ");

/* OPTS_GET, with a zero field also taking the default */
#define OPT(o, field, def) (OPTS_HAS(o, field) && (o)->field ? (o)->field : (def))

struct wl {
	pid_t pid;
	enum ebee_mode req_mode; /* asked for */
	enum ebee_mode mode;	 /* in force; AUTO while undecided */
	uint32_t kflags;	 /* EBEE_F_* in the kernel now */
	bool kflags_resync;	 /* re-copy the flags into process entries */
	bool no_children;
	bool exited;
	bool grpc;		     /* gRPC: some process of it maps a usable libgrpc */
	struct ebee_dgram_counts dg; /* dgram: the kernel's counters, every sweep */
	bool dg_unanswered;	     /* dgram: received, none answered (EBEE_WARN_UDP_UNANSWERED) */
	struct ebee_window *win[K_NKINDS][NLAT];
	uint64_t total[K_NKINDS]; /* records of each kind since start */
	/* requests and rps: the kernel's counts (kcount.h), read by the
	 * housekeeper and by the queries. */
	struct ebee_kc kc;
	/* Records of a kind whose request started before this time stay out of
	 * its window: set when a switch makes the kind the mode. Not out of its
	 * count: the switch snaps the kernel's count (kind_snap), which holds
	 * every request completed by then, whether its record was consumed or
	 * still queued; taking a queued one out again when it arrived counted it
	 * out twice (test_pattern_change_revisited, 109 short on the syscall
	 * path). Requests completed after the snap count, in flight or not. */
	uint64_t since_ns[K_NKINDS];
	uint64_t req_base, kind_snap;
	struct ebee_evidence ev;
	uint64_t epoch_ns;	   /* start of the evidence epoch */
	uint64_t recheck_until_ns; /* conn mode: io probes back until then */
	uint64_t next_recheck_ns;
	uint64_t switches;
	uint64_t adopted; /* connections open when tracing began, adopted */
	uint64_t dropped_final;
	uint32_t nprocs_final;
	struct wl *next;
};

struct ebee {
	struct ebee_opts opts;
	struct ebee_mode_params mp;
	struct ebee_loader *loader;
	enum ebee_path path;		/* resolved: SOCKET or SYSCALL */
	struct ebee_sock_attach attach; /* socket path: per hook group */
	pthread_mutex_t lock;		/* list, windows, mode state: short holds only */
	pthread_mutex_t ctl;		/* slow control work; taken before lock */
	pthread_t thread, house;
	bool thread_started, house_started;
	volatile bool stop;
	unsigned int probes_now; /* ebee_loader_probes(), copied under lock */
	struct wl *wls;
	unsigned int nwls;
	uint64_t records;
	int epfd;
	/* gRPC: the uprobe object; NULL (with the reason) if it
	 * could not be loaded. Used under ctl. */
	struct ebee_grpc *grpc;
	char grpc_err[256];
	uint64_t last_grpc_scan_ns;
	bool grpc_probes_now; /* ebee_grpc_probes(), copied under lock */
	/* dgram: the UDP object; NULL (with the reason) if it could not be
	 * loaded. Used under ctl. */
	struct ebee_dgram *dgram;
	char dgram_err[256];
	uint64_t last_dgram_sweep_ns;
	bool dgram_probes_now; /* ebee_dgram_probes(), copied under lock */
	/* Framing's scope (cgv2.h): NULL without a cgroup v2 mount (the
	 * loader then says so) or with framing off. Used under ctl. */
	struct ebee_cg2 *cg2;
	uint64_t frame_miss_seq; /* ebee_loader_frame_missed()'s, last seen */
};

static inline uint64_t ebee_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* log.c: to the caller's log callback, or stderr without one. */
void ebee_logf(struct ebee *eb, enum ebee_log_level lvl, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The workload table (workload.c). find, kind, requests: with lock or ctl
 * held. find is inline: the consumer looks a workload up for every record. */
static inline struct wl *ebee_wl_find(struct ebee *eb, pid_t pid)
{
	for (struct wl *w = eb->wls; w; w = w->next)
		if (w->pid == pid)
			return w;
	return NULL;
}
/* The pattern (K_*) whose windows the queries read. */
int ebee_wl_kind(const struct wl *w);
uint64_t ebee_wl_requests(const struct wl *w);
/* The kernel's count of kind k's requests. */
uint64_t ebee_wl_kreq(const struct wl *w, int k);
/* The kernel's counters over the span of the window of the kind the queries
 * read (everything so far when it holds fewer than two records), expired by
 * age first; 0, or -ENODATA without that window. */
int ebee_wl_share(struct ebee *eb, struct wl *w, struct ebee_kc_span *out);
/* A fresh reading of pid's kernel counters, taken with lock not held, and
 * applied with it held (an exited workload keeps its last). */
struct ebee_kc_read {
	uint64_t t_ns;
	struct ebee_kcount c;
	bool ok;
};
void ebee_wl_kc_read(struct ebee *eb, pid_t pid, struct ebee_kc_read *r);
/* What ebee_warns_silent() needs of w (its f and framing left to the
 * caller): the requests and the I/O since tracing began, or, with a
 * window age, over that age when the run counted some. With lock held. */
void ebee_wl_silent(struct ebee *eb, struct wl *w, struct ebee_silent *z);
void ebee_wl_kc_apply(struct wl *w, const struct ebee_kc_read *r);
uint32_t ebee_wl_flags(const struct wl *w, uint64_t now);
/* The mode choice's round for w: with lock held. */
void ebee_wl_auto(struct ebee *eb, struct wl *w, uint64_t now);
int ebee_wl_new(struct ebee *eb, pid_t pid, enum ebee_mode mode, bool no_children, struct wl **out);
/* NULL is fine. */
void ebee_wl_free(struct wl *w);
/* With lock held. */
void ebee_wl_unlink(struct ebee *eb, struct wl *w);

/* ksync.c: with ctl held, lock not held (ebee_ksync_probes: either). */
unsigned int ebee_ksync_probes(const struct ebee *eb, uint32_t flags);
int ebee_ksync(struct ebee *eb, char *msg, size_t msg_len);
void ebee_ksync_frame_missed(struct ebee *eb);

/* scan.c: with ctl held, lock not held. */
int ebee_scan_grpc(struct ebee *eb, struct wl *w, bool starting);
void ebee_scan_dgram(struct ebee *eb, struct wl *w);

/* trust.c: what a workload's trust verdict rests on, copied with lock held
 * (ebee_trust_snap()), and the verdict made from it and the kernel's framing
 * counters with lock not held (ebee_trust_judge(): the one ebee_get_stats()
 * gives) into the caller's out, whose sz it honours. */
struct ebee_trust_snap {
	pid_t pid;
	enum ebee_mode mode;
	bool dg_unanswered;
	struct ebee_dgram_counts dg;
	struct ebee_kc_span share; /* of the window's requests, what arrived */
	struct ebee_silent silent; /* I/O with no request (its f NULL) */
};
void ebee_trust_snap(struct ebee *eb, struct wl *w, struct ebee_trust_snap *t);
void ebee_trust_judge(struct ebee *eb, const struct ebee_trust_snap *snaps, size_t n,
		      struct ebee_trust *out);

/* threads.c */
int ebee_threads_on_record(void *ctx, const struct ebee_rec *r);
int ebee_threads_start(struct ebee *eb, char *msg, size_t msg_len);

#endif /* EBEE_CORE_H */
