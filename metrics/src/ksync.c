// SPDX-License-Identifier: MIT
/*
 * Keeping the kernel in step with the workloads: each workload's flags in
 * the kernel maps, the probe groups attached (main, gRPC and datagram
 * objects), and the framing program's cgroup scope. Called with ctl held
 * and lock not held: attaching can take seconds.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core.h"

/* Probe groups a workload with these kernel flags needs. On the socket path
 * the read/write hooks also tell which sockets are the workload's, so conn
 * needs them too; only the per-packet arrival hook is io's alone. */
unsigned int ebee_ksync_probes(const struct ebee *eb, uint32_t flags)
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
		ebee_logf(eb, EBEE_LOG_WARN, "%s; framing attaches to the cgroup v2 root instead",
			  m);
		ebee_cg2_scope_failed(eb->cg2);
		if (!ebee_cg2_scope(eb->cg2, &fds, &n, &root, &changed, desc, sizeof(desc)))
			ebee_loader_frame_scope(eb->loader, NULL, 0, m, sizeof(m));
		return;
	}
	ebee_logf(eb, EBEE_LOG_INFO, "ebee: framing attaches to %s%s",
		  root ? "the cgroup v2 root" : "cgroup(s) ", root ? "" : desc);
}

/* A workload socket the framing hook did not see (frame_missed): its cgroup
 * joins the scope, unless it is in it already (then the report was one of
 * the connections whose bytes came before its storage). With ctl held. */
void ebee_ksync_frame_missed(struct ebee *eb)
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
		ebee_logf(eb, EBEE_LOG_INFO,
			  "ebee: pid %u: a connection in cgroup %s, outside the cgroups framing "
			  "attaches to (its bytes so far went unseen: counted by length); "
			  "framing attaches there too",
			  wid, path);
	else if (r < 0)
		ebee_logf(eb, EBEE_LOG_INFO,
			  "ebee: pid %u: a connection in cgroup id %llu, which cannot be found "
			  "(%s): framing attaches to the cgroup v2 root",
			  wid, (unsigned long long)cgid, strerror(-r));
}

/* Each workload's kernel flags as its state asks; returns the probe groups
 * they need together. */
static int sync_flags(struct ebee *eb, unsigned int *need)
{
	uint64_t now = ebee_now_ns();
	int err;

	for (struct wl *w = eb->wls; w; w = w->next) {
		uint32_t f;

		if (w->exited)
			continue;
		f = ebee_wl_flags(w, now);
		*need |= ebee_ksync_probes(eb, f);
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
	return 0;
}

/* gRPC: the uprobes are the grpc object's. */
static int sync_grpc(struct ebee *eb, unsigned int need, char *msg, size_t msg_len)
{
	int err;

	if (!eb->grpc || !!(need & EBEE_PROBE_GRPC) == ebee_grpc_probes(eb->grpc))
		return 0;
	err = ebee_grpc_set_probes(eb->grpc, need & EBEE_PROBE_GRPC, msg, msg_len);
	pthread_mutex_lock(&eb->lock);
	eb->grpc_probes_now = ebee_grpc_probes(eb->grpc);
	pthread_mutex_unlock(&eb->lock);
	if (err) {
		ebee_logf(eb, EBEE_LOG_WARN, "%s", msg);
		return err;
	}
	ebee_logf(eb, EBEE_LOG_DEBUG, "ebee: grpc uprobes %s",
		  need & EBEE_PROBE_GRPC ? "attached" : "detached");
	return 0;
}

/* dgram: the UDP object's programs. */
static int sync_dgram(struct ebee *eb, unsigned int need, char *msg, size_t msg_len)
{
	int err;

	if (!eb->dgram || !!(need & EBEE_PROBE_DGRAM) == ebee_dgram_probes(eb->dgram))
		return 0;
	err = ebee_dgram_set_probes(eb->dgram, need & EBEE_PROBE_DGRAM, msg, msg_len);
	pthread_mutex_lock(&eb->lock);
	eb->dgram_probes_now = ebee_dgram_probes(eb->dgram);
	pthread_mutex_unlock(&eb->lock);
	if (err) {
		ebee_logf(eb, EBEE_LOG_WARN, "%s", msg);
		return err;
	}
	ebee_logf(eb, EBEE_LOG_DEBUG, "ebee: dgram probes %s",
		  need & EBEE_PROBE_DGRAM ? "attached" : "detached");
	return 0;
}

/* The main object's probe groups. */
static int sync_main(struct ebee *eb, unsigned int need, char *msg, size_t msg_len)
{
	char b1[64], b2[64];
	int err;

	if (need == ebee_loader_probes(eb->loader))
		return 0;
	ebee_probes_str(ebee_loader_probes(eb->loader), b1, sizeof(b1));
	ebee_probes_str(need, b2, sizeof(b2));
	err = ebee_loader_set_probes(eb->loader, need, msg, msg_len);
	pthread_mutex_lock(&eb->lock);
	eb->probes_now = ebee_loader_probes(eb->loader);
	pthread_mutex_unlock(&eb->lock);
	if (err) {
		ebee_logf(eb, EBEE_LOG_WARN, "%s", msg);
		return err;
	}
	ebee_logf(eb, EBEE_LOG_DEBUG, "ebee: probes [%s] -> [%s]", b1, b2);
	return 0;
}

/* Make the kernel flags and the attached probe groups match the workloads.
 * Called with ctl held and lock NOT held: attaching can take seconds. */
int ebee_ksync(struct ebee *eb, char *msg, size_t msg_len)
{
	unsigned int need = 0;
	char m[256];
	int err;

	if (!msg) {
		msg = m;
		msg_len = sizeof(m);
	}
	err = sync_flags(eb, &need);
	if (!err)
		err = sync_grpc(eb, need, msg, msg_len);
	if (err)
		return err;
	need &= ~EBEE_PROBE_GRPC;
	err = sync_dgram(eb, need, msg, msg_len);
	if (err)
		return err;
	need &= ~EBEE_PROBE_DGRAM;
	if (need & EBEE_PROBE_SOCK_FRAME)
		sync_frame_scope(eb);
	return sync_main(eb, need, msg, msg_len);
}
