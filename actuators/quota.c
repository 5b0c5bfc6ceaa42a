// SPDX-License-Identifier: MIT
/*
 * CPU quota of a workload, in milli-cores (1000 = one CPU's worth of time per
 * period) as everywhere inside the process. The cgroup files hold
 * microseconds per period; the cgroup backend's act_quota_mc_to_us() is the
 * one conversion, done here where a quota is handed to the ops table.
 */
#include <errno.h>

#include "act_front.h"

int act__quota_check(struct act *act, const char *name, long quota_mc, int64_t *quota_us)
{
	const struct act_caps *c = &act->caps;
	int64_t us;

	if (quota_mc <= 0) {
		*quota_us = -1;
		return 0;
	}
	if (quota_mc > c->quota_max_mc)
		return ERR(act, -ERANGE, "workload %s: quota of %.3f cores exceeds the %d cpus",
			   name, quota_mc / 1000.0, c->nr_cpus);
	us = act_quota_mc_to_us(quota_mc, c->quota_period_us);
	if (us < c->quota_min_us)
		return ERR(act, -ERANGE,
			   "workload %s: quota of %.4f cores is %lld us per %u us, below the "
			   "kernel's minimum of %u us",
			   name, quota_mc / 1000.0, (long long)us, c->quota_period_us,
			   c->quota_min_us);
	*quota_us = us;
	return 0;
}

int act_workload_set_quota(struct act *act, struct act_workload *wl, long quota_mc)
{
	int64_t q;
	int err;

	if (!act || !wl || !act__wl_listed(act, wl))
		return -EINVAL;
	if (!managed_quota(act))
		return ERR(act, -EOPNOTSUPP, "cpu quota is not usable: %s", act->caps.quota_reason);
	err = act__quota_check(act, wl->name, quota_mc, &q);
	if (err)
		return err;
	err = act->cg->set_quota(act->cgbe, wl->grp, q, act->caps.quota_period_us);
	if (err)
		return err;
	wl->quota_mc = q < 0 ? -1 : quota_mc;
	act_be_log(act, ACT_LOG_DEBUG, "workload %s: quota %lld us per %u us", wl->name,
		   (long long)q, act->caps.quota_period_us);
	return 0;
}
