/* SPDX-License-Identifier: MIT */
/*
 * The controller's two logs. The decision log: one JSON object per line
 * (JSONL), written with the project's one JSON writer (common/jsonw.h);
 * the log_json names are the controller's spelling of it. And the
 * operator's log, log_msg(): one line per message on stderr, "parties: "
 * first, for what a part of the controller decided that the decision log's
 * fields do not say (or say every interval, where the operator wants it once).
 */
#ifndef PARTIES_LOG_H
#define PARTIES_LOG_H

#include "jsonw.h"

#define LOG_DEPTH JW_DEPTH
#define log_json  jw

#define log_json_begin jw_begin
#define log_json_end   jw_end
#define log_json_obj   jw_obj
#define log_json_arr   jw_arr
#define log_json_close jw_close
#define log_json_str   jw_str
#define log_json_num   jw_num
#define log_json_int   jw_int
#define log_json_bool  jw_bool

/* One line to the operator's log (stderr): "parties: ", the message, a newline. */
void log_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* PARTIES_LOG_H */
