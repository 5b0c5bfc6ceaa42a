/* SPDX-License-Identifier: MIT */
/*
 * The decision log: one JSON object per line (JSONL), written with the
 * project's one JSON writer (common/jsonw.h); these names are the
 * controller's spelling of it.
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

#endif /* PARTIES_LOG_H */
