/* SPDX-License-Identifier: MIT */
/*
 * ebee: server-side request latency and throughput of unmodified processes,
 * observed from eBPF events alone (the eBeeMetrics design).
 *
 * This is the only header of the tracing core that other modules include. It
 * exposes no libbpf type. Conventions follow libbpf: calls returning int give 0
 * or a negative errno; calls returning a pointer give NULL and set errno;
 * options structs start with their size so they can grow.
 *
 * Threading: one internal consumer thread drains the BPF ring buffers into the
 * per-workload windows. Every call below may be made from any thread; queries
 * take the workload's lock for O(1) or O(log n) time only.
 *
 * Units: latencies and times are nanoseconds of CLOCK_MONOTONIC (the clock of
 * bpf_ktime_get_ns()).
 */
#ifndef EBEE_H
#define EBEE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* This build traces gRPC C-core servers (EBEE_MODE_GRPC): callers may check
 * it before asking for grpc (a process must still map a C-core: see
 * ebee_grpc_maps_core()). */
#define EBEE_HAVE_GRPC 1

/* How request boundaries are found for one workload (docs/design.md 4.1). */
enum ebee_mode {
	EBEE_MODE_AUTO = 0, /* observe, then choose conn or io (and revisit) */
	EBEE_MODE_CONN,	    /* accept/accept4 returns fd .. close(fd) */
	EBEE_MODE_IO,	    /* first read after a response .. last write before next read */
	EBEE_MODE_GRPC,	    /* chttp2 stream constructor .. stream close (uprobes) */
	EBEE_MODE_DGRAM,    /* UDP: a datagram received .. the next one sent to its peer */
	EBEE_MODE_COUNT,
};

/* Probe groups; a workload's live probe set is a mask of these. The syscall
 * path uses ACCEPT..WRITE, the socket path SOCK_*; both use FORK. */
enum ebee_probe {
	EBEE_PROBE_ACCEPT = 1u << 0,	 /* sys_exit_accept, sys_exit_accept4 */
	EBEE_PROBE_CLOSE = 1u << 1,	 /* sys_enter_close, sys_enter_shutdown */
	EBEE_PROBE_READ = 1u << 2,	 /* read, readv, recvfrom, recvmsg (enter+exit) */
	EBEE_PROBE_WRITE = 1u << 3,	 /* write, writev, sendto, sendmsg, sendfile (enter+exit) */
	EBEE_PROBE_FORK = 1u << 4,	 /* sched_process_fork, sched_process_exit */
	EBEE_PROBE_GRPC = 1u << 5,	 /* libgrpc uprobes */
	EBEE_PROBE_SOCK_STATE = 1u << 6, /* sock:inet_sock_set_state (handshake, close) */
	EBEE_PROBE_SOCK_IO = 1u << 7,	 /* sock:sock_recv_length, sock:sock_send_length */
	EBEE_PROBE_SOCK_ARRIVE = 1u << 8, /* sock:sk_data_ready (io sojourn start) */
	EBEE_PROBE_DGRAM = 1u << 9,	  /* UDP: sock_{recv,send}_length, sk_data_ready, and
					     cgroup recvmsg/sendmsg hooks on the cgroup v2 root */
	EBEE_PROBE_SOCK_FRAME = 1u << 10, /* cgroup_skb ingress/egress: bytes for the framers */
};

/* Which kernel hooks find requests (docs/usage.md "Two paths"). */
enum ebee_path {
	EBEE_PATH_AUTO = 0, /* socket when the kernel has its tracepoints, else syscall */
	EBEE_PATH_SOCKET,   /* sock:* tracepoints; requests keyed by socket */
	EBEE_PATH_SYSCALL,  /* syscall tracepoints; requests keyed by (tgid, fd) */
};

/* How the socket path's request hooks (I/O and data arrival) attach to the
 * kernel (docs/usage.md "Two paths"). The handshake/close hook is always the
 * sock:inet_sock_set_state tracepoint (Linux >= 4.16). */
enum ebee_attach {
	EBEE_ATTACH_AUTO = 0, /* per hook: tp_btf where its tracepoint exists, else fentry */
	EBEE_ATTACH_TP_BTF,   /* the BTF tracepoints sock:sock_{recv,send}_length, sk_data_ready */
	EBEE_ATTACH_FENTRY,   /* fexit/fentry on the kernel functions they sit in (needs no
				 lockdown); kernels without the tracepoints, e.g. 6.1 */
};

/* Which latency of a request a query reads. */
enum ebee_latency {
	EBEE_LAT_SERVICE = 0, /* the server's first read (or accept) .. end of the response */
	EBEE_LAT_SOJOURN,     /* arrival at the server (data or handshake) .. end of response */
};

/* "auto", "socket", "syscall" or NULL; parse gives 0 or -EINVAL. */
const char *ebee_path_str(enum ebee_path path);
int ebee_path_parse(const char *s, enum ebee_path *path);
/* "auto", "tp_btf", "fentry" or NULL; parse gives 0 or -EINVAL. */
const char *ebee_attach_str(enum ebee_attach attach);
int ebee_attach_parse(const char *s, enum ebee_attach *attach);
/* "service", "sojourn" or NULL; parse gives 0 or -EINVAL. */
const char *ebee_latency_str(enum ebee_latency lat);
int ebee_latency_parse(const char *s, enum ebee_latency *lat);

/* Name of a mode ("auto", "conn", "io", "grpc", "dgram") or NULL. */
const char *ebee_mode_str(enum ebee_mode mode);
/* Parse a mode name; 0 or -EINVAL. */
int ebee_mode_parse(const char *s, enum ebee_mode *mode);
/* Write the probe mask as "accept,close,read,write,fork" into buf; returns buf. */
char *ebee_probes_str(unsigned int mask, char *buf, size_t len);

enum ebee_log_level { EBEE_LOG_WARN, EBEE_LOG_INFO, EBEE_LOG_DEBUG };
typedef void (*ebee_log_fn)(enum ebee_log_level level, const char *msg, void *ctx);

struct ebee_opts {
	size_t sz;		/* sizeof(struct ebee_opts) */
	size_t ringbuf_size;	/* bytes of each CPU's ring, power of two >= page, all CPUs'
				   rings <= 1 GiB; 0 = 1 MiB, less
				   when all CPUs' would pass 32 MiB
				   (not under 128 KiB) */
	size_t window_len;	/* records kept per workload (N); 0 = 100000 */
	uint64_t window_age_ns; /* also drop records older than this; 0 = no age limit */
	unsigned int drain_ms;	/* consumer drain period; 0 = 20 ms */
	unsigned int max_conns; /* in-flight connection entries (LRU); 0 = 65536 */
	/* Auto mode: evidence needed before choosing, and how often a conn-mode
	 * workload gets its io probes back for a re-check. 0 = defaults. */
	unsigned int auto_min_conns;	  /* closed connections; default 8 */
	unsigned int auto_min_requests;	  /* io requests on open connections; default 32 */
	unsigned int auto_recheck_ms;	  /* default 10000 */
	unsigned int auto_recheck_len_ms; /* default 1000 */
	ebee_log_fn log;		  /* NULL: warnings to stderr */
	void *log_ctx;
	enum ebee_log_level log_level; /* highest level passed to log */
	enum ebee_path path;	       /* EBEE_PATH_AUTO by default */
	/* Called for every completed request counted for a workload (records of
	 * the pattern its mode reads), as the consumer thread drains them, to
	 * build histograms or exports without polling. In EBEE_MODE_AUTO, until
	 * the choice, that is the pattern in front at each moment, so a sum of
	 * what it was given can differ from ebee_stats.requests by the few
	 * requests of the pattern that lost. Runs with the library's lock held:
	 * keep it short and call nothing of this API from it. NULL: none. */
	void (*on_request)(pid_t pid, uint64_t lat_ns, void *ctx);
	void *on_request_ctx;
	/* Socket path: how its request hooks attach; forcing one the kernel
	 * cannot do fails ebee_open with the reason. EBEE_ATTACH_AUTO by
	 * default. */
	enum ebee_attach attach;
	/* Socket path: do not read bytes (no cgroup_skb programs, no framer):
	 * every workload is framed by length. false by default. */
	bool no_framing;
};

/* Per-workload tracing options. */
struct ebee_trace_opts {
	size_t sz;	     /* sizeof(struct ebee_trace_opts) */
	enum ebee_mode mode; /* EBEE_MODE_AUTO by default */
	bool no_children;    /* trace this tgid only, not its descendants */
	/* pid 1 is init: tracing it traces every process on the host, so it is
	 * refused (-EPERM) unless this is set (the CLI's --all). */
	bool allow_init;
};

struct ebee;

/*
 * Choose the path (opts->path; auto: socket if the kernel has the socket
 * tracepoints or lets fentry/fexit programs stand in for them, opts->attach),
 * check what it needs (root/CAP_BPF+CAP_PERFMON, BTF, ring
 * buffer; the syscall path also tracefs and task storage), load that path's
 * BPF programs and start the consumer and housekeeping threads; the path in
 * use is in ebee_global_stats.path and logged at INFO. On failure returns NULL
 * with errno set; if msg is non-NULL it receives a one-line reason with the
 * fix (at most msg_len bytes). Every options struct here is read as libbpf
 * reads its own: a larger sz (a newer ebee.h) is fine while the bytes this
 * library does not know are zero; a non-zero one is E2BIG.
 */
struct ebee *ebee_open(const struct ebee_opts *opts, char *msg, size_t msg_len);
/* Stop every workload, detach everything, free. NULL is fine. */
void ebee_close(struct ebee *eb);

/*
 * Start tracing pid (a tgid) and, unless opts->no_children, every process it
 * has forked or forks later. Their requests are reported under pid.
 * -ESRCH: no such process; -EEXIST: already traced; -ENOSPC: too many;
 * -EOPNOTSUPP: mode grpc on a process (and descendants) that maps no usable
 * libgrpc (the reason goes to the log callback at EBEE_LOG_WARN); -EPERM:
 * pid 1 without opts->allow_init; -EINVAL: a kernel thread (kthreadd
 * included), or a thread id; -E2BIG: opts sets fields unknown to this
 * library. Refusals are logged at EBEE_LOG_WARN. Every query below returns
 * -EINVAL for a NULL result pointer.
 */
int ebee_start_tracing(struct ebee *eb, pid_t pid, const struct ebee_trace_opts *opts);
/* Stop tracing pid; its requests are no longer counted. Its window is freed. */
int ebee_stop_tracing(struct ebee *eb, pid_t pid);

/* Drain the ring buffer now, so that every request completed before the call
 * is reflected in the queries. */
int ebee_flush(struct ebee *eb);

/*
 * The four queries of the paper, over the workload's window. Each returns 0,
 * -ENOENT (pid not traced) or -ENODATA (empty window; for rps, fewer than two
 * records).
 */
int ebee_get_rps(struct ebee *eb, pid_t pid, double *rps);
int ebee_get_latest_latency(struct ebee *eb, pid_t pid, uint64_t *lat_ns);
int ebee_get_average_latency(struct ebee *eb, pid_t pid, double *avg_ns);
/* Exact percentile p in [0, 100] (-EINVAL outside), with numpy's default
 * "linear" interpolation: rank h = (n - 1) * p / 100 over the sorted window,
 * value = x[floor(h)] + (h - floor(h)) * (x[floor(h) + 1] - x[floor(h)]). */
int ebee_get_latency_percentile(struct ebee *eb, pid_t pid, double p, double *val_ns);

/*
 * The same queries for either latency (the four above read EBEE_LAT_SERVICE).
 * Sojourn needs the socket path: -EOPNOTSUPP on the syscall path, which cannot
 * see a request before the server reads it.
 */
int ebee_get_latest_latency_of(struct ebee *eb, pid_t pid, enum ebee_latency lat, uint64_t *lat_ns);
int ebee_get_average_latency_of(struct ebee *eb, pid_t pid, enum ebee_latency lat, double *avg_ns);
int ebee_get_latency_percentile_of(struct ebee *eb, pid_t pid, enum ebee_latency lat, double p,
				   double *val_ns);
/* Every value ebee_stats.framing may hold, comma-separated ("length, resp,
 * ..., grpc, dgram"): the framers of bpf/frame/frame.h's list, then the
 * patterns that frame by themselves. For help texts; never NULL. */
const char *ebee_framing_list(void);

/*
 * The percentile over the requests of several traced pids taken together, as
 * if they were one workload (every process of a cgroup, each traced on its
 * own): exact, like the above, not a maximum or mean of per-pid percentiles;
 * a pid listed twice counts once. -ENOENT if a pid is not traced, -ENODATA
 * if none has a request in its window, -EINVAL for no pids or p outside
 * [0, 100].
 */
int ebee_get_latency_percentile_joint(struct ebee *eb, const pid_t *pids, size_t npids,
				      enum ebee_latency lat, double p, double *val_ns);

struct ebee_stats {
	size_t sz;		 /* set by the caller: sizeof(struct ebee_stats) */
	uint64_t requests;	 /* completed while traced (not only in the window),
				  * counted in the kernel: lost records included */
	uint64_t dropped;	 /* records the kernel could not queue for this workload */
	enum ebee_mode mode;	 /* chosen mode; AUTO while still undecided */
	enum ebee_mode req_mode; /* what the caller asked for */
	unsigned int probes;	 /* live probe set for this workload (enum ebee_probe) */
	uint64_t window_count;	 /* records in the window */
	uint64_t window_span_ns; /* newest end - oldest end */
	uint64_t mode_switches;	 /* times the auto choice changed */
	uint32_t nprocs;	 /* processes in the workload (pid and descendants) */
	bool exited;		 /* the traced pid has exited */
	/* dgram: requests (datagrams received) that got no response from the
	 * workload before they expired (one-way traffic: not requests). */
	uint64_t expired;
	/* Framing (docs/design.md 4.9): callers built against an older ebee.h
	 * pass a smaller sz and get what they know. */
	char framing[16];      /* how requests are delimited: one of ebee_framing_list();
				* "" before the first connection */
	bool untrusted;	       /* the figures cannot be taken as exact: warning says why */
	char warning[256];     /* "" or the reasons (enum ebee_warn), "; " between,
				* each whole: those that do not fit are counted at
				* the end; ebee_get_warnings() gives each */
	uint64_t desync_conns; /* framed connections that lost sync at least once */
	uint64_t aborted;      /* HTTP/2: requests ended by a reset (RST_STREAM) from either
				* side; counted in requests, timed to the reset */
	uint64_t untimed;      /* HTTP/2: streams opened while 64 were in flight on their
				* connection: not counted (untrusted says so) */
	uint64_t unanswered;   /* memcached: requests no response answers (noreply, quiet
				* opcodes, quit): not in requests, informational */
	uint64_t verified;     /* memcached: connections counted by length once
				* 32 requests in a row came one at a time (one
				* segment in 16 still parsed, to see that it holds) */
	uint64_t late;	       /* ... of them, found sending requests together by a
				* sample (untrusted: bursts before it may count as one) */
	uint64_t handshake_data; /* connections whose first bytes completed the
				  * handshake (TCP_DEFER_ACCEPT, data ahead of the ACK):
				  * framed from what ebee saw at the listener */
	uint64_t unseen;	 /* connections whose first bytes ebee did not see:
				  * counted by length (untrusted says so) */
	uint64_t overlap;	 /* socket path: connections counted by length whose
				  * client sent more while a response was being written
				  * (pipelining, streaming: untrusted says so) */
	uint64_t reordered;	 /* framing: client segments that reached ebee before
				  * the bytes just before them (sent from two CPUs, one
				  * held back): held and parsed in order, not a gap */
	uint64_t warn_kinds;	 /* the reasons of warning: bit (1 << enum ebee_warn) each */
	/* requests and rps come from counters the BPF programs keep, exact
	 * when records are lost (dropped); the latencies are over the records
	 * that arrived, this share of the window's requests. More than 1% lost
	 * makes the workload untrusted (docs/design.md, request counters). */
	double covered;		  /* 0..1; 1 when none was lost */
	uint64_t window_requests; /* requests the kernel counted over the window's span */
	uint64_t window_lost;	  /* ... of them, whose records were lost */
	uint64_t midstream;	  /* framing: connections whose first bytes went by
				   * unseen (opened before tracing), framed from where
				   * their protocol was found again, not by length */
	uint64_t resync;	  /* framing: times a direction that lost sync found
				   * a message start again and was parsed from there */
	uint64_t desync;	  /* framing: times a direction lost sync (a sequence
				   * gap, bytes that did not parse, a walk cut short) */
	uint64_t gap_lost;	  /* framing, HTTP/2: streams the client opened inside
				   * a gap (its stream ids skipped), not in requests:
				   * never timed. Other framers' gaps are not a number */
	uint64_t regained;	  /* framing: times a connection that lost sync was
				   * trusted again, EBEE_FRAME_REGAIN requests answered
				   * in sync after its resync */
	uint64_t regaining;	  /* framing: connections that lost sync not trusted
				   * again yet (untrusted while any is) */
};

int ebee_get_stats(struct ebee *eb, pid_t pid, struct ebee_stats *st);

/*
 * Why a workload's figures cannot be taken as exact: a fixed set of reasons,
 * any of which makes ebee_stats.untrusted. Each has a short, stable id
 * (ebee_warn_str(): a Prometheus label, a JSON value) and, for a workload, a
 * count (what it counts is said below) and a text with its figures.
 */
enum ebee_warn {
	EBEE_WARN_UDP_UNANSWERED, /* "udp_unanswered": UDP datagrams received, none
				   * answered to its sender (count: datagrams) */
	EBEE_WARN_TLS_MUX,	  /* "tls_mux": TLS connections that offered h2 or a
				   * ClientHello ebee could not read (connections) */
	EBEE_WARN_TLS_AGAIN,	  /* "tls_again": TLS connections whose client wrote
				   * again before a reply (connections) */
	EBEE_WARN_MC_QUIET,	  /* "memcache_quiet": memcached connections with meta
				   * commands in quiet mode (connections) */
	EBEE_WARN_UNSEEN,	  /* "unseen": ebee_stats.unseen (connections) */
	EBEE_WARN_DESYNC,	  /* "desync": ebee_stats.regaining (connections that lost
				   * sync, not trusted again yet) */
	EBEE_WARN_LATE,		  /* "late": ebee_stats.late (connections) */
	EBEE_WARN_OVERLAP,	  /* "overlap": ebee_stats.overlap (connections) */
	EBEE_WARN_UNTIMED,	  /* "untimed": ebee_stats.untimed (HTTP/2 streams) */
	EBEE_WARN_UNMATCHED,	  /* "unmatched": responses with no request (responses) */
	EBEE_WARN_LOST,		  /* "lost": requests of the window whose records a full
				   * ring lost, over EBEE_KC_LOST_MAX (requests) */
	EBEE_WARN_NO_REQUESTS,	  /* "no_requests": the workload's connections moved
				   * bytes while no request was counted, since tracing
				   * began or over the window's age; the text says why
				   * (bytes) */
	EBEE_WARN_COUNT,	  /* a caller built against an older ebee.h knows fewer */
};

/* The id of a reason ("tls_again"); NULL for a kind this library does not know. */
const char *ebee_warn_str(enum ebee_warn kind);

/* One reason, as ebee_get_warnings() hands it over: the strings are the
 * library's, valid during the callback only. */
struct ebee_warning {
	enum ebee_warn kind;
	const char *id;	  /* ebee_warn_str(kind) */
	uint64_t count;	  /* what the kind counts (enum ebee_warn) */
	const char *text; /* the reason with its figures, whole, never cut */
};

/* Called once per reason; a non-zero return stops the walk and is returned. */
typedef int (*ebee_warning_fn)(const struct ebee_warning *w, void *ctx);

/*
 * ebee_get_stats() and the reasons its untrusted rests on, from one reading:
 * st is filled as ebee_get_stats() fills it (NULL: not wanted), and fn (NULL:
 * none) is called for each reason in the order of enum ebee_warn. 0, fn's
 * non-zero return, or the errors of ebee_get_stats().
 */
int ebee_get_warnings(struct ebee *eb, pid_t pid, struct ebee_stats *st, ebee_warning_fn fn,
		      void *ctx);

/*
 * A figure with its trust, in one call: the rate or percentile of the
 * queries above, and whether ebee can vouch for the requests it counted, the
 * verdict ebee_get_stats() gives as untrusted and warning. The figure and the
 * workload state the verdict rests on (mode, the UDP warning) are read under
 * one hold of the library's lock, so a mode switch cannot fall between them;
 * the kernel's framing counters are read right after, as ebee_get_stats()
 * reads them.
 *
 * trust may be NULL (then each call is the query without _trust). Its sz is
 * the caller's sizeof(struct ebee_trust): a caller built against an older
 * ebee.h gets the fields it knows; below sizeof(size_t) is -EINVAL. It is
 * filled when the call returns 0 or -ENODATA (the pids are traced), and left
 * alone on any other error.
 */
struct ebee_trust {
	size_t sz;		 /* set by the caller: sizeof(struct ebee_trust) */
	bool untrusted;		 /* some pid the figure covers: its ebee_stats.untrusted */
	pid_t pid;		 /* the first such pid, in the order listed; 0 if none */
	unsigned int nuntrusted; /* how many of the pids listed are untrusted */
	char warning[256];	 /* that pid's ebee_stats.warning: why (each reason:
				  * ebee_get_warnings() of that pid) */
	uint64_t warn_kinds;	 /* that pid's ebee_stats.warn_kinds */
};

/* ebee_get_rps() with the trust of pid's figures. */
int ebee_get_rps_trust(struct ebee *eb, pid_t pid, double *rps, struct ebee_trust *trust);
/* ebee_get_latency_percentile_of() with the trust of pid's figures. */
int ebee_get_latency_percentile_trust(struct ebee *eb, pid_t pid, enum ebee_latency lat, double p,
				      double *val_ns, struct ebee_trust *trust);
/* ebee_get_latency_percentile_joint() with the trust of every pid listed
 * (one untrusted pid makes the figure untrusted). */
int ebee_get_latency_percentile_joint_trust(struct ebee *eb, const pid_t *pids, size_t npids,
					    enum ebee_latency lat, double p, double *val_ns,
					    struct ebee_trust *trust);

/* Library-wide counters. */
struct ebee_global_stats {
	size_t sz;
	uint64_t dropped;	/* ring buffer reservations that failed, all CPUs */
	uint64_t records;	/* records consumed */
	unsigned int probes;	/* probe groups attached in the kernel now */
	unsigned int workloads; /* workloads traced */
	uint64_t conn_entries;	/* in-flight connection map entries (syscall path: slow,
				 * walks the map; socket path: live socket storages,
				 * handshakes not yet claimed included) */
	uint64_t grpc_streams;	/* in-flight gRPC server streams (slow: walks the map) */
	enum ebee_path path;	/* the path in use: EBEE_PATH_SOCKET or EBEE_PATH_SYSCALL */
	/* Socket path: how each hook group is attached (TP_BTF or FENTRY);
	 * EBEE_ATTACH_AUTO on the syscall path. */
	enum ebee_attach attach_io;	/* sock_recv/sock_send (EBEE_PROBE_SOCK_IO) */
	enum ebee_attach attach_arrive; /* data ready (EBEE_PROBE_SOCK_ARRIVE) */
	enum ebee_attach attach_state;	/* handshake, close (EBEE_PROBE_SOCK_STATE): TP_BTF */
};
int ebee_get_global_stats(struct ebee *eb, struct ebee_global_stats *st);

/*
 * Does pid (the process alone, not its descendants) map a gRPC C-core that
 * mode grpc looks for: a libgrpc*.so by name, or any regular file mapped
 * executable whose .dynsym or .symtab defines the chttp2 functions (a C-core
 * linked statically into a program or an extension module)? 1 yes, 0 no,
 * -ESRCH: no such process, or another negative errno. Needs no struct ebee;
 * files are read once per process lifetime (a cache by device, inode, size
 * and mtime).
 */
int ebee_grpc_maps_core(pid_t pid);

#ifdef __cplusplus
}
#endif
#endif /* EBEE_H */
