/* SPDX-License-Identifier: MIT */
/*
 * The daemon's run: start-up in order, one loop_step() every interval until
 * the end, a signal or every workload's exit, and whatever happens every
 * allocation put back before it returns.
 */
#ifndef PARTIES_DAEMON_H
#define PARTIES_DAEMON_H

#include "args.h"
#include "config.h"
#include "policy.h"

/*
 * Run cfg (loaded from a->cfg_path, checked against this machine) with
 * policy pol. a->log_path is the decision log to write, or NULL: when it is
 * cfg->log, messages about it name the config's line. The exit status: 0 at
 * the end (--duration, SIGINT, SIGTERM, every workload gone), 1 when
 * start-up failed, 2 when --log or --metrics cannot be used.
 */
int daemon_run(const struct args *a, struct cfg *cfg, const struct pol_ops *pol);

#endif /* PARTIES_DAEMON_H */
