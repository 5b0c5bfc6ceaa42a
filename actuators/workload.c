// SPDX-License-Identifier: MIT
/*
 * Managed workloads: adding one (its group created with its cores and quota
 * before its threads move in), attaching more processes, removing it, looking
 * it up and reading back what is in force. Adding is validate -> record ->
 * create -> fill -> enable, and a failure at any step undoes the steps before
 * it, so nothing stays half-applied. In-place workloads (their own cgroup) are
 * in workload_inplace.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "act_front.h"
#include "act_proc.h"
#include "opts.h"
#include "procfs.h"

/*
 * Threads act_get() reads from a group to count them. The backend drops
 * duplicates (v1 lists a thread under cpuset and cpu) only within the buffer,
 * so a workload with more threads than this (64 KiB of pid_t) may be counted
 * slightly high; no server co-located here comes near.
 */
#define ACT_COUNT_TASKS_MAX 16384

int act__check_wl_opts(struct act *act, const struct act_workload_opts *opts)
{
	int err = opts_check_min(opts, OPTS_KNOWN_END(struct act_workload_opts, freq_max_khz),
				 OPTS_KNOWN_END(struct act_workload_opts, freq_max_khz));

	if (err == -E2BIG)
		return ERR(act, err,
			   "struct act_workload_opts of %zu bytes sets fields unknown to this "
			   "build (built against a newer actuator.h?)",
			   opts->sz);
	if (err)
		return ERR(act, err, "act_workload_opts.sz is not set");
	return 0;
}

int act__check_initial(struct act *act, const char *name, const struct act_workload_opts *opts,
		       int64_t *quota_us)
{
	int err;

	if (managed_cpuset(act)) {
		err = act__check_new_cpus(act, name, opts ? opts->cpus : NULL);
		if (err)
			return err;
	}
	if (opts && opts->quota_mc > 0) {
		if (!managed_quota(act))
			return ERR(act, -EOPNOTSUPP, "workload %s: cpu quota is not usable: %s",
				   name, act->caps.quota_reason);
		return act__quota_check(act, name, opts->quota_mc, quota_us);
	}
	return 0;
}

/* ---------------------------------------------------------------- adding */

/* Everything act_workload_add() checks before it changes anything. */
static int add_check(struct act *act, const char *name, pid_t pid,
		     const struct act_workload_opts *opts, int64_t *quota_us)
{
	int err = act__check_wl_opts(act, opts);

	if (err)
		return err;
	if (!act__valid_name(name))
		return ERR(act, -EINVAL,
			   "bad workload name \"%s\" (one component of [A-Za-z0-9_.-], "
			   "at most %d bytes)",
			   name ? name : "(null)", ACT_NAME_MAX - 1);
	if (act_workload_find(act, name))
		return ERR(act, -EEXIST, "workload %s is managed already", name);
	if (pid <= 0 || !procfs_alive(pid, 0))
		return ERR(act, -ESRCH, "workload %s: no process %d", name, pid);
	return act__check_initial(act, name, opts, quota_us);
}

/* Record where the workload's pid lives (memory, then state file): where its threads go back. */
static int add_record(struct act *act, struct act_workload *wl)
{
	struct act_rec_wl rw = { 0 };
	int err;

	err = act->cg->where(act->cgbe, wl->pid, &wl->origin);
	if (err)
		return ERR(act, err, "workload %s: cannot read the cgroups of pid %d: %s", wl->name,
			   wl->pid, strerror(-err));
	rw.origin = wl->origin;
	snprintf(rw.name, sizeof(rw.name), "%s", wl->name);
	err = act__rec_add_wl(&act->rec, &rw);
	return err ? err : act__persist(act);
}

/* Its quota, then its threads: the group is complete before the workload runs in it. */
static int add_fill(struct act *act, struct act_workload *wl, int64_t quota_us, long quota_mc)
{
	int err;

	if (quota_us >= 0) {
		err = act->cg->set_quota(act->cgbe, wl->grp, quota_us, act->caps.quota_period_us);
		if (err)
			return err;
		wl->quota_mc = quota_mc;
	}
	return act__move_tree(act, wl, wl->pid);
}

/* List wl, then give its cores the initial frequency cap (if cpufreq is usable). */
static int add_enable(struct act *act, struct act_workload *wl, unsigned long freq_max_khz)
{
	int err;

	wl->next = act->wls;
	act->wls = wl;
	if (!freq_max_khz)
		return 0;
	if (!managed_freq(act)) {
		act_be_log(act, ACT_LOG_INFO,
			   "workload %s: frequency cap ignored: cpufreq is not usable: %s",
			   wl->name, act->caps.cpufreq_reason);
		return 0;
	}
	err = act_workload_set_freq(act, wl, freq_max_khz);
	if (err)
		act__wl_unlink(act, wl);
	return err;
}

/* Undo a failed add: release what was created, else just forget the record. */
static void add_rollback(struct act *act, struct act_workload *wl, bool created)
{
	if (created) {
		act__wl_undo(act, wl);
	} else {
		act__rec_drop_wl(&act->rec, wl->name);
		act__persist(act);
	}
	free(wl);
}

struct act_workload *act_workload_add(struct act *act, const char *name, pid_t pid,
				      const struct act_workload_opts *opts)
{
	char grp[ACT_PATH_MAX];
	struct act_workload *wl;
	int64_t quota_us = -1;
	bool created = false;
	int err;

	if (!act)
		return err_ptr(-EINVAL);
	err = add_check(act, name, pid, opts, &quota_us);
	if (!err)
		err = act__ensure_parent(act);
	if (err)
		return err_ptr(err);
	snprintf(grp, sizeof(grp), "%s/%s", act->parent, name);
	wl = act__wl_new(act, name, grp, pid);
	if (!wl)
		return err_ptr(-ENOMEM);
	if (opts && opts->cpus) /* present whenever cpuset is managed (checked) */
		wl->cpus = *opts->cpus;

	if (managed_cgroup(act)) {
		err = add_record(act, wl);
		if (!err)
			err = act__subtree_enable(act, wl->grp);
		if (!err)
			err = act->cg->create(act->cgbe, wl->grp,
					      managed_cpuset(act) ? &wl->cpus : NULL);
		created = !err;
		/* mems before any task joins (v1 refuses tasks without them) */
		if (!err && managed_cpuset(act))
			err = act__set_mems(act, wl->grp, &wl->cpus);
		if (!err)
			err = add_fill(act, wl, quota_us, opts ? opts->quota_mc : 0);
	}
	if (!err)
		err = add_enable(act, wl, opts ? opts->freq_max_khz : 0);
	if (err) {
		add_rollback(act, wl, created);
		return err_ptr(err);
	}
	act_be_log(act, ACT_LOG_INFO, "workload %s (pid %d) managed in %s", name, pid, wl->grp);
	return wl;
}

/* ---------------------------------------------------------------- the rest */

int act_workload_attach(struct act *act, struct act_workload *wl, pid_t pid)
{
	if (!act || !wl || !act__wl_listed(act, wl))
		return -EINVAL;
	if (pid <= 0 || !procfs_alive(pid, 0))
		return ERR(act, -ESRCH, "workload %s: no process %d", wl->name, pid);
	if (!managed_cgroup(act) || wl->inplace)
		return 0; /* in place: its processes stay where they are */
	return act__move_tree(act, wl, pid);
}

int act_workload_remove(struct act *act, struct act_workload *wl)
{
	int err;

	if (!act || !wl || !act__wl_listed(act, wl))
		return -EINVAL;
	act__wl_unlink(act, wl);
	err = act__wl_release(act, wl);
	act_be_log(act, ACT_LOG_INFO, "workload %s released%s", wl->name,
		   err ? " (with errors)" : "");
	free(wl);
	return err;
}

const char *act_workload_name(const struct act_workload *wl)
{
	return wl ? wl->name : NULL;
}

pid_t act_workload_pid(const struct act_workload *wl)
{
	return wl ? wl->pid : -1;
}

const struct act_cpumask *act_workload_cpus(const struct act_workload *wl)
{
	return wl ? &wl->cpus : NULL;
}

/* ---------------------------------------------------------------- read back */

/* The span of the frequency limits of cpus, and whether they differ. */
static void get_freq_span(struct act *act, const struct act_cpumask *cpus, struct act_current *cur)
{
	bool first = true;
	int cpu;

	act_cpumask_for_each(cpu, cpus)
	{
		unsigned long mn, mx;

		if (act->fq->get(act->fqbe, cpu, &mn, &mx))
			continue;
		if (!first && (mn != cur->freq_min_khz || mx != cur->freq_max_khz))
			cur->freq_mixed = true;
		if (first || mn < cur->freq_min_khz)
			cur->freq_min_khz = mn;
		if (first || mx > cur->freq_max_khz)
			cur->freq_max_khz = mx;
		first = false;
	}
}

static int count_tasks(struct act *act, const char *grp)
{
	pid_t *tids = calloc(ACT_COUNT_TASKS_MAX, sizeof(*tids));
	size_t n = tids ? ACT_COUNT_TASKS_MAX : 0;

	act->cg->tasks(act->cgbe, grp, tids, &n);
	free(tids);
	return (int)n;
}

int act_get(struct act *act, const struct act_workload *wl, struct act_current *cur)
{
	int err;

	if (!act || !wl || !cur || !act__wl_listed(act, wl))
		return -EINVAL;
	memset(cur, 0, sizeof(*cur));
	cur->quota_us = -1;
	if (managed_cpuset(act)) {
		err = act->cg->get_cpus(act->cgbe, wl->grp, &cur->cpus);
		if (err)
			return ERR(act, err, "workload %s: cannot read its cpus: %s", wl->name,
				   strerror(-err));
	}
	if (managed_quota(act)) {
		err = act->cg->get_quota(act->cgbe, wl->grp, &cur->quota_us, &cur->period_us);
		if (err)
			return ERR(act, err, "workload %s: cannot read its quota: %s", wl->name,
				   strerror(-err));
		cur->quota_mc = act_quota_us_to_mc(cur->quota_us, cur->period_us);
	}
	if (managed_cgroup(act))
		cur->nr_tasks = count_tasks(act, wl->grp);
	if (managed_freq(act))
		get_freq_span(act, managed_cpuset(act) ? &cur->cpus : &wl->cpus, cur);
	return 0;
}
