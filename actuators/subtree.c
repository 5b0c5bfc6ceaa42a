// SPDX-License-Identifier: MIT
/*
 * cgroup v2's cgroup.subtree_control: a group gets cpuset.cpus and cpu.max
 * only once its parent lists +cpuset +cpu, and that parent only once its own
 * parent does, up to the root. Before a group is created, the controllers
 * missing on the path from the root to its parent are enabled there (and
 * nowhere else), each addition recorded in the state file before the write;
 * on exit, on --cleanup and in a daemon restarted after SIGKILL exactly those
 * additions are taken back, deepest first, so every subtree_control reads as
 * it was found. A controller already enabled (by systemd or anyone) is never
 * recorded, so never disabled.
 *
 * Backends without these ops (v1, dry-run, fakes) need nothing here.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "act_front.h"

/* Enable what grp's parent lacks, then the same for every ancestor, root first. */
int act__subtree_enable(struct act *act, const char *grp)
{
	char anc[ACT_PATH_MAX];
	size_t len = 0;
	int err;

	if (act->dry_run || !act->cg->subtree_missing || !act->cg->subtree_set)
		return 0;
	if (strlen(grp) >= sizeof(anc))
		return -ENAMETOOLONG;
	for (;;) {
		unsigned int miss = 0;

		/* anc = the first len bytes of grp: "" (the root), "a", "a/b", ... */
		snprintf(anc, sizeof(anc), "%.*s", (int)len, grp);
		err = act->cg->subtree_missing(act->cgbe, anc, &miss);
		if (err)
			return ERR(act, err, "cannot read cgroup.subtree_control of %s: %s",
				   anc[0] ? anc : "the root", strerror(-err));
		if (miss) {
			/* recorded first: a crash between the two still gets it put back */
			err = act__rec_add_subtree(&act->rec, anc, miss);
			if (!err)
				err = act__persist(act);
			if (!err)
				err = act->cg->subtree_set(act->cgbe, anc, miss, true);
			if (err)
				return err;
		}
		if (len)
			len++; /* past the '/' */
		len += strcspn(grp + len, "/");
		if (!grp[len])
			return 0; /* anc was grp's parent */
	}
}

int act__subtree_restore(struct act *act)
{
	int first = 0;

	if (!act->cg->subtree_set)
		return 0;
	while (act->rec.nsubtrees) {
		struct act_rec_subtree *t = &act->rec.subtrees[act->rec.nsubtrees - 1];
		const char *where = t->grp[0] ? t->grp : "the root";
		int err = 0;

		/* a group removed since took its subtree_control with it */
		if (!t->grp[0] || act->cg->exists(act->cgbe, t->grp))
			err = act->cg->subtree_set(act->cgbe, t->grp, t->res, false);
		if (err == -EBUSY) {
			/* a group below enabled it for itself since: it is in use, not ours */
			act_be_log(act, ACT_LOG_WARN,
				   "cgroup.subtree_control of %s: left enabled, a cgroup below "
				   "uses it now",
				   where);
		} else if (err) {
			/* kept for a later repair; the deeper ones are done, stop here */
			if (!first)
				first = err;
			break;
		} else {
			act_be_log(act, ACT_LOG_DEBUG, "cgroup.subtree_control of %s as found",
				   where);
		}
		act->rec.nsubtrees--;
	}
	return first;
}
