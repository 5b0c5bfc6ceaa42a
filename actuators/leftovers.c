// SPDX-License-Identifier: MIT
/*
 * What an earlier instance with the same parent left behind after SIGKILL:
 * its state file (threads it moved, frequencies it changed, in-place cgroups
 * it wrote, v2 controllers it enabled in cgroup.subtree_control), its parent
 * cgroup with the workload groups below it, and the process groups and
 * command cgroups (commands.c) it launched. act_open() and act_cleanup() put
 * all of it back before anything else; a restarted daemon may instead adopt
 * the process groups
 * (act_adopt_pgrp()) rather than start second copies.
 *
 * Only what the state file proves is ours is touched: a parent cgroup without
 * an owner record (someone else's, e.g. cgroup_parent = docker) is refused,
 * and of its children only the recorded workloads are emptied and removed.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "act_front.h"
#include "act_proc.h"
#include "procfs.h"

/* How often a stopping process group is checked for exit during ACT_PGRP_GRACE_MS. */
#define ACT_PGRP_POLL_MS 50
/*
 * Children of the parent cgroup one cleanup looks at: the controller manages
 * at most POL_MAX_WORKLOADS (16) workloads, so a parent with more children
 * holds strangers' groups; those are left in place anyway (and with them the
 * parent), so looking at more would change nothing.
 */
#define ACT_LEFTOVER_CHILDREN_MAX 256

/* ---------------------------------------------------------------- process groups */

/* Keep g for act_adopt_pgrp() instead of stopping it; false if out of memory. */
static bool keep_for_adoption(struct act *act, const struct act_rec_pgrp *g)
{
	struct act_rec_pgrp *p = realloc(act->leftover, (act->nleftover + 1) * sizeof(*p));

	if (!p)
		return false;
	act->leftover = p;
	act->leftover[act->nleftover++] = *g;
	return true;
}

/* Wait up to ACT_PGRP_GRACE_MS for the recorded groups to exit. */
static void wait_pgrps(struct act *act)
{
	struct timespec ts = { 0, ACT_PGRP_POLL_MS * 1000 * 1000 };
	bool any = true;

	for (int t = 0; any && t < ACT_PGRP_GRACE_MS / ACT_PGRP_POLL_MS; t++) {
		any = false;
		for (size_t i = 0; i < act->rec.npgrps; i++)
			if (act->rec.pgrps[i].pgid && kill(-act->rec.pgrps[i].pgid, 0) == 0)
				any = true;
		if (any)
			nanosleep(&ts, NULL);
	}
}

/*
 * Stop the process groups an earlier instance launched (their leader's start
 * time proves the pid was not reused): SIGTERM, a grace period, SIGKILL.
 */
static void stop_pgrps(struct act *act)
{
	bool any = false;

	for (size_t i = 0; i < act->rec.npgrps; i++) {
		struct act_rec_pgrp *g = &act->rec.pgrps[i];

		if (procfs_starttime(g->pgid) != g->start) {
			g->pgid = 0; /* gone, or the pid is someone else's now */
			continue;
		}
		if (act->adopt_pgrps && keep_for_adoption(act, g)) {
			g->pgid = 0; /* kept for act_adopt_pgrp() */
			continue;
		}
		act_be_log(act, ACT_LOG_WARN,
			   "stopping process group %d (workload %s) left by an earlier instance",
			   g->pgid, g->wl);
		kill(-g->pgid, SIGTERM);
		any = true;
	}
	if (any)
		wait_pgrps(act);
	for (size_t i = 0; i < act->rec.npgrps; i++)
		if (act->rec.pgrps[i].pgid)
			kill(-act->rec.pgrps[i].pgid, SIGKILL);
}

int act_record_pgrp(struct act *act, const char *wl, pid_t pgid)
{
	struct act_rec_pgrp g = { .pgid = pgid };
	int err;

	if (!act || pgid <= 1)
		return -EINVAL;
	if (act->dry_run)
		return 0;
	g.start = procfs_starttime(pgid);
	if (!g.start)
		return -ESRCH;
	snprintf(g.wl, sizeof(g.wl), "%s", wl ? wl : "-");
	err = act__rec_add_pgrp(&act->rec, &g);
	return err ? err : act__persist(act);
}

pid_t act_adopt_pgrp(struct act *act, const char *wl)
{
	for (size_t i = 0; act && i < act->nleftover; i++) {
		struct act_rec_pgrp g = act->leftover[i];

		if (strcmp(g.wl, wl) || procfs_starttime(g.pgid) != g.start)
			continue;
		act->leftover[i] = act->leftover[--act->nleftover];
		if (act_record_pgrp(act, wl, g.pgid) || act__cmd_adopt(act, wl))
			return 0;
		return g.pgid;
	}
	return 0;
}

void act_stop_unadopted(struct act *act)
{
	struct act_records saved;

	if (!act)
		return;
	act__cmd_stop_unadopted(act);
	if (!act->nleftover)
		return;
	/* stop_pgrps() works on the records: lend it the leftovers */
	saved = act->rec;
	memset(&act->rec, 0, sizeof(act->rec));
	act->rec.pgrps = act->leftover;
	act->rec.npgrps = act->nleftover;
	act->adopt_pgrps = false;
	stop_pgrps(act);
	act->rec = saved;
	free(act->leftover);
	act->leftover = NULL;
	act->nleftover = 0;
}

/* ---------------------------------------------------------------- cgroups and records */

/* Load the state file an earlier instance left (if any) into act->rec. */
static void load_leftover_state(struct act *act, bool *found)
{
	int err = act->state_path[0] ? act__state_file_read(act->state_path, &act->rec) : -ENOENT;

	if (err && err != -ENOENT)
		act_be_log(act, ACT_LOG_WARN, "ignoring unreadable state file %s: %s",
			   act->state_path, strerror(-err));
	if (!err)
		*found = true;
}

/* Put back every in-place cgroup the records name; the first error. */
static int restore_inplace_leftovers(struct act *act, bool *found)
{
	int first = 0;

	for (size_t i = 0; i < act->rec.nwls; i++) {
		const struct act_rec_wl *w = &act->rec.wls[i];
		int err;

		if (!w->inplace)
			continue;
		*found = true;
		act_be_log(act, ACT_LOG_WARN,
			   "workload %s: putting back cgroup %s as an earlier instance found it",
			   w->name, w->grp);
		err = act__restore_inplace(act, w);
		if (err && !first)
			first = err;
	}
	return first;
}

/* Empty and remove the workload groups below the parent that the records name. */
static void remove_leftover_children(struct act *act, char (*names)[ACT_NAME_MAX], int *first)
{
	size_t n = ACT_LEFTOVER_CHILDREN_MAX;

	act->cg->children(act->cgbe, act->parent, names, &n);
	for (size_t i = 0; i < n && i < ACT_LEFTOVER_CHILDREN_MAX; i++) {
		char grp[ACT_PATH_MAX];
		struct act_rec_wl *w = act__rec_find_wl(&act->rec, names[i]);
		int err;

		snprintf(grp, sizeof(grp), "%s/%s", act->parent, names[i]);
		if (!w || w->inplace) {
			/* not created by us: left alone, so the parent stays too */
			err = ERR(act, -ENOTEMPTY,
				  "cgroup %s was not created by parties: left in place", grp);
		} else {
			err = act__empty_group(act, grp, &w->origin);
			if (!err)
				err = act->cg->remove(act->cgbe, grp);
		}
		if (err && !*first)
			*first = err;
	}
}

/*
 * Remove the parent cgroup an earlier instance created, with what is below
 * it; errors go to *first. Only running out of memory stops it (-ENOMEM).
 */
static int remove_leftover_parent(struct act *act, int *first)
{
	char(*names)[ACT_NAME_MAX];
	int err;

	act_be_log(act, ACT_LOG_WARN, "cgroup %s exists: cleaning up after an earlier instance",
		   act->parent);
	names = calloc(ACT_LEFTOVER_CHILDREN_MAX, sizeof(*names));
	if (!names)
		return -ENOMEM;
	remove_leftover_children(act, names, first);
	free(names);
	err = act__empty_group(act, act->parent, &act__root_origin);
	if (!err)
		err = act->cg->remove(act->cgbe, act->parent);
	if (err && !*first)
		*first = err;
	return 0;
}

int act__cleanup_leftovers(struct act *act, bool *found)
{
	int err, first = 0;

	*found = false;
	load_leftover_state(act, found);
	stop_pgrps(act);
	/* what the commands started, wherever placed: before their groups are emptied */
	first = act__cmd_leftovers(act);
	if (managed_cgroup(act)) {
		err = restore_inplace_leftovers(act, found);
		if (err && !first)
			first = err;
	}
	if (managed_cgroup(act) && act->cg->exists(act->cgbe, act->parent)) {
		if (!act->rec.owns_parent) {
			act__rec_free(&act->rec);
			return ERR(act, -EEXIST,
				   "cgroup %s exists and no state file (%s) shows parties created "
				   "it: refusing to touch it (choose another cgroup_parent, or "
				   "remove it yourself if it is a leftover)",
				   act->parent, act->state_path[0] ? act->state_path : "none");
		}
		*found = true;
		err = remove_leftover_parent(act, &first);
		if (err)
			return err;
	}
	/* only once no group of ours is left below (else they stay for the next repair) */
	if (act->rec.nsubtrees && !first) {
		*found = true;
		act_be_log(act, ACT_LOG_WARN,
			   "putting back the cgroup.subtree_control an earlier instance changed");
		err = act__subtree_restore(act);
		if (err && !first)
			first = err;
	}
	if (managed_freq(act))
		act__freq_restore(act, NULL);
	act__rec_free(&act->rec);
	if (!first)
		act__drop_state_file(act);
	return first;
}
