// SPDX-License-Identifier: MIT
/*
 * The front of the actuators: validation, overlap refusal, bookkeeping of
 * what was found, rollback of failed multi-step changes, restore, and cleanup
 * of what a killed instance left. Backends (act_backend.h) do single writes.
 *
 * Order of every change: record what is there (memory, then state file), then
 * write. So at any point a restore, in this process or a later one, knows how
 * to put things back.
 */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <time.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "act_proc.h"
#include "act_state.h"

struct act_workload {
	struct act *act;
	char name[ACT_NAME_MAX];
	char grp[ACT_PATH_MAX]; /* "<parent>/<name>" */
	pid_t pid;
	struct act_cpumask cpus;
	int64_t quota_us; /* -1 = unlimited */
	unsigned long freq_cap;
	struct act_origin origin;
	bool inplace; /* grp is the workload's own cgroup: values written, nothing moved */
	struct act_workload *next;
};

struct act {
	char parent[ACT_NAME_MAX];
	char state_path[ACT_PATH_MAX];
	int lock_fd; /* flock: one daemon per parent; -1 when not held */
	bool adopt_pgrps;
	struct act_rec_pgrp *leftover; /* live groups of an earlier instance, to adopt */
	size_t nleftover;
	bool dry_run;
	bool real_cgroup; /* the real cgroup backend: threads' affinity is ours to restore */
	bool parent_created;
	act_log_fn log;
	void *log_ctx;
	enum act_log_level log_level;
	struct act_be_conf conf;
	const struct act_cgroup_ops *cg;
	void *cgbe;
	const struct act_freq_ops *fq;
	void *fqbe;
	struct act_caps caps;
	struct act_records rec;
	struct act_workload *wls;
	char err[512];
};

/* ---------------------------------------------------------------- logging */

static void vlog(struct act *act, enum act_log_level level, const char *fmt, va_list ap)
{
	char msg[768];
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

#define ERR(act, err, ...) act_be_err((act), (err), __VA_ARGS__)

static void *err_ptr(int err)
{
	errno = -err;
	return NULL;
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

/* ---------------------------------------------------------------- helpers */

static bool valid_name(const char *s)
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

static void fmt_cpus(const struct act_cpumask *m, char *buf, size_t len)
{
	if (act_cpumask_format(m, buf, len) < 0 && len > 4)
		snprintf(buf + len - 4, 4, "...");
}

static int save_state(struct act *act)
{
	int err;

	if (act->dry_run || !act->state_path[0])
		return 0;
	err = act__state_save(act->state_path, &act->rec);
	if (err)
		return ERR(act, err, "cannot write the state file %s: %s", act->state_path,
			   strerror(-err));
	return 0;
}

static void drop_state_file(struct act *act)
{
	if (!act->dry_run && act->state_path[0])
		unlink(act->state_path);
}

static bool managed_cpuset(const struct act *act)
{
	return act->caps.resources & ACT_RES_CPUSET;
}

static bool managed_quota(const struct act *act)
{
	return act->caps.resources & ACT_RES_QUOTA;
}

static bool managed_cgroup(const struct act *act)
{
	return managed_cpuset(act) || managed_quota(act);
}

static bool managed_freq(const struct act *act)
{
	return act->caps.resources & ACT_RES_CPUFREQ;
}

static void grp_origin(const char *grp, struct act_origin *o)
{
	snprintf(o->cpuset, sizeof(o->cpuset), "/%.500s", grp);
	snprintf(o->cpu, sizeof(o->cpu), "/%.500s", grp);
}

static const struct act_origin root_origin = { "/", "/" };

/* Is tid in dst for every managed controller? */
static bool is_in(struct act *act, pid_t tid, const struct act_origin *dst)
{
	struct act_origin o;

	if (act->cg->where(act->cgbe, tid, &o))
		return false;
	if (managed_cpuset(act) && strcmp(o.cpuset, dst->cpuset))
		return false;
	if (managed_quota(act) && strcmp(o.cpu, dst->cpu))
		return false;
	return true;
}

/* Is tid in a workload group of ours other than dst? */
static bool in_other_workload(struct act *act, pid_t tid, const struct act_origin *dst)
{
	struct act_origin o;
	size_t l = strlen(act->parent);
	const char *p;

	if (act->cg->where(act->cgbe, tid, &o))
		return false;
	p = managed_cpuset(act) ? o.cpuset : o.cpu;
	return p[0] == '/' && !strncmp(p + 1, act->parent, l) && p[1 + l] == '/' &&
	       strcmp(p, managed_cpuset(act) ? dst->cpuset : dst->cpu);
}

/* ---------------------------------------------------------------- moving threads */

/* Move tid back to o (or to the root if o no longer exists), then its affinity. */
static int move_back(struct act *act, pid_t tid, const struct act_origin *o,
		     const struct act_cpumask *aff)
{
	int err = act->cg->attach(act->cgbe, o, tid);

	if (err && err != -ESRCH && o != &root_origin) {
		act_be_log(act, ACT_LOG_INFO,
			   "thread %d: its cgroup %s is gone, moving it to the root", tid,
			   o->cpuset);
		err = act->cg->attach(act->cgbe, &root_origin, tid);
	}
	if (err == -ESRCH)
		return 0;
	if (!err && aff && act->real_cgroup && !act->dry_run) {
		cpu_set_t cur, want;

		CPU_ZERO(&want);
		for (int c = 0; c < CPU_SETSIZE && c < ACT_CPUMASK_MAX; c++)
			if (act_cpumask_isset(aff, c))
				CPU_SET(c, &want);
		if (!sched_getaffinity(tid, sizeof(cur), &cur) && !CPU_EQUAL(&cur, &want) &&
		    sched_setaffinity(tid, sizeof(want), &want))
			act_be_log(act, ACT_LOG_DEBUG, "thread %d: cannot restore its affinity: %s",
				   tid, strerror(errno));
	}
	return err;
}

/*
 * Empty grp: recorded threads go back to their origin, everything else
 * (forked after placement) to fallback. Repeated because processes may fork
 * while we move them.
 */
static int empty_group(struct act *act, const char *grp, const struct act_origin *fallback)
{
	pid_t tids[1024];
	int first = 0;

	for (int iter = 0; iter < 50; iter++) {
		size_t n = sizeof(tids) / sizeof(tids[0]);

		act->cg->tasks(act->cgbe, grp, tids, &n);
		if (n == 0)
			return first;
		if (n > sizeof(tids) / sizeof(tids[0]))
			n = sizeof(tids) / sizeof(tids[0]);
		for (size_t i = 0; i < n; i++) {
			struct act_rec_task *t = act__rec_find_task(&act->rec, tids[i]);
			int err;

			if (t && t->start && act->real_cgroup &&
			    act__proc_starttime(tids[i]) != t->start)
				t = NULL; /* a new thread reusing a recorded id */
			err = move_back(act, tids[i], t ? &t->origin : fallback,
					t && t->has_aff ? &t->aff : NULL);
			if (err && !first)
				first = err;
		}
		if (first)
			break;
	}
	return first ? first : ERR(act, -EBUSY, "cgroup %s keeps getting new tasks", grp);
}

/* Record, then move every thread of pid's process tree into wl's group. */
static int move_tree(struct act *act, struct act_workload *wl, pid_t pid)
{
	struct act_origin dst;
	int err = 0;

	grp_origin(wl->grp, &dst);
	for (int iter = 0; iter < 50; iter++) {
		pid_t *tids = NULL;
		size_t n = 0, pending = 0;

		err = act__proc_tree(pid, &tids, &n);
		if (err == -ESRCH && iter > 0)
			return 0; /* the whole tree exited meanwhile */
		if (err)
			return ERR(act, err, "cannot list the threads of pid %d: %s", pid,
				   strerror(-err));
		/* record first (in the state file too), then move */
		for (size_t i = 0; i < n; i++) {
			struct act_rec_task t = { .tid = tids[i] };
			cpu_set_t cs;

			if (is_in(act, tids[i], &dst)) {
				tids[i] = 0;
				continue;
			}
			if (in_other_workload(act, tids[i], &dst)) {
				err = ERR(act, -EBUSY,
					  "workload %s: thread %d of pid %d belongs to another "
					  "workload already",
					  wl->name, tids[i], pid);
				break;
			}
			pending++;
			if (act__rec_find_task(&act->rec, tids[i]))
				continue;
			if (act->cg->where(act->cgbe, tids[i], &t.origin)) {
				tids[i] = 0; /* exited */
				pending--;
				continue;
			}
			t.start = act__proc_starttime(tids[i]);
			snprintf(t.wl, sizeof(t.wl), "%s", wl->name);
			if (!sched_getaffinity(tids[i], sizeof(cs), &cs)) {
				t.has_aff = true;
				for (int c = 0; c < CPU_SETSIZE && c < ACT_CPUMASK_MAX; c++)
					if (CPU_ISSET(c, &cs))
						act_cpumask_set(&t.aff, c);
			}
			err = act__rec_add_task(&act->rec, &t);
			if (err)
				break;
		}
		if (!err && pending)
			err = save_state(act);
		for (size_t i = 0; !err && i < n; i++) {
			if (!tids[i])
				continue;
			err = act->cg->attach(act->cgbe, &dst, tids[i]);
			if (err == -ESRCH)
				err = 0;
		}
		free(tids);
		if (err)
			return err;
		if (!pending)
			return 0;
	}
	return ERR(act, -EAGAIN, "pid %d keeps creating threads faster than they can be moved",
		   pid);
}

/* ---------------------------------------------------------------- frequency */

int act_freq_round(const struct act *act, unsigned long khz, unsigned long *out)
{
	const struct act_caps *c = &act->caps;
	unsigned long step = c->freq_step_khz ? c->freq_step_khz : ACT_DEFAULT_FREQ_STEP_KHZ;
	unsigned long r;

	if (!(c->resources & ACT_RES_CPUFREQ))
		return -EOPNOTSUPP;
	if (khz < c->freq_min_khz || khz > c->freq_max_khz)
		return -ERANGE;
	if (khz == c->freq_min_khz || khz == c->freq_max_khz) {
		*out = khz;
		return 0;
	}
	r = (khz + step / 2) / step * step;
	if (r < c->freq_min_khz)
		r = c->freq_min_khz;
	if (r > c->freq_max_khz)
		r = c->freq_max_khz;
	*out = r;
	return 0;
}

struct freq_undo {
	int cpu;
	unsigned long min, max;
};

/*
 * Set limits of every cpu in cpus (0 = keep); with clamp_min a kept minimum
 * above the new maximum comes down to it. Rolls back on failure.
 */
static int freq_apply(struct act *act, const struct act_cpumask *cpus, unsigned long min,
		      unsigned long max, bool clamp_min)
{
	struct freq_undo undo[64];
	size_t nundo = 0, ncpu = 0; /* undo[0..ncpu) read, [0..nundo) written */
	bool dirty = false;
	int cpu, err = 0;

	if (act_cpumask_count(cpus) > 64)
		return ERR(act, -E2BIG, "too many cpus in one frequency change");
	act_cpumask_for_each(cpu, cpus)
	{
		struct act_rec_freq rf = { .cpu = cpu };

		err = act->fq->get(act->fqbe, cpu, &rf.min_khz, &rf.max_khz);
		if (err) {
			err = ERR(act, err, "cannot read the frequency limits of cpu%d: %s", cpu,
				  strerror(-err));
			goto rollback;
		}
		undo[ncpu].cpu = cpu;
		undo[ncpu].min = rf.min_khz;
		undo[ncpu].max = rf.max_khz;
		ncpu++;
		if (!act__rec_find_freq(&act->rec, cpu)) {
			err = act__rec_add_freq(&act->rec, &rf);
			if (err)
				goto rollback;
			dirty = true;
		}
	}
	if (dirty) {
		err = save_state(act);
		if (err)
			return err;
	}
	for (size_t i = 0; i < ncpu; i++) {
		unsigned long nmin = min ? min : undo[i].min, nmax = max ? max : undo[i].max;

		if (clamp_min && !min && nmin > nmax)
			nmin = nmax;
		if (nmin > nmax) {
			err =
			    ERR(act, -EINVAL,
				"cpu%d: minimum frequency %lu kHz would exceed the maximum %lu kHz",
				undo[i].cpu, nmin, nmax);
			goto rollback;
		}
		err = act->fq->set(act->fqbe, undo[i].cpu, nmin, nmax);
		nundo = i + 1; /* the backend leaves a failed cpu as it was; undo is harmless */
		if (err)
			goto rollback;
	}
	return 0;
rollback:
	for (size_t i = 0; i < nundo; i++)
		act->fq->set(act->fqbe, undo[i].cpu, undo[i].min, undo[i].max);
	return err;
}

static int restore_freq(struct act *act, const struct act_cpumask *only)
{
	int first = 0;

	for (size_t i = 0; i < act->rec.nfreqs;) {
		struct act_rec_freq *f = &act->rec.freqs[i];
		int err;

		if (only && !act_cpumask_isset(only, f->cpu)) {
			i++;
			continue;
		}
		err = act->fq->set(act->fqbe, f->cpu, f->min_khz, f->max_khz);
		if (err && !first)
			first = err;
		act__rec_drop_freq(&act->rec, f->cpu);
	}
	return first;
}

int act_set_freq(struct act *act, const struct act_cpumask *cpus, unsigned long min_khz,
		 unsigned long max_khz)
{
	unsigned long rmin = 0, rmax = 0;
	int err;

	if (!act || !cpus)
		return -EINVAL;
	if (!managed_freq(act))
		return ERR(act, -EOPNOTSUPP, "cpufreq is not usable: %s", act->caps.cpufreq_reason);
	if (!act_cpumask_subset(cpus, &act->caps.cpus))
		return ERR(act, -ERANGE, "frequency change on cpus outside the managed set");
	if (min_khz && (err = act_freq_round(act, min_khz, &rmin)))
		return ERR(act, err, "minimum frequency %lu kHz is outside %lu-%lu kHz", min_khz,
			   act->caps.freq_min_khz, act->caps.freq_max_khz);
	if (max_khz && (err = act_freq_round(act, max_khz, &rmax)))
		return ERR(act, err, "maximum frequency %lu kHz is outside %lu-%lu kHz", max_khz,
			   act->caps.freq_min_khz, act->caps.freq_max_khz);
	if (rmin && rmax && rmin > rmax)
		return ERR(act, -EINVAL, "minimum frequency %lu kHz above maximum %lu kHz", rmin,
			   rmax);
	return freq_apply(act, cpus, rmin, rmax, false);
}

int act_get_freq(struct act *act, int cpu, unsigned long *min_khz, unsigned long *max_khz)
{
	if (!act || !min_khz || !max_khz)
		return -EINVAL;
	if (!managed_freq(act))
		return -EOPNOTSUPP;
	return act->fq->get(act->fqbe, cpu, min_khz, max_khz);
}

int act_workload_set_freq(struct act *act, struct act_workload *wl, unsigned long max_khz)
{
	unsigned long r;
	int err;

	if (!act || !wl)
		return -EINVAL;
	if (!managed_freq(act))
		return ERR(act, -EOPNOTSUPP, "cpufreq is not usable: %s", act->caps.cpufreq_reason);
	if (max_khz == 0) {
		err = freq_apply(act, &wl->cpus, 0, act->caps.freq_max_khz, true);
		if (!err)
			wl->freq_cap = 0;
		return err;
	}
	err = act_freq_round(act, max_khz, &r);
	if (err)
		return ERR(act, err, "workload %s: frequency %lu kHz is outside %lu-%lu kHz",
			   wl->name, max_khz, act->caps.freq_min_khz, act->caps.freq_max_khz);
	err = freq_apply(act, &wl->cpus, 0, r, true);
	if (!err)
		wl->freq_cap = r;
	return err;
}

/* ---------------------------------------------------------------- leftovers */

/*
 * Stop the process groups an earlier instance launched (their leader's start
 * time proves the pid was not reused): SIGTERM, a grace period, SIGKILL.
 */
static void stop_pgrps(struct act *act)
{
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	bool any = false;

	for (size_t i = 0; i < act->rec.npgrps; i++) {
		struct act_rec_pgrp *g = &act->rec.pgrps[i];

		if (act__proc_starttime(g->pgid) != g->start) {
			g->pgid = 0; /* gone, or the pid is someone else's now */
			continue;
		}
		if (act->adopt_pgrps) {
			struct act_rec_pgrp *p =
			    realloc(act->leftover, (act->nleftover + 1) * sizeof(*p));

			if (p) {
				act->leftover = p;
				act->leftover[act->nleftover++] = *g;
				g->pgid = 0; /* kept for act_adopt_pgrp() */
				continue;
			}
		}
		act_be_log(act, ACT_LOG_WARN,
			   "stopping process group %d (workload %s) left by an earlier instance",
			   g->pgid, g->wl);
		kill(-g->pgid, SIGTERM);
		any = true;
	}
	for (int t = 0; any && t < ACT_PGRP_GRACE_MS / 50; t++) {
		any = false;
		for (size_t i = 0; i < act->rec.npgrps; i++)
			if (act->rec.pgrps[i].pgid && kill(-act->rec.pgrps[i].pgid, 0) == 0)
				any = true;
		if (any)
			nanosleep(&ts, NULL);
	}
	for (size_t i = 0; i < act->rec.npgrps; i++)
		if (act->rec.pgrps[i].pgid)
			kill(-act->rec.pgrps[i].pgid, SIGKILL);
}

static int restore_inplace(struct act *act, const struct act_rec_wl *r);

/*
 * Put back what an earlier instance with this parent left. Only what the
 * state file proves is ours is touched: a parent cgroup without an owner
 * record (someone else's, e.g. cgroup_parent = docker) is refused, and of
 * its children only the recorded workloads are emptied and removed.
 */
static int cleanup_leftovers(struct act *act, bool *found)
{
	char(*names)[ACT_NAME_MAX] = NULL;
	size_t n = 256;
	int err, first = 0;

	*found = false;
	err = act->state_path[0] ? act__state_load(act->state_path, &act->rec) : -ENOENT;
	if (err && err != -ENOENT)
		act_be_log(act, ACT_LOG_WARN, "ignoring unreadable state file %s: %s",
			   act->state_path, strerror(-err));
	if (!err)
		*found = true;
	stop_pgrps(act);
	for (size_t i = 0; managed_cgroup(act) && i < act->rec.nwls; i++) {
		if (!act->rec.wls[i].inplace)
			continue;
		*found = true;
		act_be_log(act, ACT_LOG_WARN,
			   "workload %s: putting back cgroup %s as an earlier instance found it",
			   act->rec.wls[i].name, act->rec.wls[i].grp);
		err = restore_inplace(act, &act->rec.wls[i]);
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
		act_be_log(act, ACT_LOG_WARN,
			   "cgroup %s exists: cleaning up after an earlier instance", act->parent);
		names = calloc(n, sizeof(*names));
		if (!names)
			return -ENOMEM;
		act->cg->children(act->cgbe, act->parent, names, &n);
		for (size_t i = 0; i < n && i < 256; i++) {
			char grp[ACT_PATH_MAX];
			struct act_rec_wl *w = act__rec_find_wl(&act->rec, names[i]);

			snprintf(grp, sizeof(grp), "%s/%s", act->parent, names[i]);
			if (!w || w->inplace) {
				/* not created by us: left alone, so the parent stays too */
				err =
				    ERR(act, -ENOTEMPTY,
					"cgroup %s was not created by parties: left in place", grp);
				if (!first)
					first = err;
				continue;
			}
			err = empty_group(act, grp, &w->origin);
			if (!err)
				err = act->cg->remove(act->cgbe, grp);
			if (err && !first)
				first = err;
		}
		free(names);
		err = empty_group(act, act->parent, &root_origin);
		if (!err)
			err = act->cg->remove(act->cgbe, act->parent);
		if (err && !first)
			first = err;
	}
	if (managed_freq(act))
		restore_freq(act, NULL);
	act__rec_free(&act->rec);
	if (!first)
		drop_state_file(act);
	return first;
}

/* ---------------------------------------------------------------- open/close */

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
	act__state_unlock(act->state_path, act->lock_fd);
	free(act->leftover);
	if (act->fq && act->fqbe)
		act->fq->close(act->fqbe);
	act__rec_free(&act->rec);
	free(act);
}

static int act_new(const struct act_opts *opts, struct act **out)
{
	const struct act_cgroup_ops *cg;
	const struct act_freq_ops *fq;
	const char *parent, *dir;
	struct act *act;
	int err;

	if (!opts || opts->sz < offsetof(struct act_opts, backend_ctx) + sizeof(void *))
		return -EINVAL;
	parent = opts->parent ? opts->parent : ACT_DEFAULT_PARENT;
	if (!valid_name(parent)) {
		act_be_log(NULL, ACT_LOG_WARN,
			   "bad parent cgroup name \"%s\" (one component of [A-Za-z0-9_.-])",
			   parent);
		return -EINVAL;
	}
	act = calloc(1, sizeof(*act));
	if (!act)
		return -ENOMEM;
	act->lock_fd = -1;
	act->adopt_pgrps =
	    opts->sz >= offsetof(struct act_opts, adopt_pgrps) + sizeof(bool) && opts->adopt_pgrps;
	snprintf(act->parent, sizeof(act->parent), "%s", parent);
	act->dry_run = opts->dry_run;
	act->log = opts->log;
	act->log_ctx = opts->log_ctx;
	act->log_level = opts->log_level;
	dir = opts->state_dir ? opts->state_dir : ACT_DEFAULT_STATE_DIR;
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
		err = ERR(act, err, "cannot open the %s backend: %s", cg->name, strerror(-err));
		goto fail;
	}
	err = fq->open(&act->conf, &act->fqbe);
	if (err) {
		act->fqbe = NULL;
		err = ERR(act, err, "cannot open the %s backend: %s", fq->name, strerror(-err));
		goto fail;
	}

	/* capabilities */
	err = cg->probe(act->cgbe, &act->caps);
	if (err) {
		err = ERR(act, err, "cannot probe the %s backend: %s", cg->name, strerror(-err));
		goto fail;
	}
	if (opts->cpus && !act_cpumask_empty(opts->cpus)) {
		if (!act_cpumask_subset(opts->cpus, &act->caps.cpus)) {
			char want[256], have[256];

			fmt_cpus(opts->cpus, want, sizeof(want));
			fmt_cpus(&act->caps.cpus, have, sizeof(have));
			err = ERR(act, -EINVAL, "managed cpus %s are not all available (have %s)",
				  want, have);
			goto fail;
		}
		act->caps.cpus = *opts->cpus;
		act->caps.nr_cpus = act_cpumask_count(opts->cpus);
		act->caps.quota_max_cores = act->caps.nr_cpus;
	}
	if (act->conf.resources & ACT_RES_CPUFREQ) {
		err = fq->probe(act->fqbe, &act->caps.cpus, &act->caps);
		if (err) {
			err = ERR(act, err, "cannot probe cpufreq: %s", strerror(-err));
			goto fail;
		}
	} else {
		act->caps.cpufreq = false;
		snprintf(act->caps.cpufreq_reason, sizeof(act->caps.cpufreq_reason),
			 "not requested");
	}
	act->caps.freq_step_khz = act->conf.freq_step_khz;
	act->caps.quota_period_us = act->conf.quota_period_us;
	act->caps.dry_run = act->dry_run;
	act->caps.resources = (act->caps.cpuset ? ACT_RES_CPUSET : 0) |
			      (act->caps.quota ? ACT_RES_QUOTA : 0) |
			      (act->caps.cpufreq ? ACT_RES_CPUFREQ : 0);
	act->caps.resources &= act->conf.resources;
	*out = act;
	return 0;
fail:
	act_free(act);
	return err;
}

static int ensure_parent(struct act *act)
{
	int err;

	if (act->parent_created || !managed_cgroup(act))
		return 0;
	/* the proof of ownership goes to the state file before the cgroup exists */
	if (!act->rec.owns_parent) {
		act->rec.owns_parent = true;
		err = save_state(act);
		if (err)
			return err;
	}
	err = act->cg->create(act->cgbe, act->parent, &act->caps.cpus);
	if (err)
		return ERR(act, err, "cannot create the parent cgroup %s: %s%s", act->parent,
			   strerror(-err), err == -EACCES || err == -EPERM ? " (run as root)" : "");
	act->parent_created = true;
	return 0;
}

/* One daemon (or --cleanup) per parent at a time: the second is refused, naming the first. */
static int take_lock(struct act *act)
{
	pid_t holder = 0;
	int fd;

	if (!act->state_path[0])
		return 0;
	fd = act__state_lock(act->state_path, &holder);
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

int act_record_pgrp(struct act *act, const char *wl, pid_t pgid)
{
	struct act_rec_pgrp g = { .pgid = pgid };
	int err;

	if (!act || pgid <= 1)
		return -EINVAL;
	if (act->dry_run)
		return 0;
	g.start = act__proc_starttime(pgid);
	if (!g.start)
		return -ESRCH;
	snprintf(g.wl, sizeof(g.wl), "%s", wl ? wl : "-");
	err = act__rec_add_pgrp(&act->rec, &g);
	return err ? err : save_state(act);
}

pid_t act_adopt_pgrp(struct act *act, const char *wl)
{
	for (size_t i = 0; act && i < act->nleftover; i++) {
		struct act_rec_pgrp g = act->leftover[i];

		if (strcmp(g.wl, wl) || act__proc_starttime(g.pgid) != g.start)
			continue;
		act->leftover[i] = act->leftover[--act->nleftover];
		if (act_record_pgrp(act, wl, g.pgid))
			return 0;
		return g.pgid;
	}
	return 0;
}

void act_stop_unadopted(struct act *act)
{
	struct act_records saved;

	if (!act || !act->nleftover)
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

struct act *act_open(const struct act_opts *opts)
{
	struct act *act;
	bool found;
	int err;

	err = act_new(opts, &act);
	if (err)
		return err_ptr(err);
	for (int r = 0; r < 3; r++)
		if (act->caps.resources & (1u << r))
			act_be_log(act, ACT_LOG_INFO, "%s: usable%s", act_resource_str(1u << r),
				   act->dry_run ? " (dry-run)" : "");
	if (!act->caps.cpuset && (act->conf.resources & ACT_RES_CPUSET))
		act_be_log(act, ACT_LOG_INFO, "cpuset: unavailable: %s", act->caps.cpuset_reason);
	if (!act->caps.quota && (act->conf.resources & ACT_RES_QUOTA))
		act_be_log(act, ACT_LOG_INFO, "quota: unavailable: %s", act->caps.quota_reason);
	if (!act->caps.cpufreq && (act->conf.resources & ACT_RES_CPUFREQ))
		act_be_log(act, ACT_LOG_INFO, "cpufreq: unavailable: %s", act->caps.cpufreq_reason);
	if (!act->dry_run) {
		err = take_lock(act);
		if (err)
			goto fail;
		err = cleanup_leftovers(act, &found);
		if (err) {
			err =
			    ERR(act, err, "cannot clean up what an earlier instance left in %s: %s",
				act->parent, strerror(-err));
			goto fail;
		}
	}
	err = ensure_parent(act);
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
			err = cleanup_leftovers(act, &found);
	}
	act_free(act);
	return err ? err : found;
}

const struct act_caps *act_caps(const struct act *act)
{
	return act ? &act->caps : NULL;
}

/* ---------------------------------------------------------------- workloads */

struct act_workload *act_workload_find(struct act *act, const char *name)
{
	for (struct act_workload *wl = act ? act->wls : NULL; wl; wl = wl->next)
		if (!strcmp(wl->name, name))
			return wl;
	return err_ptr(-ENOENT);
}

const char *act_workload_name(const struct act_workload *wl)
{
	return wl ? wl->name : NULL;
}

pid_t act_workload_pid(const struct act_workload *wl)
{
	return wl ? wl->pid : -1;
}

const struct act_cpumask *act_workload_cpus(const struct act_workload *wl)
{
	return wl ? &wl->cpus : NULL;
}

static bool is_listed(const struct act *act, const struct act_workload *wl)
{
	for (const struct act_workload *w = act->wls; w; w = w->next)
		if (w == wl)
			return true;
	return false;
}

/* Check that cpus may be given to wl (NULL: a new workload). */
static int check_cpus(struct act *act, const struct act_workload *wl, const char *name,
		      const struct act_cpumask *cpus)
{
	char a[256], b[256];

	if (!cpus || act_cpumask_empty(cpus))
		return ERR(act, -EINVAL, "workload %s: an empty core set is not allowed", name);
	if (!act_cpumask_subset(cpus, &act->caps.cpus)) {
		fmt_cpus(cpus, a, sizeof(a));
		fmt_cpus(&act->caps.cpus, b, sizeof(b));
		return ERR(act, -ERANGE, "workload %s: cpus %s are not all managed (managed: %s)",
			   name, a, b);
	}
	for (const struct act_workload *w = act->wls; w; w = w->next) {
		if (w == wl || !act_cpumask_intersects(cpus, &w->cpus))
			continue;
		fmt_cpus(cpus, a, sizeof(a));
		fmt_cpus(&w->cpus, b, sizeof(b));
		return ERR(act, -EBUSY, "workload %s: cpus %s overlap workload %s (cpus %s)", name,
			   a, w->name, b);
	}
	return 0;
}

static int quota_from_cores(struct act *act, const char *name, double cores, int64_t *q)
{
	double us;

	if (!(cores > 0)) {
		*q = -1;
		return 0;
	}
	if (cores > act->caps.quota_max_cores + 1e-9)
		return ERR(act, -ERANGE, "workload %s: quota of %.3f cores exceeds the %d cpus",
			   name, cores, act->caps.nr_cpus);
	us = round(cores * act->caps.quota_period_us);
	if (us < act->caps.quota_min_us)
		return ERR(act, -ERANGE,
			   "workload %s: quota of %.4f cores is %.0f us per %u us, below the "
			   "kernel's minimum of %u us",
			   name, cores, us, act->caps.quota_period_us, act->caps.quota_min_us);
	*q = (int64_t)us;
	return 0;
}

/*
 * Put an in-place workload's cgroup values back as found (r, from memory or the
 * state file). Its tasks and the cgroup itself are not ours: left alone.
 */
static int restore_inplace(struct act *act, const struct act_rec_wl *r)
{
	int err = 0, e;

	if (!act->cg->exists(act->cgbe, r->grp)) {
		act_be_log(act, ACT_LOG_INFO, "workload %s: cgroup %s is gone: nothing to restore",
			   r->name, r->grp);
		return 0;
	}
	if (r->has_cpus && managed_cpuset(act))
		err = act->cg->set_cpus(act->cgbe, r->grp, &r->cpus);
	if (r->has_quota && managed_quota(act)) {
		e = act->cg->set_quota(act->cgbe, r->grp, r->quota_us, r->period_us);
		if (e && !err)
			err = e;
	}
	act_be_log(act, ACT_LOG_INFO, "workload %s: cgroup %s restored as found%s", r->name, r->grp,
		   err ? " (with errors)" : "");
	return err;
}

/* Move wl's threads back, restore its cores' frequencies, remove its group. */
static int release(struct act *act, struct act_workload *wl)
{
	int err = 0, e;
	struct act_rec_wl *r = act__rec_find_wl(&act->rec, wl->name);

	if (wl->inplace) {
		if (r && r->inplace)
			err = restore_inplace(act, r);
	} else if (managed_cgroup(act)) {
		err = empty_group(act, wl->grp, &wl->origin);
		if (!err) {
			err = act->cg->remove(act->cgbe, wl->grp);
			if (err == -ENOENT)
				err = 0;
		}
	}
	if (managed_freq(act)) {
		e = restore_freq(act, &wl->cpus);
		if (e && !err)
			err = e;
	}
	act__rec_drop_wl(&act->rec, wl->name);
	e = save_state(act);
	return err ? err : e;
}

static void unlink_wl(struct act *act, struct act_workload *wl)
{
	for (struct act_workload **p = &act->wls; *p; p = &(*p)->next)
		if (*p == wl) {
			*p = wl->next;
			return;
		}
}

/* The initial cores and quota of a new workload: valid, free, and the quota in us. */
static int check_initial(struct act *act, const char *name, const struct act_workload_opts *opts,
			 int64_t *quota)
{
	int err;

	if (managed_cpuset(act)) {
		err = check_cpus(act, NULL, name, opts ? opts->cpus : NULL);
		if (err)
			return err;
	}
	if (opts && opts->quota_cores > 0) {
		if (!managed_quota(act))
			return ERR(act, -EOPNOTSUPP, "workload %s: cpu quota is not usable: %s",
				   name, act->caps.quota_reason);
		return quota_from_cores(act, name, opts->quota_cores, quota);
	}
	return 0;
}

struct act_workload *act_workload_add(struct act *act, const char *name, pid_t pid,
				      const struct act_workload_opts *opts)
{
	struct act_workload *wl;
	struct act_rec_wl rw = { 0 };
	int64_t quota = -1;
	bool created = false;
	int err;

	if (!act)
		return err_ptr(-EINVAL);
	if (opts && opts->sz < offsetof(struct act_workload_opts, freq_max_khz) +
				   sizeof(opts->freq_max_khz))
		return err_ptr(ERR(act, -EINVAL, "act_workload_opts.sz is not set"));
	if (!valid_name(name))
		return err_ptr(ERR(act, -EINVAL,
				   "bad workload name \"%s\" (one component of [A-Za-z0-9_.-], "
				   "at most %d bytes)",
				   name ? name : "(null)", ACT_NAME_MAX - 1));
	if (act_workload_find(act, name))
		return err_ptr(ERR(act, -EEXIST, "workload %s is managed already", name));
	if (pid <= 0 || !act__proc_exists(pid))
		return err_ptr(ERR(act, -ESRCH, "workload %s: no process %d", name, pid));
	err = check_initial(act, name, opts, &quota);
	if (err)
		return err_ptr(err);
	err = ensure_parent(act);
	if (err)
		return err_ptr(err);

	wl = calloc(1, sizeof(*wl));
	if (!wl)
		return err_ptr(-ENOMEM);
	wl->act = act;
	wl->pid = pid;
	wl->quota_us = -1;
	snprintf(wl->name, sizeof(wl->name), "%s", name);
	snprintf(wl->grp, sizeof(wl->grp), "%s/%s", act->parent, name);
	if (managed_cpuset(act))
		wl->cpus = *opts->cpus;
	else if (opts && opts->cpus)
		wl->cpus = *opts->cpus;

	if (managed_cgroup(act)) {
		err = act->cg->where(act->cgbe, pid, &wl->origin);
		if (err) {
			err = ERR(act, err, "workload %s: cannot read the cgroups of pid %d: %s",
				  name, pid, strerror(-err));
			goto fail;
		}
		rw.origin = wl->origin;
		snprintf(rw.name, sizeof(rw.name), "%s", name);
		err = act__rec_add_wl(&act->rec, &rw);
		if (!err)
			err = save_state(act);
		if (err)
			goto fail;
		err = act->cg->create(act->cgbe, wl->grp, managed_cpuset(act) ? &wl->cpus : NULL);
		if (err)
			goto fail;
		created = true;
		if (quota >= 0) {
			err = act->cg->set_quota(act->cgbe, wl->grp, quota,
						 act->caps.quota_period_us);
			if (err)
				goto fail;
			wl->quota_us = quota;
		}
		err = move_tree(act, wl, pid);
		if (err)
			goto fail;
	}
	wl->next = act->wls;
	act->wls = wl;
	if (opts && opts->freq_max_khz) {
		if (!managed_freq(act)) {
			act_be_log(act, ACT_LOG_INFO,
				   "workload %s: frequency cap ignored: cpufreq is not usable: %s",
				   name, act->caps.cpufreq_reason);
		} else {
			err = act_workload_set_freq(act, wl, opts->freq_max_khz);
			if (err) {
				unlink_wl(act, wl);
				goto fail;
			}
		}
	}
	act_be_log(act, ACT_LOG_INFO, "workload %s (pid %d) managed in %s", name, pid, wl->grp);
	return wl;
fail:
	if (created) {
		int saved = err;
		char msg[sizeof(act->err)];

		memcpy(msg, act->err, sizeof(msg));
		release(act, wl);
		memcpy(act->err, msg, sizeof(msg));
		err = saved;
	} else {
		act__rec_drop_wl(&act->rec, name);
		save_state(act);
	}
	free(wl);
	return err_ptr(err);
}

/* A cgroup path relative to the hierarchy root: no "..", no empty components. */
static bool valid_grp(const char *g)
{
	const char *c = g;

	if (!*g || strlen(g) >= ACT_PATH_MAX - 1 || strpbrk(g, "\t\n"))
		return false;
	while (*c) {
		size_t n = strcspn(c, "/");

		if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c += n;
		if (*c == '/' && !*++c)
			return false;
	}
	return true;
}

struct act_workload *act_workload_add_inplace(struct act *act, const char *name, const char *cgroup,
					      const struct act_workload_opts *opts)
{
	struct act_workload *wl;
	struct act_rec_wl rw = { .inplace = true };
	size_t pl, n = 1;
	pid_t first = 0;
	int64_t quota = -1;
	int err;

	if (!act || !cgroup)
		return err_ptr(-EINVAL);
	if (opts && opts->sz < offsetof(struct act_workload_opts, freq_max_khz) +
				   sizeof(opts->freq_max_khz))
		return err_ptr(ERR(act, -EINVAL, "act_workload_opts.sz is not set"));
	if (!valid_name(name))
		return err_ptr(
		    ERR(act, -EINVAL, "bad workload name \"%s\"", name ? name : "(null)"));
	if (act_workload_find(act, name))
		return err_ptr(ERR(act, -EEXIST, "workload %s is managed already", name));
	while (*cgroup == '/')
		cgroup++;
	if (!valid_grp(cgroup))
		return err_ptr(ERR(act, -EINVAL,
				   "workload %s: \"%s\" is not a cgroup below the root (no \"..\", "
				   "not the root itself)",
				   name, cgroup));
	pl = strlen(act->parent);
	if (!strncmp(cgroup, act->parent, pl) && (!cgroup[pl] || cgroup[pl] == '/'))
		return err_ptr(ERR(act, -EINVAL,
				   "workload %s: cgroup %s is parties' own parent %s or below it",
				   name, cgroup, act->parent));
	for (struct act_workload *w = act->wls; w; w = w->next)
		if (w->inplace && !strcmp(w->grp, cgroup))
			return err_ptr(ERR(act, -EEXIST, "workload %s: cgroup %s is workload %s's",
					   name, cgroup, w->name));
	if (!managed_cgroup(act))
		return err_ptr(ERR(act, -EOPNOTSUPP,
				   "workload %s: in place needs cpuset or cpu quota: %s; %s", name,
				   act->caps.cpuset_reason, act->caps.quota_reason));
	if (!act->cg->exists(act->cgbe, cgroup))
		return err_ptr(ERR(act, -ENOENT, "workload %s: no cgroup %s", name, cgroup));
	err = check_initial(act, name, opts, &quota);
	if (err)
		return err_ptr(err);

	/* what is there goes to the state file before the first write */
	snprintf(rw.name, sizeof(rw.name), "%s", name);
	snprintf(rw.grp, sizeof(rw.grp), "%s", cgroup);
	if (managed_cpuset(act)) {
		err = act->cg->get_cpus(act->cgbe, cgroup, &rw.cpus);
		if (err)
			return err_ptr(ERR(act, err,
					   "workload %s: cannot read the cpus of cgroup %s: %s",
					   name, cgroup, strerror(-err)));
		rw.has_cpus = true;
	}
	if (managed_quota(act)) {
		err = act->cg->get_quota(act->cgbe, cgroup, &rw.quota_us, &rw.period_us);
		if (err)
			return err_ptr(ERR(act, err,
					   "workload %s: cannot read the quota of cgroup %s: %s",
					   name, cgroup, strerror(-err)));
		rw.has_quota = true;
	}
	wl = calloc(1, sizeof(*wl));
	if (!wl)
		return err_ptr(-ENOMEM);
	wl->act = act;
	wl->inplace = true;
	wl->quota_us = -1;
	snprintf(wl->name, sizeof(wl->name), "%s", name);
	snprintf(wl->grp, sizeof(wl->grp), "%s", cgroup);
	if (opts && opts->cpus)
		wl->cpus = *opts->cpus;
	act->cg->tasks(act->cgbe, cgroup, &first, &n);
	wl->pid = n ? first : 0;
	err = act__rec_add_wl(&act->rec, &rw);
	if (!err)
		err = save_state(act);
	if (err)
		goto fail;
	if (managed_cpuset(act)) {
		err = act->cg->set_cpus(act->cgbe, cgroup, &wl->cpus);
		if (err)
			goto fail;
	}
	if (managed_quota(act) &&
	    (quota >= 0 || rw.quota_us >= 0 || rw.period_us != act->caps.quota_period_us)) {
		/* the period parties works in, and its quota (unlimited if none) */
		err = act->cg->set_quota(act->cgbe, cgroup, quota, act->caps.quota_period_us);
		if (err)
			goto fail;
		wl->quota_us = quota;
	}
	wl->next = act->wls;
	act->wls = wl;
	if (opts && opts->freq_max_khz && managed_freq(act)) {
		err = act_workload_set_freq(act, wl, opts->freq_max_khz);
		if (err) {
			unlink_wl(act, wl);
			goto fail;
		}
	}
	act_be_log(act, ACT_LOG_INFO, "workload %s managed in place in cgroup %s", name, cgroup);
	return wl;
fail : {
	int saved = err;
	char msg[sizeof(act->err)];

	memcpy(msg, act->err, sizeof(msg));
	release(act, wl);
	memcpy(act->err, msg, sizeof(msg));
	free(wl);
	return err_ptr(saved);
}
}

int act_workload_attach(struct act *act, struct act_workload *wl, pid_t pid)
{
	if (!act || !wl || !is_listed(act, wl))
		return -EINVAL;
	if (pid <= 0 || !act__proc_exists(pid))
		return ERR(act, -ESRCH, "workload %s: no process %d", wl->name, pid);
	if (!managed_cgroup(act) || wl->inplace)
		return 0; /* in place: its processes stay where they are */
	return move_tree(act, wl, pid);
}

int act_workload_remove(struct act *act, struct act_workload *wl)
{
	int err;

	if (!act || !wl || !is_listed(act, wl))
		return -EINVAL;
	unlink_wl(act, wl);
	err = release(act, wl);
	act_be_log(act, ACT_LOG_INFO, "workload %s released%s", wl->name,
		   err ? " (with errors)" : "");
	free(wl);
	return err;
}

/* ---------------------------------------------------------------- cores */

int act_set_cpus(struct act *act, struct act_workload *wl, const struct act_cpumask *cpus)
{
	struct act_assign a;

	if (!cpus)
		return -EINVAL;
	a.wl = wl;
	a.cpus = *cpus;
	return act_assign_cpus(act, &a, 1);
}

int act_assign_cpus(struct act *act, const struct act_assign *assign, size_t n)
{
	struct act_cpumask *old = NULL;
	bool *grown = NULL, *set = NULL;
	int err = 0;

	if (!act || (!assign && n))
		return -EINVAL;
	if (!managed_cpuset(act))
		return ERR(act, -EOPNOTSUPP, "cpuset is not usable: %s", act->caps.cpuset_reason);
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (!assign[i].wl || !is_listed(act, assign[i].wl))
			return ERR(act, -EINVAL, "core assignment %zu: not a managed workload", i);
		for (size_t j = 0; j < i; j++)
			if (assign[j].wl == assign[i].wl)
				return ERR(act, -EINVAL,
					   "workload %s listed twice in one assignment",
					   assign[i].wl->name);
	}
	/* the final state must be disjoint: check with the new sets in place */
	old = calloc(n, sizeof(*old));
	grown = calloc(n, sizeof(*grown));
	set = calloc(n, sizeof(*set));
	if (!old || !grown || !set) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		old[i] = assign[i].wl->cpus;
		assign[i].wl->cpus = assign[i].cpus;
	}
	for (size_t i = 0; i < n && !err; i++)
		err = check_cpus(act, assign[i].wl, assign[i].wl->name, &assign[i].cpus);
	for (size_t i = 0; i < n; i++)
		assign[i].wl->cpus = old[i];
	if (err)
		goto out;

	/* grow, then shrink: no workload is ever without cores */
	for (size_t i = 0; i < n && !err; i++) {
		struct act_cpumask u;

		if (act_cpumask_subset(&assign[i].cpus, &old[i]))
			continue;
		act_cpumask_or(&u, &old[i], &assign[i].cpus);
		err = act->cg->set_cpus(act->cgbe, assign[i].wl->grp, &u);
		if (!err)
			grown[i] = true;
	}
	for (size_t i = 0; i < n && !err; i++) {
		struct act_cpumask u;

		act_cpumask_or(&u, &old[i], &assign[i].cpus);
		if (act_cpumask_equal(&u, &assign[i].cpus))
			continue;
		err = act->cg->set_cpus(act->cgbe, assign[i].wl->grp, &assign[i].cpus);
		if (!err)
			set[i] = true;
	}
	/* cores a capped workload gains take its cap */
	for (size_t i = 0; i < n && !err; i++) {
		struct act_workload *wl = assign[i].wl;
		struct act_cpumask gained;

		act_cpumask_andnot(&gained, &assign[i].cpus, &old[i]);
		if (!wl->freq_cap || !managed_freq(act) || act_cpumask_empty(&gained))
			continue;
		err = freq_apply(act, &gained, 0, wl->freq_cap, true);
		/* on failure the cpus of earlier workloads keep their new cap:
		 * harmless, the cores go back to those workloads' old owners below */
	}
	if (err) {
		/* roll back: back to the union where needed, then to the old sets */
		for (size_t i = 0; i < n; i++) {
			struct act_cpumask u;

			if (!set[i])
				continue;
			act_cpumask_or(&u, &old[i], &assign[i].cpus);
			act->cg->set_cpus(act->cgbe, assign[i].wl->grp, &u);
			grown[i] = true;
		}
		for (size_t i = 0; i < n; i++)
			if (grown[i])
				act->cg->set_cpus(act->cgbe, assign[i].wl->grp, &old[i]);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		char a[256], b[256];

		fmt_cpus(&old[i], a, sizeof(a));
		fmt_cpus(&assign[i].cpus, b, sizeof(b));
		assign[i].wl->cpus = assign[i].cpus;
		act_be_log(act, ACT_LOG_DEBUG, "workload %s: cpus %s -> %s", assign[i].wl->name, a,
			   b);
	}
out:
	free(old);
	free(grown);
	free(set);
	return err;
}

/* ---------------------------------------------------------------- quota */

int act_set_quota(struct act *act, struct act_workload *wl, double cores)
{
	int64_t q;
	int err;

	if (!act || !wl || !is_listed(act, wl))
		return -EINVAL;
	if (!managed_quota(act))
		return ERR(act, -EOPNOTSUPP, "cpu quota is not usable: %s", act->caps.quota_reason);
	err = quota_from_cores(act, wl->name, cores, &q);
	if (err)
		return err;
	err = act->cg->set_quota(act->cgbe, wl->grp, q, act->caps.quota_period_us);
	if (err)
		return err;
	wl->quota_us = q;
	act_be_log(act, ACT_LOG_DEBUG, "workload %s: quota %lld us per %u us", wl->name,
		   (long long)q, act->caps.quota_period_us);
	return 0;
}

/* ---------------------------------------------------------------- read back */

int act_get(struct act *act, const struct act_workload *wl, struct act_state *st)
{
	const struct act_cpumask *cpus;
	bool first = true;
	size_t n = 0;
	int cpu, err;

	if (!act || !wl || !st || !is_listed(act, wl))
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	st->quota_us = -1;
	if (managed_cpuset(act)) {
		err = act->cg->get_cpus(act->cgbe, wl->grp, &st->cpus);
		if (err)
			return ERR(act, err, "workload %s: cannot read its cpus: %s", wl->name,
				   strerror(-err));
	}
	if (managed_quota(act)) {
		err = act->cg->get_quota(act->cgbe, wl->grp, &st->quota_us, &st->period_us);
		if (err)
			return ERR(act, err, "workload %s: cannot read its quota: %s", wl->name,
				   strerror(-err));
		if (st->quota_us >= 0 && st->period_us)
			st->quota_cores = (double)st->quota_us / (double)st->period_us;
	}
	if (managed_cgroup(act)) {
		/* the backend de-duplicates within the buffer it is given */
		pid_t *tids = calloc(16384, sizeof(*tids));

		n = tids ? 16384 : 0;
		act->cg->tasks(act->cgbe, wl->grp, tids, &n);
		st->nr_tasks = (int)n;
		free(tids);
	}
	cpus = managed_cpuset(act) ? &st->cpus : &wl->cpus;
	if (managed_freq(act)) {
		act_cpumask_for_each(cpu, cpus)
		{
			unsigned long mn, mx;

			if (act->fq->get(act->fqbe, cpu, &mn, &mx))
				continue;
			if (!first && (mn != st->freq_min_khz || mx != st->freq_max_khz))
				st->freq_mixed = true;
			if (first || mn < st->freq_min_khz)
				st->freq_min_khz = mn;
			if (first || mx > st->freq_max_khz)
				st->freq_max_khz = mx;
			first = false;
		}
	}
	return 0;
}

/* ---------------------------------------------------------------- restore */

int act_restore(struct act *act)
{
	int first = 0, err;

	if (!act)
		return 0;
	while (act->wls) {
		struct act_workload *wl = act->wls;

		act->wls = wl->next;
		err = release(act, wl);
		if (err && !first)
			first = err;
		free(wl);
	}
	if (act->parent_created) {
		err = empty_group(act, act->parent, &root_origin);
		if (!err)
			err = act->cg->remove(act->cgbe, act->parent);
		if (err && err != -ENOENT && !first)
			first = err;
		act->parent_created = false;
	}
	if (managed_freq(act)) {
		err = restore_freq(act, NULL);
		if (err && !first)
			first = err;
	}
	if (!first) {
		act__rec_free(&act->rec);
		drop_state_file(act);
	} else {
		save_state(act); /* keep what could not be put back for a later repair */
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
