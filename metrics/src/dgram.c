// SPDX-License-Identifier: MIT
/*
 * dgram: load bpf/ebee_dgram.bpf.c beside the main object, attach it, and
 * sweep its table of requests waiting for a response.
 *
 * The length and arrival programs are BTF tracepoints (or, on a kernel
 * without them, the fexit/fentry programs chosen as the socket path chose
 * its own: struct ebee_sock_attach), the peer programs
 * cgroup sock_addr programs (recvmsg4/6, sendmsg4/6) attached as BPF links to
 * the root of the cgroup v2 hierarchy, so they see every UDP socket of the
 * host, whichever cgroup its owner is in, and coexist with anyone else's
 * programs there (links are multi-attach). They are attached only while
 * some workload may be a dgram one (auto before its choice, or dgram).
 *
 * The sweep exists for one-way traffic: a peer that sends and never gets an
 * answer (syslog) and never sends again leaves its requests in the table;
 * the kernel side expires a peer's old requests only when that peer sends
 * again. Every second the table is walked, entries idle for longer than the
 * timeout are deleted and their requests counted as expired for their
 * workload. An entry refreshed between the walk's read and its delete loses
 * that one request (its response then counts as unsolicited): a window of
 * microseconds once a second, on a peer silent for a second before.
 *
 * This file, loader.c and grpc.c are the ones that include a skeleton.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cgroupfs.h"
#include "dgram.h"
#include "ebee_dgram.h"
#include "ebee_dgram.skel.h"

#define NPROGS 9 /* fentry: arrival, 2 peer + 2 send, 2 peer + 2 receive */

struct tally {
	uint32_t wid;
	uint64_t expired; /* by the sweep */
	uint64_t pending; /* at the last sweep */
};

struct ebee_dgram {
	struct ebee_dgram_bpf *skel;
	int cgfd;
	bool on;
	uint64_t timeout_ns;
	struct bpf_program *progs[NPROGS]; /* in attach order */
	bool cg[NPROGS];		   /* attached to the cgroup, not a hook */
	int nprogs;
	struct bpf_link *links[NPROGS];
	struct tally *t;
	size_t nt;
};

static void add_prog(struct ebee_dgram *d, struct bpf_program *p, bool cg)
{
	d->progs[d->nprogs] = p;
	d->cg[d->nprogs++] = cg;
}

/* The programs of the chosen method, in attach order: the arrival and send
 * programs before the receive, and the peer hooks before the length
 * programs that use what they leave, so that a request is never seen by a
 * set that cannot see its response. Only these load. */
static void choose_progs(struct ebee_dgram *d, const struct ebee_sock_attach *a)
{
	struct ebee_dgram_bpf *s = d->skel;
	struct bpf_program *prog;
	bool fio = a && a->io == EBEE_ATTACH_FENTRY;
	bool farr = a && a->arrive == EBEE_ATTACH_FENTRY;
	bool inet6 = fio && a->inet6;

	add_prog(d, farr ? s->progs.dgx_sock_def_readable : s->progs.dg_arrive, false);
	add_prog(d, s->progs.dg_sendmsg4, true);
	add_prog(d, s->progs.dg_sendmsg6, true);
	add_prog(d, fio ? s->progs.dgx_inet_sendmsg : s->progs.dg_send, false);
	if (inet6)
		add_prog(d, s->progs.dgx_inet6_sendmsg, false);
	add_prog(d, s->progs.dg_recvmsg4, true);
	add_prog(d, s->progs.dg_recvmsg6, true);
	add_prog(d, fio ? s->progs.dgx_inet_recvmsg : s->progs.dg_recv, false);
	if (inet6)
		add_prog(d, s->progs.dgx_inet6_recvmsg, false);
	bpf_object__for_each_program(prog, s->obj) bpf_program__set_autoload(prog, false);
	for (int i = 0; i < d->nprogs; i++)
		bpf_program__set_autoload(d->progs[i], true);
}

int ebee_dgram_open(struct ebee_loader *k, const struct ebee_sock_attach *attach,
		    size_t ringbuf_size, unsigned int max_pending, uint64_t timeout_ns,
		    struct ebee_dgram **out, char *msg, size_t msg_len)
{
	struct ebee_dgram *d;
	char cg[1024];
	int err;

	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->cgfd = -1;
	d->timeout_ns = timeout_ns;
	err = cgfs_v2_mount(cg, sizeof(cg), NULL);
	if (err) {
		snprintf(msg, msg_len,
			 "ebee: mode dgram needs a cgroup v2 hierarchy mounted (its UDP peer "
			 "hooks attach to its root): none found");
		goto fail;
	}
	d->cgfd = open(cg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d->cgfd < 0) {
		err = -errno;
		snprintf(msg, msg_len, "ebee: cannot open %s: %s", cg, strerror(-err));
		goto fail;
	}
	d->skel = ebee_dgram_bpf__open();
	if (!d->skel) {
		err = -errno;
		snprintf(msg, msg_len, "ebee: cannot open the dgram BPF object: %s",
			 strerror(-err));
		goto fail;
	}
	err = bpf_map__reuse_fd(d->skel->maps.procs, ebee_loader_map_fd(k, "procs"));
	if (!err)
		err =
		    bpf_map__reuse_fd(d->skel->maps.workloads, ebee_loader_map_fd(k, "workloads"));
	if (!err)
		err = bpf_map__reuse_fd(d->skel->maps.kcounts, ebee_loader_map_fd(k, "kcounts"));
	if (!err)
		err = bpf_map__set_max_entries(d->skel->maps.dgram_rb, ringbuf_size);
	if (!err)
		err = bpf_map__set_max_entries(d->skel->maps.dg_pend, max_pending);
	if (err) {
		snprintf(msg, msg_len, "ebee: cannot set up the dgram BPF maps: %s",
			 strerror(-err));
		goto fail;
	}
	choose_progs(d, attach);
	d->skel->rodata->wakeup_bytes = ringbuf_size / 2;
	d->skel->rodata->dg_timeout_ns = timeout_ns;
	err = ebee_dgram_bpf__load(d->skel);
	if (err) {
		snprintf(msg, msg_len,
			 "ebee: loading the dgram BPF programs failed (mode dgram needs the "
			 "sock_recv_length/sock_send_length tracepoints of Linux 6.3+, or "
			 "fentry/fexit programs): %s",
			 strerror(-err));
		goto fail;
	}
	err = ebee_loader_ringbuf_add(k, bpf_map__fd(d->skel->maps.dgram_rb));
	if (err) {
		snprintf(msg, msg_len, "ebee: cannot poll the dgram ring buffer: %s",
			 strerror(-err));
		goto fail;
	}
	*out = d;
	return 0;
fail:
	ebee_dgram_close(d);
	return err;
}

static void detach_all(struct ebee_dgram *d)
{
	for (int i = 0; i < NPROGS; i++) {
		bpf_link__destroy(d->links[i]);
		d->links[i] = NULL;
	}
	d->on = false;
}

void ebee_dgram_close(struct ebee_dgram *d)
{
	if (!d)
		return;
	detach_all(d);
	ebee_dgram_bpf__destroy(d->skel);
	if (d->cgfd >= 0)
		close(d->cgfd);
	free(d->t);
	free(d);
}

int ebee_dgram_set_probes(struct ebee_dgram *d, bool on, char *msg, size_t msg_len)
{
	struct bpf_program **p = d->progs;
	bool *cg = d->cg;

	if (!on) {
		detach_all(d);
		return 0;
	}
	if (d->on)
		return 0;
	for (int i = 0; i < d->nprogs; i++) {
		d->links[i] =
		    cg[i] ? bpf_program__attach_cgroup(p[i], d->cgfd) : bpf_program__attach(p[i]);
		if (!d->links[i]) {
			int err = -errno;

			snprintf(msg, msg_len, "ebee: cannot attach %s (%s): %s",
				 bpf_program__name(p[i]), bpf_program__section_name(p[i]),
				 strerror(-err));
			detach_all(d);
			return err;
		}
	}
	d->on = true;
	return 0;
}

bool ebee_dgram_probes(const struct ebee_dgram *d)
{
	return d && d->on;
}

static struct tally *tally_of(struct ebee_dgram *d, uint32_t wid, bool create)
{
	struct tally *t;

	for (size_t i = 0; i < d->nt; i++)
		if (d->t[i].wid == wid)
			return &d->t[i];
	if (!create)
		return NULL;
	t = realloc(d->t, (d->nt + 1) * sizeof(*t));
	if (!t)
		return NULL;
	d->t = t;
	t = &d->t[d->nt++];
	memset(t, 0, sizeof(*t));
	t->wid = wid;
	return t;
}

/* Append key to the keys to delete (*v, n of cap); -ENOMEM leaves them as
 * they were. Collect, then delete: deleting while walking a hash can skip
 * keys. */
static int key_push(struct ebee_dg_key **v, size_t *n, size_t *cap, const struct ebee_dg_key *key)
{
	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 64;
		struct ebee_dg_key *t = realloc(*v, c * sizeof(*t));

		if (!t)
			return -ENOMEM;
		*v = t;
		*cap = c;
	}
	(*v)[(*n)++] = *key;
	return 0;
}

void ebee_dgram_sweep(struct ebee_dgram *d, uint64_t now_ns)
{
	struct ebee_dg_key key, *prev = NULL, *del = NULL;
	struct ebee_dg_pend v;
	size_t n = 0, cap = 0;
	int fd;

	if (!d)
		return;
	for (size_t i = 0; i < d->nt; i++)
		d->t[i].pending = 0;
	fd = bpf_map__fd(d->skel->maps.dg_pend);
	/* Collect, then delete: deleting while walking a hash can skip keys. */
	while (!bpf_map_get_next_key(fd, prev, &key)) {
		prev = &key;
		if (bpf_map_lookup_elem_flags(fd, &key, &v, BPF_F_LOCK))
			continue;
		if (now_ns > v.last_ns && now_ns - v.last_ns > d->timeout_ns) {
			if (key_push(&del, &n, &cap, &key))
				break;
			continue;
		}
		struct tally *t = tally_of(d, key.wid, true);

		if (t)
			t->pending += v.tail - v.head;
	}
	for (size_t i = 0; i < n; i++) {
		struct tally *t;

		if (bpf_map_lookup_elem_flags(fd, &del[i], &v, BPF_F_LOCK) ||
		    now_ns - v.last_ns <= d->timeout_ns)
			continue; /* refreshed meanwhile */
		if (bpf_map_delete_elem(fd, &del[i]))
			continue;
		t = tally_of(d, del[i].wid, true);
		if (t)
			t->expired += v.tail - v.head;
	}
	free(del);
}

int ebee_dgram_counts(struct ebee_dgram *d, uint32_t wid, struct ebee_dgram_counts *c)
{
	struct ebee_dg_stats s;
	struct tally *t;

	memset(c, 0, sizeof(*c));
	if (!d)
		return -ENOENT;
	if (bpf_map_lookup_elem(bpf_map__fd(d->skel->maps.dg_stats), &wid, &s))
		return -ENOENT;
	t = tally_of(d, wid, false);
	c->socks = s.socks;
	c->client_socks = s.client_socks;
	c->rx = s.rx;
	c->matched = s.matched;
	c->expired = s.expired + (t ? t->expired : 0);
	c->unsolicited = s.unsolicited;
	c->nopeer = s.nopeer;
	c->full = s.full;
	c->pending = t ? t->pending : 0;
	return 0;
}

void ebee_dgram_workload_del(struct ebee_dgram *d, uint32_t wid)
{
	struct ebee_dg_key key, *prev = NULL, *del = NULL;
	size_t n = 0, cap = 0;
	int fd;

	if (!d)
		return;
	bpf_map_delete_elem(bpf_map__fd(d->skel->maps.dg_stats), &wid);
	for (size_t i = 0; i < d->nt; i++) {
		if (d->t[i].wid == wid) {
			d->t[i] = d->t[--d->nt];
			break;
		}
	}
	fd = bpf_map__fd(d->skel->maps.dg_pend);
	while (!bpf_map_get_next_key(fd, prev, &key)) {
		prev = &key;
		if (key.wid != wid)
			continue;
		if (key_push(&del, &n, &cap, &key))
			break;
	}
	for (size_t i = 0; i < n; i++)
		bpf_map_delete_elem(fd, &del[i]);
	free(del);
}
