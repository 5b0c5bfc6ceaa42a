// SPDX-License-Identifier: MIT
/*
 * Moving threads: every thread of a workload's process tree into its group
 * (each one's cgroups and CPU affinity recorded first), and everything in a
 * group back out to where it was found. Both race with the workload, which
 * may fork or clone while we move it, so both repeat until a pass finds
 * nothing left to move, within a bound.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "act_front.h"
#include "act_proc.h"
#include "procfs.h"

/*
 * Passes over a process tree or a group before giving up. Each pass moves
 * every thread it found, so a server that is not forking all the time needs
 * two or three (the second sees the threads born during the first); only a
 * workload cloning faster than we move (a fork bomb, a thread pool churning
 * per request) gets near the bound, which keeps the call from spinning on it
 * (each pass is one /proc walk or one tasks read).
 */
#define ACT_MOVE_PASSES 50
/*
 * Threads read from a group per pass when emptying it. The buffer is on the
 * stack (4 KiB); a larger group just takes more passes, as each pass moves
 * what it read: ACT_MOVE_PASSES * ACT_EMPTY_BATCH (51 200) threads at most.
 */
#define ACT_EMPTY_BATCH 1024

const struct act_origin act__root_origin = { "/", "/" };

static void grp_origin(const char *grp, struct act_origin *o)
{
	snprintf(o->cpuset, sizeof(o->cpuset), "/%.500s", grp);
	snprintf(o->cpu, sizeof(o->cpu), "/%.500s", grp);
}

/* Is tid in dst for every managed controller? */
static bool is_in(struct act *act, pid_t tid, const struct act_origin *dst)
{
	struct act_origin o;

	if (act->cg->where(act->cgbe, tid, &o))
		return false;
	if (managed_cpuset(act) && strcmp(o.cpuset, dst->cpuset))
		return false;
	if (managed_quota(act) && strcmp(o.cpu, dst->cpu))
		return false;
	return true;
}

/* Is tid in a workload group of ours other than dst? */
static bool in_other_workload(struct act *act, pid_t tid, const struct act_origin *dst)
{
	struct act_origin o;
	size_t l = strlen(act->parent);
	const char *p;

	if (act->cg->where(act->cgbe, tid, &o))
		return false;
	p = managed_cpuset(act) ? o.cpuset : o.cpu;
	return p[0] == '/' && !strncmp(p + 1, act->parent, l) && p[1 + l] == '/' &&
	       strcmp(p, managed_cpuset(act) ? dst->cpuset : dst->cpu);
}

static void restore_affinity(struct act *act, pid_t tid, const struct act_cpumask *aff)
{
	cpu_set_t cur, want;

	CPU_ZERO(&want);
	for (int c = 0; c < CPU_SETSIZE && c < ACT_CPUMASK_MAX; c++)
		if (act_cpumask_isset(aff, c))
			CPU_SET(c, &want);
	if (!sched_getaffinity(tid, sizeof(cur), &cur) && !CPU_EQUAL(&cur, &want) &&
	    sched_setaffinity(tid, sizeof(want), &want))
		act_be_log(act, ACT_LOG_DEBUG, "thread %d: cannot restore its affinity: %s", tid,
			   strerror(errno));
}

/* Move tid back to o (or to the root if o no longer exists), then its affinity. */
static int move_back(struct act *act, pid_t tid, const struct act_origin *o,
		     const struct act_cpumask *aff)
{
	int err = act->cg->attach(act->cgbe, o, tid);

	if (err && err != -ESRCH && o != &act__root_origin) {
		act_be_log(act, ACT_LOG_INFO,
			   "thread %d: its cgroup %s is gone, moving it to the root", tid,
			   o->cpuset);
		err = act->cg->attach(act->cgbe, &act__root_origin, tid);
	}
	if (err == -ESRCH)
		return 0;
	if (!err && aff && act->real_cgroup && !act->dry_run)
		restore_affinity(act, tid, aff);
	return err;
}

/*
 * Empty grp: recorded threads go back to their origin, everything else
 * (forked after placement) to fallback. Repeated because processes may fork
 * while we move them.
 */
int act__empty_group(struct act *act, const char *grp, const struct act_origin *fallback)
{
	pid_t tids[ACT_EMPTY_BATCH];
	int first = 0;

	for (int pass = 0; pass < ACT_MOVE_PASSES; pass++) {
		size_t n = ACT_EMPTY_BATCH;

		act->cg->tasks(act->cgbe, grp, tids, &n);
		if (n == 0)
			return first;
		if (n > ACT_EMPTY_BATCH)
			n = ACT_EMPTY_BATCH;
		for (size_t i = 0; i < n; i++) {
			struct act_rec_task *t = act__rec_find_task(&act->rec, tids[i]);
			int err;

			if (t && t->start && act->real_cgroup &&
			    procfs_starttime(tids[i]) != t->start)
				t = NULL; /* a new thread reusing a recorded id */
			err = move_back(act, tids[i], t ? &t->origin : fallback,
					t && t->has_aff ? &t->aff : NULL);
			if (err && !first)
				first = err;
		}
		if (first)
			break;
	}
	return first ? first : ERR(act, -EBUSY, "cgroup %s keeps getting new tasks", grp);
}

/* A new record for tid of workload wl: where it is now, its start time and affinity. */
static int record_thread(struct act *act, const char *wl, pid_t tid)
{
	struct act_rec_task t = { .tid = tid };
	cpu_set_t cs;

	if (act->cg->where(act->cgbe, tid, &t.origin))
		return -ESRCH; /* exited */
	t.start = procfs_starttime(tid);
	snprintf(t.wl, sizeof(t.wl), "%s", wl);
	if (!sched_getaffinity(tid, sizeof(cs), &cs)) {
		t.has_aff = true;
		for (int c = 0; c < CPU_SETSIZE && c < ACT_CPUMASK_MAX; c++)
			if (CPU_ISSET(c, &cs))
				act_cpumask_set(&t.aff, c);
	}
	return act__rec_add_task(&act->rec, &t);
}

/*
 * Record every thread of tids[0..n) not yet in dst, in memory and then in the
 * state file; zero the entries that need no move (already there, or gone).
 * *pending counts those left to move. -EBUSY if one is another workload's.
 */
static int record_threads(struct act *act, struct act_workload *wl, pid_t pid, pid_t *tids,
			  size_t n, const struct act_origin *dst, size_t *pending)
{
	int err = 0;

	*pending = 0;
	for (size_t i = 0; i < n; i++) {
		if (is_in(act, tids[i], dst)) {
			tids[i] = 0;
			continue;
		}
		if (in_other_workload(act, tids[i], dst))
			return ERR(act, -EBUSY,
				   "workload %s: thread %d of pid %d belongs to another "
				   "workload already",
				   wl->name, tids[i], pid);
		if (act__rec_find_task(&act->rec, tids[i])) {
			(*pending)++;
			continue;
		}
		err = record_thread(act, wl->name, tids[i]);
		if (err == -ESRCH) {
			tids[i] = 0;
			continue;
		}
		if (err)
			return err;
		(*pending)++;
	}
	return *pending ? act__persist(act) : 0;
}

static int attach_threads(struct act *act, const struct act_origin *dst, const pid_t *tids,
			  size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int err;

		if (!tids[i])
			continue;
		err = act->cg->attach(act->cgbe, dst, tids[i]);
		if (err && err != -ESRCH)
			return err;
	}
	return 0;
}

int act__move_tree(struct act *act, struct act_workload *wl, pid_t pid)
{
	struct act_origin dst;

	grp_origin(wl->grp, &dst);
	for (int pass = 0; pass < ACT_MOVE_PASSES; pass++) {
		pid_t *tids = NULL;
		size_t n = 0, pending = 0;
		int err;

		err = act__proc_tree(pid, &tids, &n);
		if (err == -ESRCH && pass > 0)
			return 0; /* the whole tree exited meanwhile */
		if (err)
			return ERR(act, err, "cannot list the threads of pid %d: %s", pid,
				   strerror(-err));
		/* record first (in the state file too), then move */
		err = record_threads(act, wl, pid, tids, n, &dst, &pending);
		if (!err)
			err = attach_threads(act, &dst, tids, n);
		free(tids);
		if (err)
			return err;
		if (!pending)
			return 0;
	}
	return ERR(act, -EAGAIN, "pid %d keeps creating threads faster than they can be moved",
		   pid);
}
