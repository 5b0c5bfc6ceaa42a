// SPDX-License-Identifier: MIT
/*
 * Small helpers for the cgroup backends: libcgroup initialisation, error
 * conversion and writes (mounts, paths and reads: common/cgroupfs.h).
 *
 * Writes go through libcgroup (cgroup_modify_cgroup() & co.); reads of single
 * values go straight to the file, because cgroup_get_cgroup() reads every file
 * of every controller to return one value.
 */
#include <errno.h>
#include <libcgroup.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "act_cgroup.h"

static pthread_once_t cg_once = PTHREAD_ONCE_INIT;
static int cg_init_err;

static void cg_init_once(void)
{
	int ret = cgroup_init();

	cg_init_err = ret ? act__cg_errno(ret) : 0;
}

int act__cg_init(void)
{
	pthread_once(&cg_once, cg_init_once);
	return cg_init_err;
}

int act__cg_errno(int ecg)
{
	int e;

	switch (ecg) {
	case 0:
		return 0;
	case ECGOTHER:
		e = cgroup_get_last_errno();
		return e > 0 ? -e : -EIO;
	case ECGROUPNOTEXIST:
	case ECGROUPVALUENOTEXIST:
		return -ENOENT;
	case ECGROUPNOTMOUNTED:
	case ECGROUPSUBSYSNOTMOUNTED:
	case ECGROUPNOTCOMPILED:
		return -EOPNOTSUPP;
	case ECGROUPNOTOWNER:
	case ECGROUPNOTALLOWED:
		return -EPERM;
	case ECGINVAL:
		return -EINVAL;
	case ECGCONTROLLEREXISTS:
	case ECGVALUEEXISTS:
		return -EEXIST;
	case ECGFAIL:
	default:
		return -EIO;
	}
}

int act__cg_set(struct act *act, const char *ctrl, const char *grp, const char *name,
		const char *value)
{
	struct cgroup_controller *c;
	struct cgroup *cg;
	int ret, err = 0;

	cg = cgroup_new_cgroup(grp && *grp ? grp : "/");
	if (!cg)
		return act_be_err(act, -ENOMEM, "cannot allocate a libcgroup cgroup");
	c = cgroup_add_controller(cg, ctrl);
	if (!c || cgroup_add_value_string(c, name, value)) {
		err = act_be_err(act, -ENOMEM, "cannot prepare %s=%s for cgroup %s", name, value,
				 grp);
		goto out;
	}
	ret = cgroup_modify_cgroup(cg);
	if (ret) {
		err = act__cg_errno(ret);
		err = act_be_err(act, err, "cannot write %s to %s of cgroup %s: %s", value, name,
				 grp && *grp ? grp : "/", strerror(-err));
	}
out:
	cgroup_free(&cg);
	return err;
}
