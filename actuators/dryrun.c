// SPDX-License-Identifier: MIT
/*
 * Dry-run backends: log every write the real backend would do, change
 * nothing. They read through the real (inner) backend for what exists before
 * the run (capabilities, the cgroup a thread lives in, frequency limits) and
 * keep what would have been written in memory, so the front's reads (act_get)
 * answer with the simulated state and its logic runs exactly as for real.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "act_backend.h"

/* What a new cgroup's CFS period reads: the kernel's default, 100 ms. */
#define DRY_NEW_PERIOD_US 100000

struct dgrp {
	char name[ACT_PATH_MAX];
	struct act_cpumask cpus;
	int64_t quota_us;
	uint64_t period_us;
};

struct dmember {
	pid_t tid;
	char grp[ACT_PATH_MAX];
};

/* First member of both wrappers, so one function can open either. */
struct dbase {
	struct act *act;
	void *ibe; /* the inner backend's state */
};

struct dcg {
	struct dbase b;
	const struct act_cgroup_ops *inner;
	struct dgrp *grps;
	size_t ngrps;
	struct dmember *mem;
	size_t nmem;
};

static const char *dpath(struct dcg *d, enum act_resource res, const char *grp, char *buf,
			 size_t len)
{
	const char *p = d->inner->path ? d->inner->path(d->b.ibe, res, grp, buf, len) : NULL;

	if (!p) {
		snprintf(buf, len, "<cgroup>/%.400s", grp);
		p = buf;
	}
	return p;
}

static struct dgrp *find_grp(struct dcg *d, const char *grp)
{
	for (size_t i = 0; i < d->ngrps; i++)
		if (!strcmp(d->grps[i].name, grp))
			return &d->grps[i];
	return NULL;
}

/* Allocate a zeroed wrapper of sz bytes (a struct dbase first) around an open inner backend. */
static int wrap_open(const struct act_be_conf *conf, size_t sz,
		     int (*inner_open)(const struct act_be_conf *, void **), void **out)
{
	struct dbase *b = calloc(1, sz);
	int err;

	if (!b)
		return -ENOMEM;
	b->act = conf->act;
	err = inner_open(conf, &b->ibe);
	if (err) {
		free(b);
		return err;
	}
	*out = b;
	return 0;
}

static int d_open(const struct act_be_conf *conf, void **out)
{
	int err;

	if (!conf->inner_cgroup)
		return -EINVAL;
	err = wrap_open(conf, sizeof(struct dcg), conf->inner_cgroup->open, out);
	if (!err)
		((struct dcg *)*out)->inner = conf->inner_cgroup;
	return err;
}

static void d_close(void *p)
{
	struct dcg *d = p;

	if (!d)
		return;
	d->inner->close(d->b.ibe);
	free(d->grps);
	free(d->mem);
	free(d);
}

static int d_probe(void *p, struct act_caps *caps)
{
	struct dcg *d = p;

	return d->inner->probe(d->b.ibe, caps);
}

static bool d_exists(void *p, const char *grp)
{
	return find_grp(p, grp) != NULL;
}

static int d_create(void *p, const char *grp, const struct act_cpumask *cpus)
{
	struct dcg *d = p;
	struct dgrp *g;
	char path[ACT_PATH_MAX], list[1024] = "";

	if (find_grp(d, grp))
		return act_be_err(d->b.act, -EEXIST, "cgroup %s exists already", grp);
	g = realloc(d->grps, (d->ngrps + 1) * sizeof(*g));
	if (!g)
		return -ENOMEM;
	d->grps = g;
	g = &d->grps[d->ngrps++];
	memset(g, 0, sizeof(*g));
	snprintf(g->name, sizeof(g->name), "%s", grp);
	if (cpus)
		g->cpus = *cpus;
	g->quota_us = -1;
	g->period_us = DRY_NEW_PERIOD_US;
	act_cpumask_format(&g->cpus, list, sizeof(list));
	act_be_log(d->b.act, ACT_LOG_INFO,
		   "dry-run: would mkdir %s and write \"%s\" to cpuset.cpus",
		   dpath(d, ACT_RES_CPUSET, grp, path, sizeof(path)), list);
	return 0;
}

static int d_remove(void *p, const char *grp)
{
	struct dcg *d = p;
	struct dgrp *g = find_grp(d, grp);
	char path[ACT_PATH_MAX];

	if (!g)
		return -ENOENT;
	act_be_log(d->b.act, ACT_LOG_INFO, "dry-run: would rmdir %s",
		   dpath(d, ACT_RES_CPUSET, grp, path, sizeof(path)));
	*g = d->grps[--d->ngrps];
	return 0;
}

static int d_set_cpus(void *p, const char *grp, const struct act_cpumask *cpus)
{
	struct dcg *d = p;
	struct dgrp *g = find_grp(d, grp);
	char path[ACT_PATH_MAX], list[1024];

	if (!g)
		return act_be_err(d->b.act, -ENOENT, "cgroup %s does not exist", grp);
	act_cpumask_format(cpus, list, sizeof(list));
	act_be_log(d->b.act, ACT_LOG_INFO, "dry-run: would write \"%s\" to %s/cpuset.cpus", list,
		   dpath(d, ACT_RES_CPUSET, grp, path, sizeof(path)));
	g->cpus = *cpus;
	return 0;
}

static int d_set_mems(void *p, const char *grp, const char *mems)
{
	struct dcg *d = p;
	struct dgrp *g = find_grp(d, grp);
	char path[ACT_PATH_MAX];

	if (!g)
		return act_be_err(d->b.act, -ENOENT, "cgroup %s does not exist", grp);
	act_be_log(d->b.act, ACT_LOG_INFO, "dry-run: would write \"%s\" to %s/cpuset.mems", mems,
		   dpath(d, ACT_RES_CPUSET, grp, path, sizeof(path)));
	return 0;
}

static int d_get_mems(void *p, const char *grp, char *mems, size_t len)
{
	struct dcg *d = p;

	return d->inner->get_mems ? d->inner->get_mems(d->b.ibe, grp, mems, len) : -EOPNOTSUPP;
}

static int d_get_cpus(void *p, const char *grp, struct act_cpumask *cpus)
{
	struct dgrp *g = find_grp(p, grp);

	if (!g)
		return -ENOENT;
	*cpus = g->cpus;
	return 0;
}

static int d_set_quota(void *p, const char *grp, int64_t quota_us, uint64_t period_us)
{
	struct dcg *d = p;
	struct dgrp *g = find_grp(d, grp);
	char path[ACT_PATH_MAX];

	if (!g)
		return act_be_err(d->b.act, -ENOENT, "cgroup %s does not exist", grp);
	act_be_log(d->b.act, ACT_LOG_INFO,
		   "dry-run: would set the cpu quota of %s to %" PRId64 " us per %" PRIu64 " us",
		   dpath(d, ACT_RES_QUOTA, grp, path, sizeof(path)), quota_us, period_us);
	g->quota_us = quota_us;
	g->period_us = period_us;
	return 0;
}

static int d_get_quota(void *p, const char *grp, int64_t *quota_us, uint64_t *period_us)
{
	struct dgrp *g = find_grp(p, grp);

	if (!g)
		return -ENOENT;
	*quota_us = g->quota_us;
	*period_us = g->period_us;
	return 0;
}

static int d_where(void *p, pid_t tid, struct act_origin *o)
{
	struct dcg *d = p;

	for (size_t i = 0; i < d->nmem; i++)
		if (d->mem[i].tid == tid) {
			snprintf(o->cpuset, sizeof(o->cpuset), "/%.500s", d->mem[i].grp);
			snprintf(o->cpu, sizeof(o->cpu), "/%.500s", d->mem[i].grp);
			return 0;
		}
	return d->inner->where(d->b.ibe, tid, o);
}

static int d_attach(void *p, const struct act_origin *dst, pid_t tid)
{
	struct dcg *d = p;
	const char *rel = dst->cpuset[0] == '/' ? dst->cpuset + 1 : dst->cpuset;
	char path[ACT_PATH_MAX];
	size_t i;

	act_be_log(d->b.act, ACT_LOG_DEBUG, "dry-run: would move thread %d to %s", tid,
		   dpath(d, ACT_RES_CPUSET, rel, path, sizeof(path)));
	for (i = 0; i < d->nmem; i++)
		if (d->mem[i].tid == tid)
			break;
	if (!find_grp(d, rel)) {
		if (i < d->nmem)
			d->mem[i] = d->mem[--d->nmem];
		return 0;
	}
	if (i == d->nmem) {
		struct dmember *m = realloc(d->mem, (d->nmem + 1) * sizeof(*m));

		if (!m)
			return -ENOMEM;
		d->mem = m;
		d->nmem++;
	}
	d->mem[i].tid = tid;
	snprintf(d->mem[i].grp, sizeof(d->mem[i].grp), "%s", rel);
	return 0;
}

static int d_tasks(void *p, const char *grp, pid_t *tids, size_t *n)
{
	struct dcg *d = p;
	size_t cap = *n;

	*n = 0;
	for (size_t i = 0; i < d->nmem; i++)
		if (!strcmp(d->mem[i].grp, grp)) {
			if (*n < cap)
				tids[*n] = d->mem[i].tid;
			(*n)++;
		}
	return 0;
}

static int d_children(void *p, const char *grp, char (*names)[ACT_NAME_MAX], size_t *n)
{
	struct dcg *d = p;
	size_t cap = *n, l = strlen(grp);

	*n = 0;
	for (size_t i = 0; i < d->ngrps; i++) {
		const char *nm = d->grps[i].name;

		if (strncmp(nm, grp, l) || nm[l] != '/' || strchr(nm + l + 1, '/') ||
		    strlen(nm + l + 1) >= ACT_NAME_MAX)
			continue;
		if (*n < cap)
			memcpy(names[*n], nm + l + 1, strlen(nm + l + 1) + 1);
		(*n)++;
	}
	return 0;
}

static const char *d_path(void *p, enum act_resource res, const char *grp, char *buf, size_t len)
{
	return dpath(p, res, grp, buf, len);
}

const struct act_cgroup_ops act_cgroup_dryrun_ops = {
	.name = "dry-run",
	.open = d_open,
	.close = d_close,
	.probe = d_probe,
	.exists = d_exists,
	.create = d_create,
	.remove = d_remove,
	.set_cpus = d_set_cpus,
	.get_cpus = d_get_cpus,
	.set_mems = d_set_mems,
	.get_mems = d_get_mems,
	.set_quota = d_set_quota,
	.get_quota = d_get_quota,
	.where = d_where,
	.attach = d_attach,
	.tasks = d_tasks,
	.children = d_children,
	.path = d_path,
};

/* ---- frequency */

struct dfreq {
	struct dbase b;
	const struct act_freq_ops *inner;
	bool set[ACT_CPUMASK_MAX];
	unsigned long min[ACT_CPUMASK_MAX], max[ACT_CPUMASK_MAX];
};

static int df_open(const struct act_be_conf *conf, void **out)
{
	int err;

	if (!conf->inner_freq)
		return -EINVAL;
	err = wrap_open(conf, sizeof(struct dfreq), conf->inner_freq->open, out);
	if (!err)
		((struct dfreq *)*out)->inner = conf->inner_freq;
	return err;
}

static void df_close(void *p)
{
	struct dfreq *d = p;

	if (!d)
		return;
	d->inner->close(d->b.ibe);
	free(d);
}

static int df_probe(void *p, const struct act_cpumask *cpus, struct act_caps *caps)
{
	struct dfreq *d = p;

	return d->inner->probe(d->b.ibe, cpus, caps);
}

static int df_get(void *p, int cpu, unsigned long *min_khz, unsigned long *max_khz)
{
	struct dfreq *d = p;

	if (cpu < 0 || cpu >= ACT_CPUMASK_MAX)
		return -EINVAL;
	if (d->set[cpu]) {
		*min_khz = d->min[cpu];
		*max_khz = d->max[cpu];
		return 0;
	}
	return d->inner->get(d->b.ibe, cpu, min_khz, max_khz);
}

static int df_set(void *p, int cpu, unsigned long min_khz, unsigned long max_khz)
{
	struct dfreq *d = p;

	if (cpu < 0 || cpu >= ACT_CPUMASK_MAX)
		return -EINVAL;
	act_be_log(d->b.act, ACT_LOG_INFO,
		   "dry-run: would write %lu to cpu%d/cpufreq/scaling_min_freq and %lu to "
		   "scaling_max_freq",
		   min_khz, cpu, max_khz);
	d->set[cpu] = true;
	d->min[cpu] = min_khz;
	d->max[cpu] = max_khz;
	return 0;
}

const struct act_freq_ops act_cpufreq_dryrun_ops = {
	.name = "dry-run",
	.open = df_open,
	.close = df_close,
	.probe = df_probe,
	.get = df_get,
	.set = df_set,
};
