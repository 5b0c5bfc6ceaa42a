// SPDX-License-Identifier: MIT
/*
 * The control loop. Every decision is checked here before it reaches the
 * machine, whatever the policy: no core in two workloads, nothing below a
 * minimum or above a maximum, pooled resources never over-committed, nothing
 * on a resource the machine lacks, nothing for a workload that is gone. The
 * policy is then told what is actually in force.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "loop.h"
#include "opts.h"
#include "procfs.h"

uint64_t loop_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

bool loop_pid_alive(void *ctx, int wl, pid_t pid)
{
	const struct loop *l = ctx;
	int st;

	/* our own child (a launched command): reap it */
	if (waitpid(pid, &st, WNOHANG) == pid)
		return false;
	/* the pid may have gone to an unrelated process since: its start time tells */
	return procfs_alive(pid, l && wl >= 0 && wl < l->nwl ? l->wl[wl].start : 0);
}

static void sat(char *dst, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void sat(char *dst, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(dst, len, fmt, ap);
	va_end(ap);
}

static long total_used(const struct loop *l, enum pol_res r)
{
	long used = 0;

	for (int i = 0; i < l->nwl; i++)
		if (l->wl[i].alive)
			used += l->wl[i].alloc[r];
	return used;
}

/*
 * Resources. What differs between resources is here, one entry each in
 * loop_res[] (indexed by enum pol_res) with its functions above it. The rest
 * of this file iterates the table; it names resources only to call
 * loop_mach_ops.add(), whose arguments do.
 */
struct loop_res {
	/* Fill l->res[r] and every workload's min and max from the config and
	 * the machine's caps. 0, or a negative errno with err set (the config
	 * asks for what the machine cannot do). */
	int (*limits)(struct loop *l, char *err, size_t len);
	/* Every workload's initial allocation, once every limit is known. */
	int (*initial)(struct loop *l, char *err, size_t len);
	/* Optional: what a decision may not do beyond min, max and the pool. */
	int (*validate)(const struct loop *l, const struct pol_decision *dec, char *why,
			size_t len);
	/* A value per workload: write workload wl's (through its actuator). */
	int (*set)(const struct loop *l, int wl, long v);
	/* Or a partition: apply the decision's as one change. */
	void (*apply)(struct loop *l, const struct pol_decision *dec, struct pol_outcome *out,
		      bool *changed);
	/* The log: "log_key": the allocation / log_div, log_prec decimals, null
	 * when not managed; or log_wl, for a resource that logs more. */
	const char *log_key;
	double log_div;
	int log_prec;
	void (*log_wl)(struct log_json *j, const struct loop *l, const struct loop_wl *w);
};

/* A workload's explicit cpus under smt: whole units, as many as its bounds
 * allow (the config counted cpus; under whole a core is more than one). */
static int check_wl_units(const struct loop *l, int i, char *err, size_t len)
{
	const struct cfg *c = l->cfg;
	const struct cfg_workload *w = &c->wl[i];
	const struct loop_wl *lw = &l->wl[i];
	int line = w->line_of[CFG_WL_CPUS], n;
	char why[192];

	if (cores_check(&l->cores, &w->cpus, why, sizeof(why))) {
		sat(err, len, "%s:%d: workload %s: %s", c->file, line, w->name, why);
		return -EINVAL;
	}
	n = cores_count(&l->cores, &w->cpus);
	if ((w->cores && w->cores != n) || n < lw->min[POL_RES_CORES] ||
	    n > lw->max[POL_RES_CORES]) {
		sat(err, len, "%s:%d: workload %s: cpus are %d cores (smt = %s), not %s", c->file,
		    line, w->name, n,
		    c->smt == POL_SMT_WHOLE	? "whole"
		    : c->smt == POL_SMT_PRIMARY ? "primary"
						: "shared",
		    w->cores ? "its cores =" : "within min_cores..max_cores");
		return -EINVAL;
	}
	return 0;
}

static int cores_limits(struct loop *l, char *err, size_t len)
{
	const struct cfg *c = l->cfg;
	const struct loop_caps *k = &l->caps;
	struct pol_res_info *r = &l->res[POL_RES_CORES];
	int ncpus = act_cpumask_count(&c->cpus);

	*r = (struct pol_res_info){ .pooled = true, .step = 1, .total = ncpus };
	if (c->cores) {
		char buf[64], buf2[192];

		if (!k->res[POL_RES_CORES]) {
			sat(err, len, "cores are a resource but cpusets cannot be set here: %s",
			    k->why[POL_RES_CORES]);
			return -EOPNOTSUPP;
		}
		if (!act_cpumask_subset(&c->cpus, &k->cpus)) {
			act_cpumask_format(&k->cpus, buf, sizeof(buf));
			sat(err, len, "%s:%d: [resources] cpus: only %s can be assigned here",
			    c->file, c->line_of[CFG_CPUS], buf);
			return -ERANGE;
		}
		r->avail = true;
		if (cores_init(&l->cores, &k->topo, &c->cpus, c->smt, buf2, sizeof(buf2))) {
			sat(err, len, "%s:%d: %s", c->file,
			    c->line_of[CFG_SMT] ? c->line_of[CFG_SMT] : c->line_of[CFG_CPUS], buf2);
			return -EINVAL;
		}
		r->total = l->cores.nunits;
	}
	for (int i = 0; i < l->nwl; i++) {
		const struct cfg_workload *w = &c->wl[i];
		struct loop_wl *lw = &l->wl[i];

		lw->min[POL_RES_CORES] = r->avail ? w->min_cores : 0;
		lw->max[POL_RES_CORES] = r->avail ? w->max_cores : 0; /* resolved by the config */
		/* the default, every managed cpu, is every unit (whole cores may be fewer) */
		if (!w->line_of[CFG_WL_MAX_CORES] && lw->max[POL_RES_CORES] > r->total)
			lw->max[POL_RES_CORES] = r->total;
		if (r->avail && w->has_cpus && check_wl_units(l, i, err, len))
			return -EINVAL;
	}
	return 0;
}

/* Initial cpus: explicit lists, then counts, then a fair share of the rest
 * round robin (as the original code hands out every core); each core the
 * lowest free one on the workload's node (cores.h). */
static int initial_cpus(struct loop *l, char *err, size_t len)
{
	const struct cfg *c = l->cfg;
	struct act_cpumask free = l->cores.handout;
	bool fair[CFG_MAX_WL] = { false };
	int nfair = 0;

	for (int i = 0; i < l->nwl; i++) {
		act_cpumask_zero(&l->wl[i].cpus);
		if (c->wl[i].has_cpus) {
			l->wl[i].cpus = c->wl[i].cpus;
			act_cpumask_andnot(&free, &free, &c->wl[i].cpus);
		}
	}
	for (int i = 0; i < l->nwl; i++) {
		int want = c->wl[i].has_cpus ? 0
			   : c->wl[i].cores  ? c->wl[i].cores
					     : c->wl[i].min_cores;

		if (!c->wl[i].has_cpus && !c->wl[i].cores) {
			fair[i] = true;
			nfair++;
		}
		for (int k = 0; k < want; k++) {
			if (cores_grow(&l->cores, &l->wl[i].cpus, &free, -1)) {
				sat(err, len,
				    "workload %s: no core left for its initial allocation",
				    l->wl[i].name);
				return -ENOSPC;
			}
		}
	}
	while (nfair && !act_cpumask_empty(&free)) {
		bool gave = false;

		for (int i = 0; i < l->nwl && !act_cpumask_empty(&free); i++) {
			if (!fair[i] ||
			    cores_count(&l->cores, &l->wl[i].cpus) >= l->wl[i].max[POL_RES_CORES])
				continue;
			if (cores_grow(&l->cores, &l->wl[i].cpus, &free, -1))
				break;
			gave = true;
		}
		if (!gave)
			break;
	}
	for (int i = 0; i < l->nwl; i++)
		l->wl[i].alloc[POL_RES_CORES] = cores_count(&l->cores, &l->wl[i].cpus);
	return 0;
}

static int cores_units_on(const struct loop *l, int node)
{
	return cores_free_on(&l->cores, &l->cores.handout, node);
}

/* Explicit cpus: on a managed resource, managed cpus only, whole units (a
 * core is never split between workloads under smt = whole), the right
 * count, no cpu asked for twice; a node asked for has managed cores. */
static int validate_cpus(const struct loop *l, const struct pol_decision *dec, char *why,
			 size_t len)
{
	struct act_cpumask seen;

	act_cpumask_zero(&seen);
	for (int i = 0; i < l->nwl; i++) {
		const struct pol_wl_decision *d = &dec->wl[i];
		char msg[160];

		if (d->set_node &&
		    (!l->wl[i].alive || !l->res[POL_RES_CORES].avail || d->node < 0 ||
		     d->node >= ACT_TOPO_NODES_MAX || !cores_units_on(l, d->node))) {
			sat(why, len, "node %d for %s: %s", d->node, l->wl[i].name,
			    !l->wl[i].alive		   ? "it is gone"
			    : !l->res[POL_RES_CORES].avail ? "cores are not a resource here"
							   : "no managed core is on it");
			return -EINVAL;
		}
		if (!d->set_cpus)
			continue;
		if (!l->wl[i].alive || !l->res[POL_RES_CORES].avail) {
			sat(why, len, "cpus for %s: %s", l->wl[i].name,
			    l->wl[i].alive ? "cores are not a resource here" : "it is gone");
			return -EINVAL;
		}
		if (!act_cpumask_subset(&d->cpus, &l->cfg->cpus)) {
			sat(why, len, "cpus for %s: not all managed", l->wl[i].name);
			return -EINVAL;
		}
		if (cores_check(&l->cores, &d->cpus, msg, sizeof(msg))) {
			sat(why, len, "cpus for %s: %s", l->wl[i].name, msg);
			return -EINVAL;
		}
		if (cores_count(&l->cores, &d->cpus) != d->alloc[POL_RES_CORES]) {
			sat(why, len, "cpus for %s: %d %s for %ld cores", l->wl[i].name,
			    cores_count(&l->cores, &d->cpus),
			    l->cfg->smt == POL_SMT_SHARED ? "cpus" : "cores",
			    d->alloc[POL_RES_CORES]);
			return -EINVAL;
		}
		if (act_cpumask_intersects(&d->cpus, &seen)) {
			sat(why, len, "cpus for %s: given to another workload too", l->wl[i].name);
			return -EINVAL;
		}
		act_cpumask_or(&seen, &seen, &d->cpus);
	}
	return 0;
}

/* Cores are a partition of the managed cpus: the cpus a policy named; for
 * the others, shrink (after giving up any cpu someone else was given), move
 * to the node a policy asked for, grow (cores.h: the highest core off, the
 * lowest free core on, the workload's node); then every change as one. */
static void apply_cpus(struct loop *l, const struct pol_decision *dec, struct pol_outcome *out,
		       bool *changed)
{
	struct act_cpumask free, nc[CFG_MAX_WL], named;
	int wls[CFG_MAX_WL], n = 0;

	act_cpumask_zero(&named);
	for (int i = 0; i < l->nwl; i++)
		if (dec->wl[i].set_cpus)
			act_cpumask_or(&named, &named, &dec->wl[i].cpus);
	free = l->cores.handout;
	for (int i = 0; i < l->nwl; i++) {
		nc[i] = dec->wl[i].set_cpus ? dec->wl[i].cpus : l->wl[i].cpus;
		if (!dec->wl[i].set_cpus)
			act_cpumask_andnot(&nc[i], &nc[i], &named);
		act_cpumask_andnot(&free, &free, &nc[i]);
	}
	for (int i = 0; i < l->nwl; i++) {
		int node = dec->wl[i].set_node ? dec->wl[i].node : -1;

		while (cores_count(&l->cores, &nc[i]) > dec->wl[i].alloc[POL_RES_CORES])
			if (cores_shrink(&l->cores, &nc[i], &free, node))
				break;
	}
	for (int i = 0; i < l->nwl; i++)
		if (dec->wl[i].set_node && !dec->wl[i].set_cpus)
			cores_migrate(&l->cores, &nc[i], &free, dec->wl[i].node);
	for (int i = 0; i < l->nwl; i++) {
		int node = dec->wl[i].set_node ? dec->wl[i].node : -1;

		while (cores_count(&l->cores, &nc[i]) < dec->wl[i].alloc[POL_RES_CORES])
			if (cores_grow(&l->cores, &nc[i], &free, node))
				break; /* validation makes this impossible */
	}
	for (int i = 0; i < l->nwl; i++) {
		if (!l->wl[i].alive || act_cpumask_equal(&nc[i], &l->wl[i].cpus))
			continue;
		wls[n] = i;
		nc[n] = nc[i]; /* compact: n <= i */
		n++;
	}
	if (!n)
		return;
	*changed = true;
	if (l->mops->assign_cpus(l->mctx, wls, nc, n)) {
		out->applied = false;
		sat(out->why, sizeof(out->why), "cores: %s", l->mops->last_error(l->mctx));
		return;
	}
	for (int k = 0; k < n; k++) {
		l->wl[wls[k]].cpus = nc[k];
		l->wl[wls[k]].alloc[POL_RES_CORES] = cores_count(&l->cores, &nc[k]);
	}
}

/* The count, always (0 when cores are not managed), and which cpus. */
static void log_cores(struct log_json *j, const struct loop *l, const struct loop_wl *w)
{
	char buf[256];

	log_json_int(j, "cores", w->alloc[POL_RES_CORES]);
	act_cpumask_format(&w->cpus, buf, sizeof(buf));
	log_json_str(j, "cpus", l->res[POL_RES_CORES].avail ? buf : NULL);
}

static int freq_limits(struct loop *l, char *err, size_t len)
{
	const struct cfg *c = l->cfg;
	const struct loop_caps *k = &l->caps;
	struct pol_res_info *r = &l->res[POL_RES_FREQ];
	long fmin = k->freq_min_khz, fmax = k->freq_max_khz;

	if (c->freq_min_khz && c->freq_min_khz > fmin)
		fmin = c->freq_min_khz;
	if (c->freq_max_khz && c->freq_max_khz < fmax)
		fmax = c->freq_max_khz;
	*r = (struct pol_res_info){ .step = c->freq_step_khz };
	if (c->freq == CFG_ON && !k->res[POL_RES_FREQ]) {
		sat(err, len, "[resources] freq = true but cpufreq cannot be used here: %s",
		    k->why[POL_RES_FREQ]);
		return -EOPNOTSUPP;
	}
	if (c->freq != CFG_OFF && k->res[POL_RES_FREQ] && fmin < fmax)
		r->avail = true;
	for (int i = 0; i < l->nwl; i++) {
		l->wl[i].min[POL_RES_FREQ] = r->avail ? fmin : 0;
		l->wl[i].max[POL_RES_FREQ] = r->avail ? fmax : 0;
	}
	return 0;
}

/* Initial frequency: the workload's own, else the highest, within the limits. */
static int initial_freq(struct loop *l, char *err, size_t len)
{
	for (int i = 0; i < l->nwl; i++) {
		struct loop_wl *lw = &l->wl[i];
		long fmin = lw->min[POL_RES_FREQ], fmax = lw->max[POL_RES_FREQ];
		long f = l->cfg->wl[i].freq_khz ? l->cfg->wl[i].freq_khz : fmax;

		lw->alloc[POL_RES_FREQ] = f < fmin ? fmin : f > fmax ? fmax : f;
	}
	return 0;
}

static int set_freq(const struct loop *l, int wl, long v)
{
	return l->mops->set_freq(l->mctx, wl, v);
}

static int quota_limits(struct loop *l, char *err, size_t len)
{
	const struct cfg *c = l->cfg;
	const struct loop_caps *k = &l->caps;
	struct pol_res_info *r = &l->res[POL_RES_QUOTA];

	*r = (struct pol_res_info){ .pooled = true,
				    .step = c->quota_step_mc,
				    .total = c->quota_total_mc };
	if (c->quota) {
		if (!k->res[POL_RES_QUOTA]) {
			sat(err, len,
			    "[resources] quota = true but cpu quota cannot be set here: %s",
			    k->why[POL_RES_QUOTA]);
			return -EOPNOTSUPP;
		}
		r->avail = true;
	}
	for (int i = 0; i < l->nwl; i++) {
		const struct cfg_workload *w = &c->wl[i];
		struct loop_wl *lw = &l->wl[i];

		/* bounds resolved by the config (cfg_resolve: a step .. the total) */
		lw->min[POL_RES_QUOTA] = r->avail ? w->min_quota_mc : 0;
		lw->max[POL_RES_QUOTA] = r->avail ? w->max_quota_mc : 0;
	}
	return 0;
}

static int initial_quota(struct loop *l, char *err, size_t len)
{
	const struct cfg *c = l->cfg;
	long step = l->res[POL_RES_QUOTA].step, rem = l->res[POL_RES_QUOTA].total;
	int nfair = 0;

	for (int i = 0; i < l->nwl; i++) {
		if (c->wl[i].quota_mc > 0) {
			l->wl[i].alloc[POL_RES_QUOTA] = c->wl[i].quota_mc;
			rem -= l->wl[i].alloc[POL_RES_QUOTA];
		} else {
			nfair++;
		}
	}
	for (int i = 0; i < l->nwl; i++) {
		long q;

		if (c->wl[i].quota_mc > 0)
			continue;
		q = nfair ? rem / nfair / step * step : 0;
		if (q < l->wl[i].min[POL_RES_QUOTA])
			q = l->wl[i].min[POL_RES_QUOTA];
		if (q > l->wl[i].max[POL_RES_QUOTA])
			q = l->wl[i].max[POL_RES_QUOTA];
		l->wl[i].alloc[POL_RES_QUOTA] = q;
	}
	return 0;
}

static int set_quota(const struct loop *l, int wl, long v)
{
	return l->mops->set_quota(l->mctx, wl, v);
}

static const struct loop_res loop_res[POL_RES_COUNT] = {
	[POL_RES_CORES] = {
		.limits = cores_limits,
		.initial = initial_cpus,
		.validate = validate_cpus,
		.apply = apply_cpus,
		.log_key = "cores",
		.log_div = 1,
		.log_wl = log_cores,
	},
	[POL_RES_FREQ] = {
		.limits = freq_limits,
		.initial = initial_freq,
		.set = set_freq,
		.log_key = "freq_mhz",
		.log_div = 1000, /* kHz inside, MHz in the log */
		.log_prec = 0,
	},
	[POL_RES_QUOTA] = {
		.limits = quota_limits,
		.initial = initial_quota,
		.set = set_quota,
		.log_key = "quota",
		.log_div = 1000.0,
		.log_prec = 2,
	},
};

/*
 * The limits of every resource first (a config that asks for what the
 * machine cannot do is refused before anything is allocated), then the
 * initial allocation of every managed one.
 */
static int setup_resources(struct loop *l, char *err, size_t len)
{
	int ret;

	memset(l->res, 0, sizeof(l->res));
	for (int r = 0; r < POL_RES_COUNT; r++) {
		ret = loop_res[r].limits(l, err, len);
		if (ret)
			return ret;
	}
	for (int r = 0; r < POL_RES_COUNT; r++) {
		if (!l->res[r].avail)
			continue;
		ret = loop_res[r].initial(l, err, len);
		if (ret)
			return ret;
	}
	return 0;
}

static int policy_init(const struct cfg *c, const struct pol_ops *pol, void **state, char *err,
		       size_t len)
{
	struct pol_param params[CFG_MAX_PARAMS];
	char perr[192] = "";
	struct pol_init_args pa = {
		.sz = sizeof(pa),
		.seed = c->seed,
		.nwl = c->nwl,
		.params = params,
		.nparams = c->nparams,
		.err = perr,
		.err_len = sizeof(perr),
		.err_param = -1,
	};
	int ret;

	*state = NULL;
	if (!pol || !pol->decide) {
		sat(err, len, "%s: policy %s has no decide()", c->file, pol ? pol->name : "?");
		return -EINVAL;
	}
	if (!pol->init)
		return 0;
	for (int i = 0; i < c->nparams; i++)
		params[i] = (struct pol_param){ c->params[i].key, c->params[i].val };
	ret = pol->init(state, &pa);
	if (!ret)
		return 0;
	if (pa.err_param >= 0 && pa.err_param < c->nparams)
		sat(err, len, "%s:%d: [policy %s] %s", c->file, c->params[pa.err_param].line,
		    pol->name, perr);
	else /* a combination of settings: the last one given, or where the policy is chosen */
		sat(err, len, "%s:%d: policy %s: %s", c->file,
		    c->nparams		     ? c->params[c->nparams - 1].line
		    : c->line_of[CFG_POLICY] ? c->line_of[CFG_POLICY]
		    : c->nwl		     ? c->wl[0].line
					     : 1,
		    pol->name, perr[0] ? perr : strerror(-ret));
	return ret;
}

int loop_check_policy(const struct cfg *c, const struct pol_ops *pol, char *err, size_t len)
{
	void *state;
	int ret = policy_init(c, pol, &state, err, len);

	if (!ret && pol->exit)
		pol->exit(state);
	return ret;
}

/* Hand every live workload to the machine with its initial allocation. 0, or
 * a negative errno with err set (those added so far stay added). */
static int add_workloads(struct loop *l, char *err, size_t len)
{
	for (int i = 0; i < l->nwl; i++) {
		struct loop_wl *w = &l->wl[i];
		int ret;

		if (!w->alive) {
			/* never started: what setup_resources() gave it is free */
			act_cpumask_zero(&w->cpus);
			memset(w->alloc, 0, sizeof(w->alloc));
			memset(w->min, 0, sizeof(w->min));
			memset(w->max, 0, sizeof(w->max));
			continue;
		}
		ret = l->mops->add(l->mctx, i, w->name, w->pid,
				   l->res[POL_RES_CORES].avail ? &w->cpus : NULL,
				   l->res[POL_RES_QUOTA].avail ? w->alloc[POL_RES_QUOTA] : 0,
				   l->res[POL_RES_FREQ].avail ? w->alloc[POL_RES_FREQ] : 0);
		if (ret) {
			sat(err, len, "workload %s (pid %d): %s", w->name, (int)w->pid,
			    l->mops->last_error(l->mctx));
			return ret;
		}
		w->added = true;
	}
	return 0;
}

/*
 * struct loop_args may grow, so it is read as libbpf reads its options
 * (common/opts.h): a caller built with an older loop.h passes a smaller sz
 * and gets the defaults of the optional fields it lacks (log, alive,
 * alive_ctx); one built with a newer loop.h must leave zero what this file
 * does not know.
 */
static bool loop_args_valid(const struct loop_args *a)
{
	/* cfg .. aux are required */
	return a && !opts_check_min(a, OPTS_KNOWN_END(struct loop_args, aux),
				    OPTS_KNOWN_END(struct loop_args, alive_ctx));
}

int loop_init(struct loop *l, const struct loop_args *a, char *err, size_t len)
{
	const struct cfg *c;
	loop_alive_fn alive;
	int ret;

	memset(l, 0, sizeof(*l));
	if (!loop_args_valid(a)) {
		sat(err, len, "loop_init: struct loop_args of %zu bytes, not one this build reads",
		    a ? a->sz : 0);
		return -EINVAL;
	}
	c = a->cfg;
	alive = OPTS_GET(a, alive, NULL);
	l->cfg = c;
	l->pol = a->pol;
	l->mops = a->mops;
	l->mctx = a->mctx;
	l->log = OPTS_GET(a, log, NULL);
	l->alive = alive ? alive : loop_pid_alive;
	l->alive_ctx = alive ? OPTS_GET(a, alive_ctx, NULL) : l;
	l->nwl = c->nwl;
	for (int i = 0; i < l->nwl; i++) {
		struct loop_wl *w = &l->wl[i];

		snprintf(w->name, sizeof(w->name), "%s", c->wl[i].name);
		w->pid = a->pid[i];
		w->start = w->pid > 0 ? procfs_starttime(w->pid) : 0;
		/* pid 0: not started (a dry run), never observed; unless the caller
		 * says what is alive (the simulator's workloads have no pid). */
		w->alive = a->pid[i] > 0 || (alive && alive(l->alive_ctx, i, a->pid[i]));
		w->src = a->src[i];
		w->aux = a->aux[i];
		w->target_ns = c->wl[i].target_ns;
	}
	/* policy first: a bad setting stops us before the machine is touched */
	ret = policy_init(c, l->pol, &l->pol_state, err, len);
	if (ret) {
		l->pol = NULL;
		return ret;
	}
	ret = l->mops->caps(l->mctx, &l->caps);
	if (ret) {
		sat(err, len, "cannot read what the machine supports: %s",
		    l->mops->last_error(l->mctx));
		goto fail;
	}
	if (act_cpumask_empty(&l->caps.topo.online))
		act_topo_flat(&l->caps.topo, &l->caps.cpus);
	ret = setup_resources(l, err, len);
	if (ret)
		goto fail;
	ret = add_workloads(l, err, len);
	if (ret)
		goto fail;
	l->t0_ms = loop_now_ms();
	return 0;
fail:
	for (int i = 0; i < l->nwl; i++) {
		if (l->wl[i].added)
			l->mops->remove(l->mctx, i);
		l->wl[i].added = false;
	}
	if (l->pol->exit)
		l->pol->exit(l->pol_state);
	l->pol_state = NULL;
	l->pol = NULL;
	for (int i = 0; i < l->nwl; i++)
		l->wl[i].src = l->wl[i].aux = NULL; /* still the caller's */
	return ret;
}

void loop_print_cores(const struct loop *l, FILE *f)
{
	char buf[2304];

	if (!l->res[POL_RES_CORES].avail)
		return;
	cores_describe(&l->cores, NULL, buf, sizeof(buf));
	fprintf(f, "parties: topology: %s\n", buf);
	for (int i = 0; i < l->nwl; i++) {
		if (!l->wl[i].alive)
			continue;
		cores_describe(&l->cores, &l->wl[i].cpus, buf, sizeof(buf));
		fprintf(f, "parties: workload %s: %s\n", l->wl[i].name, buf);
	}
}

int loop_alive_count(const struct loop *l)
{
	int n = 0;

	for (int i = 0; i < l->nwl; i++)
		n += l->wl[i].alive;
	return n;
}

static void workload_gone(struct loop *l, int i, char *event, size_t len)
{
	struct loop_wl *w = &l->wl[i];
	size_t n = strlen(event);

	w->alive = false;
	l->stats.exits++;
	if (w->added)
		l->mops->remove(l->mctx, i);
	w->added = false;
	act_cpumask_zero(&w->cpus);
	memset(w->alloc, 0, sizeof(w->alloc));
	memset(w->min, 0, sizeof(w->min));
	memset(w->max, 0, sizeof(w->max));
	src_close(w->src);
	src_close(w->aux);
	w->src = w->aux = NULL;
	snprintf(event + n, len - n, "%sworkload %s (pid %d) exited; its resources are free",
		 n ? "; " : "", w->name, (int)w->pid);
}

/* The latencies of every kind the sources gave, the request rate and the
 * CPU used since the last interval. */
static void observe_more(struct loop *l, int i, uint64_t now_ms, struct pol_wl_obs *ow)
{
	struct loop_wl *w = &l->wl[i];
	const struct src_sample *smp[2] = { &w->last, &w->last_aux }, *se, *sc;
	const struct src *src[2] = { w->src, w->aux };
	uint64_t ns;

	src_by_kind(w->src, &w->last, w->aux, &w->last_aux, &se, &sc);
	if (sc && sc->state == POL_LAT_FRESH)
		ow->p99_client_ns = sc->p99_ns;
	for (int k = 0; k < 2; k++) {
		if (!src[k] || smp[k]->state != POL_LAT_FRESH)
			continue;
		if (!isnan(smp[k]->p99_service_ns))
			ow->p99_service_ns = smp[k]->p99_service_ns;
		if (!isnan(smp[k]->p99_sojourn_ns))
			ow->p99_sojourn_ns = smp[k]->p99_sojourn_ns;
	}
	ow->rps = w->last.rps;
	if (isnan(ow->rps) && w->aux)
		ow->rps = w->last_aux.rps;
	w->cpu_used = NAN;
	if (l->mops->cpu_ns && !l->mops->cpu_ns(l->mctx, i, &ns)) {
		if (w->cpu_have && now_ms > w->cpu_prev_t_ms && ns >= w->cpu_prev_ns)
			w->cpu_used = (double)(ns - w->cpu_prev_ns) /
				      ((double)(now_ms - w->cpu_prev_t_ms) * 1e6);
		w->cpu_prev_ns = ns;
		w->cpu_prev_t_ms = now_ms;
		w->cpu_have = true;
	}
	ow->cpu_used = w->cpu_used;
}

_Static_assert(POL_NODES_MAX == ACT_TOPO_NODES_MAX, "policy.h's node bound is the actuators'");

/* The cores as handed out: what one is, siblings and nodes, units per node. */
static void observe_topology(const struct loop *l, struct pol_observation *o)
{
	struct pol_topology *t = &o->topo;
	struct act_cpumask free;

	t->smt = l->cfg->smt;
	t->topo = &l->caps.topo;
	t->threads_max = l->caps.topo.threads_max;
	if (!l->res[POL_RES_CORES].avail)
		return;
	t->cpus = l->cores.handout;
	t->nodes = act_topo_nodes_of(&l->caps.topo, &t->cpus);
	free = t->cpus;
	for (int i = 0; i < l->nwl; i++)
		if (l->wl[i].alive)
			act_cpumask_andnot(&free, &free, &l->wl[i].cpus);
	for (int n = 0; n < ACT_TOPO_NODES_MAX; n++) {
		if (!(t->nodes >> n & 1))
			continue;
		t->node_units[n] = cores_free_on(&l->cores, &t->cpus, n);
		t->node_free[n] = cores_free_on(&l->cores, &free, n);
	}
}

static void observe(struct loop *l, uint64_t now_ms)
{
	struct pol_observation *o = &l->obs;
	unsigned int win = l->cfg->avg_window_ms;

	memset(o, 0, sizeof(*o));
	o->now_ms = now_ms;
	o->tick = l->tick;
	o->interval_ms = l->cfg->interval_ms;
	o->nwl = l->nwl;
	memcpy(o->res, l->res, sizeof(o->res));
	observe_topology(l, o);
	for (int r = 0; r < POL_RES_COUNT; r++)
		if (o->res[r].pooled)
			o->res[r].free = o->res[r].total - total_used(l, (enum pol_res)r);
	for (int i = 0; i < l->nwl; i++) {
		struct loop_wl *w = &l->wl[i];
		struct pol_wl_obs *ow = &o->wl[i];
		double sum = 0;
		unsigned int k, j;

		snprintf(ow->name, sizeof(ow->name), "%s", w->name);
		ow->alive = w->alive;
		ow->target_ns = w->target_ns;
		memcpy(ow->alloc, w->alloc, sizeof(ow->alloc));
		memcpy(ow->min, w->min, sizeof(ow->min));
		memcpy(ow->max, w->max, sizeof(ow->max));
		ow->state = POL_LAT_STALE;
		ow->p99_ns = ow->p99_avg_ns = ow->slack = ow->slack_avg = NAN;
		ow->rps = ow->cpu_used = NAN;
		ow->p99_client_ns = ow->p99_service_ns = ow->p99_sojourn_ns = NAN;
		ow->cpus = w->cpus;
		ow->threads = act_cpumask_count(&w->cpus);
		ow->nodes = act_topo_nodes_of(&l->caps.topo, &w->cpus);
		if (!w->alive)
			continue;
		memset(&w->last, 0, sizeof(w->last));
		memset(&w->last_aux, 0, sizeof(w->last_aux));
		w->last_aux.p99_ns = NAN;
		w->last_aux.state = POL_LAT_STALE;
		if (w->src)
			src_read(w->src, now_ms, &w->last);
		else
			w->last = (struct src_sample){ .state = POL_LAT_STALE,
						       .p99_ns = NAN,
						       .rps = NAN,
						       .why = "no source" };
		if (w->aux)
			src_read(w->aux, now_ms, &w->last_aux);
		observe_more(l, i, now_ms, ow);
		/* the averaging window ("long slack") over fresh samples only */
		for (k = 0, j = 0; k < w->navg; k++) {
			if (now_ms - w->avg_t[k] < win) {
				w->avg_t[j] = w->avg_t[k];
				w->avg_p99[j] = w->avg_p99[k];
				j++;
			}
		}
		w->navg = j;
		if (w->last.state == POL_LAT_FRESH) {
			if (w->navg == sizeof(w->avg_t) / sizeof(w->avg_t[0])) {
				memmove(w->avg_t, w->avg_t + 1,
					sizeof(w->avg_t) - sizeof(w->avg_t[0]));
				memmove(w->avg_p99, w->avg_p99 + 1,
					sizeof(w->avg_p99) - sizeof(w->avg_p99[0]));
				w->navg--;
			}
			w->avg_t[w->navg] = now_ms;
			w->avg_p99[w->navg] = w->last.p99_ns;
			w->navg++;
		}
		ow->state = w->last.state;
		if (w->last.state == POL_LAT_FRESH) {
			ow->p99_ns = w->last.p99_ns;
			ow->slack = (w->target_ns - ow->p99_ns) / w->target_ns;
			for (k = 0; k < w->navg; k++)
				sum += w->avg_p99[k];
			ow->p99_avg_ns = w->navg ? sum / w->navg : ow->p99_ns;
			ow->slack_avg = (w->target_ns - ow->p99_avg_ns) / w->target_ns;
			if (w->nhist == POL_HIST) {
				memmove(w->hist, w->hist + 1, sizeof(w->hist) - sizeof(w->hist[0]));
				w->nhist--;
			}
			w->hist[w->nhist++] = ow->slack;
		}
		ow->nhist = w->nhist;
		memcpy(ow->hist_slack, w->hist, sizeof(ow->hist_slack));
	}
}

int loop_validate(const struct loop *l, const struct pol_decision *dec, char *why, size_t len)
{
	if (dec->nwl != l->nwl) {
		sat(why, len, "decision for %d workloads, there are %d", dec->nwl, l->nwl);
		return -EINVAL;
	}
	for (int r = 0; r < POL_RES_COUNT; r++)
		if (loop_res[r].validate && loop_res[r].validate(l, dec, why, len))
			return -EINVAL;
	for (int r = 0; r < POL_RES_COUNT; r++) {
		const char *rn = pol_res_str((enum pol_res)r);
		long sum = 0;

		for (int i = 0; i < l->nwl; i++) {
			const struct loop_wl *w = &l->wl[i];
			long v = dec->wl[i].alloc[r];

			if (v == w->alloc[r])
				goto count;
			if (!w->alive) {
				sat(why, len, "%s: workload %s is gone", rn, w->name);
				return -EINVAL;
			}
			if (!l->res[r].avail) {
				sat(why, len, "%s for %s: not a resource here", rn, w->name);
				return -EINVAL;
			}
			if (v < w->min[r]) {
				sat(why, len, "%s for %s: %ld below its minimum %ld", rn, w->name,
				    pol_res_shown(r, v), pol_res_shown(r, w->min[r]));
				return -EINVAL;
			}
			if (v > w->max[r]) {
				sat(why, len, "%s for %s: %ld above its maximum %ld", rn, w->name,
				    pol_res_shown(r, v), pol_res_shown(r, w->max[r]));
				return -EINVAL;
			}
		count:
			if (w->alive)
				sum += v;
		}
		if (l->res[r].pooled && l->res[r].avail && sum > l->res[r].total) {
			sat(why, len, "%s: %ld asked for, %ld exist", rn, pol_res_shown(r, sum),
			    pol_res_shown(r, l->res[r].total));
			return -EINVAL;
		}
	}
	return 0;
}

/* One value per workload (not a partition). A pooled resource decreases
 * first, so its pool is never over-committed; an increase goes through only
 * if what is in force after the decreases leaves room for it, so one paid
 * for by a decrease that failed (a workload's cgroup removed from under us)
 * is not applied, and w->alloc never sums above the pool. */
static void apply_values(struct loop *l, enum pol_res r, const struct pol_decision *dec,
			 struct pol_outcome *out, bool *changed)
{
	for (int pass = 0; pass < (l->res[r].pooled ? 2 : 1); pass++) {
		for (int i = 0; i < l->nwl; i++) {
			long want = dec->wl[i].alloc[r], cur = l->wl[i].alloc[r];

			if (!l->wl[i].alive || want == cur)
				continue;
			if (l->res[r].pooled && (pass == 0) != (want < cur))
				continue;
			*changed = true;
			if (l->res[r].pooled && want > cur &&
			    total_used(l, r) + (want - cur) > l->res[r].total) {
				if (out->applied)
					sat(out->why, sizeof(out->why),
					    "%s of %s: not raised, the decrease it needed did "
					    "not happen",
					    pol_res_str(r), l->wl[i].name);
				out->applied = false;
				continue;
			}
			if (loop_res[r].set(l, i, want)) {
				if (out->applied)
					sat(out->why, sizeof(out->why), "%s of %s: %s",
					    pol_res_str(r), l->wl[i].name,
					    l->mops->last_error(l->mctx));
				out->applied = false;
				continue;
			}
			l->wl[i].alloc[r] = want;
		}
	}
}

/*
 * Apply a valid decision. Fills out->applied/why (the first write that
 * failed); w->alloc follows what actually happened. Partitions first (cores:
 * cpus move between workloads as one change), then the values, pooled
 * resources before private ones.
 */
static void apply(struct loop *l, const struct pol_decision *dec, struct pol_outcome *out,
		  bool *changed)
{
	*changed = false;
	out->applied = true;
	for (int r = 0; r < POL_RES_COUNT; r++)
		if (l->res[r].avail && loop_res[r].apply)
			loop_res[r].apply(l, dec, out, changed);
	for (int pooled = 1; pooled >= 0; pooled--)
		for (int r = 0; r < POL_RES_COUNT; r++)
			if (l->res[r].avail && loop_res[r].set && l->res[r].pooled == pooled)
				apply_values(l, (enum pol_res)r, dec, out, changed);
}

static const char *state_str(enum pol_lat_state s)
{
	return s == POL_LAT_FRESH ? "fresh" : s == POL_LAT_IDLE ? "idle" : "stale";
}

static void log_record(struct loop *l, const char *event)
{
	struct log_json j;

	if (!l->log)
		return;
	log_json_begin(&j, l->log);
	log_json_num(&j, "t", (double)(l->obs.now_ms - l->t0_ms) / 1000.0, 3);
	log_json_int(&j, "tick", (long long)l->tick);
	log_json_str(&j, "policy", l->pol->name);
	log_json_bool(&j, "applied", l->out.applied);
	log_json_str(&j, "why", l->out.why[0] ? l->out.why : NULL);
	log_json_str(&j, "event", event[0] ? event : NULL);
	log_json_obj(&j, "free");
	for (int r = 0; r < POL_RES_COUNT; r++)
		if (l->res[r].avail && l->res[r].pooled)
			log_json_num(&j, loop_res[r].log_key,
				     (double)(l->res[r].total - total_used(l, (enum pol_res)r)) /
					 loop_res[r].log_div,
				     loop_res[r].log_prec);
	log_json_close(&j);
	log_json_arr(&j, "wl");
	for (int i = 0; i < l->nwl; i++) {
		const struct loop_wl *w = &l->wl[i];
		const struct pol_wl_obs *o = &l->obs.wl[i];
		const struct src_sample *se, *sc;

		src_by_kind(w->src, &w->last, w->aux, &w->last_aux, &se, &sc);
		log_json_obj(&j, NULL);
		log_json_str(&j, "name", w->name);
		log_json_int(&j, "pid", w->pid);
		log_json_bool(&j, "alive", w->alive);
		log_json_str(&j, "source", w->src ? w->src->ops->name : NULL);
		log_json_str(&j, "state", state_str(o->state));
		if (w->alive && o->state != POL_LAT_FRESH)
			log_json_str(&j, "stale_why", w->last.why);
		/* the log speaks us (and MHz), as it always has */
		log_json_num(&j, "target_us", w->target_ns / 1e3, 0);
		log_json_num(&j, "p99_ebee_us",
			     se && se->state == POL_LAT_FRESH ? se->p99_ns / 1e3 : NAN, 1);
		if (l->cfg->wl[i].feed[0] || sc)
			log_json_num(&j, "p99_client_us",
				     sc && sc->state == POL_LAT_FRESH ? sc->p99_ns / 1e3 : NAN, 1);
		if (!isnan(o->p99_service_ns) || !isnan(o->p99_sojourn_ns)) {
			log_json_num(&j, "p99_service_us", o->p99_service_ns / 1e3, 1);
			log_json_num(&j, "p99_sojourn_us", o->p99_sojourn_ns / 1e3, 1);
		}
		log_json_num(&j, "rps", w->alive ? w->last.rps : NAN, 1);
		if (l->mops->cpu_ns)
			log_json_num(&j, "cpu_used", o->cpu_used, 3);
		log_json_num(&j, "slack", o->slack, 4);
		log_json_num(&j, "slack_avg", o->slack_avg, 4);
		for (int r = 0; r < POL_RES_COUNT; r++) {
			const struct loop_res *lr = &loop_res[r];

			if (lr->log_wl)
				lr->log_wl(&j, l, w);
			else
				log_json_num(&j, lr->log_key,
					     l->res[r].avail ? (double)w->alloc[r] / lr->log_div
							     : NAN,
					     lr->log_prec);
		}
		log_json_str(&j, "action", l->dec.wl[i].action);
		log_json_str(&j, "reason", l->dec.wl[i].reason);
		log_json_close(&j);
	}
	log_json_close(&j);
	log_json_end(&j);
}

int loop_step(struct loop *l, uint64_t now_ms)
{
	char event[POL_REASON_LEN * 2] = "";
	bool changed = false;
	int ret;

	for (int i = 0; i < l->nwl; i++)
		if (l->wl[i].alive && !l->alive(l->alive_ctx, i, l->wl[i].pid))
			workload_gone(l, i, event, sizeof(event));
	observe(l, now_ms);
	pol_decision_init(&l->dec, &l->obs);
	memset(&l->out, 0, sizeof(l->out));
	ret = l->pol->decide(l->pol_state, &l->obs, &l->dec);
	if (ret) {
		sat(l->out.why, sizeof(l->out.why), "policy %s failed (%s): allocation kept",
		    l->pol->name, strerror(-ret));
		pol_decision_init(&l->dec, &l->obs);
	} else if (loop_validate(l, &l->dec, l->out.why, sizeof(l->out.why))) {
		l->stats.rejected++;
		for (int i = 0; i < l->nwl; i++)
			snprintf(l->dec.wl[i].action, sizeof(l->dec.wl[i].action), "%s%.20s",
				 strcmp(l->dec.wl[i].action, "hold") ? "refused " : "",
				 strcmp(l->dec.wl[i].action, "hold") ? l->dec.wl[i].action
								     : "hold");
	} else {
		apply(l, &l->dec, &l->out, &changed);
		if (changed)
			l->stats.actions++;
		if (!l->out.applied)
			l->stats.failed++;
	}
	for (int i = 0; i < l->nwl; i++)
		memcpy(l->out.alloc[i], l->wl[i].alloc, sizeof(l->out.alloc[i]));
	if (l->pol->reflect)
		l->pol->reflect(l->pol_state, &l->obs, &l->dec, &l->out);
	if (l->dec.event[0]) {
		size_t n = strlen(event);

		snprintf(event + n, sizeof(event) - n, "%s%s", n ? "; " : "", l->dec.event);
	}
	log_record(l, event);
	if (event[0])
		fprintf(stderr, "parties: %s\n", event);
	l->tick++;
	l->stats.intervals++;
	return 0;
}

void loop_fini(struct loop *l)
{
	for (int i = 0; i < l->nwl; i++) {
		struct loop_wl *w = &l->wl[i];

		if (w->added)
			l->mops->remove(l->mctx, i);
		w->added = false;
		src_close(w->src);
		src_close(w->aux);
		w->src = w->aux = NULL;
	}
	if (l->pol && l->pol->exit)
		l->pol->exit(l->pol_state);
	l->pol = NULL;
	l->pol_state = NULL;
}

/* A reload (SIGHUP) with changed [policy] settings: build the
 * new state first, so a refused setting leaves the running policy alone. The
 * policy's history (wheel position, judgements) starts over. */
int loop_restart_policy(struct loop *l, const struct cfg *c, char *err, size_t len)
{
	void *state;
	int ret = policy_init(c, l->pol, &state, err, len);

	if (ret)
		return ret;
	if (l->pol->exit)
		l->pol->exit(l->pol_state);
	l->pol_state = state;
	return 0;
}
