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

#include "logrec.h"
#include "loop.h"
#include "observe.h"
#include "opts.h"
#include "procfs.h"
#include "res/res.h"

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

void loop_msg(char *dst, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(dst, len, fmt, ap);
	va_end(ap);
}

/*
 * The limits of every resource first (a config that asks for what the
 * machine cannot do is refused before anything is allocated), then the
 * initial allocation of every managed one.
 */
static int setup_resources(struct loop *l, char *err, size_t len)
{
	int ret;

	struct res_view v;

	memset(l->res, 0, sizeof(l->res));
	for (int r = 0; r < POL_RES_COUNT; r++) {
		res_view(l, (enum pol_res)r, &v);
		ret = res_table[r]->loop.limits(&v, err, len);
		if (ret)
			return ret;
	}
	for (int r = 0; r < POL_RES_COUNT; r++) {
		if (!l->res[r].avail)
			continue;
		res_view(l, (enum pol_res)r, &v);
		ret = res_table[r]->loop.initial(&v, err, len);
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
		loop_msg(err, len, "%s: policy %s has no decide()", c->file, pol ? pol->name : "?");
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
		loop_msg(err, len, "%s:%d: [policy %s] %s", c->file, c->params[pa.err_param].line,
			 pol->name, perr);
	else /* a combination of settings: the last one given, or where the policy is chosen */
		loop_msg(err, len, "%s:%d: policy %s: %s", c->file,
			 c->nparams		  ? c->params[c->nparams - 1].line
			 : c->line_of[CFG_POLICY] ? c->line_of[CFG_POLICY]
			 : c->nwl		  ? c->wl[0].line
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
		long alloc[POL_RES_COUNT];
		int ret;

		if (!w->alive) {
			/* never started: what setup_resources() gave it is free */
			act_cpumask_zero(&w->cpus);
			memset(w->alloc, 0, sizeof(w->alloc));
			memset(w->min, 0, sizeof(w->min));
			memset(w->max, 0, sizeof(w->max));
			continue;
		}
		for (int r = 0; r < POL_RES_COUNT; r++)
			alloc[r] = l->res[r].avail ? w->alloc[r] : 0;
		ret = l->mops->add(l->mctx, i, w->name, w->pid,
				   l->res[POL_RES_CORES].avail ? &w->cpus : NULL, alloc);
		if (ret) {
			loop_msg(err, len, "workload %s (pid %d): %s", w->name, (int)w->pid,
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
		loop_msg(err, len,
			 "loop_init: struct loop_args of %zu bytes, not one this build reads",
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
		loop_msg(err, len, "cannot read what the machine supports: %s",
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

void loop_print_cores(const struct loop *l, FILE *f)
{
	for (int r = 0; r < POL_RES_COUNT; r++) {
		struct res_view v;

		if (!res_table[r]->loop.print)
			continue;
		res_view_const(l, (enum pol_res)r, &v);
		res_table[r]->loop.print(&v, f);
	}
}

int loop_validate(const struct loop *l, const struct pol_decision *dec, char *why, size_t len)
{
	if (dec->nwl != l->nwl) {
		loop_msg(why, len, "decision for %d workloads, there are %d", dec->nwl, l->nwl);
		return -EINVAL;
	}
	for (int r = 0; r < POL_RES_COUNT; r++) {
		struct res_view v;

		if (!res_table[r]->loop.validate)
			continue;
		res_view_const(l, (enum pol_res)r, &v);
		if (res_table[r]->loop.validate(&v, dec, why, len))
			return -EINVAL;
	}
	for (int r = 0; r < POL_RES_COUNT; r++) {
		const char *rn = pol_res_str((enum pol_res)r);
		long sum = 0;

		for (int i = 0; i < l->nwl; i++) {
			const struct loop_wl *w = &l->wl[i];
			long v = dec->wl[i].alloc[r];

			if (v == w->alloc[r])
				goto count;
			if (!w->alive) {
				loop_msg(why, len, "%s: workload %s is gone", rn, w->name);
				return -EINVAL;
			}
			if (!l->res[r].avail) {
				loop_msg(why, len, "%s for %s: not a resource here", rn, w->name);
				return -EINVAL;
			}
			if (v < w->min[r]) {
				loop_msg(why, len, "%s for %s: %ld below its minimum %ld", rn,
					 w->name, pol_res_shown(r, v), pol_res_shown(r, w->min[r]));
				return -EINVAL;
			}
			if (v > w->max[r]) {
				loop_msg(why, len, "%s for %s: %ld above its maximum %ld", rn,
					 w->name, pol_res_shown(r, v), pol_res_shown(r, w->max[r]));
				return -EINVAL;
			}
		count:
			if (w->alive)
				sum += v;
		}
		if (l->res[r].pooled && l->res[r].avail && sum > l->res[r].total) {
			loop_msg(why, len, "%s: %ld asked for, %ld exist", rn,
				 pol_res_shown(r, sum), pol_res_shown(r, l->res[r].total));
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
			    res_used(l, r) + (want - cur) > l->res[r].total) {
				if (out->applied)
					loop_msg(out->why, sizeof(out->why),
						 "%s of %s: not raised, the decrease it needed did "
						 "not happen",
						 pol_res_str(r), l->wl[i].name);
				out->applied = false;
				continue;
			}
			if (l->mops->set(l->mctx, r, i, want)) {
				if (out->applied)
					loop_msg(out->why, sizeof(out->why), "%s of %s: %s",
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
	for (int r = 0; r < POL_RES_COUNT; r++) {
		struct res_view v;

		if (!l->res[r].avail || !res_table[r]->loop.apply)
			continue;
		res_view(l, (enum pol_res)r, &v);
		res_table[r]->loop.apply(&v, dec, out, changed);
	}
	for (int pooled = 1; pooled >= 0; pooled--)
		for (int r = 0; r < POL_RES_COUNT; r++)
			if (l->res[r].avail && !res_table[r]->loop.apply &&
			    l->res[r].pooled == pooled)
				apply_values(l, (enum pol_res)r, dec, out, changed);
}

int loop_step(struct loop *l, uint64_t now_ms)
{
	char event[POL_REASON_LEN * 2] = "";
	bool changed = false;
	int ret;

	for (int i = 0; i < l->nwl; i++)
		if (l->wl[i].alive && !l->alive(l->alive_ctx, i, l->wl[i].pid))
			workload_gone(l, i, event, sizeof(event));
	loop_observe(l, now_ms);
	pol_decision_init(&l->dec, &l->obs);
	memset(&l->out, 0, sizeof(l->out));
	ret = l->pol->decide(l->pol_state, &l->obs, &l->dec);
	if (ret) {
		loop_msg(l->out.why, sizeof(l->out.why), "policy %s failed (%s): allocation kept",
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
	loop_log_record(l, event);
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
