// SPDX-License-Identifier: MIT
/*
 * Putting one workload back: its threads to where they came from and its
 * group removed, or, in place, its own cgroup's values written back as found;
 * its frequency limits restored; its records dropped. Used by removal,
 * act_restore(), a failed add's undo and a cleanup after SIGKILL.
 */
#include <string.h>

#include "act_front.h"

int act__wl_release(struct act *act, struct act_workload *wl)
{
	int err = 0, e;
	struct act_rec_wl *r = act__rec_find_wl(&act->rec, wl->name);

	if (wl->inplace) {
		if (r && r->inplace)
			err = act__restore_inplace(act, r);
	} else if (managed_cgroup(act)) {
		err = act__empty_group(act, wl->grp, &wl->origin);
		if (!err) {
			err = act->cg->remove(act->cgbe, wl->grp);
			if (err == -ENOENT)
				err = 0;
		}
	}
	if (managed_freq(act)) {
		e = act__freq_restore(act, &wl->cpus);
		if (e && !err)
			err = e;
	}
	act__rec_drop_wl(&act->rec, wl->name);
	e = act__persist(act);
	return err ? err : e;
}

void act__wl_undo(struct act *act, struct act_workload *wl)
{
	char msg[sizeof(act->err)];

	memcpy(msg, act->err, sizeof(msg));
	act__wl_release(act, wl);
	memcpy(act->err, msg, sizeof(msg));
}

int act__restore_inplace(struct act *act, const struct act_rec_wl *r)
{
	int err = 0, e;

	if (!act->cg->exists(act->cgbe, r->grp)) {
		act_be_log(act, ACT_LOG_INFO, "workload %s: cgroup %s is gone: nothing to restore",
			   r->name, r->grp);
		return 0;
	}
	if (r->has_cpus && managed_cpuset(act))
		err = act->cg->set_cpus(act->cgbe, r->grp, &r->cpus);
	if (r->has_mems && managed_cpuset(act) && act->cg->set_mems) {
		e = act->cg->set_mems(act->cgbe, r->grp, r->mems);
		if (e && !err)
			err = e;
	}
	if (r->has_quota && managed_quota(act)) {
		e = act->cg->set_quota(act->cgbe, r->grp, r->quota_us, r->period_us);
		if (e && !err)
			err = e;
	}
	act_be_log(act, ACT_LOG_INFO, "workload %s: cgroup %s restored as found%s", r->name, r->grp,
		   err ? " (with errors)" : "");
	return err;
}
