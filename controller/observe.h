/* SPDX-License-Identifier: MIT */
/* The loop's observation of one interval, built for the policy. */
#ifndef PARTIES_OBSERVE_H
#define PARTIES_OBSERVE_H

#include <stdint.h>

#include "loop.h"

/* Read every live workload's sources at now_ms and fill l->obs (the
 * averaging window and history advance with fresh samples only). */
void loop_observe(struct loop *l, uint64_t now_ms);

#endif /* PARTIES_OBSERVE_H */
