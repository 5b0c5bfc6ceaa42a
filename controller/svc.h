/* SPDX-License-Identifier: MIT */
/*
 * The daemon under a service manager: systemd's notify protocol (READY,
 * STATUS, WATCHDOG, STOPPING through libsystemd's sd_notify). Without
 * NOTIFY_SOCKET every call is a no-op, so the daemon runs the same by hand.
 */
#ifndef PARTIES_SVC_H
#define PARTIES_SVC_H

#include "loop.h"

/* Every workload is managed: READY=1 and a first STATUS. */
void svc_ready(const struct loop *l, const char *policy);
/* After each interval: STATUS, and WATCHDOG=1 when WatchdogSec= is set. */
void svc_interval(const struct loop *l);
/* Shutting down (restoring the machine can take a moment). */
void svc_stopping(void);

#endif /* PARTIES_SVC_H */
