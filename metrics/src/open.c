// SPDX-License-Identifier: MIT
/*
 * Opening and closing an ebee: the options and their defaults, the BPF
 * objects of the path this kernel allows, the threads.
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "core.h"
#include "feature_check.h"

/* dgram: how long a request waits for its response before it expires
 * (one-way traffic). */
#define DGRAM_TIMEOUT_NS (1000ull * 1000 * 1000)

/* Each CPU's ring by default: 1 MiB, as long as all of them stay within
 * 32 MiB (then less, down to 128 KiB). The ring is the time the consumer may
 * be kept off a CPU before records are lost: 128 KiB held 0.2 s of HTTP/2 at
 * 17 000 requests/s on one CPU, and a host at load 12 kept the consumer away
 * longer (726 records lost in test_ebee_frame_h2.sh, the workload untrusted);
 * 1 MiB holds 1.5 s of that. */
static size_t open_default_ring(void)
{
	int ncpus = libbpf_num_possible_cpus();
	size_t rs = 1024 * 1024;

	while (ncpus > 0 && rs > 128 * 1024 && rs * (size_t)ncpus > 32ul * 1024 * 1024)
		rs /= 2;
	return rs;
}

/* The caller's options, each zero or absent field taking its default. */
static void open_set_opts(struct ebee *eb, const struct ebee_opts *opts)
{
	eb->opts.sz = sizeof(eb->opts);
	eb->opts.ringbuf_size = OPT(opts, ringbuf_size, open_default_ring());
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
	lo.on_record = ebee_threads_on_record;
	lo.ctx = eb;
	err = ebee_loader_open(&lo, &eb->loader, msg, msg_len);
	if (err)
		return err;
	/* gRPC: optional; without it, mode grpc says why. */
	if (ebee_grpc_open(eb->loader, eb->opts.ringbuf_size, eb->opts.max_conns, &eb->grpc,
			   eb->grpc_err, sizeof(eb->grpc_err)))
		ebee_logf(eb, EBEE_LOG_INFO, "%s", eb->grpc_err);
	/* dgram: optional too; without it, mode dgram says why. Its hooks
	 * attach as the socket path's would (on the syscall path too). */
	if (lo.sock_path)
		dga = eb->attach;
	else if (ebee_check_sock_attach(&dga, eb->dgram_err, sizeof(eb->dgram_err)))
		dga.io = dga.arrive = EBEE_ATTACH_TP_BTF; /* the load then says why not */
	if (ebee_dgram_open(eb->loader, &dga, eb->opts.ringbuf_size, eb->opts.max_conns,
			    DGRAM_TIMEOUT_NS, &eb->dgram, eb->dgram_err, sizeof(eb->dgram_err)))
		ebee_logf(eb, EBEE_LOG_INFO, "%s", eb->dgram_err);
	/* Framing's scope; without a cgroup v2 mount the root, whose
	 * absence the loader reports when framing attaches. */
	if (lo.sock_path && !eb->opts.no_framing)
		ebee_cg2_open(&eb->cg2);
	eb->epfd = ebee_loader_epoll_fd(eb->loader);
	return 0;
}

static void open_log_path(struct ebee *eb)
{
	if (eb->path == EBEE_PATH_SOCKET)
		ebee_logf(eb, EBEE_LOG_INFO,
			  "ebee: socket path (requests keyed by socket; io: %s, arrive: %s, state: "
			  "%s)",
			  eb->attach.io == EBEE_ATTACH_FENTRY ? "fexit" : "tp_btf",
			  eb->attach.arrive == EBEE_ATTACH_FENTRY ? "fentry" : "tp_btf",
			  ebee_attach_str(eb->attach.state));
	else
		ebee_logf(eb, EBEE_LOG_INFO,
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
	err = ebee_threads_start(eb, msg, msg_len);
	if (err)
		goto fail;
	open_log_path(eb);
	return eb;
fail:
	ebee_close(eb);
	errno = -err;
	return NULL;
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
		ebee_wl_free(w);
	}
	ebee_grpc_close(eb->grpc);
	ebee_dgram_close(eb->dgram);
	ebee_loader_close(eb->loader);
	ebee_cg2_close(eb->cg2);
	pthread_mutex_destroy(&eb->lock);
	pthread_mutex_destroy(&eb->ctl);
	free(eb);
}
