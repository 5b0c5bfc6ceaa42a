// SPDX-License-Identifier: MIT
/*
 * The loader of bpf/ebee.bpf.c, the BPF object behind libebee: load, probe
 * groups, maps, ring buffer.
 *
 * Probes are attached per group, not per workload: one set of programs serves
 * every traced process, gated in the kernel by the procs/workloads maps. A
 * group is attached while some workload needs it and detached when none does
 * (the paper's pruning), because an attached syscall tracepoint runs its
 * program on every matching syscall of every process on the host.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cgroupfs.h"
#include "ebee.h"
#include "loader.h"
#include "ebee.skel.h"

#define MAX_GROUP_PROGS 10
#define RINGS_TOTAL_MAX (1UL << 30) /* bytes of ring buffer, all CPUs together */

struct ebee_loader {
	struct ebee_bpf *skel;
	struct ring_buffer *rb;
	int *ring_fds; /* the per-CPU rings of the rbs map, [ncpus] */
	struct ebee_loader_opts opts;
	unsigned int probes;
	/* links per group, in the order of group_progs() */
	struct bpf_link *links[EBEE_NPROBE_GROUPS][MAX_GROUP_PROGS];
	int nlinks[EBEE_NPROBE_GROUPS];
	int ncpus;
	uint32_t wl_epoch; /* last struct ebee_wl.epoch handed out */
	/* Where the framing program attaches (cgv2.h): directory fds of the
	 * scope's cgroups, none for the cgroup v2 root; and, while its group
	 * is live, its links, one per hook and cgroup (one program for both
	 * hooks, which libbpf's attach cannot express: it takes the direction
	 * from the section name). */
	int *scope_fds;
	size_t nscope;
	int *frame_links;
	size_t nframe_links;
};

/* The root of the cgroup v2 hierarchy, wherever it is mounted: the
 * framing program's attach point when no scope is set (cgv2.h). */
static int cgroup2_root_open(void)
{
	char mnt[1024];
	int fd, err;

	err = cgfs_v2_mount(mnt, sizeof(mnt), NULL);
	if (err)
		return err;
	fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* Group index from the lowest set bit of an enum ebee_probe value. */
static int group_idx(unsigned int bit)
{
	return __builtin_ctz(bit);
}

/* The programs of one group; for the socket path's request hooks, those of
 * the attach method chosen for them (opts.attach). */
static int group_progs(const struct ebee_loader *k, unsigned int bit, struct bpf_program **p)
{
	const struct ebee_sock_attach *a = &k->opts.attach;
	struct ebee_bpf *s = k->skel;
	int n = 0;

	switch (bit) {
	case EBEE_PROBE_ACCEPT:
		p[n++] = s->progs.exit_accept4;
		p[n++] = s->progs.exit_accept;
		break;
	case EBEE_PROBE_CLOSE:
		p[n++] = s->progs.enter_close;
		p[n++] = s->progs.enter_shutdown;
		break;
	case EBEE_PROBE_READ:
		p[n++] = s->progs.enter_read;
		p[n++] = s->progs.exit_read;
		p[n++] = s->progs.enter_readv;
		p[n++] = s->progs.exit_readv;
		p[n++] = s->progs.enter_recvfrom;
		p[n++] = s->progs.exit_recvfrom;
		p[n++] = s->progs.enter_recvmsg;
		p[n++] = s->progs.exit_recvmsg;
		break;
	case EBEE_PROBE_WRITE:
		p[n++] = s->progs.enter_write;
		p[n++] = s->progs.exit_write;
		p[n++] = s->progs.enter_writev;
		p[n++] = s->progs.exit_writev;
		p[n++] = s->progs.enter_sendto;
		p[n++] = s->progs.exit_sendto;
		p[n++] = s->progs.enter_sendmsg;
		p[n++] = s->progs.exit_sendmsg;
		p[n++] = s->progs.enter_sendfile64;
		p[n++] = s->progs.exit_sendfile64;
		break;
	case EBEE_PROBE_FORK:
		p[n++] = s->progs.on_proc_fork;
		p[n++] = s->progs.on_proc_exit;
		break;
	case EBEE_PROBE_SOCK_STATE:
		p[n++] = s->progs.sock_state;
		break;
	case EBEE_PROBE_SOCK_IO:
		if (a->io == EBEE_ATTACH_TP_BTF) {
			p[n++] = s->progs.sock_recv;
			p[n++] = s->progs.sock_send;
			break;
		}
		p[n++] = s->progs.fx_inet_recvmsg;
		p[n++] = s->progs.fx_inet_sendmsg;
		if (a->inet6) {
			p[n++] = s->progs.fx_inet6_recvmsg;
			p[n++] = s->progs.fx_inet6_sendmsg;
		}
		if (a->sendpage)
			p[n++] = s->progs.fx_inet_sendpage;
		break;
	case EBEE_PROBE_SOCK_ARRIVE:
		p[n++] = a->arrive == EBEE_ATTACH_TP_BTF ? s->progs.sock_data_ready
							 : s->progs.fe_sock_def_readable;
		break;
	case EBEE_PROBE_SOCK_FRAME:
		p[n++] = s->progs.frame_io;
		break;
	default:
		break;
	}
	return n;
}

/* libbpf's last warning, kept so a failed load or attach can say why. */
static __thread char last_libbpf_msg[256];

static int libbpf_print_fn(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char buf[sizeof(last_libbpf_msg)];
	size_t n;

	if (level == LIBBPF_DEBUG)
		return 0;
	if (getenv("EBEE_LIBBPF_DEBUG")) { /* whole, verifier logs included */
		va_list aq;

		va_copy(aq, ap);
		vfprintf(stderr, fmt, aq);
		va_end(aq);
	}
	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	while (n && buf[n - 1] == '\n')
		buf[--n] = 0;
	memcpy(last_libbpf_msg, buf, sizeof(buf));
	return 0;
}

static int handle_rec(void *ctx, void *data, size_t size)
{
	struct ebee_loader *k = ctx;

	if (size < sizeof(struct ebee_rec))
		return 0;
	return k->opts.on_record(k->opts.ctx, data);
}

/* One ring per possible CPU into the rbs map, all drained through one
 * ring_buffer (one epoll fd). The fds stay open: closing one would take its
 * ring out of the epoll set. */
static int rings_open(struct ebee_loader *k)
{
	int outer = bpf_map__fd(k->skel->maps.rbs), err = 0;
	uint32_t *keys, n = k->ncpus;

	k->ring_fds = malloc(k->ncpus * sizeof(*k->ring_fds));
	keys = malloc(k->ncpus * sizeof(*keys));
	if (!k->ring_fds || !keys) {
		free(keys);
		return -ENOMEM;
	}
	for (int i = 0; i < k->ncpus; i++)
		k->ring_fds[i] = -1;
	for (int i = 0; i < k->ncpus && !err; i++) {
		int fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "ebee_rb", 0, 0, k->opts.ringbuf_size,
					NULL);

		if (fd < 0) {
			err = fd;
			break;
		}
		k->ring_fds[i] = fd;
		keys[i] = i;
		if (!k->rb) {
			k->rb = ring_buffer__new(fd, handle_rec, k, NULL);
			if (!k->rb)
				err = -errno;
		} else if (ring_buffer__add(k->rb, fd, handle_rec, k)) {
			err = -errno;
		}
	}
	if (err)
		goto out;
	/* In one call: every update of a map of maps waits for an RCU grace
	 * period (so that no program still sees the old inner map), which is
	 * ms apiece, a CPU at a time: 63 waits at the start on 64 CPUs. A
	 * kernel without batch updates for this map type (the kernel's
	 * ENOTSUPP is 524) takes them one by one, all of them: the count it
	 * hands back is not to be trusted then. */
	err = bpf_map_update_batch(outer, keys, k->ring_fds, &n, NULL) ? -errno : 0;
	if (err == -EINVAL || err == -EOPNOTSUPP || err == -524) {
		err = 0;
		for (int i = 0; i < k->ncpus && !err; i++)
			if (bpf_map_update_elem(outer, &keys[i], &k->ring_fds[i], BPF_ANY))
				err = -errno;
	}
out:
	free(keys);
	return err;
}

/* Counts the possible CPUs, refuses a ring size that would lock too much
 * memory across all of them, and sizes the per-CPU ring and connection maps. */
static int loader_size_maps(struct ebee_loader *k, char *msg, size_t msg_len)
{
	const struct ebee_loader_opts *opts = &k->opts;
	int err;

	k->ncpus = libbpf_num_possible_cpus();
	if (k->ncpus <= 0) {
		err = k->ncpus ? k->ncpus : -EINVAL;
		snprintf(msg, msg_len, "ebee: cannot count possible CPUs: %s", strerror(-err));
		return err;
	}
	/* One ring per CPU is locked kernel memory on every CPU: a size that is
	 * harmless on 2 CPUs is not on 256. */
	if (opts->ringbuf_size > RINGS_TOTAL_MAX / k->ncpus) {
		snprintf(msg, msg_len,
			 "ebee: ring buffers of %zu bytes on each of %d CPUs would lock %zu MiB; "
			 "at most %lu MiB in all",
			 opts->ringbuf_size, k->ncpus, opts->ringbuf_size * k->ncpus >> 20,
			 RINGS_TOTAL_MAX >> 20);
		return -EINVAL;
	}
	err = bpf_map__set_max_entries(k->skel->maps.rbs, k->ncpus);
	if (!err)
		err = bpf_map__set_max_entries(k->skel->maps.conns, opts->max_conns);
	if (err)
		snprintf(msg, msg_len, "ebee: cannot size the BPF maps: %s", strerror(-err));
	return err;
}

/* Load only the chosen path's programs, and on the socket path only the
 * chosen attach method's: the other hooks may not exist in this kernel
 * (the socket tracepoints appeared in 6.3, inet_sendpage went in 6.5),
 * and under lockdown a fentry program fails the whole load. */
static void loader_choose_progs(struct ebee_loader *k)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, k->skel->obj) bpf_program__set_autoload(prog, false);
	for (unsigned int bit = 1; bit < (1u << EBEE_NPROBE_GROUPS); bit <<= 1) {
		struct bpf_program *progs[MAX_GROUP_PROGS];
		bool sock = bit & (EBEE_PROBE_SOCK_STATE | EBEE_PROBE_SOCK_IO |
				   EBEE_PROBE_SOCK_ARRIVE | EBEE_PROBE_SOCK_FRAME);
		bool both = bit == EBEE_PROBE_FORK;
		int n = group_progs(k, bit, progs);

		for (int i = 0; i < n; i++)
			if (both || sock == k->opts.sock_path)
				bpf_program__set_autoload(progs[i], true);
	}
}

/* The other path's connection maps are never used: keep them tiny. The
 * socket path's per-socket storage has no map size; the programs cap
 * the number of live storages at max_conns instead. */
static int loader_size_path_maps(struct ebee_loader *k, char *msg, size_t msg_len)
{
	const struct ebee_loader_opts *opts = &k->opts;
	int err;

	if (opts->sock_path) {
		err = bpf_map__set_max_entries(k->skel->maps.adopt, opts->max_conns);
		if (!err)
			err = bpf_map__set_max_entries(k->skel->maps.conns, 64);
	} else {
		err = bpf_map__set_max_entries(k->skel->maps.adopt, 64);
	}
	k->skel->rodata->max_socks = opts->max_conns;
	if (err)
		snprintf(msg, msg_len, "ebee: cannot size the BPF maps: %s", strerror(-err));
	return err;
}

static long long mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* EBEE_LOAD_STATS=1: what the load cost, on stderr: the time it took and
 * each loaded program's instructions as the verifier walked them (its cost,
 * which under emulation dominates a start). */
static void loader_print_stats(struct ebee_loader *k, long long load_us)
{
	struct bpf_program *prog;
	unsigned long long total = 0;

	fprintf(stderr, "ebee: load stats: %lld ms", load_us / 1000);
	bpf_object__for_each_program(prog, k->skel->obj)
	{
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		memset(&info, 0, sizeof(info));
		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
			continue;
		fprintf(stderr, " %s=%u", bpf_program__name(prog), info.verified_insns);
		total += info.verified_insns;
	}
	fprintf(stderr, "; %llu instructions verified\n", total);
}

/* Loads the chosen programs (none autoattach: probes are attached per group
 * later) and opens the rings they write to. */
static int loader_load(struct ebee_loader *k, char *msg, size_t msg_len)
{
	long long t0;
	int err;

	/* Wake the consumer early only when half a ring is full. */
	k->skel->rodata->wakeup_bytes = k->opts.ringbuf_size / 2;
	t0 = mono_us();
	err = ebee_bpf__load(k->skel);
	if (!err && getenv("EBEE_LOAD_STATS"))
		loader_print_stats(k, mono_us() - t0);
	if (err) {
		snprintf(msg, msg_len, "ebee: loading the BPF programs failed: %s%s%s",
			 strerror(-err), last_libbpf_msg[0] ? ": " : "", last_libbpf_msg);
		return err;
	}
	err = rings_open(k);
	if (err)
		snprintf(msg, msg_len, "ebee: cannot set up the ring buffers: %s", strerror(-err));
	return err;
}

int ebee_loader_open(const struct ebee_loader_opts *opts, struct ebee_loader **out, char *msg,
		     size_t msg_len)
{
	struct ebee_loader *k;
	int err;

	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->opts = *opts;
	libbpf_set_print(libbpf_print_fn);
	last_libbpf_msg[0] = 0;

	k->skel = ebee_bpf__open();
	if (!k->skel) {
		err = -errno;
		snprintf(msg, msg_len, "ebee: cannot open the BPF object: %s", strerror(-err));
		goto fail;
	}
	err = loader_size_maps(k, msg, msg_len);
	if (err)
		goto fail;
	loader_choose_progs(k);
	err = loader_size_path_maps(k, msg, msg_len);
	if (err)
		goto fail;
	err = loader_load(k, msg, msg_len);
	if (err)
		goto fail;
	*out = k;
	return 0;
fail:
	ebee_loader_close(k);
	return err;
}

static void close_fds(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
	free(fds);
}

static void frame_unlink(struct ebee_loader *k)
{
	close_fds(k->frame_links, k->nframe_links);
	k->frame_links = NULL;
	k->nframe_links = 0;
	if (k->skel && k->skel->bss)
		k->skel->bss->frame_scoped = 0;
}

/* The framing program on both hooks of each cgroup of the scope (the root
 * when there is none), as links: they go when ebee does. On failure nothing
 * new stays linked and msg says why. */
static int frame_link(struct ebee_loader *k, int **out, size_t *nout, char *msg, size_t msg_len)
{
	static const enum bpf_attach_type hooks[] = { BPF_CGROUP_INET_INGRESS,
						      BPF_CGROUP_INET_EGRESS };
	size_t ncg = k->nscope ? k->nscope : 1, n = 0;
	int prog = bpf_program__fd(k->skel->progs.frame_io), root = -1, err = 0;
	int *links;

	links = malloc(2 * ncg * sizeof(*links));
	if (!links)
		return -ENOMEM;
	if (!k->nscope) {
		root = cgroup2_root_open();
		if (root < 0) {
			free(links);
			snprintf(msg, msg_len,
				 "ebee: framing needs the cgroup v2 hierarchy mounted: %s",
				 strerror(-root));
			return root;
		}
	}
	for (size_t i = 0; i < ncg && !err; i++)
		for (int h = 0; h < 2 && !err; h++) {
			int fd = bpf_link_create(prog, k->nscope ? k->scope_fds[i] : root, hooks[h],
						 NULL);

			if (fd < 0) {
				err = -errno;
				snprintf(msg, msg_len,
					 "ebee: cannot attach frame_io to a cgroup's %s hook: %s",
					 h ? "egress" : "ingress", strerror(-err));
			} else {
				links[n++] = fd;
			}
		}
	if (root >= 0)
		close(root);
	if (err) {
		close_fds(links, n);
		return err;
	}
	*out = links;
	*nout = n;
	return 0;
}

int ebee_loader_frame_scope(struct ebee_loader *k, const int *cgfds, size_t n, char *msg,
			    size_t msg_len)
{
	int *fds = NULL, *old_fds = k->scope_fds, *links = NULL, err;
	size_t old_n = k->nscope, nlinks = 0;

	if (n) {
		fds = malloc(n * sizeof(*fds));
		if (!fds)
			return -ENOMEM;
		for (size_t i = 0; i < n; i++) {
			fds[i] = fcntl(cgfds[i], F_DUPFD_CLOEXEC, 3);
			if (fds[i] < 0) {
				err = -errno;
				close_fds(fds, i);
				return err;
			}
		}
	}
	k->scope_fds = fds;
	k->nscope = n;
	if (k->probes & EBEE_PROBE_SOCK_FRAME) {
		/* The new links before the old go: in between a packet may be
		 * walked twice, which the sequence check makes a no-op; never
		 * none. */
		err = frame_link(k, &links, &nlinks, msg, msg_len);
		if (err) {
			close_fds(fds, n);
			k->scope_fds = old_fds;
			k->nscope = old_n;
			return err;
		}
		close_fds(k->frame_links, k->nframe_links);
		k->frame_links = links;
		k->nframe_links = nlinks;
		k->skel->bss->frame_scoped = n > 0;
	}
	close_fds(old_fds, old_n);
	return 0;
}

uint64_t ebee_loader_frame_missed(struct ebee_loader *k, uint32_t *wid, uint64_t *cgid)
{
	uint64_t seq = __atomic_load_n(&k->skel->bss->frame_miss_seq, __ATOMIC_ACQUIRE);

	*wid = __atomic_load_n(&k->skel->bss->frame_miss_wid, __ATOMIC_RELAXED);
	*cgid = __atomic_load_n(&k->skel->bss->frame_miss_cg, __ATOMIC_RELAXED);
	return seq;
}

static void detach_group(struct ebee_loader *k, int g)
{
	for (int i = 0; i < k->nlinks[g]; i++)
		bpf_link__destroy(k->links[g][i]);
	k->nlinks[g] = 0;
	if (g == group_idx(EBEE_PROBE_SOCK_FRAME))
		frame_unlink(k);
}

void ebee_loader_close(struct ebee_loader *k)
{
	if (!k)
		return;
	for (int g = 0; g < EBEE_NPROBE_GROUPS; g++)
		detach_group(k, g);
	ring_buffer__free(k->rb);
	for (int i = 0; k->ring_fds && i < k->ncpus; i++)
		if (k->ring_fds[i] >= 0)
			close(k->ring_fds[i]);
	free(k->ring_fds);
	ebee_bpf__destroy(k->skel);
	close_fds(k->scope_fds, k->nscope);
	free(k);
}

/* How long an attach waits for the kernel to finish an earlier detach of the
 * same program (prog_attach). */
#define REATTACH_WAIT_US (5 * 1000 * 1000)

/* Attach one program, NULL and errno on failure. A program whose link was
 * destroyed a moment ago can still be on its hook: for a syscall tracepoint
 * (6.18) the kernel takes it off after bpf_link__destroy() has returned, one
 * program after another, each after an RCU grace period (30 to 40 ms each,
 * over 600 ms for the 18 of the read and write groups on a busy host), and
 * until then attaching the same program again fails with EEXIST. A group is
 * attached only when the loader holds none of its links, so EEXIST means
 * just that detach still under way: wait for it, bounded, then say so. */
static struct bpf_link *prog_attach(struct bpf_program *p, bool *waited)
{
	long long end = 0;
	struct bpf_link *l;

	for (;;) {
		l = bpf_program__attach(p);
		if (l || errno != EEXIST)
			return l;
		if (!end)
			end = mono_us() + REATTACH_WAIT_US;
		else if (mono_us() >= end)
			break;
		*waited = true;
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	}
	errno = EEXIST;
	return NULL;
}

static int attach_group(struct ebee_loader *k, unsigned int bit, char *msg, size_t msg_len)
{
	bool waited = false;
	struct bpf_program *progs[MAX_GROUP_PROGS];
	int g = group_idx(bit), n, err;

	if (bit == EBEE_PROBE_SOCK_FRAME) {
		err = frame_link(k, &k->frame_links, &k->nframe_links, msg, msg_len);
		if (!err)
			k->skel->bss->frame_scoped = k->nscope > 0;
		return err;
	}
	n = group_progs(k, bit, progs);
	for (int i = 0; i < n; i++) {
		struct bpf_link *l = prog_attach(progs[i], &waited);

		if (!l) {
			err = -errno;
			snprintf(msg, msg_len, "ebee: cannot attach %s (%s)%s: %s%s%s",
				 bpf_program__name(progs[i]), bpf_program__section_name(progs[i]),
				 err == -EEXIST && waited
				     ? " (its earlier detach still not done after 5 s)"
				     : "",
				 strerror(-err), last_libbpf_msg[0] ? ": " : "", last_libbpf_msg);
			detach_group(k, g);
			return err;
		}
		k->links[g][k->nlinks[g]++] = l;
	}
	return 0;
}

int ebee_loader_set_probes(struct ebee_loader *k, unsigned int mask, char *msg, size_t msg_len)
{
	unsigned int add = mask & ~k->probes, del = k->probes & ~mask;
	int err;

	/* Storages whose socket closed while the state hook was off were freed
	 * without the programs' count seeing it: start counting afresh. Those
	 * still alive count negative when they close, which only loosens the
	 * cap for a while; a stale count could otherwise block all tracking. */
	if (add & EBEE_PROBE_SOCK_STATE)
		__atomic_store_n(&k->skel->bss->live_socks, 0, __ATOMIC_SEQ_CST);
	/* Attach first so that a failure leaves the old set intact. */
	for (unsigned int bit = 1; bit < (1u << EBEE_NPROBE_GROUPS); bit <<= 1) {
		if (!(add & bit) || bit == EBEE_PROBE_GRPC)
			continue;
		err = attach_group(k, bit, msg, msg_len);
		if (err) {
			for (unsigned int b = 1; b < bit; b <<= 1)
				if (add & b)
					detach_group(k, group_idx(b));
			return err;
		}
	}
	for (unsigned int bit = 1; bit < (1u << EBEE_NPROBE_GROUPS); bit <<= 1)
		if (del & bit)
			detach_group(k, group_idx(bit));
	k->probes = mask & ~EBEE_PROBE_GRPC;
	return 0;
}

unsigned int ebee_loader_probes(const struct ebee_loader *k)
{
	return k->probes;
}

int ebee_loader_workload_set(struct ebee_loader *k, uint32_t wid, uint32_t flags)
{
	int fd = bpf_map__fd(k->skel->maps.workloads), pfd = bpf_map__fd(k->skel->maps.procs);
	struct ebee_wl v = {};
	uint32_t key, *prev = NULL;
	struct ebee_proc p;

	/* Keep the drop counter and the epoch across flag changes; a new
	 * workload gets a new epoch, so sockets claimed by an earlier workload
	 * of the same id are not taken for its own. */
	if (bpf_map_lookup_elem(fd, &wid, &v)) {
		struct ebee_kcount zero[k->ncpus];

		memset(&v, 0, sizeof(v));
		v.epoch = ++k->wl_epoch;
		/* A new workload counts its requests from 0, before the
		 * programs can see it (the workload entry below). */
		memset(zero, 0, sizeof(zero));
		if (bpf_map_update_elem(bpf_map__fd(k->skel->maps.kcounts), &wid, zero, BPF_ANY))
			return -errno;
	}
	v.flags = flags;
	if (bpf_map_update_elem(fd, &wid, &v, BPF_ANY))
		return -errno;
	/* Sockets re-read their cached copy of the flags. */
	if (k->opts.sock_path)
		__atomic_fetch_add(&k->skel->bss->wl_gen, 1, __ATOMIC_SEQ_CST);
	/* The programs read the copy in each process entry. Updating in place
	 * while walking is safe: no entry is added or removed here. */
	while (!bpf_map_get_next_key(pfd, prev, &key)) {
		if (!bpf_map_lookup_elem(pfd, &key, &p) && p.wid == wid && p.flags != flags) {
			p.flags = flags;
			bpf_map_update_elem(pfd, &key, &p, BPF_EXIST);
		}
		prev = &key;
	}
	return 0;
}

int ebee_loader_fstat(struct ebee_loader *k, uint32_t wid, struct ebee_fstat *out)
{
	if (bpf_map_lookup_elem(bpf_map__fd(k->skel->maps.fstats), &wid, out))
		return -errno;
	return 0;
}

int ebee_loader_kcount(struct ebee_loader *k, uint32_t wid, struct ebee_kcount *out)
{
	struct ebee_kcount vals[k->ncpus];

	if (bpf_map_lookup_elem(bpf_map__fd(k->skel->maps.kcounts), &wid, vals))
		return -errno;
	memset(out, 0, sizeof(*out));
	for (int c = 0; c < k->ncpus; c++)
		for (int i = 0; i < EBEE_KC_MAX; i++) {
			out->req[i] += vals[c].req[i];
			out->lost[i] += vals[c].lost[i];
		}
	for (int c = 0; c < k->ncpus; c++) {
		out->io_bytes += vals[c].io_bytes;
		out->io_calls += vals[c].io_calls;
	}
	return 0;
}

int ebee_loader_workload_dropped(struct ebee_loader *k, uint32_t wid, uint64_t *dropped)
{
	struct ebee_wl v;

	if (bpf_map_lookup_elem(bpf_map__fd(k->skel->maps.workloads), &wid, &v))
		return -errno;
	*dropped = v.dropped;
	return 0;
}

int ebee_loader_proc_add(struct ebee_loader *k, uint32_t tgid, uint32_t wid)
{
	struct ebee_proc p = { .wid = wid };
	struct ebee_wl v;

	if (bpf_map_lookup_elem(bpf_map__fd(k->skel->maps.workloads), &wid, &v))
		return -ENOENT;
	p.flags = v.flags;

	if (bpf_map_update_elem(bpf_map__fd(k->skel->maps.procs), &tgid, &p, BPF_NOEXIST))
		return -errno;
	return 0;
}

int ebee_loader_conn_adopt(struct ebee_loader *k, uint32_t tgid, uint32_t fd)
{
	struct ebee_conn_key key = { .tgid = tgid, .fd = fd };
	struct ebee_conn c = { .flags = EBEE_CF_ADOPTED };
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	c.accept_ns = (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
	if (bpf_map_update_elem(bpf_map__fd(k->skel->maps.conns), &key, &c, BPF_NOEXIST))
		return -errno;
	return 0;
}

int ebee_loader_sconn_adopt(struct ebee_loader *k, uint32_t wid, const struct ebee_adopt_key *key)
{
	if (bpf_map_update_elem(bpf_map__fd(k->skel->maps.adopt), key, &wid, BPF_NOEXIST))
		return -errno;
	/* Tells the programs to look sockets without storage up in the map. */
	__atomic_fetch_add(&k->skel->bss->adopt_live, 1, __ATOMIC_SEQ_CST);
	return 0;
}

bool ebee_loader_sock_path(const struct ebee_loader *k)
{
	return k->opts.sock_path;
}

unsigned int ebee_loader_proc_count(struct ebee_loader *k, uint32_t wid)
{
	int fd = bpf_map__fd(k->skel->maps.procs);
	uint32_t key, *prev = NULL;
	struct ebee_proc p;
	unsigned int n = 0;

	while (!bpf_map_get_next_key(fd, prev, &key)) {
		if (!bpf_map_lookup_elem(fd, &key, &p) && p.wid == wid)
			n++;
		prev = &key;
	}
	return n;
}

/* Socket path: delete the entries of map fd whose value says workload wid
 * (the wid is the value's field at wid_off). Keys are collected first:
 * deleting while walking a hash map can skip entries. */
static size_t del_by_wid(int fd, size_t key_sz, size_t val_sz, size_t wid_off, uint32_t wid)
{
	char key[key_sz], prev[key_sz], val[val_sz];
	char *del = NULL;
	size_t nd = 0, cap = 0, n = 0;
	bool first = true;

	while (!bpf_map_get_next_key(fd, first ? NULL : prev, key)) {
		uint32_t w;

		first = false;
		memcpy(prev, key, key_sz);
		if (bpf_map_lookup_elem(fd, key, val))
			continue;
		memcpy(&w, val + wid_off, sizeof(w));
		if (w != wid)
			continue;
		if (nd == cap) {
			char *t = realloc(del, (cap = cap ? 2 * cap : 64) * key_sz);

			if (!t)
				break;
			del = t;
		}
		memcpy(del + nd++ * key_sz, key, key_sz);
	}
	for (size_t i = 0; i < nd; i++)
		if (!bpf_map_delete_elem(fd, del + i * key_sz))
			n++;
	free(del);
	return n;
}

void ebee_loader_workload_del(struct ebee_loader *k, uint32_t wid)
{
	int pfd = bpf_map__fd(k->skel->maps.procs), cfd = bpf_map__fd(k->skel->maps.conns);
	uint32_t key, *prev = NULL, *tgids = NULL;
	size_t n = 0, cap = 0;
	struct ebee_conn_key ck, *cprev = NULL;
	struct ebee_proc p;

	/* Stop the programs first, then collect and delete the processes:
	 * deleting while walking a hash map can skip entries. */
	bpf_map_delete_elem(bpf_map__fd(k->skel->maps.workloads), &wid);
	bpf_map_delete_elem(bpf_map__fd(k->skel->maps.fstats), &wid);
	bpf_map_delete_elem(bpf_map__fd(k->skel->maps.kcounts), &wid);
	while (!bpf_map_get_next_key(pfd, prev, &key)) {
		if (!bpf_map_lookup_elem(pfd, &key, &p) && p.wid == wid) {
			if (n == cap) {
				uint32_t *t =
				    realloc(tgids, (cap = cap ? 2 * cap : 16) * sizeof(*t));

				if (!t)
					break;
				tgids = t;
			}
			tgids[n++] = key;
		}
		prev = &key;
	}
	for (size_t i = 0; i < n; i++)
		bpf_map_delete_elem(pfd, &tgids[i]);

	if (k->opts.sock_path) {
		/* Socket storages cannot be walked from here: the programs drop a
		 * socket's storage when they find its workload gone (wl_gen). */
		__atomic_fetch_add(&k->skel->bss->wl_gen, 1, __ATOMIC_SEQ_CST);
		size_t na = del_by_wid(bpf_map__fd(k->skel->maps.adopt),
				       sizeof(struct ebee_adopt_key), sizeof(uint32_t), 0, wid);

		__atomic_fetch_sub(&k->skel->bss->adopt_live, (int64_t)na, __ATOMIC_SEQ_CST);
		free(tgids);
		return;
	}

	/* Their in-flight connections would otherwise wait for LRU eviction. */
	if (n) {
		struct ebee_conn_key *del = NULL;
		size_t nd = 0, dcap = 0;

		while (!bpf_map_get_next_key(cfd, cprev, &ck)) {
			for (size_t i = 0; i < n; i++) {
				if (ck.tgid != tgids[i])
					continue;
				if (nd == dcap) {
					struct ebee_conn_key *t = realloc(
					    del, (dcap = dcap ? 2 * dcap : 64) * sizeof(*t));

					if (!t)
						goto out;
					del = t;
				}
				del[nd++] = ck;
				break;
			}
			cprev = &ck;
		}
	out:
		for (size_t i = 0; i < nd; i++)
			bpf_map_delete_elem(cfd, &del[i]);
		free(del);
	}
	free(tgids);
}

int ebee_loader_poll(struct ebee_loader *k, int timeout_ms)
{
	/* Submits mostly skip the wakeup, so epoll only fires when the ring is
	 * half full; drain whatever is there either way. */
	int n = ring_buffer__poll(k->rb, timeout_ms);

	if (n < 0 && n != -EINTR)
		return n;
	return ring_buffer__consume(k->rb);
}

int ebee_loader_consume(struct ebee_loader *k)
{
	return ring_buffer__consume(k->rb);
}

uint64_t ebee_loader_counter(struct ebee_loader *k, unsigned int idx)
{
	uint64_t vals[k->ncpus], sum = 0;

	if (bpf_map_lookup_elem(bpf_map__fd(k->skel->maps.counters), &idx, vals))
		return 0;
	for (int i = 0; i < k->ncpus; i++)
		sum += vals[i];
	return sum;
}

static uint64_t count_entries(int fd)
{
	char key[sizeof(struct ebee_conn_key) > sizeof(uint64_t) ? sizeof(struct ebee_conn_key)
								 : sizeof(uint64_t)];
	char prev[sizeof(key)];
	bool first = true;
	uint64_t n = 0;

	while (!bpf_map_get_next_key(fd, first ? NULL : prev, key)) {
		first = false;
		n++;
		memcpy(prev, key, sizeof(key));
	}
	return n;
}

/* ---- gRPC: hooks for the grpc object (metrics/src/grpc.c) ---- */

int ebee_loader_map_fd(struct ebee_loader *k, const char *name)
{
	int fd = bpf_object__find_map_fd_by_name(k->skel->obj, name);

	return fd < 0 ? -ENOENT : fd;
}

int ebee_loader_ringbuf_add(struct ebee_loader *k, int map_fd)
{
	return ring_buffer__add(k->rb, map_fd, handle_rec, k);
}

uint64_t ebee_loader_conn_count(struct ebee_loader *k)
{
	int64_t n;

	if (!k->opts.sock_path)
		return count_entries(bpf_map__fd(k->skel->maps.conns));
	n = __atomic_load_n(&k->skel->bss->live_socks, __ATOMIC_RELAXED);
	return n > 0 ? (uint64_t)n : 0;
}

int ebee_loader_epoll_fd(struct ebee_loader *k)
{
	return ring_buffer__epoll_fd(k->rb);
}
