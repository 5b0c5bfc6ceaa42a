/* SPDX-License-Identifier: MIT */
/*
 * The commands parties starts (workloads with `command =`): who they run as,
 * the cgroup each runs in, and how they and everything they started are
 * stopped on exit.
 */
#ifndef PARTIES_LAUNCH_H
#define PARTIES_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "config.h"

struct mach;

/* A command parties started (or adopted from a killed instance). */
struct launched {
	pid_t pid;   /* 0: none */
	int pidfd;   /* -1: none; signals through it never reach a reused pid */
	bool cgroup; /* in a cgroup of its own (act_cmd_prepare()) */
};

/*
 * Start w's command with sh -c in a process group and a cgroup of its own
 * (through m; without one, when no hierarchy allows it, with a warning), as
 * its user and group (root when it names none); its process group is
 * recorded in the state file before it execs, and until then it dies with
 * the daemon (PR_SET_PDEATHSIG). Returns once the child has exec'd (or
 * failed to, within LAUNCH_EXEC_MS). 0 with *out filled, or a negative errno
 * with msg set ("user/group vanished", "cannot start '...': ...").
 */
int launch_command(const struct cfg_workload *w, struct mach *m, struct launched *out, char *msg,
		   size_t len);
/* *l for a command adopted from a killed instance (its cgroup adopted too). */
void launch_adopted(struct launched *l, pid_t pid);
/* Stop a launched command and everything it started: its cgroup (SIGTERM,
 * ACT_PGRP_GRACE_MS, killed until empty), else its process group; reaped;
 * bounded. *l is cleared. */
void launch_stop(struct mach *m, const char *wl, struct launched *l);
/* Stop every process still below us (as a subreaper, orphans included):
 * SIGTERM, a grace period, SIGKILL; reap; bounded, any number. */
void launch_stop_descendants(void);

#endif /* PARTIES_LAUNCH_H */
