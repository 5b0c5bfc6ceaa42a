// SPDX-License-Identifier: MIT
/*
 * The simulated machine and feeds behind the real loop (sim_run.h). Virtual
 * time is ms since the start of the schedule; the loop is stepped every
 * interval_ms of it after the model has run up to that moment, so a decision
 * acts on the requests that start after it, as on a real machine.
 *
 * The log is a function of the config and the seed only (no wall-clock
 * figures in it), so equal seeds give byte-identical logs; timings go to
 * stderr.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "loop.h"
#include "opts.h"
#include "res/res.h"
#include "sim_model.h"
#include "sim_run.h"

struct simmach {
	struct sim *sim;
	const struct cfg_sim *cfg;
	int ncpus;
	long fmin, fmax, fstep;	       /* kHz */
	struct res_sim wl[CFG_MAX_WL]; /* the model's input, per workload */
	char err[128];
};

static int sm_apply(struct simmach *m, int i)
{
	const struct res_sim *a = &m->wl[i];
	int e = sim_set_alloc(m->sim, i, a->cores, a->quota_mc, a->freq_khz);

	if (e)
		snprintf(m->err, sizeof(m->err), "model: %s", strerror(-e));
	return e;
}

static int sm_caps(void *p, struct loop_caps *k)
{
	struct simmach *m = p;

	memset(k, 0, sizeof(*k));
	for (int r = 0; r < POL_RES_COUNT; r++) {
		k->res[r] = true;
		if (res_table[r]->sim.range)
			res_table[r]->sim.range(m->cfg, &k->lo[r], &k->hi[r]);
	}
	for (int c = 0; c < m->ncpus; c++)
		act_cpumask_set(&k->cpus, c);
	/* the made-up machine's siblings and nodes, as sysfs would show them; a
	 * thread is modelled as a server of its own (SMT contention between
	 * siblings is not in the model) */
	act_topo_synth(&k->topo, m->cfg->nodes, m->cfg->cores / m->cfg->nodes,
		       m->cfg->threads_per_core, m->cfg->numbering == 1);
	return 0;
}

static int sm_add(void *p, int i, const char *name, pid_t pid, const struct act_cpumask *cpus,
		  const long alloc[POL_RES_COUNT])
{
	struct simmach *m = p;

	(void)name;
	(void)pid;
	m->wl[i] = (struct res_sim){ .fmin_khz = m->fmin, .fstep_khz = m->fstep };
	/* cores not managed: the workload runs on every cpu */
	m->wl[i].cores = cpus ? act_cpumask_count(cpus) : m->ncpus;
	for (int r = 0; r < POL_RES_COUNT; r++)
		if (res_table[r]->sim.set)
			res_table[r]->sim.set(&m->wl[i], alloc[r]);
	return sm_apply(m, i);
}

static int sm_assign(void *p, const int *wls, const struct act_cpumask *cpus, int n)
{
	struct simmach *m = p;

	for (int k = 0; k < n; k++) {
		m->wl[wls[k]].cores = act_cpumask_count(&cpus[k]);
		if (sm_apply(m, wls[k]))
			return -EINVAL;
	}
	return 0;
}

/* A resource the model has no input for is accepted and changes nothing. */
static int sm_set(void *p, enum pol_res r, int i, long v)
{
	struct simmach *m = p;

	if (res_table[r]->sim.set)
		res_table[r]->sim.set(&m->wl[i], v);
	return sm_apply(m, i);
}

static int sm_remove(void *p, int i)
{
	(void)p;
	(void)i;
	return 0;
}

static int sm_cpu_ns(void *p, int i, uint64_t *ns)
{
	struct simmach *m = p;

	*ns = sim_cpu_ns(m->sim, i);
	return 0;
}

static const char *sm_err(void *p)
{
	struct simmach *m = p;

	return m->err[0] ? m->err : "unknown error";
}

static const struct loop_mach_ops sim_mach_ops = {
	.caps = sm_caps,
	.add = sm_add,
	.assign_cpus = sm_assign,
	.set = sm_set,
	.remove = sm_remove,
	.cpu_ns = sm_cpu_ns,
	.last_error = sm_err,
};

/* ------------------------------------------------------------ feeds */

enum feed { FEED_CLIENT, FEED_SERVICE, FEED_SOJOURN };

struct simsrc {
	struct src s;
	struct sim *sim;
	int wl;
	enum feed feed;
};

static int simsrc_read(struct src *s, uint64_t now_ms, struct src_sample *out)
{
	struct simsrc *f = s->priv;
	struct sim_wl_stats st;
	double p;

	(void)now_ms; /* the model stands at now_ms already */
	if (sim_stats(f->sim, f->wl, &st))
		return -EINVAL;
	out->rps = st.rps;
	if (f->feed != FEED_CLIENT) {
		out->p99_service_ns = st.p99_service_ns;
		out->p99_sojourn_ns = st.p99_sojourn_ns;
	}
	p = f->feed == FEED_CLIENT    ? st.p99_report_ns
	    : f->feed == FEED_SERVICE ? st.p99_service_ns
				      : st.p99_sojourn_ns;
	if (isnan(p)) {
		out->state = POL_LAT_IDLE;
		snprintf(out->why, sizeof(out->why), "simulated %s: no request in the window",
			 s->ops->name);
		return 0;
	}
	out->state = POL_LAT_FRESH;
	out->p99_ns = p;
	return 0;
}

static void simsrc_close(struct src *s)
{
	free(s->priv);
}

static const struct src_ops simsrc_client_ops = {
	.name = "client",
	.kind = SRC_CLIENT,
	.read = simsrc_read,
	.close = simsrc_close,
};

static const struct src_ops simsrc_ebee_ops = {
	.name = "ebee",
	.kind = SRC_EBEE,
	.read = simsrc_read,
	.close = simsrc_close,
};

static struct src *simsrc_open(struct sim *sim, int wl, enum feed feed)
{
	struct simsrc *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->sim = sim;
	f->wl = wl;
	f->feed = feed;
	f->s.ops = feed == FEED_CLIENT ? &simsrc_client_ops : &simsrc_ebee_ops;
	f->s.priv = f;
	return &f->s;
}

static bool always_alive(void *ctx, int wl, pid_t pid)
{
	(void)ctx;
	(void)wl;
	(void)pid;
	return true;
}

static double now_s(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The peak offered rate over every workload's schedule, requests/s. */
static double peak_rps(const struct cfg *c)
{
	double peak = 0;

	for (int i = 0; i < c->nwl; i++) {
		struct sim_wl_model m;

		sim_cfg_model(&c->sim, i, &m);
		for (int k = 0; k < m.npoints; k++)
			if (m.rps[k] > peak)
				peak = m.rps[k];
	}
	return peak;
}

/* Room for every request of the window at the peak offered rate, with
 * margin for a backlog draining faster than it arrived (a full window
 * evicts by count, and its p99 would then cover less than the window). In
 * double: the bound below is checked before anything is allocated. */
static double window_cap(const struct cfg *c)
{
	return peak_rps(c) * c->ebee_window_ms / 1000.0 * 3 + 4096;
}

/* The requests workload i's schedule offers over [0, dur]: the integral of
 * its piecewise-linear rate (held before the first point and after the
 * last), exact by trapezoids between the breakpoints. */
static double offered_requests(const struct cfg *c, int i, double dur)
{
	struct sim_wl_model m;
	double t = 0, n = 0;

	sim_cfg_model(&c->sim, i, &m);
	for (int k = 0; k <= m.npoints; k++) {
		double next = k < m.npoints && m.t_s[k] < dur ? m.t_s[k] : dur;

		if (next <= t)
			continue;
		n += (sim_model_rate(&m, t) + sim_model_rate(&m, next)) / 2 * (next - t);
		t = next;
	}
	return n;
}

int sim_run_check_bounds(const struct cfg *c, double dur, char *err, size_t len)
{
	double intervals = dur * 1000.0 / c->interval_ms, requests = 0, records;

	if (intervals > SIM_MAX_INTERVALS) {
		snprintf(err, len,
			 "%s: %g virtual s at interval_ms %u is %.3g intervals (and log lines): "
			 "more than the %d a simulation may run; shorten the schedule or "
			 "--duration",
			 c->file, dur, c->interval_ms, intervals, SIM_MAX_INTERVALS);
		return -EINVAL;
	}
	records = window_cap(c) * 3 * c->nwl;
	if (!(records <= SIM_MAX_WINDOW_RECORDS)) {
		snprintf(err, len,
			 "%s: a peak offered rate of %.3g requests/s needs %.3g requests in the "
			 "ebee windows (3 per workload, each peak x ebee_window_ms x 3): more "
			 "than the %.0f a simulation may hold",
			 c->file, peak_rps(c), records, SIM_MAX_WINDOW_RECORDS);
		return -EINVAL;
	}
	for (int i = 0; i < c->nwl; i++)
		requests += offered_requests(c, i, dur);
	if (!(requests <= SIM_MAX_REQUESTS)) {
		snprintf(err, len,
			 "%s: the schedules offer %.3g requests over %g virtual s: more than the "
			 "%.0f a simulation may run",
			 c->file, requests, dur, SIM_MAX_REQUESTS);
		return -EINVAL;
	}
	return 0;
}

/* The model of the config's [simulation] and workloads. NULL with errno. */
static struct sim *model_new(const struct cfg *c)
{
	struct sim_opts so = { .sz = sizeof(so) };

	so.seed = c->seed;
	so.cores = c->sim.cores;
	so.freq_max_khz = c->sim.freq_max_khz;
	so.link_gbps = c->sim.link_gbps;
	so.prop_ns = c->sim.prop_ns;
	so.window_ns = (uint64_t)c->ebee_window_ms * 1000000ull;
	so.nwl = c->nwl;
	for (int i = 0; i < c->nwl; i++)
		sim_cfg_model(&c->sim, i, &so.wl[i]);
	so.window_cap = (size_t)window_cap(c);
	return sim_new(&so);
}

/* Both feeds of every workload: the one its source names drives the policy. */
static int feeds_open(struct sim *sim, const struct cfg *c, struct loop_args *la)
{
	for (int i = 0; i < c->nwl; i++) {
		enum feed server =
		    c->wl[i].ebee_latency == CFG_LAT_SOJOURN ? FEED_SOJOURN : FEED_SERVICE;
		struct src *cl = simsrc_open(sim, i, FEED_CLIENT);
		struct src *eb = simsrc_open(sim, i, server);

		if (!cl || !eb) {
			src_close(cl);
			src_close(eb);
			return -ENOMEM;
		}
		la->src[i] = c->wl[i].source == CFG_SRC_CLIENT ? cl : eb;
		la->aux[i] = c->wl[i].source == CFG_SRC_CLIENT ? eb : cl;
		la->pid[i] = 0;
	}
	return 0;
}

/* With a lagged client feed (sim_client_lag_ms, sim_client_window_ms) the
 * interval's record says what the feed reported; this line after it says what
 * clients saw at that moment, so QoS can be judged by clients. */
static void log_clients(FILE *log, struct sim *sim, const struct cfg *c, uint64_t t_ms)
{
	struct log_json j;

	log_json_begin(&j, log);
	log_json_num(&j, "t", (double)t_ms / 1000.0, 3);
	log_json_arr(&j, "sim_clients");
	for (int i = 0; i < c->nwl; i++) {
		struct sim_wl_stats st;

		sim_stats(sim, i, &st);
		log_json_obj(&j, NULL);
		log_json_str(&j, "name", c->wl[i].name);
		log_json_num(&j, "p99_client_us", st.p99_client_ns / 1e3, 1);
		log_json_num(&j, "p99_report_us", st.p99_report_ns / 1e3, 1);
		log_json_close(&j);
	}
	log_json_close(&j);
	log_json_end(&j);
}

/* The log's last line; deterministic: no wall-clock figures. */
static void log_summary(FILE *log, const struct cfg *c, const struct sim_run_result *res)
{
	struct log_json j;

	log_json_begin(&j, log);
	log_json_bool(&j, "summary", true);
	log_json_bool(&j, "simulated", true);
	log_json_int(&j, "seed", (long long)c->seed);
	log_json_num(&j, "virtual_s", res->virtual_s, 3);
	log_json_int(&j, "intervals", (long long)res->intervals);
	log_json_int(&j, "actions", (long long)res->actions);
	log_json_int(&j, "refused", (long long)res->refused);
	log_json_int(&j, "events", (long long)res->events);
	log_json_int(&j, "requests", (long long)res->requests);
	log_json_end(&j);
}

/* The caller's opts and the config's [simulation]: 0 and the run's length
 * in *dur, or a negative errno with the reason in err. */
static int run_check(const struct sim_run_opts *o, double *dur, char *err, size_t len)
{
	/* every field is read; a newer caller's tail must be zero */
	int ret = opts_check_min(o, OPTS_KNOWN_END(struct sim_run_opts, duration_s),
				 OPTS_KNOWN_END(struct sim_run_opts, duration_s));
	const struct cfg *c = o->cfg;

	if (ret) {
		snprintf(err, len,
			 "sim_run: struct sim_run_opts of %zu bytes, not one this build reads",
			 o->sz);
		return ret;
	}
	*dur = o->duration_s > 0 ? o->duration_s : sim_cfg_duration(&c->sim, c->nwl);
	if (!c->sim.enabled) {
		snprintf(err, len, "%s: no [simulation] section: nothing to simulate", c->file);
		return -EINVAL;
	}
	if (!(*dur > 0)) {
		snprintf(err, len, "%s: the simulation lasts 0 s (set [simulation] duration_s)",
			 c->file);
		return -EINVAL;
	}
	return sim_run_check_bounds(c, *dur, err, len);
}

/* The made-up machine the actuators act on: the model and the config's
 * CPUs and frequency range. NULL model with errno on failure. */
static void mach_init(struct simmach *m, const struct cfg *c)
{
	m->sim = model_new(c);
	if (!m->sim)
		return; /* errno is model_new's */
	m->ncpus = sim_cfg_ncpus(&c->sim);
	m->cfg = &c->sim;
	m->fmin = c->sim.freq_min_khz;
	m->fmax = c->sim.freq_max_khz;
	m->fstep = c->sim.freq_step_khz;
}

/* Whether any workload's client feed lags or smooths what clients saw: then
 * every interval logs what clients saw too (log_clients). */
static bool any_lagged(const struct cfg *c)
{
	bool lagged = false;

	for (int i = 0; i < c->nwl; i++)
		lagged |= c->sim.wl[i].line_of[SIM_CFG_WL_CLIENT_WINDOW_MS] ||
			  c->sim.wl[i].line_of[SIM_CFG_WL_CLIENT_LAG_MS];
	return lagged;
}

/* Advance the model to each interval's end and run the controller's step
 * there, until dur; the wall and CPU time it took and the virtual time
 * reached go in res. */
static void run_intervals(struct loop *loop, struct sim *sim, const struct cfg *c, FILE *log,
			  double dur, struct sim_run_result *res)
{
	bool lagged = any_lagged(c);
	double w0 = now_s(CLOCK_MONOTONIC);
	double c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
	uint64_t end_ms = (uint64_t)llround(dur * 1000.0);
	uint64_t t;

	for (t = c->interval_ms; t <= end_ms; t += c->interval_ms) {
		sim_run_until(sim, t * 1000000ull);
		loop_step(loop, t);
		if (lagged && log)
			log_clients(log, sim, c, t);
	}
	res->wall_s = now_s(CLOCK_MONOTONIC) - w0;
	res->cpu_s = now_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
	res->virtual_s = (double)(t - c->interval_ms) / 1000.0;
}

/* The run's counts: the model's events and arrivals, the loop's decisions. */
static void result_count(struct sim_run_result *res, struct sim *sim, const struct loop *loop,
			 const struct cfg *c)
{
	res->events = sim_events(sim);
	for (int i = 0; i < c->nwl; i++) {
		struct sim_wl_stats st;

		sim_stats(sim, i, &st);
		res->requests += st.arrived;
	}
	res->intervals = loop->stats.intervals;
	res->actions = loop->stats.actions;
	res->refused = loop->stats.rejected;
}

int sim_run(const struct sim_run_opts *o, struct sim_run_result *res, char *err, size_t len)
{
	const struct cfg *c = o->cfg;
	struct loop_args la = { .sz = sizeof(la) };
	static struct loop loop; /* large: not on the stack */
	struct simmach m = { 0 };
	double dur;
	int ret;

	memset(res, 0, sizeof(*res));
	ret = run_check(o, &dur, err, len);
	if (ret)
		return ret;
	mach_init(&m, c);
	if (!m.sim) {
		ret = -errno;
		snprintf(err, len, "%s: cannot build the model: %s", c->file, strerror(errno));
		return ret;
	}
	ret = feeds_open(m.sim, c, &la);
	if (ret) {
		snprintf(err, len, "out of memory");
		goto fail_src;
	}
	la.cfg = c;
	la.pol = o->pol;
	la.mops = &sim_mach_ops;
	la.mctx = &m;
	la.log = o->log;
	la.alive = always_alive;
	ret = loop_init(&loop, &la, err, len);
	if (ret)
		goto fail_src;
	loop.t0_ms = 0; /* the log's t is virtual seconds since the schedule's start */
	/* a made-up machine with siblings or nodes: say how cores were handed out */
	if (c->sim.nodes > 1 || c->sim.threads_per_core > 1)
		loop_print_cores(&loop, stderr);

	run_intervals(&loop, m.sim, c, o->log, dur, res);
	result_count(res, m.sim, &loop, c);
	if (o->log)
		log_summary(o->log, c, res);
	loop_fini(&loop); /* closes the sources */
	sim_free(m.sim);
	return 0;
fail_src:
	for (int i = 0; i < c->nwl; i++) {
		src_close(la.src[i]);
		src_close(la.aux[i]);
	}
	sim_free(m.sim);
	return ret;
}
