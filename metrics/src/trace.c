// SPDX-License-Identifier: MIT
/*
 * Starting and stopping the tracing of a workload: the pid checks (init,
 * kernel threads, thread ids), entering it in the kernel maps, and adopting
 * the connections and descendants that existed before tracing began.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "proc.h"

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
		ebee_logf(eb, EBEE_LOG_WARN,
			  "ebee: pid %d: %zu of %zu connections open before tracing could not be "
			  "adopted (%s; max_conns %u): their requests show once their clients "
			  "reconnect",
			  tgid, lost, n, strerror(-last), eb->opts.max_conns);
	return ok;
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
		ebee_logf(eb, EBEE_LOG_WARN,
			  "ebee: pid 1 is init: tracing it traces every process on the host; "
			  "refused unless ebee_trace_opts.allow_init is set");
		return -EPERM;
	}
	if (procfs_stat(pid, &st) ? pid == 2 : procfs_kthread(&st)) {
		ebee_logf(eb, EBEE_LOG_WARN,
			  "ebee: pid %d is a kernel thread: it makes no system calls to trace",
			  pid);
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

/* Under eb->ctl: refuses a pid already traced or a mode this ebee lacks,
 * then enters the workload (which gates the programs) and its root process
 * in the kernel maps. On error nothing is left in the kernel. */
static int trace_arm(struct ebee *eb, struct wl *w, struct wl *old, pid_t pid, enum ebee_mode mode,
		     uint32_t *kflags)
{
	int err;

	if (old && !old->exited)
		return -EEXIST;
	err = ebee_scan_grpc(eb, w, true); /* gRPC */
	if (err)
		return err;
	if (mode == EBEE_MODE_DGRAM && !eb->dgram) {
		ebee_logf(eb, EBEE_LOG_WARN, "ebee: pid %d: mode dgram is unavailable: %s", pid,
			  eb->dgram_err);
		return -EOPNOTSUPP;
	}
	*kflags = ebee_wl_flags(w, ebee_now_ns());
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
		ebee_wl_unlink(eb, old);
	w->kflags = kflags;
	w->next = eb->wls;
	eb->wls = w;
	eb->nwls++;
	pthread_mutex_unlock(&eb->lock);
	ebee_wl_free(old);
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

/* Takes back what trace_arm(), trace_publish() and the cgroups' entry did
 * when the probes could not follow: under eb->ctl. */
static void trace_unwind(struct ebee *eb, struct wl *w)
{
	pthread_mutex_lock(&eb->lock);
	ebee_wl_unlink(eb, w);
	pthread_mutex_unlock(&eb->lock);
	ebee_loader_workload_del(eb->loader, w->pid);
	ebee_cg2_wl_del(eb->cg2, w->pid);
	ebee_ksync(eb, NULL, 0);
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
	err = ebee_wl_new(eb, pid, mode, no_children, &w);
	if (err)
		return err;
	pthread_mutex_lock(&eb->ctl);
	old = ebee_wl_find(eb, pid);
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
		ebee_logf(eb, EBEE_LOG_WARN, "ebee: pid %d: out of memory for its cgroups", pid);
	err = ebee_ksync(eb, msg, sizeof(msg));
	if (err)
		goto unwind;
	nadopted = trace_adopt_existing(eb, pid, no_children, &nkids);
	/* A zero with I/O says when connections predate tracing (trust.c). */
	pthread_mutex_lock(&eb->lock);
	w->adopted = nadopted;
	pthread_mutex_unlock(&eb->lock);
	pthread_mutex_unlock(&eb->ctl);
	ebee_logf(eb, EBEE_LOG_INFO,
		  "ebee: tracing pid %d (%s, %zu descendants, %zu open connections adopted)", pid,
		  ebee_mode_str(mode), nkids, nadopted);
	return 0;
unwind:
	trace_unwind(eb, w);
unlock:
	pthread_mutex_unlock(&eb->ctl);
	ebee_wl_free(w);
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
	w = ebee_wl_find(eb, pid);
	if (w)
		ebee_wl_unlink(eb, w);
	pthread_mutex_unlock(&eb->lock);
	if (!w) {
		pthread_mutex_unlock(&eb->ctl);
		return -ENOENT;
	}
	if (!w->exited)
		ebee_loader_workload_del(eb->loader, pid);
	ebee_grpc_workload_del(eb->grpc, pid); /* gRPC */
	ebee_dgram_workload_del(eb->dgram, pid);
	ebee_cg2_wl_del(eb->cg2, pid);
	ebee_ksync(eb, NULL, 0);
	pthread_mutex_unlock(&eb->ctl);
	ebee_wl_free(w);
	return 0;
}
