// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actuator.h"
#include "cpu_usage.h"
#include "journal.h"
#include "inplace.h"
#include "machine.h"
#include "res/res.h"

struct mach {
	struct act *act;
	struct act_workload *wl[CFG_MAX_WL];
	char parent[CFG_NAME_LEN];
	char name[CFG_MAX_WL][CFG_NAME_LEN]; /* for cpu_ns */
	pid_t pid[CFG_MAX_WL];
	/* in-place workloads: their own cgroup (relative to the root); "" = moved */
	char grp[CFG_MAX_WL][INPLACE_PATH_MAX];
	bool verbose;
	char err[256];
};

static void act_log(enum act_log_level level, const char *msg, void *ctx)
{
	struct mach *m = ctx;

	if (level == ACT_LOG_WARN || (m && m->verbose))
		fprintf(stderr, "%sparties: %s\n", journal_pfx(level == ACT_LOG_WARN ? 4 : 7), msg);
}

struct mach *mach_open(const struct cfg *c, bool dry_run, bool verbose, char *err, size_t len)
{
	struct mach *m = calloc(1, sizeof(*m));
	struct act_opts o = {
		.sz = sizeof(o),
		.parent = c->cgroup_parent,
		.dry_run = dry_run,
		.cpus = &c->cpus,
		.state_dir = c->state_dir,
		.log = act_log,
		.log_level = verbose ? ACT_LOG_INFO : ACT_LOG_WARN,
	};

	if (!m)
		return NULL;
	m->verbose = verbose || dry_run;
	snprintf(m->parent, sizeof(m->parent), "%s", c->cgroup_parent);
	o.log_ctx = m;
	o.adopt_pgrps = true; /* a restart takes over the commands, not a second copy */
	if (dry_run)
		o.log_level = ACT_LOG_INFO;
	/* each resource the config manages, its actuator and its options */
	for (int r = 0; r < POL_RES_COUNT; r++)
		if (res_table[r]->act.open)
			res_table[r]->act.open(c, &o);
	/* 0 would mean "everything available"; ask for what the config manages */
	if (!o.resources)
		o.resources = ACT_RES_CPUSET;
	m->act = act_open(&o);
	if (!m->act) {
		int e = errno;

		snprintf(err, len, "cannot open the actuators (cgroup parent %s): %s%s",
			 c->cgroup_parent, strerror(e),
			 e == EPERM || e == EACCES ? " (run as root, or use --dry-run)" : "");
		free(m);
		errno = e;
		return NULL;
	}
	for (int i = 0; i < c->nwl; i++) {
		const struct cfg_workload *w = &c->wl[i];
		char msg[512];
		struct cgfs r;

		if (w->find != CFG_FIND_CGROUP && w->find != CFG_FIND_UNIT)
			continue;
		if (cgfs_find(&r, NULL, NULL) ||
		    inplace_resolve(&r, w, m->grp[i], sizeof(m->grp[i]), msg, sizeof(msg))) {
			snprintf(err, len, "workload %s: %s", w->name, msg);
			mach_close(m);
			errno = ENOENT;
			return NULL;
		}
	}
	return m;
}

int mach_record_pgrp(struct mach *m, const char *wl, pid_t pgid)
{
	return m ? act_record_pgrp(m->act, wl, pgid) : 0;
}

pid_t mach_adopt_pgrp(struct mach *m, const char *wl)
{
	return m ? act_adopt_pgrp(m->act, wl) : 0;
}

void mach_stop_unadopted(struct mach *m)
{
	if (m)
		act_stop_unadopted(m->act);
}

int mach_cmd_prepare(struct mach *m, const char *wl, char *err, size_t len)
{
	int fd;

	if (!m)
		return -EOPNOTSUPP;
	fd = act_cmd_prepare(m->act, wl);
	if (fd < 0)
		snprintf(err, len, "%s", act_last_error(m->act));
	return fd;
}

int mach_cmd_stop(struct mach *m, const char *wl, int grace_ms, char *err, size_t len)
{
	int e = m ? act_cmd_stop(m->act, wl, grace_ms) : 0;

	if (e)
		snprintf(err, len, "%s", act_last_error(m->act));
	return e;
}

int mach_restore(struct mach *m)
{
	int err;

	if (!m || !m->act)
		return 0;
	err = act_restore(m->act);
	memset(m->wl, 0, sizeof(m->wl));
	return err;
}

void mach_close(struct mach *m)
{
	if (!m)
		return;
	act_close(m->act);
	free(m);
}

static int m_caps(void *p, struct loop_caps *k)
{
	struct mach *m = p;
	const struct act_caps *c = act_caps(m->act);

	memset(k, 0, sizeof(*k));
	/* what the actuators say of each resource; one they lack is not here */
	for (int r = 0; r < POL_RES_COUNT; r++) {
		const char *why = NULL;

		k->res[r] = res_table[r]->act.can && res_table[r]->act.can(c, &why);
		if (res_table[r]->act.range)
			res_table[r]->act.range(c, &k->lo[r], &k->hi[r]);
		snprintf(k->why[r], sizeof(k->why[r]), "%s",
			 why ? why : "parties has no actuator for it");
	}
	k->cpus = c->cpus;
	k->topo = *act_topology(m->act);
	return 0;
}

static int m_add(void *p, int wl, const char *name, pid_t pid, const struct act_cpumask *cpus,
		 const long alloc[POL_RES_COUNT])
{
	struct mach *m = p;
	struct act_workload_opts o = {
		.sz = sizeof(o),
		.cpus = cpus,
	};

	for (int r = 0; r < POL_RES_COUNT; r++)
		if (res_table[r]->act.add)
			res_table[r]->act.add(&o, alloc[r]);

	if (m->grp[wl][0])
		m->wl[wl] = act_workload_add_inplace(m->act, name, m->grp[wl], &o);
	else
		m->wl[wl] = act_workload_add(m->act, name, pid, &o);
	snprintf(m->name[wl], sizeof(m->name[wl]), "%s", name);
	m->pid[wl] = pid;
	return m->wl[wl] ? 0 : -errno;
}

static int m_assign(void *p, const int *wls, const struct act_cpumask *cpus, int n)
{
	struct mach *m = p;
	struct act_assign a[CFG_MAX_WL];

	for (int i = 0; i < n; i++) {
		a[i].wl = m->wl[wls[i]];
		a[i].cpus = cpus[i];
	}
	return act_assign_cpus(m->act, a, (size_t)n);
}

static int m_set(void *p, enum pol_res r, int wl, long v)
{
	struct mach *m = p;

	if (!res_table[r]->act.set)
		return -EOPNOTSUPP;
	return res_table[r]->act.set(m->act, m->wl[wl], v);
}

static int m_remove(void *p, int wl)
{
	struct mach *m = p;
	int err;

	if (!m->wl[wl])
		return 0;
	err = act_workload_remove(m->act, m->wl[wl]);
	m->wl[wl] = NULL;
	return err;
}

static int m_cpu_ns(void *p, int wl, uint64_t *ns)
{
	struct mach *m = p;
	char dir[INPLACE_PATH_MAX];
	const char *base;

	if (!m->grp[wl][0])
		return cpu_usage_ns(m->parent, m->name[wl], m->pid[wl], ns);
	/* in place: the accounting of its own cgroup ("<dir>/<base>") */
	base = strrchr(m->grp[wl], '/');
	snprintf(dir, sizeof(dir), "%.*s", base ? (int)(base - m->grp[wl]) : 0, m->grp[wl]);
	return cpu_usage_ns(dir, base ? base + 1 : m->grp[wl], m->pid[wl], ns);
}

static const char *m_last_error(void *p)
{
	struct mach *m = p;
	const char *e = act_last_error(m->act);

	return e && *e ? e : "unknown error";
}

const struct loop_mach_ops mach_ops = {
	.caps = m_caps,
	.add = m_add,
	.assign_cpus = m_assign,
	.set = m_set,
	.remove = m_remove,
	.cpu_ns = m_cpu_ns,
	.last_error = m_last_error,
};
