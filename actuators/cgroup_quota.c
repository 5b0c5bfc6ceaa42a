// SPDX-License-Identifier: MIT
/*
 * CPU quota through the cgroup cpu controller: fractional cores for small
 * machines. v1: cpu.cfs_period_us and cpu.cfs_quota_us (-1 = unlimited);
 * v2: cpu.max "QUOTA PERIOD" ("max PERIOD" = unlimited).
 *
 * The files speak microseconds per period, the rest of the process
 * milli-cores: act_quota_mc_to_us() and act_quota_us_to_mc() are the only
 * conversions between the two.
 *
 * v1 needs two writes. The period is written only when it changes, and if the
 * quota write then fails the old period is put back, so a failed call leaves
 * the group as it was.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "act_cgroup.h"

int64_t act_quota_mc_to_us(long quota_mc, uint64_t period_us)
{
	int64_t t; /* milli-core-microseconds */

	if (quota_mc <= 0)
		return -1;
	if (__builtin_mul_overflow((int64_t)quota_mc, (int64_t)period_us, &t))
		return INT64_MAX;
	return t / 1000 + (t % 1000 >= 500);
}

long act_quota_us_to_mc(int64_t quota_us, uint64_t period_us)
{
	int64_t t;

	if (quota_us < 0 || !period_us || period_us > INT64_MAX)
		return 0;
	if (__builtin_mul_overflow(quota_us, (int64_t)1000, &t))
		return LONG_MAX;
	return (long)(t / (int64_t)period_us +
		      (t % (int64_t)period_us >= (int64_t)(period_us + 1) / 2));
}

bool act__quota_probe(int version, const char *mnt, char *reason, size_t len)
{
	char path[ACT_PATH_MAX];

	if (version == 1) {
		cgfs_path(path, sizeof(path), mnt, NULL, "cpu.cfs_quota_us");
		if (access(path, F_OK)) {
			snprintf(
			    reason, len,
			    "%.100s has no cpu.cfs_quota_us (kernel without CONFIG_CFS_BANDWIDTH)",
			    mnt);
			return false;
		}
		return true;
	}
	if (!cgfs_listed(mnt, "cgroup.controllers", "cpu")) {
		snprintf(reason, len,
			 "the cgroup v2 hierarchy at %.100s has no cpu controller (it is bound "
			 "to a v1 hierarchy or disabled)",
			 mnt);
		return false;
	}
	return true;
}

int act__quota_get(int version, const char *mnt, const char *grp, int64_t *quota_us,
		   uint64_t *period_us)
{
	char path[ACT_PATH_MAX], buf[128], q[32];
	unsigned long long per;
	long long quo;
	int err;

	if (version == 1) {
		cgfs_path(path, sizeof(path), mnt, grp, "cpu.cfs_quota_us");
		err = cgfs_read_file(path, buf, sizeof(buf));
		if (err)
			return err;
		if (sscanf(buf, "%lld", &quo) != 1)
			return -EIO;
		cgfs_path(path, sizeof(path), mnt, grp, "cpu.cfs_period_us");
		err = cgfs_read_file(path, buf, sizeof(buf));
		if (err)
			return err;
		if (sscanf(buf, "%llu", &per) != 1)
			return -EIO;
		*quota_us = quo < 0 ? -1 : quo;
		*period_us = per;
		return 0;
	}
	cgfs_path(path, sizeof(path), mnt, grp, "cpu.max");
	err = cgfs_read_file(path, buf, sizeof(buf));
	if (err)
		return err;
	if (sscanf(buf, "%31s %llu", q, &per) != 2)
		return -EIO;
	*quota_us = strcmp(q, "max") ? strtoll(q, NULL, 10) : -1;
	*period_us = per;
	return 0;
}

int act__quota_set(struct act *act, int version, const char *mnt, const char *grp, int64_t quota_us,
		   uint64_t period_us)
{
	char val[64], old[32];
	int64_t oq;
	uint64_t op;
	int err;

	if (version == 2) {
		if (quota_us < 0)
			snprintf(val, sizeof(val), "max %" PRIu64, period_us);
		else
			snprintf(val, sizeof(val), "%" PRId64 " %" PRIu64, quota_us, period_us);
		return act__cg_set(act, "cpu", grp, "cpu.max", val);
	}
	err = act__quota_get(1, mnt, grp, &oq, &op);
	if (err)
		return act_be_err(act, err, "cannot read the quota of cgroup %s: %s", grp,
				  strerror(-err));
	if (op != period_us) {
		snprintf(val, sizeof(val), "%" PRIu64, period_us);
		err = act__cg_set(act, "cpu", grp, "cpu.cfs_period_us", val);
		if (err)
			return err;
	}
	snprintf(val, sizeof(val), "%" PRId64, quota_us < 0 ? (int64_t)-1 : quota_us);
	err = act__cg_set(act, "cpu", grp, "cpu.cfs_quota_us", val);
	if (err && op != period_us) {
		snprintf(old, sizeof(old), "%" PRIu64, op);
		act__cg_set(act, "cpu", grp, "cpu.cfs_period_us", old);
	}
	return err;
}
