/* SPDX-License-Identifier: MIT */
/*
 * SIGHUP: re-read the configuration while running. The new file is parsed
 * and validated completely (the policy included) before anything changes; a
 * bad file, or one that changes what only a restart can change, leaves the
 * running configuration in force and says why (file:line).
 *
 * Applied live: interval_ms, avg_window_ms, log, every workload's target_ms,
 * and the [policy] settings (the policy restarts its state). A restart is
 * needed for everything that decides what is managed and how: the workload
 * set and how each is found and measured, [resources], cgroup_parent,
 * state_dir, ebee, policy, seed. Initial allocations (cores, cpus, quota,
 * freq_mhz) matter only at start and are ignored.
 */
#ifndef PARTIES_RELOAD_H
#define PARTIES_RELOAD_H

#include <stddef.h>

#include "config.h"
#include "loop.h"

/*
 * Load path into *next and compare it with *cur. 0 when it may be applied;
 * negative errno with the reason in msg otherwise (nothing changed).
 */
int reload_check(const char *path, const struct cfg *cur, struct cfg *next, char *msg, size_t len);
/* Apply next's live settings to *cur and the loop. Changes in msg ("" if
 * none). 0, or a negative errno (policy refused; nothing changed). */
int reload_apply(struct cfg *cur, const struct cfg *next, struct loop *l, char *msg, size_t len);

#endif /* PARTIES_RELOAD_H */
