// SPDX-License-Identifier: MIT
/*
 * The list of workload handles (act->wls) and the names they may have: what
 * adding, in-place adding, assignments and quota share. Nothing here writes
 * to the machine.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "act_front.h"

bool act__valid_name(const char *s)
{
	size_t n;

	if (!s || !*s || !strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	n = strlen(s);
	if (n >= ACT_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == '-'))
			return false;
	}
	return true;
}

struct act_workload *act__wl_new(struct act *act, const char *name, const char *grp, pid_t pid)
{
	struct act_workload *wl = calloc(1, sizeof(*wl));

	if (!wl)
		return NULL;
	wl->act = act;
	wl->pid = pid;
	wl->quota_mc = -1;
	snprintf(wl->name, sizeof(wl->name), "%s", name);
	snprintf(wl->grp, sizeof(wl->grp), "%s", grp);
	return wl;
}

bool act__wl_listed(const struct act *act, const struct act_workload *wl)
{
	for (const struct act_workload *w = act->wls; w; w = w->next)
		if (w == wl)
			return true;
	return false;
}

void act__wl_unlink(struct act *act, struct act_workload *wl)
{
	for (struct act_workload **p = &act->wls; *p; p = &(*p)->next)
		if (*p == wl) {
			*p = wl->next;
			return;
		}
}

struct act_workload *act_workload_find(struct act *act, const char *name)
{
	for (struct act_workload *wl = act ? act->wls : NULL; wl; wl = wl->next)
		if (!strcmp(wl->name, name))
			return wl;
	return err_ptr(-ENOENT);
}
