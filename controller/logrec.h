/* SPDX-License-Identifier: MIT */
/* The loop's JSONL record, one line per interval. */
#ifndef PARTIES_LOGREC_H
#define PARTIES_LOGREC_H

#include "loop.h"

/* What l observed, decided and did this interval, and event (or ""), to
 * l->log; nothing when there is no log. The units are the log's: us,
 * cores, MHz. */
void loop_log_record(const struct loop *l, const char *event);

#endif /* PARTIES_LOGREC_H */
