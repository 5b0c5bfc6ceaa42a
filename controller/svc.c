// SPDX-License-Identifier: MIT
/*
 * systemd notify protocol (see svc.h). The watchdog is pinged from the
 * control loop itself, after a whole interval: a loop stuck in a cgroup
 * write or a policy is what the watchdog is for.
 */
#include <stdio.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "svc.h"

static int watchdog = -1; /* -1 not asked yet */

void svc_ready(const struct loop *l, const char *policy)
{
	uint64_t usec;

	watchdog = sd_watchdog_enabled(0, &usec) > 0;
	sd_notifyf(0, "READY=1\nSTATUS=managing %d workload(s) with policy %s", l->nwl, policy);
}

void svc_interval(const struct loop *l)
{
	char st[512];
	int n;

	n = snprintf(st, sizeof(st), "STATUS=%llu intervals, %llu actions",
		     (unsigned long long)l->stats.intervals, (unsigned long long)l->stats.actions);
	for (int i = 0; i < l->nwl && n > 0 && (size_t)n < sizeof(st); i++) {
		const struct pol_wl_obs *o = &l->obs.wl[i];

		if (o->state == POL_LAT_FRESH)
			n += snprintf(st + n, sizeof(st) - n, "; %s p99 %.0f us (target %.0f)",
				      o->name, o->p99_ns / 1e3, o->target_ns / 1e3);
		else
			n += snprintf(st + n, sizeof(st) - n, "; %s %s", o->name,
				      o->alive ? "no fresh p99" : "exited");
	}
	sd_notify(0, st);
	if (watchdog > 0)
		sd_notify(0, "WATCHDOG=1");
}

void svc_stopping(void)
{
	sd_notify(0, "STOPPING=1\nSTATUS=restoring the machine");
}
