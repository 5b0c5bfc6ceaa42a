/* SPDX-License-Identifier: MIT */
/*
 * A launched command's own cgroup (cmd_cgroup.c), the backend below
 * commands.c: MNT/<parent>.cmd/<wl> in a hierarchy the placement of
 * workloads does not move tasks out of (or, on a v2-only machine, one whose
 * tasks the kill follows into the workload's group). Only file operations
 * here: no records, no struct act.
 *
 * Which hierarchy (act__cmd_choose()):
 *   placement on v2             -> ACT_CMD_V2_SHARED: the v2 hierarchy; the
 *                                  workload's group MNT/<parent>/<wl> is
 *                                  killed with the command's cgroup, as
 *                                  placed tasks live there
 *   placement on v1 (or none),  -> ACT_CMD_V2: the v2 hierarchy of a hybrid
 *   a cgroup2 mount exists         machine (/sys/fs/cgroup/unified), which
 *                                  placement never writes
 *   otherwise, a v1 freezer     -> ACT_CMD_FREEZER
 *   none of these               -> ACT_CMD_NONE (process groups only)
 * Killing: v2 writes cgroup.kill (5.14+: the kernel kills every task and
 * every task forked meanwhile); without it (older v2, or the v1 freezer) the
 * cgroup is frozen (cgroup.freeze / freezer.state), every task gets SIGKILL,
 * it is thawed so they die, and again until it is empty.
 */
#ifndef ACT_CMDCG_H
#define ACT_CMDCG_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "act_backend.h"

enum act_cmd_kind {
	ACT_CMD_NONE = 0,
	ACT_CMD_V2,	   /* cgroup v2 beside a v1 placement (hybrid) */
	ACT_CMD_V2_SHARED, /* cgroup v2, the hierarchy workloads are placed in too */
	ACT_CMD_FREEZER,   /* the v1 freezer */
	ACT_CMD_KIND_MAX = ACT_CMD_FREEZER,
};

/* What a command cgroup is named by: hierarchy, mount point, names. */
struct act_cmdcg {
	enum act_cmd_kind kind;
	const char *mnt;
	const char *parent;
	const char *wl;
};

/* The kind for a placement on cgroup v<placement_version> (0: none), given
 * the cgroup2 and v1 freezer mount points ("" or NULL when not mounted) and
 * what the caller allows. Pure. */
enum act_cmd_kind act__cmd_choose(enum act_cmd_cgroup want, int placement_version,
				  const char *v2_mnt, const char *freezer_mnt);
/* The same from the mounts of this machine; *mnt the chosen hierarchy's. */
enum act_cmd_kind act__cmd_detect(enum act_cmd_cgroup want, int placement_version, char *mnt,
				  size_t len);
/* "v2 (cgroup.kill)" ..., for messages. */
const char *act__cmd_kind_str(enum act_cmd_kind kind);
/* The command cgroup's directory (wl NULL: MNT/<parent>.cmd, above them). */
int act__cmd_dir(const struct act_cmdcg *c, bool top, char *buf, size_t len);
/*
 * Create it (and MNT/<parent>.cmd) and open its cgroup.procs for writing
 * (O_CLOEXEC): a child writes its pid there before exec. An existing one
 * that still holds processes is refused (-EBUSY). The fd, or a negative errno.
 */
int act__cmd_create(const struct act_cmdcg *c);
/* Processes left (in the workload's group too when shared); 0 when the
 * cgroup is gone. */
size_t act__cmd_count(const struct act_cmdcg *c);
/* sig to every process in it (and the workload's group when shared). */
void act__cmd_signal(const struct act_cmdcg *c, int sig);
/* Kill everything in it until it is empty, for at most timeout_ms. 0, or
 * -EBUSY with *left processes still there. */
int act__cmd_kill(const struct act_cmdcg *c, int timeout_ms, size_t *left);
/* Remove the empty cgroup, and MNT/<parent>.cmd if nothing else is below. */
int act__cmd_remove(const struct act_cmdcg *c);
/* Is path on a cgroup file system (v1 or v2)? A state file's record names one. */
bool act__cmd_on_cgroupfs(const char *path);

#endif /* ACT_CMDCG_H */
