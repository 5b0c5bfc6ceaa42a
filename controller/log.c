// SPDX-License-Identifier: MIT
/*
 * The operator's log (log.h): where the controller's parts say what they
 * decided, so none of them prints by itself. One line per message, written
 * with a single call so lines from two threads do not interleave.
 */
#include <stdarg.h>
#include <stdio.h>

#include "log.h"

void log_msg(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(stderr, "parties: %s\n", buf);
}
