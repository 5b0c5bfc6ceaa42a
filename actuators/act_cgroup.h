/* SPDX-License-Identifier: MIT */
/*
 * The bottom of the cgroup backend (cgroup_backend.c): the helpers it writes
 * and reads cgroup files with. cgroup_files.c holds the file, mount and
 * libcgroup helpers; cgroup_quota.c the cpu controller's quota files. Nothing
 * here knows workloads, records or the front; the front never includes this.
 */
#ifndef ACT_CGROUP_H
#define ACT_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "act_backend.h"

/* ---- cgroup_files.c: files and libcgroup */

/* Read a small file into buf (NUL-terminated, trailing newline stripped). */
int act__read_file(const char *path, char *buf, size_t len);
/* Write str to an existing file (no O_CREAT); -errno. */
int act__write_file(const char *path, const char *str);
/* One-time libcgroup initialisation; converted error. */
int act__cg_init(void);
/* Positive ECG* code -> negative errno. */
int act__cg_errno(int ecg);
/* "<mount>/<grp>/<file>" into buf. */
int act__cg_path(char *buf, size_t len, const char *mnt, const char *grp, const char *file);
/* Mount point of a v1 controller ("cpuset", "cpu"), "" if not mounted on v1. */
int act__cg_v1_mount(const char *ctrl, char *buf, size_t len);
/* Mount point of the cgroup2 hierarchy, "" if none. */
int act__cg_v2_mount(char *buf, size_t len);
/* Is ctrl listed in <dir>/<file> (space-separated list)? */
bool act__cg_listed(const char *dir, const char *file, const char *ctrl);

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
