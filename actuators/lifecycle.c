// SPDX-License-Identifier: MIT
/*
 * The life of a struct act: options checked, backends opened and probed into
 * the capability report, one daemon per parent (a lock), leftovers of an
 * earlier instance cleaned up, the parent cgroup created; at the end every
 * workload released, the parent removed, frequencies put back and the state
 * file deleted (or kept, for a later repair, when something could not be put
 * back).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "act_front.h"
#include "opts.h"

static void act_free(struct act *act)
{
	struct act_workload *wl, *next;

	if (!act)
		return;
	for (wl = act->wls; wl; wl = next) {
		next = wl->next;
		free(wl);
	}
	if (act->cg && act->cgbe)
		act->cg->close(act->cgbe);
	act__state_file_unlock(act->state_path, act->lock_fd);
	free(act->leftover);
	free(act->leftover_cmds);
	if (act->fq && act->fqbe)
		act->fq->close(act->fqbe);
	act__rec_free(&act->rec);
	free(act);
}

/* ---------------------------------------------------------------- opening */

/* A new act from valid opts: names, log, state path and the backends' configuration. */
static struct act *act_alloc(const struct act_opts *opts, const char *parent)
{
	struct act *act = calloc(1, sizeof(*act));
	const char *dir = opts->state_dir ? opts->state_dir : ACT_DEFAULT_STATE_DIR;

	if (!act)
		return NULL;
	act->lock_fd = -1;
	act->adopt_pgrps = OPTS_GET(opts, adopt_pgrps, false);
	act->cmd_cgroup = OPTS_GET(opts, cmd_cgroup, ACT_CMD_CGROUP_AUTO);
	snprintf(act->parent, sizeof(act->parent), "%s", parent);
	act->dry_run = opts->dry_run;
	act->log = opts->log;
	act->log_ctx = opts->log_ctx;
	act->log_level = opts->log_level;
	if (dir[0])
		snprintf(act->state_path, sizeof(act->state_path), "%.400s/%s.state", dir, parent);

	act->conf.act = act;
	act->conf.parent = act->parent;
	act->conf.resources = opts->resources ? opts->resources : ACT_RES_ALL;
	act->conf.cgroup_mode = opts->cgroup_mode;
	act->conf.freq_step_khz =
	    opts->freq_step_khz ? opts->freq_step_khz : ACT_DEFAULT_FREQ_STEP_KHZ;
	act->conf.quota_period_us =
	    opts->quota_period_us ? opts->quota_period_us : ACT_DEFAULT_QUOTA_PERIOD_US;
	act->conf.dry_run = opts->dry_run;
	act->conf.user = opts->backend_ctx;
	return act;
}

/* The backends opts asks for (the real ones by default), behind dry-run ones if asked. */
static int open_backends(struct act *act, const struct act_opts *opts)
{
	const struct act_cgroup_ops *cg;
	const struct act_freq_ops *fq;
	int err;

	cg = opts->cgroup_ops ? opts->cgroup_ops : act__cgroup_detect(opts->cgroup_mode);
	fq = opts->freq_ops ? opts->freq_ops : &act_cpufreq_ops;
	act->real_cgroup = cg == &act_cgroup_v1_ops || cg == &act_cgroup_v2_ops;
	if (opts->dry_run) {
		act->conf.inner_cgroup = cg;
		act->conf.inner_freq = fq;
		cg = &act_cgroup_dryrun_ops;
		fq = &act_cpufreq_dryrun_ops;
	}
	act->cg = cg;
	act->fq = fq;
	err = cg->open(&act->conf, &act->cgbe);
	if (err) {
		act->cgbe = NULL;
		return ERR(act, err, "cannot open the %s backend: %s", cg->name, strerror(-err));
	}
	err = fq->open(&act->conf, &act->fqbe);
	if (err) {
		act->fqbe = NULL;
		return ERR(act, err, "cannot open the %s backend: %s", fq->name, strerror(-err));
	}
	return 0;
}

/* Narrow the caps to the cpus the daemon was given (opts->cpus, a subset of what exists). */
static int restrict_cpus(struct act *act, const struct act_cpumask *cpus)
{
	char want[ACT_CPUS_TEXT], have[ACT_CPUS_TEXT];

	if (!cpus || act_cpumask_empty(cpus))
		return 0;
	if (!act_cpumask_subset(cpus, &act->caps.cpus)) {
		act__fmt_cpus(cpus, want, sizeof(want));
		act__fmt_cpus(&act->caps.cpus, have, sizeof(have));
		return ERR(act, -EINVAL, "managed cpus %s are not all available (have %s)", want,
			   have);
	}
	act->caps.cpus = *cpus;
	act->caps.nr_cpus = act_cpumask_count(cpus);
	act->caps.quota_max_mc = act->caps.nr_cpus * 1000L;
	return 0;
}

/* Siblings and nodes; a machine whose topology cannot be read still runs,
 * without cpuset.mems (the kernel's default: every node). */
static void read_topology(struct act *act, const struct act_opts *opts)
{
	const char *root = OPTS_GET(opts, topo_root, NULL);
	int err = act_topo_read(&act->topo, root);

	if (err) {
		act_be_log(act, ACT_LOG_WARN,
			   "cannot read the cpu topology under %s/devices/system (%s): cores "
			   "are handed out without their siblings and nodes",
			   root ? root : "/sys", strerror(-err));
		memset(&act->topo.online, 0, sizeof(act->topo.online));
		return;
	}
	act->numa = __builtin_popcountll(act->topo.mem_nodes) > 1 && act->cg->set_mems;
}

const struct act_topo *act_topology(const struct act *act)
{
	return &act->topo;
}

/* The capability report: what the backends can do, of what was asked for. */
static int probe_caps(struct act *act, const struct act_opts *opts)
{
	struct act_caps *c = &act->caps;
	int err;

	err = act->cg->probe(act->cgbe, c);
	if (err)
		return ERR(act, err, "cannot probe the %s backend: %s", act->cg->name,
			   strerror(-err));
	err = restrict_cpus(act, opts->cpus);
	if (err)
		return err;
	read_topology(act, opts);
	if (act->conf.resources & ACT_RES_CPUFREQ) {
		err = act->fq->probe(act->fqbe, &c->cpus, c);
		if (err)
			return ERR(act, err, "cannot probe cpufreq: %s", strerror(-err));
	} else {
		c->cpufreq = false;
		snprintf(c->cpufreq_reason, sizeof(c->cpufreq_reason), "not requested");
	}
	c->freq_step_khz = act->conf.freq_step_khz;
	c->quota_period_us = act->conf.quota_period_us;
	c->dry_run = act->dry_run;
	c->resources = (c->cpuset ? ACT_RES_CPUSET : 0) | (c->quota ? ACT_RES_QUOTA : 0) |
		       (c->cpufreq ? ACT_RES_CPUFREQ : 0);
	c->resources &= act->conf.resources;
	return 0;
}

/* Check opts, then open and probe the backends. Nothing is written yet. */
static int act_new(const struct act_opts *opts, struct act **out)
{
	const char *parent;
	struct act *act;
	int err;

	if (!opts)
		return -EINVAL;
	/* parent .. backend_ctx are required; a newer caller's tail must be zero */
	err = opts_check_min(opts, OPTS_KNOWN_END(struct act_opts, backend_ctx),
			     OPTS_KNOWN_END(struct act_opts, topo_root));
	if (err) {
		act_be_log(NULL, ACT_LOG_WARN,
			   err == -E2BIG ? "struct act_opts of %zu bytes sets fields unknown to "
					   "this build (built against a newer actuator.h?)"
					 : "struct act_opts has a bad size (%zu)",
			   opts->sz);
		return err;
	}
	parent = opts->parent ? opts->parent : ACT_DEFAULT_PARENT;
	if (!act__valid_name(parent)) {
		act_be_log(NULL, ACT_LOG_WARN,
			   "bad parent cgroup name \"%s\" (one component of [A-Za-z0-9_.-])",
			   parent);
		return -EINVAL;
	}
	act = act_alloc(opts, parent);
	if (!act)
		return -ENOMEM;
	err = open_backends(act, opts);
	if (!err)
		err = probe_caps(act, opts);
	if (err) {
		act_free(act);
		return err;
	}
	*out = act;
	return 0;
}

/* One daemon (or --cleanup) per parent at a time: the second is refused, naming the first. */
static int take_lock(struct act *act)
{
	pid_t holder = 0;
	int fd;

	if (!act->state_path[0])
		return 0;
	fd = act__state_file_lock(act->state_path, &holder);
	if (fd == -EBUSY)
		return ERR(
		    act, -EBUSY,
		    "cgroup parent %s is managed by a running parties (pid %d; lock %s.lock)",
		    act->parent, (int)holder, act->state_path);
	if (fd < 0)
		return ERR(act, fd, "cannot lock the state file %s.lock: %s", act->state_path,
			   strerror(-fd));
	act->lock_fd = fd;
	return 0;
}

static void log_caps(struct act *act)
{
	for (unsigned int r = 1; r & ACT_RES_ALL; r <<= 1)
		if (act->caps.resources & r)
			act_be_log(act, ACT_LOG_INFO, "%s: usable%s", act_resource_str(r),
				   act->dry_run ? " (dry-run)" : "");
	if (!act->caps.cpuset && (act->conf.resources & ACT_RES_CPUSET))
		act_be_log(act, ACT_LOG_INFO, "cpuset: unavailable: %s", act->caps.cpuset_reason);
	if (!act->caps.quota && (act->conf.resources & ACT_RES_QUOTA))
		act_be_log(act, ACT_LOG_INFO, "quota: unavailable: %s", act->caps.quota_reason);
	if (!act->caps.cpufreq && (act->conf.resources & ACT_RES_CPUFREQ))
		act_be_log(act, ACT_LOG_INFO, "cpufreq: unavailable: %s", act->caps.cpufreq_reason);
}

struct act *act_open(const struct act_opts *opts)
{
	struct act *act;
	bool found;
	int err;

	err = act_new(opts, &act);
	if (err)
		return err_ptr(err);
	log_caps(act);
	if (!act->dry_run) {
		err = take_lock(act);
		if (err)
			goto fail;
		err = act__cleanup_leftovers(act, &found);
		if (err) {
			err =
			    ERR(act, err, "cannot clean up what an earlier instance left in %s: %s",
				act->parent, strerror(-err));
			goto fail;
		}
	}
	err = act__ensure_parent(act);
	if (err)
		goto fail;
	return act;
fail:
	act_free(act);
	return err_ptr(err);
}

int act_cleanup(const struct act_opts *opts)
{
	struct act *act;
	bool found = false;
	int err;

	err = act_new(opts, &act);
	if (err)
		return err;
	if (!act->dry_run) {
		err = take_lock(act);
		if (!err)
			err = act__cleanup_leftovers(act, &found);
	}
	act_free(act);
	return err ? err : found;
}

const struct act_caps *act_caps(const struct act *act)
{
	return act ? &act->caps : NULL;
}

/* ---------------------------------------------------------------- closing */

int act_restore(struct act *act)
{
	int first = 0, err;

	if (!act)
		return 0;
	/* launched commands first: nothing they started is left running */
	first = act__cmd_stop_all(act, ACT_PGRP_GRACE_MS);
	while (act->wls) {
		struct act_workload *wl = act->wls;

		act->wls = wl->next;
		err = act__wl_release(act, wl);
		if (err && !first)
			first = err;
		free(wl);
	}
	if (act->parent_created) {
		err = act__empty_group(act, act->parent, &act__root_origin);
		if (!err)
			err = act->cg->remove(act->cgbe, act->parent);
		if (err && err != -ENOENT && !first)
			first = err;
		act->parent_created = false;
	}
	/* with a group of ours still below, the controllers are in use: kept for a repair */
	err = first ? 0 : act__subtree_restore(act);
	if (err && !first)
		first = err;
	if (managed_freq(act)) {
		err = act__freq_restore(act, NULL);
		if (err && !first)
			first = err;
	}
	if (!first) {
		act__rec_free(&act->rec);
		act__drop_state_file(act);
	} else {
		act__persist(act); /* keep what could not be put back for a later repair */
	}
	return first;
}

void act_close(struct act *act)
{
	if (!act)
		return;
	act_restore(act);
	act_free(act);
}
