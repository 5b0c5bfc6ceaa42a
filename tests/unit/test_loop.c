// SPDX-License-Identifier: MIT
/*
 * The control loop with a fake machine, fake latency sources and scripted
 * policies: initial allocation, validation of decisions, application,
 * reflect, workload exit, stale sources and the JSONL record.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "loop.h"

/* ---------------------------------------------------------------- fake machine */
struct fake_mach {
	struct loop_caps caps;
	bool added[CFG_MAX_WL], removed[CFG_MAX_WL];
	struct act_cpumask cpus[CFG_MAX_WL];
	long quota[CFG_MAX_WL];
	int assigns, quota_sets;
	int fail_assign;   /* next assign fails with this */
	int fail_quota_wl; /* wl + 1 whose quota writes all fail (its cgroup is gone); 0 none */
};

static int fm_caps(void *p, struct loop_caps *c)
{
	*c = ((struct fake_mach *)p)->caps;
	return 0;
}

static int fm_add(void *p, int wl, const char *name, pid_t pid, const struct act_cpumask *cpus,
		  const long alloc[POL_RES_COUNT])
{
	long quota_mc = alloc[POL_RES_QUOTA];

	struct fake_mach *m = p;

	m->added[wl] = true;
	if (cpus)
		m->cpus[wl] = *cpus;
	m->quota[wl] = quota_mc;
	return 0;
}

static int fm_assign(void *p, const int *wls, const struct act_cpumask *cpus, int n)
{
	struct fake_mach *m = p;

	if (m->fail_assign) {
		int e = m->fail_assign;

		m->fail_assign = 0;
		return e;
	}
	m->assigns++;
	for (int i = 0; i < n; i++)
		m->cpus[wls[i]] = cpus[i];
	/* the machine itself would refuse an overlap: check it here */
	for (int i = 0; i < CFG_MAX_WL; i++)
		for (int j = i + 1; j < CFG_MAX_WL; j++)
			if (m->added[i] && m->added[j] && !m->removed[i] && !m->removed[j])
				assert_false(act_cpumask_intersects(&m->cpus[i], &m->cpus[j]));
	return 0;
}

static int fm_quota(void *p, int wl, long q)
{
	struct fake_mach *m = p;

	if (m->fail_quota_wl == wl + 1)
		return -ENOENT;
	m->quota_sets++;
	m->quota[wl] = q;
	return 0;
}

static int fm_freq(void *p, int wl, long khz)
{
	return 0;
}

static int fm_set(void *p, enum pol_res r, int wl, long v)
{
	return r == POL_RES_QUOTA ? fm_quota(p, wl, v) : fm_freq(p, wl, v);
}

static int fm_remove(void *p, int wl)
{
	struct fake_mach *m = p;

	m->removed[wl] = true;
	act_cpumask_zero(&m->cpus[wl]);
	return 0;
}

static const char *fm_err(void *p)
{
	return "fake failure";
}

static const struct loop_mach_ops fake_ops = {
	.caps = fm_caps,
	.add = fm_add,
	.assign_cpus = fm_assign,
	.set = fm_set,
	.remove = fm_remove,
	.last_error = fm_err,
};

/* ---------------------------------------------------------------- fake source */
struct fake_src {
	struct src s;
	enum pol_lat_state state;
	double p99_ns;
	bool *closed;
};

static int fs_read(struct src *s, uint64_t now_ms, struct src_sample *out)
{
	struct fake_src *f = s->priv;

	out->state = f->state;
	out->p99_ns = f->state == POL_LAT_FRESH ? f->p99_ns : NAN;
	out->rps = 100;
	if (f->state != POL_LAT_FRESH)
		snprintf(out->why, sizeof(out->why), "fake: no data");
	return 0;
}

static void fs_close(struct src *s)
{
	struct fake_src *f = s->priv;

	if (f->closed)
		*f->closed = true;
}

static const struct src_ops fake_src_ops = {
	.name = "ebee",
	.kind = SRC_EBEE,
	.read = fs_read,
	.close = fs_close,
};

/* ---------------------------------------------------------------- scripted policy */
static struct {
	long alloc[CFG_MAX_WL][POL_RES_COUNT]; /* decision to return; [0][0] < 0: none */
	bool set;
	struct pol_observation seen;
	struct pol_outcome out;
	int reflects;
} script;

static int sp_decide(void *st, const struct pol_observation *obs, struct pol_decision *dec)
{
	script.seen = *obs;
	if (script.set) {
		for (int i = 0; i < obs->nwl; i++)
			memcpy(dec->wl[i].alloc, script.alloc[i], sizeof(dec->wl[i].alloc));
		snprintf(dec->wl[0].action, sizeof(dec->wl[0].action), "scripted");
	}
	return 0;
}

static void sp_reflect(void *st, const struct pol_observation *obs, const struct pol_decision *dec,
		       const struct pol_outcome *out)
{
	script.out = *out;
	script.reflects++;
}

static const struct pol_ops scripted = {
	.name = "scripted",
	.decide = sp_decide,
	.reflect = sp_reflect,
};

/* ---------------------------------------------------------------- fixture */
struct fx {
	struct cfg cfg;
	struct fake_mach m;
	struct fake_src src[CFG_MAX_WL];
	bool closed[CFG_MAX_WL];
	bool dead[CFG_MAX_WL];
	struct loop l;
	char *logbuf;
	size_t loglen;
	FILE *log;
};

static bool fx_alive(void *ctx, int wl, pid_t pid)
{
	return !((struct fx *)ctx)->dead[wl];
}

static struct fx *fx_new(const char *ini, const struct pol_ops *pol, bool quota_cap, int *ret,
			 char *err, size_t len)
{
	struct fx *f = calloc(1, sizeof(*f));
	char text[2048], pid[16];
	struct loop_args a = { .sz = sizeof(a) };
	const char *p;
	size_t n = 0;

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	for (p = ini; *p && n < sizeof(text) - 16;) {
		if (!strncmp(p, "@PID@", 5)) {
			n += (size_t)snprintf(text + n, sizeof(text) - n, "%s", pid);
			p += 5;
		} else {
			text[n++] = *p++;
		}
	}
	text[n] = '\0';
	assert_int_equal(cfg_load_string(&f->cfg, "t.ini", text, err, len), 0);
	act_cpumask_from_u64(&f->m.caps.cpus, 0xff);
	f->m.caps.res[POL_RES_CORES] = true;
	f->m.caps.res[POL_RES_QUOTA] = quota_cap;
	snprintf(f->m.caps.why[POL_RES_QUOTA], sizeof(f->m.caps.why[0]), "no cpu controller");
	f->log = open_memstream(&f->logbuf, &f->loglen);
	a.cfg = &f->cfg;
	a.pol = pol;
	a.mops = &fake_ops;
	a.mctx = &f->m;
	a.log = f->log;
	a.alive = fx_alive;
	a.alive_ctx = f;
	for (int i = 0; i < f->cfg.nwl; i++) {
		f->src[i] = (struct fake_src){ .s = { &fake_src_ops, &f->src[i] },
					       .state = POL_LAT_FRESH,
					       .p99_ns = 500e3,
					       .closed = &f->closed[i] };
		a.pid[i] = getpid();
		a.src[i] = &f->src[i].s;
	}
	memset(&script, 0, sizeof(script));
	*ret = loop_init(&f->l, &a, err, len);
	return f;
}

static void fx_free(struct fx *f)
{
	loop_fini(&f->l);
	fclose(f->log);
	free(f->logbuf);
	free(f);
}

static const char two_wl[] = "[resources]\ncpus = 0-3\n"
			     "[workload a]\npid = @PID@\ntarget_ms = 1\ncores = 1\n"
			     "[workload b]\npid = @PID@\ntarget_ms = 1\ncores = 1\n";

static void test_initial_allocation(void **state)
{
	char err[256];
	int ret;
	struct fx *f = fx_new("[resources]\ncpus = 0-4\nquota = true\nquota_total = 2\n"
			      "[workload a]\npid = @PID@\ntarget_ms = 1\ncpus = 4\nquota = 0.5\n"
			      "[workload b]\npid = @PID@\ntarget_ms = 1\n"
			      "[workload c]\npid = @PID@\ntarget_ms = 1\nmax_cores = 1\n",
			      &scripted, true, &ret, err, sizeof(err));

	assert_int_equal(ret, 0);
	/* explicit cpu 4; the rest round robin, c capped at one */
	assert_true(act_cpumask_isset(&f->m.cpus[0], 4));
	assert_int_equal(act_cpumask_count(&f->m.cpus[0]), 1);
	assert_int_equal(act_cpumask_count(&f->m.cpus[1]), 3);
	assert_int_equal(act_cpumask_count(&f->m.cpus[2]), 1);
	/* quota: explicit 0.5, the other two share 1.5 */
	assert_int_equal(f->m.quota[0], 500);
	assert_int_equal(f->m.quota[1], 700);
	assert_int_equal(f->m.quota[2], 700);
	fx_free(f);
}

static void test_missing_capability_fails_before_changes(void **state)
{
	char err[256];
	int ret;
	struct fx *f = fx_new("[resources]\ncpus = 0-1\nquota = true\n"
			      "[workload a]\npid = @PID@\ntarget_ms = 1\n",
			      &scripted, false, &ret, err, sizeof(err));

	assert_int_equal(ret, -EOPNOTSUPP);
	assert_string_equal(err, "[resources] quota = true but cpu quota cannot be set here: no "
				 "cpu controller");
	assert_false(f->m.added[0]);
	fclose(f->log);
	free(f->logbuf);
	free(f);
}

static void test_policy_setting_error_has_line(void **state)
{
	char err[256];
	int ret;
	struct fx *f = fx_new("[policy parties]\nslack_up = 0.3\nslack_down = 0.2\n"
			      "[workload a]\npid = @PID@\ntarget_ms = 1\n",
			      pol_find("parties"), true, &ret, err, sizeof(err));

	assert_int_equal(ret, -EINVAL);
	/* two settings together: the line of the last one */
	assert_string_equal(err, "t.ini:3: policy parties: slack_up (0.3) must be below "
				 "slack_down (0.2)");
	assert_false(f->m.added[0]);
	assert_int_equal(loop_check_policy(&f->cfg, pol_find("parties"), err, sizeof(err)),
			 -EINVAL);
	fclose(f->log);
	free(f->logbuf);
	free(f);
}

static void test_apply_and_reflect(void **state)
{
	char err[256];
	int ret;
	struct fx *f = fx_new(two_wl, &scripted, false, &ret, err, sizeof(err));

	assert_int_equal(ret, 0);
	assert_true(act_cpumask_isset(&f->m.cpus[0], 0));
	assert_true(act_cpumask_isset(&f->m.cpus[1], 1));
	script.set = true;
	script.alloc[0][POL_RES_CORES] = 3;
	script.alloc[1][POL_RES_CORES] = 1;
	loop_step(&f->l, 1000);
	assert_int_equal(script.seen.res[POL_RES_CORES].free, 2);
	assert_int_equal(f->m.assigns, 1);
	assert_int_equal(act_cpumask_count(&f->m.cpus[0]), 3);
	assert_true(act_cpumask_isset(&f->m.cpus[0], 2));
	assert_true(act_cpumask_isset(&f->m.cpus[0], 3));
	assert_true(script.out.applied);
	assert_int_equal(script.out.alloc[0][POL_RES_CORES], 3);
	/* shrink a, grow b: b takes what a gave back */
	script.alloc[0][POL_RES_CORES] = 1;
	script.alloc[1][POL_RES_CORES] = 3;
	loop_step(&f->l, 1500);
	assert_int_equal(script.seen.res[POL_RES_CORES].free, 0);
	assert_true(act_cpumask_isset(&f->m.cpus[0], 0));
	assert_int_equal(act_cpumask_count(&f->m.cpus[1]), 3);
	assert_int_equal(f->l.stats.actions, 2);
	fx_free(f);
}

static void test_refuses_bad_decisions(void **state)
{
	char err[256];
	int ret;
	struct fx *f = fx_new(two_wl, &scripted, false, &ret, err, sizeof(err));

	assert_int_equal(ret, 0);
	script.set = true;
	/* over-commit: 3 + 2 > 4 */
	script.alloc[0][POL_RES_CORES] = 3;
	script.alloc[1][POL_RES_CORES] = 2;
	loop_step(&f->l, 1000);
	assert_false(script.out.applied);
	assert_string_equal(script.out.why, "cores: 5 asked for, 4 exist");
	assert_int_equal(f->m.assigns, 0);
	/* below the minimum */
	script.alloc[0][POL_RES_CORES] = 0;
	script.alloc[1][POL_RES_CORES] = 1;
	loop_step(&f->l, 1500);
	assert_string_equal(script.out.why, "cores for a: 0 below its minimum 1");
	/* a resource the machine lacks */
	script.alloc[0][POL_RES_CORES] = 1;
	script.alloc[0][POL_RES_FREQ] = 2000;
	loop_step(&f->l, 2000);
	assert_string_equal(script.out.why, "freq for a: not a resource here");
	assert_int_equal(f->l.stats.rejected, 3);
	assert_int_equal(f->m.assigns, 0);
	assert_int_equal(script.out.alloc[0][POL_RES_CORES], 1);
	fx_free(f);
}

static void test_write_failure_reported(void **state)
{
	char err[256];
	int ret;
	struct fx *f = fx_new(two_wl, &scripted, false, &ret, err, sizeof(err));

	script.set = true;
	script.alloc[0][POL_RES_CORES] = 2;
	script.alloc[1][POL_RES_CORES] = 1;
	f->m.fail_assign = -EBUSY;
	loop_step(&f->l, 1000);
	assert_false(script.out.applied);
	assert_string_equal(script.out.why, "cores: fake failure");
	assert_int_equal(script.out.alloc[0][POL_RES_CORES], 1);
	assert_int_equal(f->l.stats.failed, 1);
	fx_free(f);
}

/*
 * A pooled decrease that fails does not let the increase it paid for
 * through: the pool stays within its total, in the bookkeeping and on the
 * machine, and later decisions are not refused for an over-committed pool.
 */
static void test_failed_decrease_blocks_paired_increase(void **state)
{
	char err[256];
	int ret;
	long sum;
	struct fx *f = fx_new("[resources]\ncpus = 0-3\nquota = true\nquota_total = 2\n"
			      "[workload a]\npid = @PID@\ntarget_ms = 1\ncores = 1\nquota = 1.5\n"
			      "[workload b]\npid = @PID@\ntarget_ms = 1\ncores = 1\nquota = 0.5\n",
			      &scripted, true, &ret, err, sizeof(err));

	assert_int_equal(ret, 0);
	assert_int_equal(f->m.quota[0], 1500);
	assert_int_equal(f->m.quota[1], 500);
	/* a's cgroup was removed from under us: a -0.5, b +0.5 */
	f->m.fail_quota_wl = 1;
	script.set = true;
	script.alloc[0][POL_RES_CORES] = script.alloc[1][POL_RES_CORES] = 1;
	script.alloc[0][POL_RES_QUOTA] = 1000;
	script.alloc[1][POL_RES_QUOTA] = 1000;
	loop_step(&f->l, 1000);
	assert_false(script.out.applied);
	assert_int_equal(f->l.stats.failed, 1);
	assert_non_null(strstr(script.out.why, "quota of a"));
	/* b's increase depended on a's decrease: not applied */
	assert_int_equal(f->m.quota[1], 500);
	assert_int_equal(f->l.wl[1].alloc[POL_RES_QUOTA], 500);
	assert_int_equal(f->l.wl[0].alloc[POL_RES_QUOTA], 1500);
	sum = f->l.wl[0].alloc[POL_RES_QUOTA] + f->l.wl[1].alloc[POL_RES_QUOTA];
	assert_true(sum <= 2000);
	/* the next interval: the pool is not over-committed, holding is not refused */
	script.set = false;
	loop_step(&f->l, 2000);
	assert_true(script.seen.res[POL_RES_QUOTA].free >= 0);
	assert_int_equal(f->l.stats.rejected, 0);
	/* an increase the real headroom allows still goes through */
	f->m.fail_quota_wl = 0;
	script.set = true;
	script.alloc[0][POL_RES_QUOTA] = 1000;
	script.alloc[1][POL_RES_QUOTA] = 1000;
	loop_step(&f->l, 3000);
	assert_true(script.out.applied);
	assert_int_equal(f->m.quota[0], 1000);
	assert_int_equal(f->m.quota[1], 1000);
	fx_free(f);
}

static void test_workload_exit(void **state)
{
	char err[256];
	int ret;
	struct fx *f = fx_new("[resources]\ncpus = 0-3\n"
			      "[workload a]\npid = @PID@\ntarget_ms = 1\ncores = 2\n"
			      "[workload b]\npid = @PID@\ntarget_ms = 1\ncores = 2\n",
			      pol_find("parties"), false, &ret, err, sizeof(err));

	assert_int_equal(ret, 0);
	f->src[0].p99_ns = 950e3; /* slack 0.05: dead band */
	f->src[1].p99_ns = 950e3;
	loop_step(&f->l, 1000);
	f->dead[1] = true;
	f->src[0].p99_ns = 2000e3; /* a violates: takes b's cores from the pool */
	loop_step(&f->l, 1500);
	assert_true(f->m.removed[1]);
	assert_true(f->closed[1]);
	assert_false(f->l.wl[1].alive);
	assert_int_equal(f->l.wl[0].alloc[POL_RES_CORES], 3);
	assert_int_equal(f->l.stats.exits, 1);
	fflush(f->log);
	assert_non_null(strstr(f->logbuf, "workload b (pid"));
	assert_non_null(strstr(f->logbuf, "exited; its resources are free"));
	assert_non_null(strstr(f->logbuf, "\"alive\":false"));
	assert_int_equal(loop_alive_count(&f->l), 1);
	fx_free(f);
}

static void test_stale_source(void **state)
{
	char err[256];
	int ret;
	struct fx *f = fx_new(two_wl, &scripted, false, &ret, err, sizeof(err));

	f->src[0].state = POL_LAT_STALE;
	loop_step(&f->l, 1000);
	assert_int_equal(script.seen.wl[0].state, POL_LAT_STALE);
	assert_true(isnan(script.seen.wl[0].p99_ns));
	assert_true(isnan(script.seen.wl[0].slack));
	assert_int_equal(script.seen.wl[1].state, POL_LAT_FRESH);
	fflush(f->log);
	assert_non_null(strstr(f->logbuf, "\"state\":\"stale\",\"stale_why\":\"fake: no data\""));
	assert_non_null(strstr(f->logbuf, "\"p99_ebee_us\":null,"));
	fx_free(f);
}

static void test_long_slack_average(void **state)
{
	char err[256];
	int ret;
	struct fx *f = fx_new(two_wl, &scripted, false, &ret, err, sizeof(err));

	f->src[0].p99_ns = 400e3;
	loop_step(&f->l, 1000);
	f->src[0].p99_ns = 800e3;
	loop_step(&f->l, 1500);
	assert_true(fabs(script.seen.wl[0].p99_avg_ns - 600e3) < 1e-6);
	assert_true(fabs(script.seen.wl[0].slack - 0.2) < 1e-9);
	assert_true(fabs(script.seen.wl[0].slack_avg - 0.4) < 1e-9);
	assert_int_equal(script.seen.wl[0].nhist, 2);
	/* 1 s window: the first sample ages out */
	loop_step(&f->l, 2100);
	assert_true(fabs(script.seen.wl[0].p99_avg_ns - 800e3) < 1e-6);
	fx_free(f);
}

static void test_log_record(void **state)
{
	char err[256];
	int ret;
	struct fx *f = fx_new(two_wl, &scripted, false, &ret, err, sizeof(err));

	loop_step(&f->l, f->l.t0_ms + 500);
	fflush(f->log);
	assert_non_null(strstr(f->logbuf, "{\"t\":0.500,\"tick\":0,\"policy\":\"scripted\","
					  "\"applied\":true,\"why\":null,\"event\":null,"
					  "\"free\":{\"cores\":2},\"wl\":[{\"name\":\"a\""));
	assert_non_null(strstr(f->logbuf, "\"p99_ebee_us\":500.0,"));
	assert_non_null(strstr(f->logbuf, "\"slack\":0.5000,"));
	assert_non_null(strstr(f->logbuf, "\"cores\":1,\"cpus\":\"0\",\"freq_mhz\":null,"
					  "\"quota\":null,\"action\":\"hold\""));
	assert_int_equal(f->logbuf[f->loglen - 1], '\n');
	assert_null(strchr(f->logbuf, '\n') + 1 < f->logbuf + f->loglen
			? strchr(strchr(f->logbuf, '\n') + 1, '\n')
			: NULL);
	fx_free(f);
}

/* The real parties policy and quota as the moving resource (test (b) in
 * miniature): the violating workload gains quota from the pool, then from
 * the other, and gives it back when its load goes. */
static void test_parties_quota_end_to_end(void **state)
{
	char err[256];
	int ret;
	struct fx *f = fx_new("[controller]\nseed = 3\n"
			      "[resources]\ncpus = 0-1\ncores = false\nquota = true\n"
			      "quota_step = 0.1\nquota_total = 1.2\n"
			      "[policy parties]\nwheel = quota\n"
			      "[workload a]\npid = @PID@\ntarget_ms = 1\nquota = 0.4\n"
			      "[workload b]\npid = @PID@\ntarget_ms = 1\nquota = 0.6\n",
			      pol_find("parties"), true, &ret, err, sizeof(err));
	uint64_t t = 1000;

	assert_int_equal(ret, 0);
	f->src[1].p99_ns = 850e3; /* b: slack 0.15, in the dead band */
	/* a's latency falls with its quota: 0.9 cores meet the target */
	for (int k = 0; k < 12; k++, t += 500) {
		f->src[0].p99_ns = 1e6 * 0.85 / ((double)f->l.wl[0].alloc[POL_RES_QUOTA] / 1000.0);
		loop_step(&f->l, t);
	}
	assert_true(f->l.wl[0].alloc[POL_RES_QUOTA] >= 900);
	assert_true(f->l.wl[1].alloc[POL_RES_QUOTA] < 600); /* the pool ran out: b donated */
	assert_int_equal(f->m.quota[0], f->l.wl[0].alloc[POL_RES_QUOTA]);
	/* load stops for a: slack 0.9, quota goes back */
	for (int k = 0; k < 20; k++, t += 500) {
		f->src[0].p99_ns = 100e3;
		loop_step(&f->l, t);
	}
	assert_int_equal(f->l.wl[0].alloc[POL_RES_QUOTA], 100);
	fx_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_initial_allocation),
		cmocka_unit_test(test_missing_capability_fails_before_changes),
		cmocka_unit_test(test_policy_setting_error_has_line),
		cmocka_unit_test(test_apply_and_reflect),
		cmocka_unit_test(test_refuses_bad_decisions),
		cmocka_unit_test(test_write_failure_reported),
		cmocka_unit_test(test_failed_decrease_blocks_paired_increase),
		cmocka_unit_test(test_workload_exit),
		cmocka_unit_test(test_stale_source),
		cmocka_unit_test(test_long_slack_average),
		cmocka_unit_test(test_log_record),
		cmocka_unit_test(test_parties_quota_end_to_end),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
