// SPDX-License-Identifier: MIT
/*
 * Workloads managed in place: the workload's own, existing cgroup (e.g. a
 * systemd unit's) gets its cores and quota written; no process is moved and
 * the cgroup is never removed. What it held is read and recorded (memory and
 * state file) before the first write and put back on release, restore, and
 * by a cleanup after SIGKILL. Adding is validate -> read what is there ->
 * record -> write -> enable, undone as a whole on failure.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "act_front.h"
#include "cgroupfs.h"

/* A cgroup path relative to the hierarchy root: no "..", no empty components. */
static bool valid_grp(const char *g)
{
	const char *c = g;

	if (!*g || strlen(g) >= ACT_PATH_MAX - 1 || strpbrk(g, "\t\n"))
		return false;
	while (*c) {
		size_t n = strcspn(c, "/");

		if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c += n;
		if (*c == '/' && !*++c)
			return false;
	}
	return true;
}

/* May cgroup (no leading '/') be taken over as workload name's, in place? */
static int check_cgroup(struct act *act, const char *name, const char *cgroup)
{
	if (!valid_grp(cgroup))
		return ERR(act, -EINVAL,
			   "workload %s: \"%s\" is not a cgroup below the root (no \"..\", "
			   "not the root itself)",
			   name, cgroup);
	if (cgfs_within(cgroup, act->parent))
		return ERR(act, -EINVAL,
			   "workload %s: cgroup %s is parties' own parent %s or below it", name,
			   cgroup, act->parent);
	for (struct act_workload *w = act->wls; w; w = w->next)
		if (w->inplace && !strcmp(w->grp, cgroup))
			return ERR(act, -EEXIST, "workload %s: cgroup %s is workload %s's", name,
				   cgroup, w->name);
	if (!managed_cgroup(act))
		return ERR(act, -EOPNOTSUPP,
			   "workload %s: in place needs cpuset or cpu quota: %s; %s", name,
			   act->caps.cpuset_reason, act->caps.quota_reason);
	if (!act->cg->exists(act->cgbe, cgroup))
		return ERR(act, -ENOENT, "workload %s: no cgroup %s", name, cgroup);
	return 0;
}

/* Everything act_workload_add_inplace() checks before it changes anything. */
static int check_add_inplace(struct act *act, const char *name, const char *cgroup,
			     const struct act_workload_opts *opts, int64_t *quota_us)
{
	int err = act__check_wl_opts(act, opts);

	if (err)
		return err;
	if (!act__valid_name(name))
		return ERR(act, -EINVAL, "bad workload name \"%s\"", name ? name : "(null)");
	if (act_workload_find(act, name))
		return ERR(act, -EEXIST, "workload %s is managed already", name);
	err = check_cgroup(act, name, cgroup);
	return err ? err : act__check_initial(act, name, opts, quota_us);
}

/* What cgroup holds now, of the managed resources: the record to restore. */
static int read_found(struct act *act, const char *name, const char *cgroup, struct act_rec_wl *rw)
{
	int err;

	*rw = (struct act_rec_wl){ .inplace = true };
	snprintf(rw->name, sizeof(rw->name), "%s", name);
	snprintf(rw->grp, sizeof(rw->grp), "%s", cgroup);
	if (managed_cpuset(act)) {
		err = act->cg->get_cpus(act->cgbe, cgroup, &rw->cpus);
		if (err)
			return ERR(act, err, "workload %s: cannot read the cpus of cgroup %s: %s",
				   name, cgroup, strerror(-err));
		rw->has_cpus = true;
	}
	if (managed_cpuset(act) && act->numa && act->cg->get_mems) {
		err = act->cg->get_mems(act->cgbe, cgroup, rw->mems, sizeof(rw->mems));
		if (err)
			return ERR(act, err, "workload %s: cannot read the mems of cgroup %s: %s",
				   name, cgroup, strerror(-err));
		rw->has_mems = true;
	}
	if (managed_quota(act)) {
		err = act->cg->get_quota(act->cgbe, cgroup, &rw->quota_us, &rw->period_us);
		if (err)
			return ERR(act, err, "workload %s: cannot read the quota of cgroup %s: %s",
				   name, cgroup, strerror(-err));
		rw->has_quota = true;
	}
	return 0;
}

/* The first task in grp, 0 if it is empty: the workload's pid for the caller. */
static pid_t first_task(struct act *act, const char *grp)
{
	pid_t first = 0;
	size_t n = 1;

	act->cg->tasks(act->cgbe, grp, &first, &n);
	return n ? first : 0;
}

/*
 * Record what was found (memory, then state file), then write the workload's
 * cores and quota. The quota is written when one is wanted, or to put the
 * period parties works in where the found one differs (unlimited then).
 */
static int inplace_write(struct act *act, struct act_workload *wl, const struct act_rec_wl *rw,
			 int64_t quota_us, long quota_mc)
{
	uint64_t period = act->caps.quota_period_us;
	int err;

	err = act__rec_add_wl(&act->rec, rw);
	if (!err)
		err = act__persist(act);
	if (!err && managed_cpuset(act))
		err = act__set_mems(act, wl->grp, &wl->cpus);
	if (!err && managed_cpuset(act))
		err = act->cg->set_cpus(act->cgbe, wl->grp, &wl->cpus);
	if (err || !managed_quota(act) ||
	    (quota_us < 0 && rw->quota_us < 0 && rw->period_us == period))
		return err;
	err = act->cg->set_quota(act->cgbe, wl->grp, quota_us, period);
	if (!err)
		wl->quota_mc = quota_us < 0 ? -1 : quota_mc;
	return err;
}

/* List wl, then give its cores the initial frequency cap (silently none without cpufreq). */
static int inplace_enable(struct act *act, struct act_workload *wl, unsigned long freq_max_khz)
{
	int err;

	wl->next = act->wls;
	act->wls = wl;
	if (!freq_max_khz || !managed_freq(act))
		return 0;
	err = act_workload_set_freq(act, wl, freq_max_khz);
	if (err)
		act__wl_unlink(act, wl);
	return err;
}

struct act_workload *act_workload_add_inplace(struct act *act, const char *name, const char *cgroup,
					      const struct act_workload_opts *opts)
{
	struct act_workload *wl;
	struct act_rec_wl rw;
	int64_t quota_us = -1;
	int err;

	if (!act || !cgroup)
		return err_ptr(-EINVAL);
	while (*cgroup == '/')
		cgroup++;
	err = check_add_inplace(act, name, cgroup, opts, &quota_us);
	if (!err)
		err = read_found(act, name, cgroup, &rw);
	if (err)
		return err_ptr(err);
	wl = act__wl_new(act, name, cgroup, first_task(act, cgroup));
	if (!wl)
		return err_ptr(-ENOMEM);
	wl->inplace = true;
	if (opts && opts->cpus)
		wl->cpus = *opts->cpus;
	err = inplace_write(act, wl, &rw, quota_us, opts ? opts->quota_mc : 0);
	if (!err)
		err = inplace_enable(act, wl, opts ? opts->freq_max_khz : 0);
	if (err) {
		act__wl_undo(act, wl);
		free(wl);
		return err_ptr(err);
	}
	act_be_log(act, ACT_LOG_INFO, "workload %s managed in place in cgroup %s", name, cgroup);
	return wl;
}
