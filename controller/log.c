// SPDX-License-Identifier: MIT
/*
 * The operator's log (log.h): where the controller's parts say what they
 * decided, so none of them prints by itself. One line per message, written
 * with a single call so lines from two threads do not interleave.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "log.h"

void log_msg(const char *fmt, ...)
{
	char buf[1024], *big = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* A longer message (every reason ebee gives for untrusted figures) is
	 * written whole, never cut: formatted again where it fits. */
	if (n >= (int)sizeof(buf)) {
		va_start(ap, fmt);
		if (vasprintf(&big, fmt, ap) < 0)
			big = NULL;
		va_end(ap);
	}
	fprintf(stderr, "parties: %s\n", big ? big : buf);
	free(big);
}
