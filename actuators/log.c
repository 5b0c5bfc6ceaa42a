// SPDX-License-Identifier: MIT
/*
 * Messages of the actuators: every line goes through the act's log callback
 * (or stderr), and every failure is kept for act_last_error(). Front and
 * backends report through the two calls declared in act_backend.h; this file
 * calls nothing else of the actuators, so it is the bottom of every layer.
 */
#include <stdarg.h>
#include <stdio.h>

#include "act_front.h"

/* "act: " and one message of ACT_ERR_MAX, with room to spare. */
#define ACT_LINE_MAX 768

static void vlog(struct act *act, enum act_log_level level, const char *fmt, va_list ap)
{
	char msg[ACT_LINE_MAX];
	int n;

	n = snprintf(msg, sizeof(msg), "act: ");
	vsnprintf(msg + n, sizeof(msg) - n, fmt, ap);
	if (act && act->log) {
		if (level <= act->log_level)
			act->log(level, msg, act->log_ctx);
	} else if (level == ACT_LOG_WARN || (act && level <= act->log_level)) {
		fprintf(stderr, "%s\n", msg);
	}
}

void act_be_log(struct act *act, enum act_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(act, level, fmt, ap);
	va_end(ap);
}

int act_be_err(struct act *act, int err, const char *fmt, ...)
{
	va_list ap;

	if (act) {
		va_start(ap, fmt);
		vsnprintf(act->err, sizeof(act->err), fmt, ap);
		va_end(ap);
	}
	va_start(ap, fmt);
	vlog(act, ACT_LOG_WARN, fmt, ap);
	va_end(ap);
	return err;
}

const char *act_last_error(const struct act *act)
{
	return act ? act->err : "";
}

const char *act_resource_str(enum act_resource res)
{
	switch (res) {
	case ACT_RES_CPUSET:
		return "cpuset";
	case ACT_RES_CPUFREQ:
		return "cpufreq";
	case ACT_RES_QUOTA:
		return "quota";
	default:
		return NULL;
	}
}

void act__fmt_cpus(const struct act_cpumask *m, char *buf, size_t len)
{
	if (act_cpumask_format(m, buf, len) < 0 && len > 4)
		snprintf(buf + len - 4, 4, "...");
}
