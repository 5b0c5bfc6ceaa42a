// SPDX-License-Identifier: MIT
/*
 * gRPC: load bpf/ebee_grpc.bpf.c beside the syscall object and
 * attach its uprobes to the gRPC C-core files traced processes map (a
 * libgrpc, or a program or module with the C-core linked in: grpc_elf.c).
 *
 * Uprobes belong to a file (an inode), not a process: they are attached once
 * per distinct libgrpc file with pid -1, so every process mapping it, a
 * traced server's future children included, hits them, and the shared procs
 * map decides in the kernel who is traced. Processes that are not traced and
 * do not map libgrpc pay nothing; untraced users of the same file pay one
 * hash lookup per stream event. The probes are detached as soon as no
 * workload needs grpc (pruning), and the library list is then forgotten, so
 * a later scan reaches the files again through a live process's
 * /proc/PID/root (containers and chroots see their own copy of the file).
 *
 * This file, loader.c and dgram.c are the ones that include a generated
 * skeleton (each its own object).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "grpc.h"
#include "grpc_elf.h"
#include "procfs.h"
#include "ebee_grpc.skel.h"

struct grpc_lib {
	struct ebee_grpc_lib f;
	struct ebee_grpc_syms syms;
	int err; /* resolve failed: unusable, with msg */
	char msg[512];
	struct bpf_link *links[EBEE_GRPC_NSYMS * EBEE_GRPC_MAX_ADDRS];
	int nlinks;
};

struct ebee_grpc {
	struct ebee_grpc_bpf *skel;
	struct grpc_lib *libs;
	size_t nlibs;
	bool on;
	int ncpus;
};

int ebee_grpc_open(struct ebee_loader *k, size_t ringbuf_size, unsigned int max_streams,
		   struct ebee_grpc **out, char *msg, size_t msg_len)
{
	struct ebee_grpc *g;
	int err;

	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->skel = ebee_grpc_bpf__open();
	if (!g->skel) {
		err = -errno;
		snprintf(msg, msg_len, "ebee: cannot open the grpc BPF object: %s", strerror(-err));
		goto fail;
	}
	/* One table of traced processes for both objects. */
	err = bpf_map__reuse_fd(g->skel->maps.procs, ebee_loader_map_fd(k, "procs"));
	if (!err)
		err =
		    bpf_map__reuse_fd(g->skel->maps.workloads, ebee_loader_map_fd(k, "workloads"));
	if (!err)
		err = bpf_map__reuse_fd(g->skel->maps.kcounts, ebee_loader_map_fd(k, "kcounts"));
	if (!err)
		err = bpf_map__set_max_entries(g->skel->maps.grpc_rb, ringbuf_size);
	if (!err)
		err = bpf_map__set_max_entries(g->skel->maps.grpc_streams, max_streams);
	if (err) {
		snprintf(msg, msg_len, "ebee: cannot set up the grpc BPF maps: %s", strerror(-err));
		goto fail;
	}
	g->skel->rodata->wakeup_bytes = ringbuf_size / 2;
	err = ebee_grpc_bpf__load(g->skel);
	if (err) {
		snprintf(msg, msg_len, "ebee: loading the grpc BPF programs failed: %s",
			 strerror(-err));
		goto fail;
	}
	err = ebee_loader_ringbuf_add(k, bpf_map__fd(g->skel->maps.grpc_rb));
	if (err) {
		snprintf(msg, msg_len, "ebee: cannot poll the grpc ring buffer: %s",
			 strerror(-err));
		goto fail;
	}
	g->ncpus = libbpf_num_possible_cpus();
	if (g->ncpus <= 0) {
		err = g->ncpus ? g->ncpus : -EINVAL;
		snprintf(msg, msg_len, "ebee: cannot count possible CPUs: %s", strerror(-err));
		goto fail;
	}
	*out = g;
	return 0;
fail:
	ebee_grpc_close(g);
	return err;
}

static void lib_detach(struct grpc_lib *l)
{
	for (int i = 0; i < l->nlinks; i++)
		bpf_link__destroy(l->links[i]);
	l->nlinks = 0;
}

static void forget_libs(struct ebee_grpc *g)
{
	for (size_t i = 0; i < g->nlibs; i++)
		lib_detach(&g->libs[i]);
	free(g->libs);
	g->libs = NULL;
	g->nlibs = 0;
}

void ebee_grpc_close(struct ebee_grpc *g)
{
	if (!g)
		return;
	forget_libs(g);
	ebee_grpc_bpf__destroy(g->skel);
	free(g);
}

static int lib_attach(struct ebee_grpc *g, struct grpc_lib *l, char *msg, size_t msg_len)
{
	struct bpf_program *prog[EBEE_GRPC_NSYMS] = {
		[EBEE_GRPC_SYM_NEW] = g->skel->progs.grpc_stream_new,
		[EBEE_GRPC_SYM_CLOSED] = g->skel->progs.grpc_stream_closed,
		[EBEE_GRPC_SYM_FREE] = g->skel->progs.grpc_stream_free,
	};

	if (l->err || l->nlinks)
		return 0;
	/* The end and the cleanup first: a stream must never be seen starting
	 * by a probe set that cannot see it end. */
	for (int s = EBEE_GRPC_NSYMS - 1; s >= 0; s--) {
		for (unsigned int a = 0; a < l->syms.n[s]; a++) {
			struct bpf_link *link = bpf_program__attach_uprobe(
			    prog[s], false, -1, l->f.path, l->syms.off[s][a]);

			if (!link) {
				int err = -errno;

				snprintf(msg, msg_len,
					 "ebee: cannot attach a uprobe to %s in %s: %s",
					 ebee_grpc_sym_str(s), l->f.path, strerror(-err));
				lib_detach(l);
				return err;
			}
			l->links[l->nlinks++] = link;
		}
	}
	return 0;
}

/* One process's libgrpc files into the list. */
static int scan_one(struct ebee_grpc *g, pid_t pid, bool *found, char *msg, size_t msg_len)
{
	struct ebee_grpc_lib *fl = NULL;
	char maps[64], root[64];
	bool replaced;
	size_t n;
	int err, ret = 0;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	snprintf(root, sizeof(root), "/proc/%d/root", pid);
	err = ebee_grpc_libs_in_maps(maps, root, &fl, &n, &replaced);
	if (err)
		return err == -ENOENT || err == -ESRCH ? 0 : err; /* exited meanwhile */
	for (size_t i = 0; i < n; i++) {
		struct grpc_lib *l = NULL;

		for (size_t j = 0; j < g->nlibs; j++)
			if (g->libs[j].f.dev == fl[i].dev && g->libs[j].f.ino == fl[i].ino)
				l = &g->libs[j];
		if (!l) {
			struct grpc_lib *t = realloc(g->libs, (g->nlibs + 1) * sizeof(*t));

			if (!t) {
				ret = -ENOMEM;
				break;
			}
			g->libs = t;
			l = &g->libs[g->nlibs++];
			memset(l, 0, sizeof(*l));
			l->f = fl[i];
			l->err =
			    ebee_grpc_resolve_cached(l->f.path, &l->syms, l->msg, sizeof(l->msg));
		}
		if (l->err) {
			if (!ret) {
				snprintf(msg, msg_len, "%s (mapped by pid %d)", l->msg, pid);
				ret = l->err;
			}
			continue;
		}
		*found = true;
		if (g->on) {
			err = lib_attach(g, l, msg, msg_len);
			if (err && !ret)
				ret = err;
		}
	}
	if (!n && replaced && !ret) {
		snprintf(msg, msg_len,
			 "ebee: pid %d maps a libgrpc that was replaced on disk since it started: "
			 "restart it to trace it",
			 pid);
		ret = -ENOENT;
	}
	free(fl);
	return ret;
}

int ebee_grpc_scan(struct ebee_grpc *g, pid_t pid, bool children, bool *found, char *msg,
		   size_t msg_len)
{
	pid_t *kids = NULL;
	size_t nkids = 0;
	int err, e;

	*found = false;
	err = scan_one(g, pid, found, msg, msg_len);
	if (children && !procfs_descendants(pid, &kids, &nkids)) {
		for (size_t i = 0; i < nkids; i++) {
			e = scan_one(g, kids[i], found, err ? NULL : msg, err ? 0 : msg_len);
			if (!err)
				err = e;
		}
		free(kids);
	}
	return err;
}

int ebee_grpc_set_probes(struct ebee_grpc *g, bool on, char *msg, size_t msg_len)
{
	int err;

	if (!on) {
		forget_libs(g);
		g->on = false;
		return 0;
	}
	for (size_t i = 0; i < g->nlibs; i++) {
		err = lib_attach(g, &g->libs[i], msg, msg_len);
		if (err)
			return err;
	}
	g->on = true;
	return 0;
}

bool ebee_grpc_probes(const struct ebee_grpc *g)
{
	return g && g->on;
}

void ebee_grpc_workload_del(struct ebee_grpc *g, uint32_t wid)
{
	int fd;
	struct ebee_grpc_key key, *prev = NULL, *del = NULL;
	struct ebee_grpc_stream s;
	size_t n = 0, cap = 0;

	if (!g)
		return;
	fd = bpf_map__fd(g->skel->maps.grpc_streams);
	/* Collect, then delete: deleting while walking a hash can skip keys. */
	while (!bpf_map_get_next_key(fd, prev, &key)) {
		if (!bpf_map_lookup_elem(fd, &key, &s) && s.wid == wid) {
			if (n == cap) {
				struct ebee_grpc_key *t =
				    realloc(del, (cap = cap ? 2 * cap : 64) * sizeof(*t));

				if (!t)
					break;
				del = t;
			}
			del[n++] = key;
		}
		prev = &key;
	}
	for (size_t i = 0; i < n; i++)
		bpf_map_delete_elem(fd, &del[i]);
	free(del);
}

uint64_t ebee_grpc_stream_count(struct ebee_grpc *g)
{
	struct ebee_grpc_key key, *prev = NULL;
	uint64_t n = 0;
	int fd;

	if (!g)
		return 0;
	fd = bpf_map__fd(g->skel->maps.grpc_streams);
	while (!bpf_map_get_next_key(fd, prev, &key)) {
		n++;
		prev = &key;
	}
	return n;
}

uint64_t ebee_grpc_counter(struct ebee_grpc *g, unsigned int idx)
{
	uint64_t sum = 0;

	if (!g)
		return 0;
	{
		uint64_t vals[g->ncpus];

		if (bpf_map_lookup_elem(bpf_map__fd(g->skel->maps.grpc_counters), &idx, vals))
			return 0;
		for (int i = 0; i < g->ncpus; i++)
			sum += vals[i];
	}
	return sum;
}
