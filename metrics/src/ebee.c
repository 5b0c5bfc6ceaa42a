// SPDX-License-Identifier: MIT
/*
 * libebee's public API: workloads, the consumer thread, the queries.
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
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>

#include "ebee.h"
#include "cgv2.h"
#include "dgram.h"
#include "feature_check.h"
#include "grpc.h"
#include "loader.h"
#include "frame/frame_ops.h"
#include "frame/http2.h"
#include "mode.h"
#include "opts.h"
#include "proc.h"
#include "procfs.h"
#include "window.h"

#define HOUSEKEEPING_NS (100ull * 1000 * 1000)
/* gRPC: how often traced processes are searched for libgrpc. */
#define GRPC_SCAN_NS (1000ull * 1000 * 1000)
/* dgram: how often the pending table is swept, and how long a request waits
 * for its response before it expires (one-way traffic). */
#define DGRAM_SWEEP_NS	 (1000ull * 1000 * 1000)
#define DGRAM_TIMEOUT_NS (1000ull * 1000 * 1000)

enum { K_CONN, K_IO, K_GRPC, K_DGRAM, K_NKINDS };
#define NLAT 2 /* enum ebee_latency */

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
	char warning[192];	     /* what ebee_stats.warning says */
	struct ebee_window *win[K_NKINDS][NLAT];
	uint64_t total[K_NKINDS]; /* records of each kind since start */
	/* Records of a kind whose request started before this time stay out of
	 * its window and count: set when a switch makes the kind the mode. */
	uint64_t since_ns[K_NKINDS];
	uint64_t req_base, kind_snap;
	struct ebee_evidence ev;
	uint64_t epoch_ns;	   /* start of the evidence epoch */
	uint64_t recheck_until_ns; /* conn mode: io probes back until then */
	uint64_t next_recheck_ns;
	uint64_t switches;
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

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void logf_(struct ebee *eb, enum ebee_log_level lvl, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void logf_(struct ebee *eb, enum ebee_log_level lvl, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (lvl > eb->opts.log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (eb->opts.log)
		eb->opts.log(lvl, buf, eb->opts.log_ctx);
	else
		fprintf(stderr, "%s\n", buf);
}

/* ---------------------------------------------------------------- names */

static const char *const mode_names[EBEE_MODE_COUNT] = { "auto", "conn", "io", "grpc", "dgram" };
static const char *const path_names[] = { "auto", "socket", "syscall" };
static const char *const attach_names[] = { "auto", "tp_btf", "fentry" };
static const char *const lat_names[NLAT] = { "service", "sojourn" };

/* Index of s in names[0..n), or -EINVAL. */
static int name_index(const char *const *names, int n, const char *s)
{
	for (int i = 0; s && i < n; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -EINVAL;
}

const char *ebee_path_str(enum ebee_path path)
{
	return path >= 0 && path <= EBEE_PATH_SYSCALL ? path_names[path] : NULL;
}

int ebee_path_parse(const char *s, enum ebee_path *path)
{
	int i = path ? name_index(path_names, EBEE_PATH_SYSCALL + 1, s) : -EINVAL;

	if (i >= 0)
		*path = i;
	return i < 0 ? i : 0;
}

const char *ebee_attach_str(enum ebee_attach attach)
{
	return attach >= 0 && attach <= EBEE_ATTACH_FENTRY ? attach_names[attach] : NULL;
}

int ebee_attach_parse(const char *s, enum ebee_attach *attach)
{
	int i = name_index(attach_names, EBEE_ATTACH_FENTRY + 1, s);

	if (i >= 0)
		*attach = i;
	return i < 0 ? i : 0;
}

const char *ebee_latency_str(enum ebee_latency lat)
{
	return lat >= 0 && lat < NLAT ? lat_names[lat] : NULL;
}

int ebee_latency_parse(const char *s, enum ebee_latency *lat)
{
	int i = lat ? name_index(lat_names, NLAT, s) : -EINVAL;

	if (i >= 0)
		*lat = i;
	return i < 0 ? i : 0;
}

const char *ebee_mode_str(enum ebee_mode mode)
{
	return mode >= 0 && mode < EBEE_MODE_COUNT ? mode_names[mode] : NULL;
}

int ebee_mode_parse(const char *s, enum ebee_mode *mode)
{
	for (int i = 0; mode && i < EBEE_MODE_COUNT; i++) {
		if (s && !strcmp(s, mode_names[i])) {
			*mode = i;
			return 0;
		}
	}
	return -EINVAL;
}

char *ebee_probes_str(unsigned int mask, char *buf, size_t len)
{
	static const char *const names[] = { "accept",	    "close", "read",	   "write",
					     "fork",	    "grpc",  "sock_state", "sock_io",
					     "sock_arrive", "dgram", "sock_frame" };
	size_t off = 0;

	if (!len)
		return buf;
	buf[0] = 0;
	for (unsigned int i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!(mask & (1u << i)))
			continue;
		off += snprintf(buf + off, off < len ? len - off : 0, "%s%s", off ? "," : "",
				names[i]);
	}
	return buf;
}

/* ---------------------------------------------------------------- workloads */

static struct wl *find_wl(struct ebee *eb, pid_t pid)
{
	for (struct wl *w = eb->wls; w; w = w->next)
		if (w->pid == pid)
			return w;
	return NULL;
}

static int primary_kind(const struct wl *w)
{
	switch (w->mode) {
	case EBEE_MODE_CONN:
		return K_CONN;
	case EBEE_MODE_IO:
		return K_IO;
	case EBEE_MODE_GRPC:
		return K_GRPC;
	case EBEE_MODE_DGRAM:
		return K_DGRAM;
	default:
		/* gRPC streams decide at the next housekeeping. */
		if (w->win[K_GRPC][0] && w->total[K_GRPC])
			return K_GRPC;
		/* dgram: answered datagrams and nothing on TCP yet. */
		if (w->total[K_DGRAM] && !w->total[K_IO] && !w->total[K_CONN])
			return K_DGRAM;
		/* Undecided: whichever pattern has seen more. */
		if (!w->win[K_IO][0])
			return K_CONN;
		if (!w->win[K_CONN][0])
			return K_IO;
		return w->total[K_IO] >= w->total[K_CONN] ? K_IO : K_CONN;
	}
}

static uint64_t wl_requests(const struct wl *w)
{
	int k = primary_kind(w);

	if (w->mode == EBEE_MODE_AUTO)
		return w->total[k];
	return w->req_base + w->total[k] - w->kind_snap;
}

/* Kernel flags for the workload's current state. */
static uint32_t wl_flags(const struct wl *w, uint64_t now)
{
	uint32_t f = w->no_children ? EBEE_F_NOCHILD : 0;
	uint32_t g = w->grpc ? EBEE_F_GRPC : 0; /* gRPC: watch streams */

	switch (w->req_mode) {
	case EBEE_MODE_CONN:
		return f | EBEE_F_CONN;
	case EBEE_MODE_IO:
		return f | EBEE_F_IO;
	case EBEE_MODE_GRPC:
		return f | EBEE_F_GRPC;
	case EBEE_MODE_DGRAM:
		return f | EBEE_F_DGRAM;
	default:
		break;
	}
	if (w->mode == EBEE_MODE_GRPC)
		return f | EBEE_F_GRPC; /* the socket or syscall probes are pruned */
	if (w->mode == EBEE_MODE_DGRAM)
		return f | EBEE_F_DGRAM; /* the TCP probes are pruned */
	if (w->mode == EBEE_MODE_AUTO)
		f |= EBEE_F_DGRAM; /* undecided: UDP is a candidate too */
	if (w->mode == EBEE_MODE_CONN && now >= w->recheck_until_ns)
		return f | EBEE_F_CONN | g;
	/* Undecided, io (closes feed the revisit), or a conn-mode recheck. */
	return f | EBEE_F_CONN | EBEE_F_IO | g;
}

/* Probe groups a workload with these kernel flags needs. On the socket path
 * the read/write hooks also tell which sockets are the workload's, so conn
 * needs them too; only the per-packet arrival hook is io's alone. */
static unsigned int flags_probes(const struct ebee *eb, uint32_t flags)
{
	unsigned int p = 0;

	if (flags & EBEE_F_GRPC)
		p |= EBEE_PROBE_GRPC | EBEE_PROBE_FORK;
	if (flags & EBEE_F_DGRAM)
		p |= EBEE_PROBE_DGRAM | EBEE_PROBE_FORK;
	if (eb->path == EBEE_PATH_SOCKET) {
		if (flags & (EBEE_F_CONN | EBEE_F_IO))
			p |= EBEE_PROBE_SOCK_STATE | EBEE_PROBE_SOCK_IO | EBEE_PROBE_FORK;
		/* The framers follow a stream from its first byte: they stay on
		 * with the I/O hooks, in conn mode too, or a recheck would find
		 * every framed connection with a gap. */
		if ((flags & (EBEE_F_CONN | EBEE_F_IO)) && !eb->opts.no_framing)
			p |= EBEE_PROBE_SOCK_FRAME;
		/* io's arrivals: the framing hook's ingress stamps them where
		 * it is attached (frame_arrive), data_ready where it is not. */
		if ((flags & EBEE_F_IO) && !(p & EBEE_PROBE_SOCK_FRAME))
			p |= EBEE_PROBE_SOCK_ARRIVE;
		return p;
	}
	if (flags & (EBEE_F_CONN | EBEE_F_IO))
		p |= EBEE_PROBE_ACCEPT | EBEE_PROBE_CLOSE | EBEE_PROBE_FORK;
	if (flags & EBEE_F_IO)
		p |= EBEE_PROBE_READ | EBEE_PROBE_WRITE;
	return p;
}

/* Where the framing program attaches: the cgroups of the traced workloads'
 * sockets (cgv2.h). A scope that cannot be attached gives way to the root
 * for good, said once. With ctl held. */
static void sync_frame_scope(struct ebee *eb)
{
	bool root, changed;
	char desc[256], m[256];
	size_t n = 0;
	int *fds = NULL, err;

	if (!eb->cg2 || ebee_cg2_scope(eb->cg2, &fds, &n, &root, &changed, desc, sizeof(desc)) ||
	    !changed)
		return;
	err = ebee_loader_frame_scope(eb->loader, fds, n, m, sizeof(m));
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
	free(fds);
	if (err) {
		logf_(eb, EBEE_LOG_WARN, "%s; framing attaches to the cgroup v2 root instead", m);
		ebee_cg2_scope_failed(eb->cg2);
		if (!ebee_cg2_scope(eb->cg2, &fds, &n, &root, &changed, desc, sizeof(desc)))
			ebee_loader_frame_scope(eb->loader, NULL, 0, m, sizeof(m));
		return;
	}
	logf_(eb, EBEE_LOG_INFO, "ebee: framing attaches to %s%s",
	      root ? "the cgroup v2 root" : "cgroup(s) ", root ? "" : desc);
}

/* A workload socket the framing hook did not see (frame_missed): its cgroup
 * joins the scope, unless it is in it already (then the report was one of
 * the connections whose bytes came before its storage). With ctl held. */
static void check_frame_missed(struct ebee *eb)
{
	uint64_t seq, cgid;
	uint32_t wid;
	char path[512];
	int r;

	if (!eb->cg2)
		return;
	seq = ebee_loader_frame_missed(eb->loader, &wid, &cgid);
	if (seq == eb->frame_miss_seq)
		return;
	eb->frame_miss_seq = seq;
	r = ebee_cg2_wl_missed(eb->cg2, wid, cgid, path, sizeof(path));
	if (r > 0)
		logf_(eb, EBEE_LOG_INFO,
		      "ebee: pid %u: a connection in cgroup %s, outside the cgroups framing "
		      "attaches to (its bytes so far went unseen: counted by length); "
		      "framing attaches there too",
		      wid, path);
	else if (r < 0)
		logf_(eb, EBEE_LOG_INFO,
		      "ebee: pid %u: a connection in cgroup id %llu, which cannot be found "
		      "(%s): framing attaches to the cgroup v2 root",
		      wid, (unsigned long long)cgid, strerror(-r));
}

/* Make the kernel flags and the attached probe groups match the workloads.
 * Called with ctl held and lock NOT held: attaching can take seconds. */
static int sync_kernel(struct ebee *eb, char *msg, size_t msg_len)
{
	unsigned int need = 0;
	uint64_t now = now_ns();
	char m[256], b1[64], b2[64];
	int err;

	for (struct wl *w = eb->wls; w; w = w->next) {
		uint32_t f;

		if (w->exited)
			continue;
		f = wl_flags(w, now);
		need |= flags_probes(eb, f);
		/* Once more on the round after a change: a process forked while
		 * the copies were updated may hold the old flags. */
		if (f != w->kflags || w->kflags_resync) {
			w->kflags_resync = f != w->kflags;
			err = ebee_loader_workload_set(eb->loader, w->pid, f);
			if (err)
				return err;
			pthread_mutex_lock(&eb->lock);
			w->kflags = f;
			pthread_mutex_unlock(&eb->lock);
		}
	}
	/* gRPC: the uprobes are the grpc object's. */
	if (eb->grpc && !!(need & EBEE_PROBE_GRPC) != ebee_grpc_probes(eb->grpc)) {
		err = ebee_grpc_set_probes(eb->grpc, need & EBEE_PROBE_GRPC, msg ? msg : m,
					   msg ? msg_len : sizeof(m));
		pthread_mutex_lock(&eb->lock);
		eb->grpc_probes_now = ebee_grpc_probes(eb->grpc);
		pthread_mutex_unlock(&eb->lock);
		if (err) {
			logf_(eb, EBEE_LOG_WARN, "%s", msg ? msg : m);
			return err;
		}
		logf_(eb, EBEE_LOG_DEBUG, "ebee: grpc uprobes %s",
		      need & EBEE_PROBE_GRPC ? "attached" : "detached");
	}
	need &= ~EBEE_PROBE_GRPC;
	/* dgram: the UDP object's programs. */
	if (eb->dgram && !!(need & EBEE_PROBE_DGRAM) != ebee_dgram_probes(eb->dgram)) {
		err = ebee_dgram_set_probes(eb->dgram, need & EBEE_PROBE_DGRAM, msg ? msg : m,
					    msg ? msg_len : sizeof(m));
		pthread_mutex_lock(&eb->lock);
		eb->dgram_probes_now = ebee_dgram_probes(eb->dgram);
		pthread_mutex_unlock(&eb->lock);
		if (err) {
			logf_(eb, EBEE_LOG_WARN, "%s", msg ? msg : m);
			return err;
		}
		logf_(eb, EBEE_LOG_DEBUG, "ebee: dgram probes %s",
		      need & EBEE_PROBE_DGRAM ? "attached" : "detached");
	}
	need &= ~EBEE_PROBE_DGRAM;
	if (need & EBEE_PROBE_SOCK_FRAME)
		sync_frame_scope(eb);
	if (need == ebee_loader_probes(eb->loader))
		return 0;
	ebee_probes_str(ebee_loader_probes(eb->loader), b1, sizeof(b1));
	ebee_probes_str(need, b2, sizeof(b2));
	err = ebee_loader_set_probes(eb->loader, need, msg ? msg : m, msg ? msg_len : sizeof(m));
	pthread_mutex_lock(&eb->lock);
	eb->probes_now = ebee_loader_probes(eb->loader);
	pthread_mutex_unlock(&eb->lock);
	if (err) {
		logf_(eb, EBEE_LOG_WARN, "%s", msg ? msg : m);
		return err;
	}
	logf_(eb, EBEE_LOG_DEBUG, "ebee: probes [%s] -> [%s]", b1, b2);
	return 0;
}

static void set_mode(struct ebee *eb, struct wl *w, enum ebee_mode m, const char *why)
{
	int k = m == EBEE_MODE_IO      ? K_IO
		: m == EBEE_MODE_GRPC  ? K_GRPC
		: m == EBEE_MODE_DGRAM ? K_DGRAM
				       : K_CONN;

	if (w->mode == EBEE_MODE_AUTO) {
		/* First choice: everything of that kind since the start counts. */
		w->req_base = 0;
		w->kind_snap = 0;
	} else if (m == EBEE_MODE_GRPC) {
		/* gRPC: streams were watched from the start, and what
		 * io or conn counted on a gRPC server's connections was wrong. */
		w->req_base = 0;
		w->kind_snap = 0;
		w->switches++;
	} else {
		w->req_base = wl_requests(w);
		w->kind_snap = w->total[k];
		w->switches++;
	}
	logf_(eb, EBEE_LOG_INFO, "ebee: pid %d: mode %s -> %s (%s)", w->pid, ebee_mode_str(w->mode),
	      ebee_mode_str(m), why);
	w->mode = m;
	/* A window of the other kind must not mix into this one later. */
	if (m == EBEE_MODE_CONN)
		for (int l = 0; l < NLAT; l++)
			if (w->win[K_IO][l])
				ebee_window_reset(w->win[K_IO][l]);
	/* A switch starts the new pattern's window afresh: what it collected
	 * under the old pattern (keep-alive connection lifetimes while in io)
	 * and requests that began before the switch are not its requests. gRPC
	 * streams are exact from the start, whatever the mode was. */
	if (w->switches && m != EBEE_MODE_GRPC) {
		for (int l = 0; l < NLAT; l++)
			if (w->win[k][l])
				ebee_window_reset(w->win[k][l]);
		w->since_ns[k] = now_ns();
	}
}

static void describe(const struct ebee_evidence *ev, char *buf, size_t len)
{
	snprintf(buf, len,
		 "%llu closed connections, %llu with several requests, %llu io requests, "
		 "%llu grpc streams, %llu answered datagrams",
		 (unsigned long long)ev->conns_closed, (unsigned long long)ev->conns_multi,
		 (unsigned long long)ev->io_reqs, (unsigned long long)ev->grpc_reqs,
		 (unsigned long long)ev->dgram_reqs);
}

static void wl_auto(struct ebee *eb, struct wl *w, uint64_t now)
{
	uint64_t epoch_len = (uint64_t)eb->opts.auto_recheck_ms * 1000000ull;
	enum ebee_mode d;
	char why[200];

	if (w->req_mode != EBEE_MODE_AUTO)
		return;
	d = ebee_mode_decide(&w->ev, &eb->mp);
	describe(&w->ev, why, sizeof(why));
	/* gRPC: server streams decide at once, and for good; so does dgram
	 * (a UDP server does not turn into a TCP one). */
	if (w->mode == EBEE_MODE_GRPC || w->mode == EBEE_MODE_DGRAM)
		return;
	if (d == EBEE_MODE_GRPC) {
		set_mode(eb, w, d, why);
		memset(&w->ev, 0, sizeof(w->ev));
		return;
	}
	switch (w->mode) {
	case EBEE_MODE_AUTO:
		if (d != EBEE_MODE_AUTO) {
			set_mode(eb, w, d, why);
			memset(&w->ev, 0, sizeof(w->ev));
			w->epoch_ns = now;
			w->next_recheck_ns = now + epoch_len;
			w->recheck_until_ns = 0;
		}
		break;
	case EBEE_MODE_IO:
		/* io keeps every probe: judge each epoch's fresh evidence. */
		if (now - w->epoch_ns < epoch_len)
			break;
		if (d == EBEE_MODE_CONN)
			set_mode(eb, w, d, why);
		memset(&w->ev, 0, sizeof(w->ev));
		w->epoch_ns = now;
		w->next_recheck_ns = now + epoch_len;
		break;
	case EBEE_MODE_CONN:
		/* conn runs without the io probes; bring them back now and then
		 * for a short look, then judge what that look saw. */
		if (w->recheck_until_ns == 0 && now >= w->next_recheck_ns) {
			memset(&w->ev, 0, sizeof(w->ev));
			w->epoch_ns = now;
			w->recheck_until_ns =
			    now + (uint64_t)eb->opts.auto_recheck_len_ms * 1000000ull;
		} else if (w->recheck_until_ns && now >= w->recheck_until_ns) {
			if (d == EBEE_MODE_IO)
				set_mode(eb, w, d, why);
			memset(&w->ev, 0, sizeof(w->ev));
			w->epoch_ns = now;
			w->recheck_until_ns = 0;
			w->next_recheck_ns = now + epoch_len;
		}
		break;
	default:
		break;
	}
}

/* With ctl held (the list cannot change), lock not held. */
static void wl_mark_exited(struct ebee *eb, struct wl *w)
{
	uint64_t dropped = 0, req;

	ebee_loader_workload_dropped(eb->loader, w->pid, &dropped);
	ebee_loader_workload_del(eb->loader, w->pid);
	ebee_grpc_workload_del(eb->grpc, w->pid); /* gRPC */
	pthread_mutex_lock(&eb->lock);
	ebee_loader_consume(eb->loader); /* its last records */
	w->dropped_final = dropped;
	w->nprocs_final = 0;
	w->exited = true;
	req = wl_requests(w);
	pthread_mutex_unlock(&eb->lock);
	ebee_dgram_workload_del(eb->dgram, w->pid);
	if (eb->cg2)
		ebee_cg2_wl_del(eb->cg2, w->pid);
	logf_(eb, EBEE_LOG_INFO, "ebee: pid %d exited; %llu requests traced", w->pid,
	      (unsigned long long)req);
}

/* gRPC: does the workload (now) map a usable gRPC C-core (grpc_elf.c)? At the start
 * and then every GRPC_SCAN_NS, so a descendant that starts a gRPC server
 * later is covered. In grpc mode, a process without one is an error. With
 * ctl held and lock not held: the scan walks /proc and reads ELF files. */
static int wl_grpc_scan(struct ebee *eb, struct wl *w, bool starting)
{
	struct ebee_window *win[NLAT] = {};
	bool found = false;
	char msg[600];
	int err;

	if (w->req_mode != EBEE_MODE_AUTO && w->req_mode != EBEE_MODE_GRPC)
		return 0;
	if (!eb->grpc) {
		if (w->req_mode != EBEE_MODE_GRPC)
			return 0;
		logf_(eb, EBEE_LOG_WARN, "ebee: pid %d: mode grpc is unavailable: %s", w->pid,
		      eb->grpc_err);
		return -EOPNOTSUPP;
	}
	msg[0] = 0;
	err = ebee_grpc_scan(eb->grpc, w->pid, !w->no_children, &found, msg, sizeof(msg));
	if (starting && w->req_mode == EBEE_MODE_GRPC && !found) {
		if (err)
			logf_(eb, EBEE_LOG_WARN, "%s", msg);
		else
			logf_(eb, EBEE_LOG_WARN,
			      "ebee: pid %d%s maps no libgrpc (nor any file with gRPC C-core's "
			      "chttp2 symbols: not a gRPC C-core process): mode grpc needs one",
			      w->pid, w->no_children ? "" : " (or a descendant)");
		return -EOPNOTSUPP;
	}
	if (err)
		logf_(eb, starting ? EBEE_LOG_WARN : EBEE_LOG_DEBUG, "%s", msg);
	if (!found || w->grpc)
		return 0;
	/* Windows are made outside the lock, published under it. */
	for (int l = 0; l < NLAT && !w->win[K_GRPC][0]; l++) {
		win[l] = ebee_window_new(eb->opts.window_len, eb->opts.window_age_ns);
		if (!win[l]) {
			for (int j = 0; j < l; j++)
				ebee_window_free(win[j]);
			return -ENOMEM;
		}
	}
	pthread_mutex_lock(&eb->lock);
	for (int l = 0; l < NLAT; l++)
		if (win[l])
			w->win[K_GRPC][l] = win[l];
	w->grpc = true;
	pthread_mutex_unlock(&eb->lock);
	logf_(eb, EBEE_LOG_INFO, "ebee: pid %d maps gRPC C-core: watching its streams", w->pid);
	return 0;
}

/* dgram: what the UDP pattern saw of the workload, and the warning when
 * what it saw cannot be counted: datagrams received on server sockets, and
 * none answered to its peer (one-way traffic, or replies from a socket or
 * port other than the request's), while nothing else was found either.
 * With ctl held and lock not held. */
static void wl_dgram_check(struct ebee *eb, struct wl *w)
{
	struct ebee_dgram_counts c;
	char warn[sizeof(w->warning)] = "";
	bool candidate = w->req_mode == EBEE_MODE_DGRAM ||
			 (w->req_mode == EBEE_MODE_AUTO &&
			  (w->mode == EBEE_MODE_AUTO || w->mode == EBEE_MODE_DGRAM));

	if (ebee_dgram_counts(eb->dgram, w->pid, &c))
		return;
	logf_(eb, EBEE_LOG_DEBUG,
	      "ebee: pid %d: dgram: %llu sockets (%llu client), %llu received, %llu answered, "
	      "%llu expired, %llu pending, %llu unsolicited, %llu of unknown peer, %llu not "
	      "tracked (table full)",
	      w->pid, (unsigned long long)c.socks, (unsigned long long)c.client_socks,
	      (unsigned long long)c.rx, (unsigned long long)c.matched,
	      (unsigned long long)c.expired, (unsigned long long)c.pending,
	      (unsigned long long)c.unsolicited, (unsigned long long)c.nopeer,
	      (unsigned long long)c.full);
	if (candidate && c.rx >= eb->mp.min_requests && !c.matched)
		snprintf(warn, sizeof(warn),
			 "UDP: %llu datagrams received, none answered to its sender (%llu "
			 "expired unanswered): no request/response pattern to count",
			 (unsigned long long)c.rx, (unsigned long long)c.expired);
	pthread_mutex_lock(&eb->lock);
	w->dg = c;
	if (warn[0] && !w->warning[0]) /* once, as it appears */
		logf_(eb, EBEE_LOG_WARN, "ebee: pid %d: %s", w->pid, warn);
	memcpy(w->warning, warn, sizeof(warn));
	pthread_mutex_unlock(&eb->lock);
}

/* One round: /proc checks and probe changes with ctl only, the mode
 * decisions (cheap) under lock. */
static void housekeeping(struct ebee *eb)
{
	uint64_t now = now_ns();
	bool grpc_scan, dgram_sweep;

	pthread_mutex_lock(&eb->ctl);
	grpc_scan = now - eb->last_grpc_scan_ns >= GRPC_SCAN_NS;
	if (grpc_scan)
		eb->last_grpc_scan_ns = now;
	dgram_sweep = eb->dgram && now - eb->last_dgram_sweep_ns >= DGRAM_SWEEP_NS;
	if (dgram_sweep) {
		eb->last_dgram_sweep_ns = now;
		ebee_dgram_sweep(eb->dgram, now);
	}
	for (struct wl *w = eb->wls; w; w = w->next) {
		if (w->exited)
			continue;
		if (!procfs_alive(w->pid, 0)) {
			wl_mark_exited(eb, w);
			continue;
		}
		if (grpc_scan)
			wl_grpc_scan(eb, w, false);
		if (dgram_sweep)
			wl_dgram_check(eb, w);
		pthread_mutex_lock(&eb->lock);
		wl_auto(eb, w, now);
		pthread_mutex_unlock(&eb->lock);
	}
	check_frame_missed(eb);
	sync_kernel(eb, NULL, 0);
	pthread_mutex_unlock(&eb->ctl);
}

/* ---------------------------------------------------------------- consumer */

static int on_record(void *ctx, const struct ebee_rec *r)
{
	struct ebee *eb = ctx;
	struct wl *w = find_wl(eb, r->wid);
	int k;

	eb->records++;
	if (!w)
		return 0; /* stopped while the record was queued */
	/* Every kind is evidence for the mode; an adopted connection's close is
	 * nothing more (its accept time is unknown). */
	ebee_evidence_add(&w->ev, r->kind, r->nreq);
	if (r->kind == EBEE_REC_CONN)
		k = K_CONN;
	else if (r->kind == EBEE_REC_IO)
		k = K_IO;
	else if (r->kind == EBEE_REC_GRPC)
		k = K_GRPC;
	else if (r->kind == EBEE_REC_DGRAM)
		k = K_DGRAM;
	else if (r->kind == EBEE_REC_FRAMED)
		k = K_IO; /* nreq requests of the io pattern, delimited by a framer */
	else
		return 0;
	/* A request that began before its pattern became the mode spans the
	 * switch: it belongs to neither pattern's count nor window. */
	if (w->since_ns[k] &&
	    r->end_ns - (r->soj_ns > r->lat_ns ? r->soj_ns : r->lat_ns) < w->since_ns[k])
		return 0;
	for (unsigned int i = 0; i < (r->kind == EBEE_REC_FRAMED ? r->nreq : 1u); i++) {
		w->total[k]++;
		if (w->win[k][EBEE_LAT_SERVICE])
			ebee_window_push(w->win[k][EBEE_LAT_SERVICE], r->end_ns, r->lat_ns);
		if (w->win[k][EBEE_LAT_SOJOURN] && r->soj_ns)
			ebee_window_push(w->win[k][EBEE_LAT_SOJOURN], r->end_ns, r->soj_ns);
		/* The request hook; only the kind the queries read, so
		 * a histogram built from it counts what ebee_get_stats() counts. */
		if (eb->opts.on_request && k == primary_kind(w))
			eb->opts.on_request(w->pid, r->lat_ns, eb->opts.on_request_ctx);
	}
	return 0;
}

static void *consumer(void *arg)
{
	struct ebee *eb = arg;
	struct epoll_event ev;
	sigset_t all;

	/* Signals belong to the application's threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (;;) {
		epoll_wait(eb->epfd, &ev, 1, eb->opts.drain_ms);
		pthread_mutex_lock(&eb->lock);
		if (eb->stop) {
			pthread_mutex_unlock(&eb->lock);
			break;
		}
		ebee_loader_consume(eb->loader);
		pthread_mutex_unlock(&eb->lock);
	}
	return NULL;
}

static void *housekeeper(void *arg)
{
	struct ebee *eb = arg;
	struct timespec ts = { 0, HOUSEKEEPING_NS };
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	while (!__atomic_load_n(&eb->stop, __ATOMIC_ACQUIRE)) {
		nanosleep(&ts, NULL);
		if (__atomic_load_n(&eb->stop, __ATOMIC_ACQUIRE))
			break;
		housekeeping(eb);
	}
	return NULL;
}

/* ---------------------------------------------------------------- lifecycle */

/* OPTS_GET, with a zero field also taking the default */
#define OPT(o, field, def) (OPTS_HAS(o, field) && (o)->field ? (o)->field : (def))

/* The caller's options, each zero or absent field taking its default. */
static void open_set_opts(struct ebee *eb, const struct ebee_opts *opts)
{
	eb->opts.sz = sizeof(eb->opts);
	eb->opts.ringbuf_size = OPT(opts, ringbuf_size, 128 * 1024);
	eb->opts.window_len = OPT(opts, window_len, 100000);
	eb->opts.window_age_ns = OPT(opts, window_age_ns, 0);
	eb->opts.drain_ms = OPT(opts, drain_ms, 20);
	eb->opts.max_conns = OPT(opts, max_conns, 65536);
	eb->opts.auto_min_conns = OPT(opts, auto_min_conns, 8);
	eb->opts.auto_min_requests = OPT(opts, auto_min_requests, 32);
	eb->opts.auto_recheck_ms = OPT(opts, auto_recheck_ms, 10000);
	eb->opts.auto_recheck_len_ms = OPT(opts, auto_recheck_len_ms, 1000);
	eb->opts.log = OPT(opts, log, NULL);
	eb->opts.log_ctx = OPT(opts, log_ctx, NULL);
	eb->opts.log_level = OPT(opts, log_level, EBEE_LOG_WARN);
	eb->opts.path = OPT(opts, path, EBEE_PATH_AUTO);
	eb->opts.on_request = OPT(opts, on_request, NULL);
	eb->opts.no_framing = OPT(opts, no_framing, false);
	eb->opts.on_request_ctx = OPT(opts, on_request_ctx, NULL);
	eb->opts.attach = OPT(opts, attach, EBEE_ATTACH_AUTO);
	eb->mp.min_conns = eb->opts.auto_min_conns;
	eb->mp.min_requests = eb->opts.auto_min_requests;
}

/* Refuses a path, an attach method or a ring size ebee cannot use. */
static int open_check_values(const struct ebee *eb, char *msg, size_t msg_len)
{
	size_t rs = eb->opts.ringbuf_size;
	long page;

	if (eb->opts.path < EBEE_PATH_AUTO || eb->opts.path > EBEE_PATH_SYSCALL) {
		snprintf(msg, msg_len, "ebee: unknown path %d", eb->opts.path);
		return -EINVAL;
	}
	if (eb->opts.attach < EBEE_ATTACH_AUTO || eb->opts.attach > EBEE_ATTACH_FENTRY) {
		snprintf(msg, msg_len, "ebee: unknown attach method %d", eb->opts.attach);
		return -EINVAL;
	}
	if (eb->opts.attach != EBEE_ATTACH_AUTO && eb->opts.path == EBEE_PATH_SYSCALL) {
		snprintf(msg, msg_len,
			 "ebee: an attach method (%s) applies to the socket path only, not to "
			 "the syscall path",
			 ebee_attach_str(eb->opts.attach));
		return -EINVAL;
	}
	page = sysconf(_SC_PAGESIZE);
	if (rs < (size_t)page || (rs & (rs - 1))) {
		snprintf(msg, msg_len, "ebee: ring buffer size %zu must be a power of two >= %ld",
			 rs, page);
		return -EINVAL;
	}
	return 0;
}

/* Chooses the path and attach methods this kernel allows and opens the BPF
 * objects: the main one, then the optional gRPC and datagram ones. */
static int open_objects(struct ebee *eb, char *msg, size_t msg_len)
{
	struct ebee_loader_opts lo = {};
	struct ebee_sock_attach dga = {};
	int err;

	eb->path = eb->opts.path;
	err = ebee_check_features(&eb->path, eb->opts.attach, &eb->attach, msg, msg_len);
	if (err)
		return err;
	lo.sock_path = eb->path == EBEE_PATH_SOCKET;
	lo.attach = eb->attach;
	lo.ringbuf_size = eb->opts.ringbuf_size;
	lo.max_conns = eb->opts.max_conns;
	lo.on_record = on_record;
	lo.ctx = eb;
	err = ebee_loader_open(&lo, &eb->loader, msg, msg_len);
	if (err)
		return err;
	/* gRPC: optional; without it, mode grpc says why. */
	if (ebee_grpc_open(eb->loader, eb->opts.ringbuf_size, eb->opts.max_conns, &eb->grpc,
			   eb->grpc_err, sizeof(eb->grpc_err)))
		logf_(eb, EBEE_LOG_INFO, "%s", eb->grpc_err);
	/* dgram: optional too; without it, mode dgram says why. Its hooks
	 * attach as the socket path's would (on the syscall path too). */
	if (lo.sock_path)
		dga = eb->attach;
	else if (ebee_check_sock_attach(&dga, eb->dgram_err, sizeof(eb->dgram_err)))
		dga.io = dga.arrive = EBEE_ATTACH_TP_BTF; /* the load then says why not */
	if (ebee_dgram_open(eb->loader, &dga, eb->opts.ringbuf_size,
			    eb->opts.max_conns, DGRAM_TIMEOUT_NS, &eb->dgram, eb->dgram_err,
			    sizeof(eb->dgram_err)))
		logf_(eb, EBEE_LOG_INFO, "%s", eb->dgram_err);
	/* Framing's scope; without a cgroup v2 mount the root, whose
	 * absence the loader reports when framing attaches. */
	if (lo.sock_path && !eb->opts.no_framing)
		ebee_cg2_open(&eb->cg2);
	eb->epfd = ebee_loader_epoll_fd(eb->loader);
	return 0;
}

/* Starts the consumer, then the housekeeper; ebee_close() joins each one
 * that started. */
static int open_threads(struct ebee *eb, char *msg, size_t msg_len)
{
	int err;

	err = -pthread_create(&eb->thread, NULL, consumer, eb);
	if (err) {
		snprintf(msg, msg_len, "ebee: cannot start the consumer thread: %s",
			 strerror(-err));
		return err;
	}
	eb->thread_started = true;
	err = -pthread_create(&eb->house, NULL, housekeeper, eb);
	if (err) {
		snprintf(msg, msg_len, "ebee: cannot start the housekeeping thread: %s",
			 strerror(-err));
		return err;
	}
	eb->house_started = true;
	return 0;
}

static void open_log_path(struct ebee *eb)
{
	if (eb->path == EBEE_PATH_SOCKET)
		logf_(eb, EBEE_LOG_INFO,
		      "ebee: socket path (requests keyed by socket; io: %s, arrive: %s, state: "
		      "%s)",
		      eb->attach.io == EBEE_ATTACH_FENTRY ? "fexit" : "tp_btf",
		      eb->attach.arrive == EBEE_ATTACH_FENTRY ? "fentry" : "tp_btf",
		      ebee_attach_str(eb->attach.state));
	else
		logf_(eb, EBEE_LOG_INFO,
		      "ebee: syscall path (syscall tracepoints, requests keyed by (tgid, fd))");
}

/*
 * Opening parses the kernel's BTF once per BPF object: libbpf reads
 * /sys/kernel/btf/vmlinux (about 5 MB) into one buffer and copies it into
 * another (and the feature check reads it once, kbtf.c). glibc serves each
 * such buffer with a fresh mmap that page-faults its way in and is unmapped at
 * free, and its dynamic threshold keeps only larger ones in the heap, so every
 * parse faults in ~10 MB anew: about a quarter of the CPU of an open on this
 * host, more under emulation, where a fault is dear. Served from the heap for
 * the open, the parses reuse pages already faulted in (bench_ebee_start.sh:
 * 0.28 -> 0.215 s of CPU per start here); after it both thresholds go back to
 * glibc's initial 128 KiB and what the open freed is given back (malloc_trim).
 * Left alone where the process tuned them through GLIBC_TUNABLES.
 */
#define OPEN_HEAP_THRESHOLD (256u << 20)
#define GLIBC_MMAP_INITIAL  (128u * 1024)

static bool open_heap_begin(void)
{
	const char *t = getenv("GLIBC_TUNABLES");

	if (t && (strstr(t, "mmap_threshold") || strstr(t, "trim_threshold")))
		return false;
	mallopt(M_MMAP_THRESHOLD, OPEN_HEAP_THRESHOLD);
	mallopt(M_TRIM_THRESHOLD, OPEN_HEAP_THRESHOLD);
	return true;
}

static void open_heap_end(bool began)
{
	if (!began)
		return;
	mallopt(M_MMAP_THRESHOLD, GLIBC_MMAP_INITIAL);
	mallopt(M_TRIM_THRESHOLD, GLIBC_MMAP_INITIAL);
	malloc_trim(0);
}

struct ebee *ebee_open(const struct ebee_opts *opts, char *msg, size_t msg_len)
{
	char dummy[8];
	struct ebee *eb;
	bool heap;
	int err;

	if (!msg) {
		msg = dummy;
		msg_len = sizeof(dummy);
	}
	msg[0] = 0;
	err = opts_check(opts, OPTS_KNOWN_END(struct ebee_opts, no_framing));
	if (err) {
		snprintf(msg, msg_len,
			 err == -E2BIG ? "ebee: struct ebee_opts of %zu bytes sets fields unknown "
					 "to this libebee (built against a newer ebee.h?)"
				       : "ebee: struct ebee_opts has a bad size (%zu)",
			 opts->sz);
		errno = -err;
		return NULL;
	}
	eb = calloc(1, sizeof(*eb));
	if (!eb) {
		errno = ENOMEM;
		return NULL;
	}
	eb->epfd = -1;
	open_set_opts(eb, opts);
	pthread_mutex_init(&eb->lock, NULL);
	pthread_mutex_init(&eb->ctl, NULL);
	err = open_check_values(eb, msg, msg_len);
	if (err)
		goto fail;
	heap = open_heap_begin();
	err = open_objects(eb, msg, msg_len);
	open_heap_end(heap);
	if (err)
		goto fail;
	err = open_threads(eb, msg, msg_len);
	if (err)
		goto fail;
	open_log_path(eb);
	return eb;
fail:
	ebee_close(eb);
	errno = -err;
	return NULL;
}

/* The windows of the patterns a mode may use. Auto's grpc window comes with a
 * libgrpc (wl_grpc_scan()): most processes never need one. */
static bool wants_window(enum ebee_mode mode, int k)
{
	switch (mode) {
	case EBEE_MODE_AUTO:
		return k != K_GRPC; /* K_DGRAM included: UDP is a candidate */
	case EBEE_MODE_CONN:
		return k == K_CONN;
	case EBEE_MODE_IO:
		return k == K_IO;
	case EBEE_MODE_DGRAM:
		return k == K_DGRAM;
	default:
		return k == K_GRPC;
	}
}

static void free_wl(struct wl *w)
{
	if (!w)
		return;
	for (int k = 0; k < K_NKINDS; k++)
		for (int l = 0; l < NLAT; l++)
			ebee_window_free(w->win[k][l]);
	free(w);
}

void ebee_close(struct ebee *eb)
{
	if (!eb)
		return;
	pthread_mutex_lock(&eb->lock);
	__atomic_store_n(&eb->stop, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&eb->lock);
	if (eb->thread_started)
		pthread_join(eb->thread, NULL);
	if (eb->house_started)
		pthread_join(eb->house, NULL);
	while (eb->wls) {
		struct wl *w = eb->wls;

		eb->wls = w->next;
		free_wl(w);
	}
	ebee_grpc_close(eb->grpc);
	ebee_dgram_close(eb->dgram);
	ebee_loader_close(eb->loader);
	ebee_cg2_close(eb->cg2);
	pthread_mutex_destroy(&eb->lock);
	pthread_mutex_destroy(&eb->ctl);
	free(eb);
}

/* Connections a process accepted before tracing began: without them, a
 * server whose clients connected earlier (memcached behind long-lived client
 * pools) would show nothing in io mode until its clients reconnect. On the
 * socket path they are known by their ports; a socket shared by a parent and
 * its children is adopted once. */
static size_t adopt_conns(struct ebee *eb, pid_t tgid, pid_t wid)
{
	struct ebee_proc_conn *c = NULL;
	size_t n = 0, ok = 0, lost = 0;
	int err, last = 0;

	if (ebee_proc_accepted_conns(tgid, &c, &n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (eb->path == EBEE_PATH_SOCKET) {
			struct ebee_adopt_key key = { .lport = c[i].lport,
						      .rport = c[i].rport,
						      .raddr = c[i].raddr };

			err = ebee_loader_sconn_adopt(eb->loader, wid, &key);
		} else {
			err = ebee_loader_conn_adopt(eb->loader, tgid, c[i].fd);
		}
		ok += !err;
		/* EEXIST: a socket shared with a parent, adopted already. */
		if (err && err != -EEXIST) {
			lost++;
			last = err;
		}
	}
	free(c);
	if (lost)
		logf_(eb, EBEE_LOG_WARN,
		      "ebee: pid %d: %zu of %zu connections open before tracing could not be "
		      "adopted (%s; max_conns %u): their requests show once their clients "
		      "reconnect",
		      tgid, lost, n, strerror(-last), eb->opts.max_conns);
	return ok;
}

static void unlink_wl(struct ebee *eb, struct wl *w)
{
	for (struct wl **pp = &eb->wls; *pp; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			eb->nwls--;
			return;
		}
	}
}

/*
 * The pids the CLI refuses, refused here too so every caller gets the same
 * answer: pid 1 (with its descendants, every process on the host) unless
 * asked for explicitly, and kernel threads, which make no system calls to
 * trace (kthreadd is pid 2 even where /proc does not show it).
 */
static int check_target(struct ebee *eb, pid_t pid, bool allow_init)
{
	struct procfs_stat st;

	if (pid == 1 && !allow_init) {
		logf_(eb, EBEE_LOG_WARN,
		      "ebee: pid 1 is init: tracing it traces every process on the host; "
		      "refused unless ebee_trace_opts.allow_init is set");
		return -EPERM;
	}
	if (procfs_stat(pid, &st) ? pid == 2 : procfs_kthread(&st)) {
		logf_(eb, EBEE_LOG_WARN,
		      "ebee: pid %d is a kernel thread: it makes no system calls to trace", pid);
		return -EINVAL;
	}
	return 0;
}

/* A pid ebee may trace: not refused by check_target(), alive, and a process
 * rather than one of its threads. */
static int trace_check_pid(struct ebee *eb, pid_t pid, bool allow_init)
{
	pid_t tgid;
	int err;

	err = check_target(eb, pid, allow_init);
	if (err)
		return err;
	tgid = procfs_tgid(pid);
	if (tgid < 0 || !procfs_alive(pid, 0))
		return -ESRCH;
	if (tgid != pid)
		return -EINVAL; /* a thread id, not a process */
	return 0;
}

/* A new workload with the windows its mode may use. */
static int trace_new_wl(struct ebee *eb, pid_t pid, enum ebee_mode mode, bool no_children,
			struct wl **out)
{
	struct wl *w;

	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->pid = pid;
	w->req_mode = mode;
	w->mode = mode;
	w->no_children = no_children;
	w->epoch_ns = now_ns();
	for (int k = 0; k < K_NKINDS; k++) {
		if (!wants_window(mode, k))
			continue;
		for (int l = 0; l < NLAT; l++) {
			w->win[k][l] = ebee_window_new(eb->opts.window_len, eb->opts.window_age_ns);
			if (!w->win[k][l]) {
				free_wl(w);
				return -ENOMEM;
			}
		}
	}
	*out = w;
	return 0;
}

/* Under eb->ctl: refuses a pid already traced or a mode this ebee lacks,
 * then enters the workload (which gates the programs) and its root process
 * in the kernel maps. On error nothing is left in the kernel. */
static int trace_arm(struct ebee *eb, struct wl *w, struct wl *old, pid_t pid, enum ebee_mode mode,
		     uint32_t *kflags)
{
	int err;

	if (old && !old->exited)
		return -EEXIST;
	err = wl_grpc_scan(eb, w, true); /* gRPC */
	if (err)
		return err;
	if (mode == EBEE_MODE_DGRAM && !eb->dgram) {
		logf_(eb, EBEE_LOG_WARN, "ebee: pid %d: mode dgram is unavailable: %s", pid,
		      eb->dgram_err);
		return -EOPNOTSUPP;
	}
	*kflags = wl_flags(w, now_ns());
	err = ebee_loader_workload_set(eb->loader, pid, *kflags);
	if (err)
		return err;
	err = ebee_loader_proc_add(eb->loader, pid, pid);
	if (err) {
		ebee_loader_workload_del(eb->loader, pid);
		return err == -EEXIST ? -EBUSY : err; /* traced as part of another workload */
	}
	return 0;
}

/* In the list (so records are kept) before the probes go live. An exited
 * workload of the same pid (recycled) is replaced. */
static void trace_publish(struct ebee *eb, struct wl *w, struct wl *old, uint32_t kflags)
{
	pthread_mutex_lock(&eb->lock);
	if (old)
		unlink_wl(eb, old);
	w->kflags = kflags;
	w->next = eb->wls;
	eb->wls = w;
	eb->nwls++;
	pthread_mutex_unlock(&eb->lock);
	free_wl(old);
}

/* The root's open connections, then the descendants that already exist with
 * theirs; returns the connections adopted, *nkids the descendants found. */
static size_t trace_adopt_existing(struct ebee *eb, pid_t pid, bool no_children, size_t *nkids)
{
	size_t nadopted;
	pid_t *kids = NULL;

	nadopted = adopt_conns(eb, pid, pid);
	if (!no_children && !procfs_descendants(pid, &kids, nkids)) {
		for (size_t i = 0; i < *nkids; i++) {
			/* -EEXIST: the fork hook got there first */
			ebee_loader_proc_add(eb->loader, kids[i], pid);
			nadopted += adopt_conns(eb, kids[i], pid);
		}
		free(kids);
	}
	return nadopted;
}

int ebee_start_tracing(struct ebee *eb, pid_t pid, const struct ebee_trace_opts *opts)
{
	enum ebee_mode mode = OPT(opts, mode, EBEE_MODE_AUTO);
	bool no_children = OPT(opts, no_children, false);
	bool allow_init = OPT(opts, allow_init, false);
	size_t nkids = 0, nadopted;
	struct wl *w, *old;
	uint32_t kflags;
	char msg[256];
	int err;

	if (!eb || pid <= 0 || mode < 0 || mode >= EBEE_MODE_COUNT)
		return -EINVAL;
	err = opts_check(opts, OPTS_KNOWN_END(struct ebee_trace_opts, allow_init));
	if (err)
		return err;
	err = trace_check_pid(eb, pid, allow_init);
	if (err)
		return err;
	err = trace_new_wl(eb, pid, mode, no_children, &w);
	if (err)
		return err;

	pthread_mutex_lock(&eb->ctl);
	old = find_wl(eb, pid);
	/* Workload entry first (gates the programs), then the root, then the
	 * probes (the fork hook among them), and only then the descendants
	 * that already exist: a fork racing with the scan is caught by one or
	 * the other. */
	err = trace_arm(eb, w, old, pid, mode, &kflags);
	if (err)
		goto unlock;
	trace_publish(eb, w, old, kflags);
	/* Its sockets' cgroups, for the framing's scope: before the probes. */
	if (eb->cg2 && ebee_cg2_wl_add(eb->cg2, pid, pid, !no_children))
		logf_(eb, EBEE_LOG_WARN, "ebee: pid %d: out of memory for its cgroups", pid);
	err = sync_kernel(eb, msg, sizeof(msg));
	if (err)
		goto unwind;
	nadopted = trace_adopt_existing(eb, pid, no_children, &nkids);
	pthread_mutex_unlock(&eb->ctl);
	logf_(eb, EBEE_LOG_INFO,
	      "ebee: tracing pid %d (%s, %zu descendants, %zu open connections adopted)", pid,
	      ebee_mode_str(mode), nkids, nadopted);
	return 0;
unwind:
	pthread_mutex_lock(&eb->lock);
	unlink_wl(eb, w);
	pthread_mutex_unlock(&eb->lock);
	ebee_loader_workload_del(eb->loader, pid);
	if (eb->cg2)
		ebee_cg2_wl_del(eb->cg2, pid);
	sync_kernel(eb, NULL, 0);
unlock:
	pthread_mutex_unlock(&eb->ctl);
	free_wl(w);
	return err;
}

int ebee_stop_tracing(struct ebee *eb, pid_t pid)
{
	struct wl *w;

	if (!eb)
		return -EINVAL;
	pthread_mutex_lock(&eb->ctl);
	pthread_mutex_lock(&eb->lock);
	/* Count what completed before the stop, then forget the workload. */
	ebee_loader_consume(eb->loader);
	w = find_wl(eb, pid);
	if (w)
		unlink_wl(eb, w);
	pthread_mutex_unlock(&eb->lock);
	if (!w) {
		pthread_mutex_unlock(&eb->ctl);
		return -ENOENT;
	}
	if (!w->exited)
		ebee_loader_workload_del(eb->loader, pid);
	ebee_grpc_workload_del(eb->grpc, pid); /* gRPC */
	ebee_dgram_workload_del(eb->dgram, pid);
	if (eb->cg2)
		ebee_cg2_wl_del(eb->cg2, pid);
	sync_kernel(eb, NULL, 0);
	pthread_mutex_unlock(&eb->ctl);
	free_wl(w);
	return 0;
}

int ebee_flush(struct ebee *eb)
{
	int n;

	if (!eb)
		return -EINVAL;
	pthread_mutex_lock(&eb->lock);
	n = ebee_loader_consume(eb->loader);
	pthread_mutex_unlock(&eb->lock);
	return n < 0 ? n : 0;
}

/* ---------------------------------------------------------------- queries */

static int query_check(const struct ebee *eb, enum ebee_latency lat)
{
	if (!eb || lat < 0 || lat >= NLAT)
		return -EINVAL;
	if (lat == EBEE_LAT_SOJOURN && eb->path != EBEE_PATH_SOCKET)
		return -EOPNOTSUPP;
	return 0;
}

/* pid's window of latency lat, expired by age; the lock is held. */
static int query_window(struct ebee *eb, pid_t pid, enum ebee_latency lat, struct ebee_window **win)
{
	struct wl *w = find_wl(eb, pid);

	if (!w)
		return -ENOENT;
	*win = w->win[primary_kind(w)][lat];
	if (!*win)
		return -ENODATA;
	if (eb->opts.window_age_ns)
		ebee_window_expire(*win, now_ns());
	return 0;
}

/* Look up pid and its window under the lock, which stays held on success.
 * out is the caller's result pointer: NULL is -EINVAL before anything else. */
static int query_begin(struct ebee *eb, pid_t pid, enum ebee_latency lat, const void *out,
		       struct ebee_window **win)
{
	int err = out ? query_check(eb, lat) : -EINVAL;

	if (err)
		return err;
	pthread_mutex_lock(&eb->lock);
	err = query_window(eb, pid, lat, win);
	if (err)
		pthread_mutex_unlock(&eb->lock);
	return err;
}

int ebee_get_rps(struct ebee *eb, pid_t pid, double *rps)
{
	struct ebee_window *win;
	int err = query_begin(eb, pid, EBEE_LAT_SERVICE, rps, &win);

	if (err)
		return err;
	err = ebee_window_rps(win, rps);
	pthread_mutex_unlock(&eb->lock);
	return err;
}

int ebee_get_latest_latency_of(struct ebee *eb, pid_t pid, enum ebee_latency lat, uint64_t *lat_ns)
{
	struct ebee_window *win;
	int err = query_begin(eb, pid, lat, lat_ns, &win);

	if (err)
		return err;
	err = ebee_window_latest(win, lat_ns);
	pthread_mutex_unlock(&eb->lock);
	return err;
}

int ebee_get_average_latency_of(struct ebee *eb, pid_t pid, enum ebee_latency lat, double *avg_ns)
{
	struct ebee_window *win;
	int err = query_begin(eb, pid, lat, avg_ns, &win);

	if (err)
		return err;
	err = ebee_window_average(win, avg_ns);
	pthread_mutex_unlock(&eb->lock);
	return err;
}

int ebee_get_latency_percentile_of(struct ebee *eb, pid_t pid, enum ebee_latency lat, double p,
				   double *val_ns)
{
	struct ebee_window *win;
	int err;

	if (!(p >= 0 && p <= 100))
		return -EINVAL;
	err = query_begin(eb, pid, lat, val_ns, &win);
	if (err)
		return err;
	err = ebee_window_percentile(win, p, val_ns);
	pthread_mutex_unlock(&eb->lock);
	return err;
}

int ebee_get_latency_percentile_joint(struct ebee *eb, const pid_t *pids, size_t npids,
				      enum ebee_latency lat, double p, double *val_ns)
{
	struct ebee_window **wins;
	size_t n = 0;
	int err = val_ns ? query_check(eb, lat) : -EINVAL;

	if (err)
		return err;
	if (!pids || !npids || !val_ns || !(p >= 0 && p <= 100))
		return -EINVAL;
	wins = malloc(npids * sizeof(*wins));
	if (!wins)
		return -ENOMEM;
	pthread_mutex_lock(&eb->lock);
	for (size_t i = 0; i < npids && !err; i++) {
		bool dup = false;

		err = query_window(eb, pids[i], lat, &wins[n]);
		if (err == -ENODATA) {
			err = 0; /* no window of that latency yet: no requests */
		} else if (!err) {
			for (size_t j = 0; j < n && !dup; j++)
				dup = wins[j] == wins[n]; /* a pid listed twice counts once */
			n += !dup;
		}
	}
	if (!err)
		err = n ? ebee_window_percentile_union(wins, n, p, val_ns) : -ENODATA;
	pthread_mutex_unlock(&eb->lock);
	free(wins);
	return err;
}

int ebee_get_latest_latency(struct ebee *eb, pid_t pid, uint64_t *lat_ns)
{
	return ebee_get_latest_latency_of(eb, pid, EBEE_LAT_SERVICE, lat_ns);
}

int ebee_get_average_latency(struct ebee *eb, pid_t pid, double *avg_ns)
{
	return ebee_get_average_latency_of(eb, pid, EBEE_LAT_SERVICE, avg_ns);
}

int ebee_get_latency_percentile(struct ebee *eb, pid_t pid, double p, double *val_ns)
{
	return ebee_get_latency_percentile_of(eb, pid, EBEE_LAT_SERVICE, p, val_ns);
}

/* One more reason the figures cannot be taken as exact: untrusted, and the
 * reason after those before it ("; " between), cut to the field's size. */
__attribute__((format(printf, 2, 3))) static void warn_add(struct ebee_stats *s, const char *fmt,
							   ...)
{
	size_t off = strlen(s->warning);
	va_list ap;

	s->untrusted = true;
	if (off && off + 2 < sizeof(s->warning))
		off += snprintf(s->warning + off, sizeof(s->warning) - off, "; ");
	if (off + 1 >= sizeof(s->warning))
		return;
	va_start(ap, fmt);
	vsnprintf(s->warning + off, sizeof(s->warning) - off, fmt, ap);
	va_end(ap);
}

/* Connections counted by length whose client sent while a response was being
 * written (bpf/ebee.bpf.c, sock_overlap): with or without framing on. */
static void stats_overlap(struct ebee_stats *s, const struct ebee_fstat *f)
{
	s->overlap = f->overlap;
	if (f->overlap)
		warn_add(s,
			 "%llu connection(s) counted by length had a client that sent more "
			 "while a response was being written (pipelining, streaming): "
			 "requests read together count as one",
			 (unsigned long long)f->overlap);
}

/* framing, untrusted and warning of ebee_get_stats(): the framer most of
 * the workload's connections use, and what the framing counters say cannot
 * be counted exactly (docs/design.md 4.9). */
static void stats_framing(struct ebee *eb, pid_t pid, struct ebee_stats *s)
{
	struct ebee_fstat f = {};
	int best = EBEE_FRAME_NONE;

	if (s->warning[0]) /* the dgram pattern's */
		s->untrusted = true;
	if (s->mode == EBEE_MODE_DGRAM) {
		snprintf(s->framing, sizeof(s->framing), "dgram");
		return;
	}
	if (s->mode == EBEE_MODE_GRPC) {
		snprintf(s->framing, sizeof(s->framing), "grpc");
		return;
	}
	if (eb->path != EBEE_PATH_SOCKET || !(eb->probes_now & EBEE_PROBE_SOCK_FRAME) ||
	    ebee_loader_fstat(eb->loader, pid, &f)) {
		/* No bytes seen (syscall path, framing off) or no connection yet. */
		snprintf(s->framing, sizeof(s->framing), "%s",
			 eb->path == EBEE_PATH_SOCKET && !eb->opts.no_framing ? "" : "length");
		/* Framing off, the socket path still sees clients that do not wait. */
		if (eb->path == EBEE_PATH_SOCKET && !ebee_loader_fstat(eb->loader, pid, &f))
			stats_overlap(s, &f);
		return;
	}
	for (int i = EBEE_FRAME_LENGTH; i < EBEE_FRAME_MAX; i++)
		if (f.conns[i] > (best ? f.conns[best] : 0))
			best = i;
	snprintf(s->framing, sizeof(s->framing), "%s", ebee_frame_name(best));
	s->desync_conns = f.desync_conns;
	s->aborted = f.aborted;
	s->untimed = f.untimed;
	s->unanswered = f.unanswered;
	s->verified = f.verified;
	s->late = f.late;
	s->handshake_data = f.hsdata;
	s->unseen = f.unseen;
	s->reordered = f.reordered;
	for (int i = EBEE_FRAME_LENGTH; i < EBEE_FRAME_MAX; i++) {
		const char *why = ebee_frame_warning(i);
		char more[sizeof(s->warning)];

		if (f.conns[i] && !why && ebee_frame_check(i, &f, more, sizeof(more)) > 0)
			why = more;
		if (f.conns[i] && why)
			warn_add(s, "%s on %llu connection(s): %s", ebee_frame_name(i),
				 (unsigned long long)f.conns[i], why);
	}
	if (f.unseen)
		warn_add(s,
			 "%llu connection(s) began with bytes ebee did not see (they came "
			 "with the handshake and were lost, or did not parse): counted by length",
			 (unsigned long long)f.unseen);
	if (f.desync_conns)
		warn_add(s,
			 "%llu framed connection(s) lost sync (%llu time(s): %llu at a sequence "
			 "gap, %llu at bytes that did not parse, %llu at a walk cut short): "
			 "requests in the gap are not counted",
			 (unsigned long long)f.desync_conns, (unsigned long long)f.desync,
			 (unsigned long long)f.desync_gap,
			 (unsigned long long)(f.desync - f.desync_gap - f.desync_cut),
			 (unsigned long long)f.desync_cut);
	if (f.late)
		warn_add(s,
			 "%llu connection(s) counted by length once their requests came one "
			 "at a time later sent several together: the bursts read before a "
			 "sample (one in %d segments arriving between requests) saw it may "
			 "count as one request each",
			 (unsigned long long)f.late, EBEE_FV_SAMPLE);
	stats_overlap(s, &f);
	if (f.untimed)
		warn_add(s,
			 "%llu HTTP/2 stream(s) beyond %d in flight on a connection were "
			 "not counted",
			 (unsigned long long)f.untimed, EBEE_H2_SLOTS);
	if (f.unmatched)
		warn_add(s, "%llu response(s) had no request to pair with",
			 (unsigned long long)f.unmatched);
}

int ebee_get_stats(struct ebee *eb, pid_t pid, struct ebee_stats *st)
{
	struct ebee_stats s = {};
	struct ebee_window *win;
	struct wl *w;
	size_t sz;

	if (!eb || !st || st->sz < sizeof(size_t))
		return -EINVAL;
	sz = st->sz < sizeof(s) ? st->sz : sizeof(s);
	pthread_mutex_lock(&eb->lock);
	w = find_wl(eb, pid);
	if (!w) {
		pthread_mutex_unlock(&eb->lock);
		return -ENOENT;
	}
	s.sz = sz;
	s.requests = wl_requests(w);
	s.mode = w->mode;
	s.req_mode = w->req_mode;
	s.mode_switches = w->switches;
	s.exited = w->exited;
	if (w->exited) {
		s.dropped = w->dropped_final;
		s.probes = 0;
	} else {
		s.probes = flags_probes(eb, w->kflags) &
			   (eb->probes_now | (eb->grpc_probes_now ? EBEE_PROBE_GRPC : 0) |
			    (eb->dgram_probes_now ? EBEE_PROBE_DGRAM : 0));
	}
	s.expired = w->dg.expired;
	snprintf(s.warning, sizeof(s.warning), "%s", w->warning);
	win = w->win[primary_kind(w)][EBEE_LAT_SERVICE];
	if (win) {
		if (eb->opts.window_age_ns)
			ebee_window_expire(win, now_ns());
		s.window_count = ebee_window_count(win);
		s.window_span_ns = ebee_window_span(win);
	}
	pthread_mutex_unlock(&eb->lock);
	/* Map reads and walks outside the lock: queries never wait on them. */
	if (!s.exited) {
		ebee_loader_workload_dropped(eb->loader, pid, &s.dropped);
		s.nprocs = ebee_loader_proc_count(eb->loader, pid);
	}
	stats_framing(eb, pid, &s);
	memcpy(st, &s, sz);
	return 0;
}

int ebee_get_global_stats(struct ebee *eb, struct ebee_global_stats *st)
{
	struct ebee_global_stats s = {};
	size_t sz;

	if (!eb || !st || st->sz < sizeof(size_t))
		return -EINVAL;
	sz = st->sz < sizeof(s) ? st->sz : sizeof(s);
	pthread_mutex_lock(&eb->lock);
	s.sz = sz;
	s.records = eb->records;
	s.probes = eb->probes_now | (eb->grpc_probes_now ? EBEE_PROBE_GRPC : 0) |
		   (eb->dgram_probes_now ? EBEE_PROBE_DGRAM : 0);
	s.workloads = eb->nwls;
	pthread_mutex_unlock(&eb->lock);
	s.grpc_streams = ebee_grpc_stream_count(eb->grpc); /* gRPC */
	s.dropped = ebee_loader_counter(eb->loader, EBEE_CNT_DROPPED) +
		    ebee_grpc_counter(eb->grpc, EBEE_GCNT_DROPPED); /* both rings */
	s.conn_entries = ebee_loader_conn_count(eb->loader);
	s.path = eb->path;
	s.attach_io = eb->attach.io;
	s.attach_arrive = eb->attach.arrive;
	s.attach_state = eb->attach.state;
	memcpy(st, &s, sz);
	return 0;
}
