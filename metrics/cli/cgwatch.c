// SPDX-License-Identifier: MIT
/*
 * cgroup membership for `ebee trace --cgroup` (see cgwatch.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cgwatch.h"

int cgwatch_open(struct cgwatch *w, const char *path, const struct cgfs *fs, char *msg, size_t len)
{
	/* where a path inside a hierarchy is looked for: v2, then systemd's v1 one */
	const char *const mounts[] = { fs->v2, fs->v1_systemd };
	const char *slash;

	memset(w, 0, sizeof(*w));
	if (cgfs_is_cgroup(path) && strlen(path) < sizeof(w->dir)) {
		snprintf(w->dir, sizeof(w->dir), "%s", path);
	} else if (path[0] == '/') {
		for (size_t i = 0; i < sizeof(mounts) / sizeof(mounts[0]); i++) {
			char d[PATH_MAX];

			if (!mounts[i][0] || cgfs_path(d, sizeof(d), mounts[i], path + 1, NULL))
				continue;
			if (cgfs_is_cgroup(d)) {
				snprintf(w->dir, sizeof(w->dir), "%s", d);
				break;
			}
		}
	}
	if (!w->dir[0]) {
		snprintf(msg, len,
			 "no cgroup '%s' (a directory with cgroup.procs, or a path under the "
			 "cgroup v2 mount %s or systemd's v1 hierarchy %s)",
			 path, fs->v2[0] ? fs->v2 : "(none)",
			 fs->v1_systemd[0] ? fs->v1_systemd : "(none)");
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

int cgwatch_scan(const struct cgwatch *w, pid_t *out, int max)
{
	int n = cgfs_procs(w->dir, out, max);

	return n > max ? max : n;
}
