// SPDX-License-Identifier: MIT
/*
 * Configuration reload on SIGHUP (see reload.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "reload.h"
#include "res/res.h"

static int needs_restart(char *msg, size_t len, const char *file, const char *what, ...)
    __attribute__((format(printf, 4, 5)));

static int needs_restart(char *msg, size_t len, const char *file, const char *what, ...)
{
	char buf[256];
	va_list ap;

	va_start(ap, what);
	vsnprintf(buf, sizeof(buf), what, ap);
	va_end(ap);
	snprintf(msg, len, "%s: %s changed: that needs a restart", file, buf);
	return -EINVAL;
}

static int params_equal(const struct cfg *a, const struct cfg *b)
{
	if (a->nparams != b->nparams)
		return 0;
	for (int i = 0; i < a->nparams; i++)
		if (strcmp(a->params[i].key, b->params[i].key) ||
		    strcmp(a->params[i].val, b->params[i].val))
			return 0;
	return 1;
}

int reload_check(const char *path, const struct cfg *cur, struct cfg *n, char *msg, size_t len)
{
	const char *f = path;
	int ret;

	ret = cfg_load_file(n, path, msg, len);
	if (ret)
		return ret;
	ret = loop_check_policy(n, pol_find(n->policy), msg, len);
	if (ret)
		return ret;
#define SAME_STR(field) (!strcmp(cur->field, n->field))
#define SAME(field)	(cur->field == n->field)
	if (!SAME_STR(policy))
		return needs_restart(msg, len, f, "policy");
	if (!SAME_STR(cgroup_parent) || !SAME_STR(state_dir))
		return needs_restart(msg, len, f, "cgroup_parent or state_dir");
	/* ebee_window_ms as the file gives it: its default follows interval_ms, which reloads */
	if (!SAME(ebee) || !SAME(stale_intervals) || !SAME(seed) ||
	    ((cur->line_of[CFG_EBEE_WINDOW_MS] || n->line_of[CFG_EBEE_WINDOW_MS]) &&
	     !SAME(ebee_window_ms)))
		return needs_restart(msg, len, f, "ebee, ebee_window_ms, stale_intervals or seed");
	/* cpus, and every resource's own (res/) */
	if (memcmp(&cur->cpus, &n->cpus, sizeof(cur->cpus)) || !res_keys_same(cur, n, false, 0))
		return needs_restart(msg, len, f, "[resources]");
	if (!SAME(nwl))
		return needs_restart(msg, len, f, "the number of workloads (%d -> %d)", cur->nwl,
				     n->nwl);
	for (int i = 0; i < n->nwl; i++) {
		const struct cfg_workload *a = &cur->wl[i], *b = &n->wl[i];

		if (strcmp(a->name, b->name))
			return needs_restart(msg, len, f, "workload %s (now %s)", a->name, b->name);
		if (a->find != b->find || a->pid != b->pid || strcmp(a->pidfile, b->pidfile) ||
		    strcmp(a->cgroup, b->cgroup) || strcmp(a->command, b->command))
			return needs_restart(msg, len, f, "how workload %s is found", a->name);
		if (a->source != b->source || strcmp(a->feed, b->feed) ||
		    a->ebee_mode != b->ebee_mode)
			return needs_restart(msg, len, f, "how workload %s is measured", a->name);
		if (!res_keys_same(cur, n, true, i))
			return needs_restart(msg, len, f, "the limits of workload %s", a->name);
	}
#undef SAME
#undef SAME_STR
	return 0;
}

static void add(char *msg, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void add(char *msg, size_t len, const char *fmt, ...)
{
	size_t n = strlen(msg);
	va_list ap;

	if (n + 3 >= len)
		return;
	if (n)
		strcpy(msg + n, ", "), n += 2;
	va_start(ap, fmt);
	vsnprintf(msg + n, len - n, fmt, ap);
	va_end(ap);
}

int reload_apply(struct cfg *cur, const struct cfg *n, struct loop *l, char *msg, size_t len)
{
	int ret;

	msg[0] = 0;
	if (!params_equal(cur, n)) {
		/* The policy may keep pointers into the settings: give it cur's. */
		static struct cfg_param saved[CFG_MAX_PARAMS];
		int nsaved = cur->nparams;

		memcpy(saved, cur->params, sizeof(saved));
		memcpy(cur->params, n->params, sizeof(cur->params));
		cur->nparams = n->nparams;
		ret = loop_restart_policy(l, cur, msg, len);
		if (ret) {
			memcpy(cur->params, saved, sizeof(saved));
			cur->nparams = nsaved;
			return ret;
		}
		add(msg, len, "[policy %s] settings (policy state restarted)", cur->policy);
	}
	if (cur->interval_ms != n->interval_ms) {
		add(msg, len, "interval_ms %u -> %u", cur->interval_ms, n->interval_ms);
		cur->interval_ms = n->interval_ms;
	}
	if (cur->avg_window_ms != n->avg_window_ms) {
		add(msg, len, "avg_window_ms %u -> %u", cur->avg_window_ms, n->avg_window_ms);
		cur->avg_window_ms = n->avg_window_ms;
	}
	if (strcmp(cur->log, n->log)) {
		add(msg, len, "log");
		memcpy(cur->log, n->log, sizeof(cur->log));
	}
	for (int i = 0; i < n->nwl; i++) {
		if (cur->wl[i].target_ns == n->wl[i].target_ns)
			continue;
		add(msg, len, "%s target %.3g -> %.3g ms", n->wl[i].name,
		    cur->wl[i].target_ns / 1e6, n->wl[i].target_ns / 1e6);
		cur->wl[i].target_ns = n->wl[i].target_ns;
		l->wl[i].target_ns = n->wl[i].target_ns;
	}
	/* line numbers for later messages */
	memcpy(cur->file, n->file, sizeof(cur->file));
	return 0;
}
