/* SPDX-License-Identifier: MIT */
/*
 * The loop's machine operations over the real actuators (actuator.h):
 * cpuset, cpu quota and cpufreq through libcgroup and libcpupower, or the
 * actuators' dry-run backend.
 */
#ifndef PARTIES_MACHINE_H
#define PARTIES_MACHINE_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "loop.h"

struct mach;

/* Open the actuators for this config (cleaning up what a killed daemon with
 * the same cgroup_parent left). NULL with errno; err says why. */
struct mach *mach_open(const struct cfg *c, bool dry_run, bool verbose, char *err, size_t len);
/* Restore everything the daemon changed and free. NULL is fine. */
void mach_close(struct mach *m);
/* Restore now (the handle stays usable for mach_close). 0 or first error. */
int mach_restore(struct mach *m);

extern const struct loop_mach_ops mach_ops;

/* Record a launched process group in the state file (stopped by a later cleanup). */
int mach_record_pgrp(struct mach *m, const char *wl, pid_t pgid);
/* The live command of workload wl that a killed instance launched, or 0. */
pid_t mach_adopt_pgrp(struct mach *m, const char *wl);
/* Stop what a killed instance launched and nobody adopted. */
void mach_stop_unadopted(struct mach *m);
/* A cgroup of its own for wl's command (act_cmd_prepare()): an fd on its
 * cgroup.procs for the child to join before exec, or a negative errno with
 * the reason in err (-EOPNOTSUPP: no hierarchy for it here). */
int mach_cmd_prepare(struct mach *m, const char *wl, char *err, size_t len);
/* Stop everything in wl's command cgroup (act_cmd_stop()): SIGTERM, grace_ms,
 * killed until empty. 0, or a negative errno with the reason in err. */
int mach_cmd_stop(struct mach *m, const char *wl, int grace_ms, char *err, size_t len);

#endif /* PARTIES_MACHINE_H */
