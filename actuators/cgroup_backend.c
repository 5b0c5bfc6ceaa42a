// SPDX-License-Identifier: MIT
/*
 * The cgroup backend: the ops tables for cgroup v1 and v2 (act_backend.h),
 * written through libcgroup. One child cgroup per workload under the daemon's
 * parent, cores in cpuset.cpus, CPU time through the quota files
 * (cgroup_quota.c), membership by moving threads. It is the whole cgroup side
 * of the actuators, cpuset and cpu controllers alike, hence the name.
 *
 * cgroup v1 (these machines): every controller is its own hierarchy
 * (/sys/fs/cgroup/cpuset, /sys/fs/cgroup/cpu). A new cpuset child starts with
 * empty cpuset.cpus and cpuset.mems and refuses tasks until both are set, and a
 * child's cpus must be within its parent's, so the parent is created (and
 * filled) first. Threads are moved one by one through the tasks file
 * (cgroup_attach_task_pid()).
 *
 * cgroup v2: one hierarchy; a group's controllers' files appear only once
 * +cpuset +cpu are in its parent's cgroup.subtree_control, which the front
 * enables, records and puts back (subtree.c) through subtree_missing and
 * subtree_set here; a process moves as a whole (cgroup.procs), threads cannot
 * be split.
 *
 * Writes go through libcgroup; its ECG* codes become negative errno in
 * act__cg_errno(). Reads go to the files directly (see cgroup_files.c).
 */
#include <dirent.h>
#include <errno.h>
#include <libcgroup.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "act_cgroup.h"

/*
 * The smallest CFS quota the kernel accepts: a write below 1 ms per period is
 * refused with EINVAL (min_cfs_quota_period, kernel/sched/core.c).
 */
#define CG_QUOTA_MIN_US 1000
/* A cpu list as text: any mask of ACT_CPUMASK_MAX cpus fits ("0,2,...,1022"). */
#define CG_CPULIST_MAX 4096
/* cpuset.mems as text: a list of NUMA nodes. */
#define CG_MEMS_MAX 256

struct cgbe {
	const struct act_be_conf *conf;
	struct act *act;
	int version;
	bool cpuset, quota;
	char cpuset_mnt[ACT_PATH_MAX]; /* v2: the unified mount */
	char cpu_mnt[ACT_PATH_MAX];    /* v2: the unified mount */
	char cpuset_reason[ACT_REASON_MAX];
	char quota_reason[ACT_REASON_MAX];
};

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* v1: cpuset and cpu are separate hierarchies, each usable if mounted. */
static void find_v1(struct cgbe *be, const struct cgfs *fs, int init_err)
{
	snprintf(be->cpuset_mnt, sizeof(be->cpuset_mnt), "%s", fs->v1_cpuset);
	snprintf(be->cpu_mnt, sizeof(be->cpu_mnt), "%s", fs->v1_cpu);
	if (!be->cpuset_mnt[0])
		snprintf(be->cpuset_reason, sizeof(be->cpuset_reason),
			 "no cgroup v1 cpuset hierarchy is mounted "
			 "(mount -t cgroup -o cpuset cgroup /sys/fs/cgroup/cpuset)");
	else if (init_err)
		snprintf(be->cpuset_reason, sizeof(be->cpuset_reason),
			 "libcgroup cannot initialise: %s", strerror(-init_err));
	else
		be->cpuset = true;
	if (!be->cpu_mnt[0])
		snprintf(be->quota_reason, sizeof(be->quota_reason),
			 "no cgroup v1 cpu hierarchy is mounted "
			 "(mount -t cgroup -o cpu cgroup /sys/fs/cgroup/cpu)");
	else if (init_err)
		snprintf(be->quota_reason, sizeof(be->quota_reason),
			 "libcgroup cannot initialise: %s", strerror(-init_err));
	else
		be->quota =
		    act__quota_probe(1, be->cpu_mnt, be->quota_reason, sizeof(be->quota_reason));
}

/* v2: one hierarchy; each controller usable if the root lists it. */
static void find_v2(struct cgbe *be, const struct cgfs *fs, int init_err)
{
	snprintf(be->cpuset_mnt, sizeof(be->cpuset_mnt), "%s", fs->v2);
	snprintf(be->cpu_mnt, sizeof(be->cpu_mnt), "%s", be->cpuset_mnt);
	if (!be->cpuset_mnt[0]) {
		snprintf(be->cpuset_reason, sizeof(be->cpuset_reason),
			 "no cgroup v2 hierarchy is mounted");
		snprintf(be->quota_reason, sizeof(be->quota_reason), "%s", be->cpuset_reason);
		return;
	}
	if (cgfs_listed(be->cpuset_mnt, "cgroup.controllers", "cpuset"))
		be->cpuset = !init_err;
	else
		snprintf(be->cpuset_reason, sizeof(be->cpuset_reason),
			 "the cgroup v2 hierarchy at %.80s has no cpuset controller "
			 "(it is bound to a v1 hierarchy or disabled)",
			 be->cpuset_mnt);
	be->quota = !init_err &&
		    act__quota_probe(2, be->cpu_mnt, be->quota_reason, sizeof(be->quota_reason));
	if (init_err && !be->cpuset_reason[0])
		snprintf(be->cpuset_reason, sizeof(be->cpuset_reason),
			 "libcgroup cannot initialise: %s", strerror(-init_err));
}

static int cg_open(const struct act_be_conf *conf, void **out, int version)
{
	struct cgbe *be = calloc(1, sizeof(*be));
	struct cgfs fs;
	int err;

	if (!be)
		return -ENOMEM;
	cgfs_find(&fs, NULL, NULL); /* unreadable: nothing mounted, said per controller */
	be->conf = conf;
	be->act = conf->act;
	be->version = version;
	err = act__cg_init();
	if (err)
		act_be_log(be->act, ACT_LOG_INFO, "libcgroup initialisation failed: %s",
			   strerror(-err));
	if (version == 1)
		find_v1(be, &fs, err);
	else
		find_v2(be, &fs, err);
	if (!(conf->resources & ACT_RES_CPUSET) && be->cpuset) {
		be->cpuset = false;
		snprintf(be->cpuset_reason, sizeof(be->cpuset_reason), "not requested");
	}
	if (!(conf->resources & ACT_RES_QUOTA) && be->quota) {
		be->quota = false;
		snprintf(be->quota_reason, sizeof(be->quota_reason), "not requested");
	}
	*out = be;
	return 0;
}

static int cg_open_v1(const struct act_be_conf *conf, void **out)
{
	return cg_open(conf, out, 1);
}

static int cg_open_v2(const struct act_be_conf *conf, void **out)
{
	return cg_open(conf, out, 2);
}

static void cg_close(void *p)
{
	free(p);
}

static int read_cpus(const char *path, struct act_cpumask *m)
{
	char buf[CG_CPULIST_MAX];
	int err = cgfs_read_file(path, buf, sizeof(buf));

	return err ? err : act_cpumask_parse(buf, m);
}

static int cg_probe(void *p, struct act_caps *caps)
{
	struct cgbe *be = p;
	char path[ACT_PATH_MAX];
	int err = -ENOENT;

	caps->cgroup_version = be->cpuset || be->quota ? be->version : 0;
	if (be->cpuset) {
		cgfs_path(path, sizeof(path), be->cpuset_mnt, NULL,
			  be->version == 1 ? "cpuset.effective_cpus" : "cpuset.cpus.effective");
		err = read_cpus(path, &caps->cpus);
	}
	if (err)
		err = read_cpus("/sys/devices/system/cpu/online", &caps->cpus);
	if (err)
		return err;
	caps->nr_cpus = act_cpumask_count(&caps->cpus);
	caps->cpuset = be->cpuset;
	snprintf(caps->cpuset_reason, sizeof(caps->cpuset_reason), "%s", be->cpuset_reason);
	caps->quota = be->quota;
	snprintf(caps->quota_reason, sizeof(caps->quota_reason), "%s", be->quota_reason);
	caps->quota_min_us = CG_QUOTA_MIN_US;
	caps->quota_max_mc = caps->nr_cpus * 1000L;
	return 0;
}

static const char *cg_path(void *p, enum act_resource res, const char *grp, char *buf, size_t len)
{
	struct cgbe *be = p;

	if (cgfs_path(buf, len, res == ACT_RES_QUOTA ? be->cpu_mnt : be->cpuset_mnt, grp, NULL))
		return NULL;
	return buf;
}

static bool cg_exists(void *p, const char *grp)
{
	struct cgbe *be = p;
	char path[ACT_PATH_MAX];

	if (be->cpuset && !cgfs_path(path, sizeof(path), be->cpuset_mnt, grp, NULL) && is_dir(path))
		return true;
	if (be->quota && !cgfs_path(path, sizeof(path), be->cpu_mnt, grp, NULL) && is_dir(path))
		return true;
	return false;
}

/* "a/b" -> "a"; "a" -> "" */
static void parent_of(const char *grp, char *buf, size_t len)
{
	const char *s = strrchr(grp, '/');

	snprintf(buf, len, "%.*s", s ? (int)(s - grp) : 0, grp);
}

/* The v2 controller of a managed resource bit. */
static const char *v2_ctrl(unsigned int res)
{
	return res == ACT_RES_CPUSET ? "cpuset" : res == ACT_RES_QUOTA ? "cpu" : NULL;
}

static int cg_subtree_missing(void *p, const char *grp, unsigned int *res)
{
	struct cgbe *be = p;
	char dir[ACT_PATH_MAX];
	unsigned int want = (be->cpuset ? ACT_RES_CPUSET : 0) | (be->quota ? ACT_RES_QUOTA : 0);

	*res = 0;
	if (be->version != 2)
		return 0;
	if (cgfs_path(dir, sizeof(dir), be->cpuset_mnt, grp, NULL))
		return -ENAMETOOLONG;
	for (unsigned int r = ACT_RES_CPUSET; r <= ACT_RES_QUOTA; r <<= 1)
		if ((want & r) && !cgfs_listed(dir, "cgroup.subtree_control", v2_ctrl(r)))
			*res |= r;
	return 0;
}

/*
 * One write per controller, so a failure names the one refused. Enabling
 * cpuset moves every task below grp into a new cpuset (on the root: every
 * task, PID 1 too), which the kernel allows only with CAP_SYS_NICE over
 * tasks holding capabilities the writer lacks.
 */
static int cg_subtree_set(void *p, const char *grp, unsigned int res, bool on)
{
	struct cgbe *be = p;
	char path[ACT_PATH_MAX];
	int err;

	if (be->version != 2)
		return 0;
	if (cgfs_path(path, sizeof(path), be->cpuset_mnt, grp, "cgroup.subtree_control"))
		return -ENAMETOOLONG;
	for (unsigned int r = ACT_RES_CPUSET; r <= ACT_RES_QUOTA; r <<= 1) {
		char val[16];

		if (!(res & r) || !v2_ctrl(r))
			continue;
		snprintf(val, sizeof(val), "%c%s", on ? '+' : '-', v2_ctrl(r));
		err = cgfs_write_file(path, val);
		if (err)
			return act_be_err(be->act, err, "cannot %s %s in %s: %s%s",
					  on ? "enable" : "disable", v2_ctrl(r), path,
					  strerror(-err),
					  err == -EPERM && r == ACT_RES_CPUSET
					      ? " (moving tasks between cpusets needs CAP_SYS_NICE)"
					  : err == -EBUSY ? " (a cgroup below uses it)"
							  : "");
		act_be_log(be->act, ACT_LOG_DEBUG, "%s %s in %s", on ? "enabled" : "disabled",
			   v2_ctrl(r), path);
	}
	return 0;
}

static int cg_remove(void *p, const char *grp);

/*
 * The cpuset values of a new group, in place before any task can join: cpus,
 * and on v1 also mems (taken from the parent; without it v1 refuses tasks).
 * list and mems receive what was prepared, for messages.
 */
static int prepare_cpuset(struct cgbe *be, struct cgroup *cg, const char *grp,
			  const struct act_cpumask *cpus, char *list, size_t llen, char *mems,
			  size_t mlen)
{
	char pgrp[ACT_PATH_MAX], path[ACT_PATH_MAX];
	struct cgroup_controller *c;
	int err;

	if (!cpus || act_cpumask_empty(cpus))
		return act_be_err(be->act, -EINVAL, "cgroup %s needs cpus", grp);
	act_cpumask_format(cpus, list, llen);
	c = cgroup_add_controller(cg, "cpuset");
	if (!c || cgroup_add_value_string(c, "cpuset.cpus", list))
		return act_be_err(be->act, -ENOMEM, "cannot prepare cgroup %s", grp);
	if (be->version != 1)
		return 0;
	parent_of(grp, pgrp, sizeof(pgrp));
	cgfs_path(path, sizeof(path), be->cpuset_mnt, pgrp, "cpuset.mems");
	err = cgfs_read_file(path, mems, mlen);
	if (err)
		return act_be_err(be->act, err, "cannot read %s: %s", path, strerror(-err));
	if (cgroup_add_value_string(c, "cpuset.mems", mems))
		return act_be_err(be->act, -ENOMEM, "cannot prepare cgroup %s", grp);
	return 0;
}

static int cg_create(void *p, const char *grp, const struct act_cpumask *cpus)
{
	struct cgbe *be = p;
	struct cgroup *cg;
	char list[CG_CPULIST_MAX], mems[CG_MEMS_MAX] = "";
	int ret, err = 0;

	if (!be->cpuset && !be->quota)
		return act_be_err(be->act, -EOPNOTSUPP,
				  "cannot create cgroup %s: neither cpuset nor cpu is usable", grp);
	if (cg_exists(p, grp))
		return act_be_err(be->act, -EEXIST, "cgroup %s exists already", grp);
	cg = cgroup_new_cgroup(grp);
	if (!cg)
		return act_be_err(be->act, -ENOMEM, "cannot allocate a libcgroup cgroup");
	if (be->cpuset)
		err = prepare_cpuset(be, cg, grp, cpus, list, sizeof(list), mems, sizeof(mems));
	if (!err && be->quota && !cgroup_add_controller(cg, "cpu"))
		err = act_be_err(be->act, -ENOMEM, "cannot prepare cgroup %s", grp);
	if (err)
		goto out;
	ret = cgroup_create_cgroup(cg, 0);
	if (ret) {
		err = act__cg_errno(ret);
		err = act_be_err(be->act, err, "cannot create cgroup %s (cpus %s): %s", grp,
				 be->cpuset ? list : "-", strerror(-err));
		cgroup_free(&cg);
		cg_remove(p, grp); /* whatever part was created */
		return err;
	}
	act_be_log(be->act, ACT_LOG_DEBUG, "created cgroup %s (cpus %s, mems %s)", grp,
		   be->cpuset ? list : "-", mems[0] ? mems : "-");
out:
	cgroup_free(&cg);
	return err;
}

static int cg_remove(void *p, const char *grp)
{
	struct cgbe *be = p;
	struct cgroup *cg;
	char path[ACT_PATH_MAX];
	int ret, err = 0, n = 0;

	cg = cgroup_new_cgroup(grp);
	if (!cg)
		return -ENOMEM;
	if (be->cpuset && !cgfs_path(path, sizeof(path), be->cpuset_mnt, grp, NULL) &&
	    is_dir(path) && cgroup_add_controller(cg, "cpuset"))
		n++;
	/* v2: one directory; name it once */
	if (be->quota && (be->version == 1 || !n) &&
	    !cgfs_path(path, sizeof(path), be->cpu_mnt, grp, NULL) && is_dir(path) &&
	    cgroup_add_controller(cg, "cpu"))
		n++;
	if (!n) {
		cgroup_free(&cg);
		return -ENOENT;
	}
	ret = cgroup_delete_cgroup_ext(cg, CGFLAG_DELETE_IGNORE_MIGRATION);
	if (ret) {
		err = act__cg_errno(ret);
		err = act_be_err(be->act, err, "cannot remove cgroup %s: %s%s", grp, strerror(-err),
				 err == -EBUSY ? " (tasks are still in it)" : "");
	} else {
		act_be_log(be->act, ACT_LOG_DEBUG, "removed cgroup %s", grp);
	}
	cgroup_free(&cg);
	return err;
}

static int cg_set_cpus(void *p, const char *grp, const struct act_cpumask *cpus)
{
	struct cgbe *be = p;
	char list[CG_CPULIST_MAX];

	if (!be->cpuset)
		return act_be_err(be->act, -EOPNOTSUPP, "cpuset is not usable: %s",
				  be->cpuset_reason);
	act_cpumask_format(cpus, list, sizeof(list));
	return act__cg_set(be->act, "cpuset", grp, "cpuset.cpus", list);
}

static int cg_get_cpus(void *p, const char *grp, struct act_cpumask *cpus)
{
	struct cgbe *be = p;
	char path[ACT_PATH_MAX];

	if (!be->cpuset)
		return -EOPNOTSUPP;
	cgfs_path(path, sizeof(path), be->cpuset_mnt, grp, "cpuset.cpus");
	return read_cpus(path, cpus);
}

static int cg_set_mems(void *p, const char *grp, const char *mems)
{
	struct cgbe *be = p;

	if (!be->cpuset)
		return act_be_err(be->act, -EOPNOTSUPP, "cpuset is not usable: %s",
				  be->cpuset_reason);
	if (!*mems) {
		/* v2's "follow the parent", as an in-place cgroup had it: a bare
		 * newline, written directly (libcgroup is not trusted with an
		 * empty value). The kernel refuses to empty a populated cpuset
		 * (validate_change(): -ENOSPC), so then it gets what it followed:
		 * the parent's cpuset.mems.effective now. */
		char path[ACT_PATH_MAX], up[ACT_PATH_MAX], eff[256];
		char *slash;
		int err;

		cgfs_path(path, sizeof(path), be->cpuset_mnt, grp, "cpuset.mems");
		err = cgfs_write_file(path, "\n");
		if (err != -ENOSPC)
			return err ? act_be_err(be->act, err,
						"cannot reset cpuset.mems of cgroup %s: %s", grp,
						strerror(-err))
				   : 0;
		snprintf(up, sizeof(up), "%s", grp);
		slash = strrchr(up, '/');
		if (slash)
			*slash = '\0';
		else
			up[0] = '\0';
		cgfs_path(path, sizeof(path), be->cpuset_mnt, up, "cpuset.mems.effective");
		err = cgfs_read_file(path, eff, sizeof(eff));
		if (err)
			return act_be_err(be->act, err, "cannot read %s: %s", path, strerror(-err));
		act_be_log(be->act, ACT_LOG_WARN,
			   "cgroup %s had an empty cpuset.mems (its parent's); the kernel refuses "
			   "an empty one while it has tasks, so it gets the parent's nodes %s",
			   grp, eff);
		mems = eff;
		return act__cg_set(be->act, "cpuset", grp, "cpuset.mems", mems);
	}
	return act__cg_set(be->act, "cpuset", grp, "cpuset.mems", mems);
}

static int cg_get_mems(void *p, const char *grp, char *mems, size_t len)
{
	struct cgbe *be = p;
	char path[ACT_PATH_MAX];

	if (!be->cpuset)
		return -EOPNOTSUPP;
	cgfs_path(path, sizeof(path), be->cpuset_mnt, grp, "cpuset.mems");
	return cgfs_read_file(path, mems, len);
}

static int cg_set_quota(void *p, const char *grp, int64_t quota_us, uint64_t period_us)
{
	struct cgbe *be = p;

	if (!be->quota)
		return act_be_err(be->act, -EOPNOTSUPP, "cpu quota is not usable: %s",
				  be->quota_reason);
	return act__quota_set(be->act, be->version, be->cpu_mnt, grp, quota_us, period_us);
}

static int cg_get_quota(void *p, const char *grp, int64_t *quota_us, uint64_t *period_us)
{
	struct cgbe *be = p;

	if (!be->quota)
		return -EOPNOTSUPP;
	return act__quota_get(be->version, be->cpu_mnt, grp, quota_us, period_us);
}

static int cg_where(void *p, pid_t tid, struct act_origin *o)
{
	struct cgbe *be = p;
	char path[64], line[ACT_PATH_MAX + 128];
	FILE *f;

	memset(o, 0, sizeof(*o));
	snprintf(path, sizeof(path), "/proc/%d/cgroup", tid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), f)) {
		char *c1 = strchr(line, ':'), *c2, *tok, *save = NULL;

		if (!c1 || !(c2 = strchr(c1 + 1, ':')))
			continue;
		*c2 = '\0';
		c2++;
		c2[strcspn(c2, "\n")] = '\0';
		if (be->version == 2) {
			if (c1[1] == '\0' && !strncmp(line, "0:", 2)) {
				snprintf(o->cpuset, sizeof(o->cpuset), "%s", c2);
				snprintf(o->cpu, sizeof(o->cpu), "%s", c2);
			}
			continue;
		}
		for (tok = strtok_r(c1 + 1, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			if (!strcmp(tok, "cpuset"))
				snprintf(o->cpuset, sizeof(o->cpuset), "%s", c2);
			else if (!strcmp(tok, "cpu"))
				snprintf(o->cpu, sizeof(o->cpu), "%s", c2);
		}
	}
	fclose(f);
	return 0;
}

static int attach_one(struct cgbe *be, const char *ctrl, const char *grp, pid_t tid)
{
	struct cgroup *cg = cgroup_new_cgroup(grp && *grp ? grp : "/");
	int ret, err = 0;

	if (!cg)
		return -ENOMEM;
	if (!cgroup_add_controller(cg, ctrl)) {
		cgroup_free(&cg);
		return -ENOMEM;
	}
	ret = cgroup_attach_task_pid(cg, tid);
	cgroup_free(&cg);
	if (ret) {
		err = act__cg_errno(ret);
		if (err == -ESRCH)
			return err; /* the thread exited: the caller decides */
		if (be->version == 2) {
			/* a v2 process moves as a whole through cgroup.procs */
			char path[ACT_PATH_MAX], val[16];

			cgfs_path(path, sizeof(path), be->cpuset_mnt, grp[0] == '/' ? grp + 1 : grp,
				  "cgroup.procs");
			snprintf(val, sizeof(val), "%d", tid);
			err = cgfs_write_file(path, val);
			if (!err || err == -ESRCH)
				return err;
		}
		return act_be_err(be->act, err, "cannot move thread %d into %s cgroup %s: %s", tid,
				  ctrl, grp, strerror(-err));
	}
	return 0;
}

static int cg_attach(void *p, const struct act_origin *dst, pid_t tid)
{
	struct cgbe *be = p;
	int err = 0;

	if (be->version == 2)
		return attach_one(be, be->cpuset ? "cpuset" : "cpu", dst->cpuset, tid);
	if (be->cpuset)
		err = attach_one(be, "cpuset", dst->cpuset, tid);
	if (!err && be->quota)
		err = attach_one(be, "cpu", dst->cpu, tid);
	return err;
}

struct tids {
	pid_t *out;
	size_t cap;
	size_t *n;
};

static void add_tid(pid_t tid, void *arg)
{
	struct tids *t = arg;

	for (size_t i = 0; i < *t->n && i < t->cap; i++)
		if (t->out[i] == tid)
			return;
	if (*t->n < t->cap)
		t->out[*t->n] = tid;
	(*t->n)++;
}

static int cg_tasks(void *p, const char *grp, pid_t *tids, size_t *n)
{
	struct cgbe *be = p;
	struct tids t = { .out = tids, .cap = *n, .n = n };
	char dir[ACT_PATH_MAX];
	const char *file = be->version == 1 ? "tasks" : "cgroup.threads";

	*n = 0;
	if (be->cpuset && !cgfs_path(dir, sizeof(dir), be->cpuset_mnt, grp, NULL))
		cgfs_each_pid(dir, file, add_tid, &t);
	if (be->quota && (be->version == 1 || !be->cpuset) &&
	    !cgfs_path(dir, sizeof(dir), be->cpu_mnt, grp, NULL))
		cgfs_each_pid(dir, file, add_tid, &t);
	return 0;
}

static void read_children(const char *dir, char (*names)[ACT_NAME_MAX], size_t cap, size_t *n)
{
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		bool dup = false;

		if (de->d_type != DT_DIR || de->d_name[0] == '.' ||
		    strlen(de->d_name) >= ACT_NAME_MAX)
			continue;
		for (size_t i = 0; i < *n && i < cap; i++)
			if (!strcmp(names[i], de->d_name))
				dup = true;
		if (dup)
			continue;
		if (*n < cap)
			memcpy(names[*n], de->d_name, strlen(de->d_name) + 1);
		(*n)++;
	}
	closedir(d);
}

static int cg_children(void *p, const char *grp, char (*names)[ACT_NAME_MAX], size_t *n)
{
	struct cgbe *be = p;
	char path[ACT_PATH_MAX];
	size_t cap = *n;

	*n = 0;
	if (be->cpuset) {
		cgfs_path(path, sizeof(path), be->cpuset_mnt, grp, NULL);
		read_children(path, names, cap, n);
	}
	if (be->quota) {
		cgfs_path(path, sizeof(path), be->cpu_mnt, grp, NULL);
		read_children(path, names, cap, n);
	}
	return 0;
}

/* v1 and v2 differ only in how they open: the rest reads be->version. */
#define CG_OPS(nm, open_fn)                                                                      \
	{                                                                                        \
		.name = nm, .open = open_fn, .close = cg_close, .probe = cg_probe,               \
		.exists = cg_exists, .create = cg_create, .remove = cg_remove,                   \
		.set_cpus = cg_set_cpus, .get_cpus = cg_get_cpus, .set_mems = cg_set_mems,       \
		.get_mems = cg_get_mems, .set_quota = cg_set_quota, .get_quota = cg_get_quota,   \
		.where = cg_where, .attach = cg_attach, .tasks = cg_tasks,                       \
		.children = cg_children, .path = cg_path, .subtree_missing = cg_subtree_missing, \
		.subtree_set = cg_subtree_set,                                                   \
	}

const struct act_cgroup_ops act_cgroup_v1_ops = CG_OPS("cgroup-v1", cg_open_v1);
const struct act_cgroup_ops act_cgroup_v2_ops = CG_OPS("cgroup-v2", cg_open_v2);

const struct act_cgroup_ops *act__cgroup_detect(enum act_cgroup_mode mode)
{
	struct cgfs fs;

	if (mode == ACT_CGROUP_V1)
		return &act_cgroup_v1_ops;
	if (mode == ACT_CGROUP_V2)
		return &act_cgroup_v2_ops;
	cgfs_find(&fs, NULL, NULL);
	return fs.version == 2 ? &act_cgroup_v2_ops : &act_cgroup_v1_ops;
}
