/* SPDX-License-Identifier: MIT */
/*
 * `parties --metrics ADDR`: the daemon's state as Prometheus metrics. The
 * control loop publishes a copy after every interval (pmetrics_update, a
 * memcpy under a mutex); scrapes render from that copy on the HTTP thread,
 * so a slow scraper never delays a decision.
 */
#ifndef PARTIES_PMETRICS_H
#define PARTIES_PMETRICS_H

#include <stddef.h>

#include "loop.h"
#include "prom.h"

struct pmetrics;

/* Start serving on addr (see promhttp.h). NULL with errno; msg the reason. */
struct pmetrics *pmetrics_start(const char *addr, char *msg, size_t msg_len);
int pmetrics_port(const struct pmetrics *m);
/* After each loop_step: the loop's state, how long the step took. */
void pmetrics_update(struct pmetrics *m, const struct loop *l, double step_s);
void pmetrics_stop(struct pmetrics *m);

/* The page for a state; exposed for tests (no server needed). */
struct pmetrics_state;
struct pmetrics_state *pmetrics_state_new(void);
void pmetrics_state_update(struct pmetrics_state *s, const struct loop *l, double step_s);
int pmetrics_state_render(const struct pmetrics_state *s, struct prom_buf *b);
void pmetrics_state_free(struct pmetrics_state *s);

#endif /* PARTIES_PMETRICS_H */
