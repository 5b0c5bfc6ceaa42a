// SPDX-License-Identifier: MIT
/* CPU quota of a workload: CPUs worth of time per period. */
#include <errno.h>
#include <math.h>

#include "act_front.h"

int act__quota_check(struct act *act, const char *name, double cores, int64_t *quota_us)
{
	double us;

	if (!(cores > 0)) {
		*quota_us = -1;
		return 0;
	}
	if (cores > act->caps.quota_max_cores + 1e-9)
		return ERR(act, -ERANGE, "workload %s: quota of %.3f cores exceeds the %d cpus",
			   name, cores, act->caps.nr_cpus);
	us = round(cores * act->caps.quota_period_us);
	if (us < act->caps.quota_min_us)
		return ERR(act, -ERANGE,
			   "workload %s: quota of %.4f cores is %.0f us per %u us, below the "
			   "kernel's minimum of %u us",
			   name, cores, us, act->caps.quota_period_us, act->caps.quota_min_us);
	*quota_us = (int64_t)us;
	return 0;
}

int act_set_quota(struct act *act, struct act_workload *wl, double cores)
{
	int64_t q;
	int err;

	if (!act || !wl || !act__wl_listed(act, wl))
		return -EINVAL;
	if (!managed_quota(act))
		return ERR(act, -EOPNOTSUPP, "cpu quota is not usable: %s", act->caps.quota_reason);
	err = act__quota_check(act, wl->name, cores, &q);
	if (err)
		return err;
	err = act->cg->set_quota(act->cgbe, wl->grp, q, act->caps.quota_period_us);
	if (err)
		return err;
	wl->quota_us = q;
	act_be_log(act, ACT_LOG_DEBUG, "workload %s: quota %lld us per %u us", wl->name,
		   (long long)q, act->caps.quota_period_us);
	return 0;
}
