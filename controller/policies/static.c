// SPDX-License-Identifier: MIT
/*
 * static: never moves anything.
 *
 * The baseline every other policy is compared against: each workload keeps
 * its initial allocation from the config for the whole run. It still runs
 * inside the loop, so its log has the same latency series as any other
 * policy's, which is what makes the comparison fair. It is wrong whenever the
 * load changes, by design.
 */
#include <stdio.h>

#include "policy.h"

static int static_decide(void *state, const struct pol_observation *obs, struct pol_decision *dec)
{
	for (int i = 0; i < obs->nwl; i++)
		snprintf(dec->wl[i].reason, sizeof(dec->wl[i].reason), "static policy");
	return 0;
}

const struct pol_ops pol_static_ops = {
	.name = "static",
	.desc = "never moves anything (the baseline)",
	.decide = static_decide,
};
