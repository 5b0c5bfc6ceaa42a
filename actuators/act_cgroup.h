/* SPDX-License-Identifier: MIT */
/*
 * The bottom of the cgroup backend (cgroup_backend.c): the helpers it writes
 * and reads cgroup files with. common/cgroupfs.h knows the mounts, paths and
 * files; cgroup_files.c holds the libcgroup helpers; cgroup_quota.c the cpu controller's quota
 * files. Nothing here knows workloads, records or the front; the front never includes this.
 */
#ifndef ACT_CGROUP_H
#define ACT_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "act_backend.h"
#include "cgroupfs.h"

/* ---- cgroup_files.c: libcgroup (mounts, paths and file reads: cgroupfs.h) */

/* One-time libcgroup initialisation; converted error. */
int act__cg_init(void);
/* Positive ECG* code -> negative errno. */
int act__cg_errno(int ecg);

/* Write one value of a controller of grp through libcgroup. */
int act__cg_set(struct act *act, const char *ctrl, const char *grp, const char *name,
		const char *value);

/* ---- cgroup_quota.c: the cpu controller's quota and period files */

int act__quota_set(struct act *act, int version, const char *mnt, const char *grp, int64_t quota_us,
		   uint64_t period_us);
int act__quota_get(int version, const char *mnt, const char *grp, int64_t *quota_us,
		   uint64_t *period_us);
/* Is the cpu controller usable at mnt? Fills reason when not. */
bool act__quota_probe(int version, const char *mnt, char *reason, size_t len);

#endif /* ACT_CGROUP_H */
