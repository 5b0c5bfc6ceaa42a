// SPDX-License-Identifier: MIT
/*
 * The commands the daemon launches, each in a cgroup of its own (the file
 * work is cmd_cgroup.c; act_cmdcg.h says which hierarchy and how it is
 * killed). A process cannot leave its cgroup by setsid, double fork or
 * ignoring SIGTERM, so stopping the cgroup stops everything the command
 * started, however many. The record goes to the state file before the
 * cgroup exists, and the child joins it before exec, so after SIGKILL of the
 * daemon the next act_open()/act_cleanup() finds and empties it.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "act_front.h"

/* After SIGKILL, how long a command cgroup may take to empty before the
 * caller is told it could not be (a task in uninterruptible sleep, e.g. on
 * a dead NFS server); its record is then kept for a later cleanup. */
#define ACT_CMD_KILL_MS 5000
/* Polling of a cgroup emptying after SIGTERM. */
#define ACT_CMD_POLL_MS 20

static struct act_cmdcg cmdcg_of(const struct act *act, const struct act_rec_cmd *r)
{
	return (
	    struct act_cmdcg){ .kind = r->kind, .mnt = r->mnt, .parent = act->parent, .wl = r->wl };
}

enum act_cmd_kind act__cmd_kind(struct act *act, char *mnt, size_t len)
{
	return act__cmd_detect(act->cmd_cgroup, act->caps.cgroup_version, mnt, len);
}

int act_cmd_prepare(struct act *act, const char *wl)
{
	struct act_rec_cmd r = { 0 };
	char dir[ACT_PATH_MAX];
	struct act_cmdcg c;
	int fd, err;

	if (!act || !wl || !act__valid_name(wl))
		return -EINVAL;
	if (act->dry_run)
		return -EOPNOTSUPP;
	r.kind = act__cmd_kind(act, r.mnt, sizeof(r.mnt));
	if (r.kind == ACT_CMD_NONE)
		return ERR(act, -EOPNOTSUPP,
			   "workload %s: neither cgroup v2 nor the v1 freezer is mounted: what "
			   "its command starts can only be stopped by process group",
			   wl);
	snprintf(r.wl, sizeof(r.wl), "%s", wl);
	/* recorded before it exists: a cleanup after SIGKILL finds it */
	err = act__rec_add_cmd(&act->rec, &r);
	if (!err)
		err = act__persist(act);
	if (err)
		return err;
	c = cmdcg_of(act, &r);
	fd = act__cmd_create(&c);
	act__cmd_dir(&c, false, dir, sizeof(dir));
	if (fd < 0) {
		if (fd != -EBUSY)
			act__cmd_remove(&c); /* what was made of it */
		act__rec_drop_cmd(&act->rec, wl);
		act__persist(act);
		return ERR(act, fd, "workload %s: cannot make cgroup %s for its command: %s", wl,
			   dir, fd == -EBUSY ? "it holds processes already" : strerror(-fd));
	}
	act_be_log(act, ACT_LOG_INFO, "workload %s: its command runs in cgroup %s (%s)", wl, dir,
		   act__cmd_kind_str(r.kind));
	return fd;
}

/* SIGTERM to everything in it, up to grace_ms for it to empty, then killed. */
static int stop_one(struct act *act, const struct act_rec_cmd *r, int grace_ms)
{
	struct act_cmdcg c = cmdcg_of(act, r);
	struct timespec ts = { 0, ACT_CMD_POLL_MS * 1000 * 1000 };
	char dir[ACT_PATH_MAX];
	size_t left = 0;
	int err;

	act__cmd_dir(&c, false, dir, sizeof(dir));
	if (!act__cmd_on_cgroupfs(r->mnt))
		return ERR(act, -EINVAL,
			   "workload %s: recorded command cgroup under %s is not "
			   "on a cgroup file system: ignored",
			   r->wl, r->mnt);
	if (grace_ms > 0 && act__cmd_count(&c)) {
		act__cmd_signal(&c, SIGTERM);
		for (int t = 0; t < grace_ms / ACT_CMD_POLL_MS && act__cmd_count(&c); t++)
			nanosleep(&ts, NULL);
	}
	err = act__cmd_kill(&c, ACT_CMD_KILL_MS, &left);
	if (err)
		return ERR(act, err,
			   "workload %s: %zu processes of its command still in %s %d ms after "
			   "SIGKILL: kept for parties --cleanup",
			   r->wl, left, dir, ACT_CMD_KILL_MS);
	err = act__cmd_remove(&c);
	if (err)
		return ERR(act, err, "cannot remove cgroup %s: %s", dir, strerror(-err));
	return 0;
}

int act_cmd_stop(struct act *act, const char *wl, int grace_ms)
{
	struct act_rec_cmd *r, copy;
	int err;

	if (!act || !wl)
		return -EINVAL;
	r = act__rec_find_cmd(&act->rec, wl);
	if (!r)
		return 0;
	copy = *r;
	err = stop_one(act, &copy, grace_ms);
	if (err)
		return err;
	act__rec_drop_cmd(&act->rec, wl);
	return act__persist(act);
}

int act__cmd_stop_all(struct act *act, int grace_ms)
{
	int first = 0;

	/* from the end: act_cmd_stop() drops the record it stopped */
	for (size_t i = act->rec.ncmds; i-- > 0;) {
		char wl[ACT_NAME_MAX];
		int err;

		snprintf(wl, sizeof(wl), "%s", act->rec.cmds[i].wl);
		err = act_cmd_stop(act, wl, grace_ms);
		if (err && !first)
			first = err;
	}
	return first;
}

/* ---------------------------------------------------------------- leftovers */

static bool kept_for_adoption(const struct act *act, const char *wl)
{
	for (size_t i = 0; i < act->nleftover; i++)
		if (!strcmp(act->leftover[i].wl, wl))
			return true;
	return false;
}

int act__cmd_leftovers(struct act *act)
{
	int first = 0;

	for (size_t i = 0; i < act->rec.ncmds; i++) {
		const struct act_rec_cmd *r = &act->rec.cmds[i];
		struct act_rec_cmd *p;
		int err;

		if (act->adopt_pgrps && kept_for_adoption(act, r->wl)) {
			p = realloc(act->leftover_cmds,
				    (act->nleftover_cmds + 1) * sizeof(*act->leftover_cmds));
			if (p) {
				act->leftover_cmds = p;
				act->leftover_cmds[act->nleftover_cmds++] = *r;
				continue;
			}
		}
		act_be_log(act, ACT_LOG_WARN,
			   "stopping the command of workload %s left by an earlier instance "
			   "(everything in its cgroup)",
			   r->wl);
		err = stop_one(act, r, ACT_PGRP_GRACE_MS);
		if (err && !first)
			first = err;
	}
	return first;
}

int act__cmd_adopt(struct act *act, const char *wl)
{
	for (size_t i = 0; i < act->nleftover_cmds; i++) {
		struct act_rec_cmd r = act->leftover_cmds[i];
		int err;

		if (strcmp(r.wl, wl))
			continue;
		act->leftover_cmds[i] = act->leftover_cmds[--act->nleftover_cmds];
		err = act__rec_add_cmd(&act->rec, &r);
		return err ? err : act__persist(act);
	}
	return 0;
}

void act__cmd_stop_unadopted(struct act *act)
{
	for (size_t i = 0; i < act->nleftover_cmds; i++)
		stop_one(act, &act->leftover_cmds[i], ACT_PGRP_GRACE_MS);
	free(act->leftover_cmds);
	act->leftover_cmds = NULL;
	act->nleftover_cmds = 0;
}
