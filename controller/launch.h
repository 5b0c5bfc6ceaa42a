/* SPDX-License-Identifier: MIT */
/*
 * The commands parties starts (workloads with `command =`): who they run as,
 * and how they and everything they left behind are stopped on exit.
 */
#ifndef PARTIES_LAUNCH_H
#define PARTIES_LAUNCH_H

#include <stddef.h>
#include <sys/types.h>

#include "config.h"

/*
 * Start w's command with sh -c in a process group of its own, as its user
 * and group (root when it names none). The pid, or a negative errno with msg
 * set ("user/group vanished", "cannot start '...': ...").
 */
pid_t launch_command(const struct cfg_workload *w, char *msg, size_t len);
/* Stop a launched command and its process group: SIGTERM, then SIGKILL. */
void launch_stop(pid_t pid);
/* Stop every process below us (as a subreaper, orphans included): SIGTERM,
 * a grace period, SIGKILL; reap. */
void launch_stop_descendants(void);

#endif /* PARTIES_LAUNCH_H */
