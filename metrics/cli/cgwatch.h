/* SPDX-License-Identifier: MIT */
/*
 * `ebee trace --cgroup PATH`: the processes of a cgroup, found in user space
 * by reading its cgroup.procs (and its descendants') every scan. The CLI
 * starts tracing each new tgid; ebee's fork hook already follows children,
 * so a scan only has to catch processes moved in from outside (systemd
 * starting a unit, a container runtime, echo PID > cgroup.procs).
 */
#ifndef EBEE_CGWATCH_H
#define EBEE_CGWATCH_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include "cgroupfs.h"

struct cgwatch {
	char dir[PATH_MAX]; /* the cgroup's directory */
	char name[64];	    /* its last path component: the workload label */
};

/*
 * PATH is a cgroup directory (/sys/fs/cgroup/unified/app.slice/web.service)
 * or a path inside a hierarchy (/app.slice/web.service: looked for under the
 * cgroup v2 mount, then systemd's v1 hierarchy, as fs found them: v2, hybrid
 * and v1 hosts). 0 or -ENOENT with the reason in msg.
 */
int cgwatch_open(struct cgwatch *w, const char *path, const struct cgfs *fs, char *msg, size_t len);
/* The tgids in the cgroup and its descendants now (cgfs_procs(), the set
 * parties' ebee source traces), at most max. Count or negative errno (the
 * cgroup was removed: -ENOENT). */
int cgwatch_scan(const struct cgwatch *w, pid_t *out, int max);

#endif /* EBEE_CGWATCH_H */
