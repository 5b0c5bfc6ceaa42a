// SPDX-License-Identifier: MIT
/*
 * The log every room of ebee writes through: the caller's callback
 * (ebee_opts.log), or stderr, above the caller's level. A room of its own so
 * that the rooms that log depend on nothing else for it.
 */
#include <stdarg.h>
#include <stdio.h>

#include "core.h"

void ebee_logf(struct ebee *eb, enum ebee_log_level lvl, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (lvl > eb->opts.log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (eb->opts.log)
		eb->opts.log(lvl, buf, eb->opts.log_ctx);
	else
		fprintf(stderr, "%s\n", buf);
}
