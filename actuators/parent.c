// SPDX-License-Identifier: MIT
/*
 * The parent cgroup every managed workload's group sits in: created once, at
 * act_open() or by the first act_workload_add(), its ownership recorded in the
 * state file before it exists (the only proof that lets a cleanup remove it).
 */
#include <errno.h>
#include <string.h>

#include "act_front.h"

int act__ensure_parent(struct act *act)
{
	int err;

	if (act->parent_created || !managed_cgroup(act))
		return 0;
	/* the proof of ownership goes to the state file before the cgroup exists */
	if (!act->rec.owns_parent) {
		act->rec.owns_parent = true;
		err = act__persist(act);
		if (err)
			return err;
	}
	err = act__subtree_enable(act, act->parent);
	if (!err)
		err = act->cg->create(act->cgbe, act->parent, &act->caps.cpus);
	if (err)
		return ERR(act, err, "cannot create the parent cgroup %s: %s%s", act->parent,
			   strerror(-err), err == -EACCES || err == -EPERM ? " (run as root)" : "");
	act->parent_created = true;
	return 0;
}
