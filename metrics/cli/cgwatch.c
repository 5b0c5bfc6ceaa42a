// SPDX-License-Identifier: MIT
/*
 * cgroup membership for `ebee trace --cgroup` (see cgwatch.h).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgwatch.h"

static int is_cgroup_dir(const char *dir)
{
	char p[PATH_MAX + 16];

	snprintf(p, sizeof(p), "%s/cgroup.procs", dir);
	return !access(p, R_OK);
}

int cgwatch_open(struct cgwatch *w, const char *path, const char *root, char *msg, size_t len)
{
	static const char *const mounts[] = { "", "/unified", "/systemd" };
	const char *slash;

	memset(w, 0, sizeof(*w));
	if (!root)
		root = "/sys/fs/cgroup";
	if (is_cgroup_dir(path) && strlen(path) < sizeof(w->dir)) {
		snprintf(w->dir, sizeof(w->dir), "%s", path);
	} else if (path[0] == '/') {
		for (size_t i = 0; i < sizeof(mounts) / sizeof(mounts[0]); i++) {
			char d[PATH_MAX];

			if ((size_t)snprintf(d, sizeof(d), "%s%s%s", root, mounts[i], path) >=
			    sizeof(d))
				continue;
			if (is_cgroup_dir(d)) {
				snprintf(w->dir, sizeof(w->dir), "%s", d);
				break;
			}
		}
	}
	if (!w->dir[0]) {
		snprintf(msg, len,
			 "no cgroup '%s' (a directory with cgroup.procs, or a path under %s, "
			 "%s/unified or %s/systemd)",
			 path, root, root, root);
		return -ENOENT;
	}
	while (strlen(w->dir) > 1 && w->dir[strlen(w->dir) - 1] == '/')
		w->dir[strlen(w->dir) - 1] = 0;
	slash = strrchr(w->dir, '/');
	slash = slash ? slash + 1 : w->dir;
	/* a label, not a path: long names are cut */
	memcpy(w->name, slash, strnlen(slash, sizeof(w->name) - 1));
	return 0;
}

static int scan_dir(const char *dir, pid_t *out, int n, int max, int depth)
{
	char p[PATH_MAX + 16];
	struct dirent *de;
	FILE *f;
	DIR *d;
	int pid;

	snprintf(p, sizeof(p), "%s/cgroup.procs", dir);
	f = fopen(p, "r");
	if (!f)
		return depth ? n : -errno; /* a child removed meanwhile is fine */
	while (n < max && fscanf(f, "%d", &pid) == 1) {
		int dup = 0;

		for (int i = 0; i < n && !dup; i++)
			dup = out[i] == pid;
		if (!dup)
			out[n++] = pid;
	}
	fclose(f);
	if (depth >= 16)
		return n;
	d = opendir(dir);
	if (!d)
		return n;
	while ((de = readdir(d)) && n < max) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, de->d_name) >= sizeof(p))
			continue;
		n = scan_dir(p, out, n, max, depth + 1);
	}
	closedir(d);
	return n;
}

int cgwatch_scan(const struct cgwatch *w, pid_t *out, int max)
{
	return scan_dir(w->dir, out, 0, max, 0);
}
