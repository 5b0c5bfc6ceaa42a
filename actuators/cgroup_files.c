// SPDX-License-Identifier: MIT
/*
 * Small helpers for the cgroup backends: file reads, libcgroup initialisation
 * and error conversion, mount discovery.
 *
 * Writes go through libcgroup (cgroup_modify_cgroup() & co.); reads of single
 * values go straight to the file, because cgroup_get_cgroup() reads every file
 * of every controller to return one value.
 */
#include <errno.h>
#include <fcntl.h>
#include <libcgroup.h>
#include <mntent.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "act_cgroup.h"

int act__read_file(const char *path, char *buf, size_t len)
{
	ssize_t r;
	int fd;

	if (len == 0)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = read(fd, buf, len - 1);
	if (r < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	close(fd);
	buf[r] = '\0';
	while (r > 0 && (buf[r - 1] == '\n' || buf[r - 1] == ' '))
		buf[--r] = '\0';
	return 0;
}

int act__write_file(const char *path, const char *str)
{
	size_t len = strlen(str);
	ssize_t w;
	int fd;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	w = write(fd, str, len);
	if (w < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	close(fd);
	return (size_t)w == len ? 0 : -EIO;
}

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

int act__cg_path(char *buf, size_t len, const char *mnt, const char *grp, const char *file)
{
	int n;

	n = snprintf(buf, len, "%s%s%s%s%s", mnt, grp && *grp ? "/" : "", grp ? grp : "",
		     file ? "/" : "", file ? file : "");
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int find_mount(const char *fstype, const char *opt, char *buf, size_t len)
{
	struct mntent me, *m;
	char tmp[4096];
	FILE *f;

	buf[0] = '\0';
	f = setmntent("/proc/self/mounts", "re");
	if (!f)
		return -errno;
	while ((m = getmntent_r(f, &me, tmp, sizeof(tmp)))) {
		if (strcmp(m->mnt_type, fstype))
			continue;
		if (opt && !hasmntopt(m, opt))
			continue;
		snprintf(buf, len, "%s", m->mnt_dir);
		break;
	}
	endmntent(f);
	return 0;
}

int act__cg_v1_mount(const char *ctrl, char *buf, size_t len)
{
	return find_mount("cgroup", ctrl, buf, len);
}

int act__cg_v2_mount(char *buf, size_t len)
{
	return find_mount("cgroup2", NULL, buf, len);
}

bool act__cg_listed(const char *dir, const char *file, const char *ctrl)
{
	char path[ACT_PATH_MAX], buf[1024], *save = NULL, *tok;

	if (act__cg_path(path, sizeof(path), dir, NULL, file) ||
	    act__read_file(path, buf, sizeof(buf)))
		return false;
	for (tok = strtok_r(buf, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save))
		if (!strcmp(tok, ctrl))
			return true;
	return false;
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
