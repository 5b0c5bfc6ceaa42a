// SPDX-License-Identifier: MIT
/* Config parsing: good and bad INI strings, with the exact error lines. */
#include <errno.h>
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
#include "res/res.h"

static struct cfg cfg;
static char err[512];

/* A resource's key (res/res.h) of [resources] (wl -1) or of workload wl: its
 * value in the program's unit, and the line it was given at. */
static long rv(const struct cfg *c, int wl, const char *key)
{
	long v = -1;

	assert_int_equal(res_cfg_value(c, wl, key, &v, NULL), 0);
	return v;
}

static int rline(const struct cfg *c, int wl, const char *key)
{
	int line = -1;

	assert_int_equal(res_cfg_value(c, wl, key, NULL, &line), 0);
	return line;
}

/* Substitute every "@PID@" with our own pid (a process that surely exists). */
static const char *pidsub(const char *text)
{
	static char out[4096];
	char pid[16];
	const char *p = text;
	size_t n = 0;

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	while (*p && n < sizeof(out) - 16) {
		if (!strncmp(p, "@PID@", 5)) {
			n += (size_t)snprintf(out + n, sizeof(out) - n, "%s", pid);
			p += 5;
		} else {
			out[n++] = *p++;
		}
	}
	out[n] = '\0';
	return out;
}

static int load(const char *text)
{
	err[0] = '\0';
	return cfg_load_string(&cfg, "t.ini", pidsub(text), err, sizeof(err));
}

static void expect_error(const char *text, const char *msg)
{
	assert_int_equal(load(text), -EINVAL);
	assert_string_equal(err, msg);
}

static void test_good_full(void **state)
{
	static const char text[] = "; a comment\n"
				   "[controller]\n"
				   "interval_ms = 100\n"
				   "policy = static\n"
				   "seed = 7\n"
				   "log = /tmp/x.jsonl\n"
				   "cgroup_parent = parties-test-1\n"
				   "\n"
				   "[resources]\n"
				   "cpus = 0-1\n"
				   "quota = true\n"
				   "quota_step = 0.05\n"
				   "quota_total = 1.5\n"
				   "freq = false\n"
				   "\n"
				   "[workload web]\n"
				   "pid = @PID@\n"
				   "target_ms = 25\n"
				   "cpus = 0\n"
				   "quota = 0.5 ; inline comment\n"
				   "[workload mc]\n"
				   "pid = @PID@\n"
				   "target_ms = 0.5\n"
				   "min_cores = 1\n"
				   "max_cores = 1\n"
				   "cores = 1\n"
				   "ebee_mode = io\n"
				   "ebee_latency = service\n";

	assert_int_equal(load(text), 0);
	assert_int_equal(cfg.interval_ms, 100);
	assert_string_equal(cfg.policy, "static");
	assert_int_equal(cfg.seed, 7);
	assert_string_equal(cfg.log, "/tmp/x.jsonl");
	assert_string_equal(cfg.cgroup_parent, "parties-test-1");
	assert_int_equal(act_cpumask_count(&cfg.cpus), 2);
	assert_true(rv(&cfg, -1, "quota"));
	assert_int_equal(rv(&cfg, -1, "quota_step"), 50);
	assert_int_equal(rv(&cfg, -1, "freq"), CFG_OFF);
	assert_int_equal(cfg.nwl, 2);
	assert_string_equal(cfg.wl[0].name, "web");
	assert_int_equal(cfg.wl[0].pid, getpid());
	assert_true(cfg.wl[0].target_ns == 25000000.0);
	assert_true(cfg.wl[0].has_cpus);
	assert_true(act_cpumask_isset(&cfg.wl[0].cpus, 0));
	assert_int_equal(rv(&cfg, 0, "quota"), 500);
	assert_true(cfg.wl[1].target_ns == 500000.0);
	assert_int_equal(rv(&cfg, 1, "max_cores"), 1);
	assert_int_equal(cfg.wl[1].ebee_mode, EBEE_MODE_IO);
	assert_int_equal(cfg.wl[1].ebee_latency, CFG_LAT_SERVICE);
	assert_true(cfg.wl[1].line_of[CFG_WL_EBEE_LATENCY] > 0);
	assert_int_equal(cfg.wl[0].ebee_latency, CFG_LAT_SOJOURN); /* the default */
	assert_int_equal(cfg.wl[0].line_of[CFG_WL_EBEE_LATENCY], 0);
	assert_int_equal(cfg.wl[1].source, CFG_SRC_EBEE);
}

static void test_defaults(void **state)
{
	assert_int_equal(load("[workload a]\npid = @PID@\ntarget_ms = 1\n"), 0);
	assert_int_equal(cfg.interval_ms, 500);
	assert_string_equal(cfg.policy, "parties");
	assert_string_equal(cfg.cgroup_parent, "parties");
	assert_int_equal(cfg.avg_window_ms, 1000);
	assert_int_equal(cfg.stale_intervals, 3);
	assert_true(rv(&cfg, -1, "cores"));
	assert_false(rv(&cfg, -1, "quota"));
	assert_int_equal(rv(&cfg, -1, "freq"), CFG_AUTO);
	assert_int_equal(rv(&cfg, -1, "freq_step_mhz"), 100000);
	assert_int_equal(rv(&cfg, 0, "min_cores"), 1);
	assert_int_equal(rv(&cfg, 0, "cores"), 0);
	assert_int_equal(cfg.nparams, 0);
	assert_true(act_cpumask_count(&cfg.cpus) >= 1);
}

/* flavour = code brings the released controller's 100 ms interval unless interval_ms is set. */
static void test_code_flavour_interval(void **state)
{
	assert_int_equal(load("[policy parties]\nflavour = code\n"
			      "[workload a]\npid = @PID@\ntarget_ms = 1\n"),
			 0);
	assert_int_equal(cfg.interval_ms, 100);
	assert_string_equal(cfg.note, "");
	/* [controller] interval_ms does not hold against flavour = code, and it says so */
	assert_int_equal(load("[controller]\ninterval_ms = 500\n[policy parties]\nflavour = code\n"
			      "[workload a]\npid = @PID@\ntarget_ms = 1\n"),
			 0);
	assert_int_equal(cfg.interval_ms, 100);
	assert_non_null(strstr(cfg.note, "100 ms"));
	assert_non_null(strstr(cfg.note, "[controller] interval_ms = 500"));
	/* interval_ms in [policy parties] does, and is said at start */
	assert_int_equal(load("[controller]\ninterval_ms = 500\n[policy parties]\nflavour = code\n"
			      "interval_ms = 250\n[workload a]\npid = @PID@\ntarget_ms = 1\n"),
			 0);
	assert_int_equal(cfg.interval_ms, 250);
	assert_non_null(strstr(cfg.note, "250 ms"));
	assert_non_null(strstr(cfg.note, "[policy parties]"));
	/* [controller] interval_ms = 100 with flavour = code: nothing to say */
	assert_int_equal(load("[controller]\ninterval_ms = 100\n[policy parties]\nflavour = code\n"
			      "[workload a]\npid = @PID@\ntarget_ms = 1\n"),
			 0);
	assert_int_equal(cfg.interval_ms, 100);
	assert_string_equal(cfg.note, "");
	/* another policy's interval_ms is not this one's */
	assert_int_equal(load("[controller]\ninterval_ms = 300\npolicy = util\n"
			      "[policy parties]\nflavour = code\ninterval_ms = 250\n"
			      "[workload a]\npid = @PID@\ntarget_ms = 1\n"),
			 0);
	assert_int_equal(cfg.interval_ms, 300);
	assert_int_equal(load("[policy parties]\nflavour = paper\n"
			      "[workload a]\npid = @PID@\ntarget_ms = 1\n"),
			 0);
	assert_int_equal(cfg.interval_ms, 500);
}

static void test_policy_params(void **state)
{
	assert_int_equal(load("[policy parties]\n"
			      "flavour = code\n"
			      "cooldown_s = 12\n"
			      "[policy static]\n"
			      "[workload a]\npid = @PID@\ntarget_ms = 1\n"),
			 0);
	assert_int_equal(cfg.nparams, 2);
	assert_string_equal(cfg.params[0].key, "flavour");
	assert_string_equal(cfg.params[1].val, "12");
	assert_int_equal(cfg.params[1].line, 3);
}

static void test_unknown_section(void **state)
{
	expect_error("[controller]\ninterval_ms = 100\n[bogus]\nx = 1\n",
		     "t.ini:3: unknown section [bogus] (controller, resources, workload NAME, "
		     "policy NAME)");
}

static void test_unknown_key(void **state)
{
	expect_error("[controller]\ninterval_ms = 100\ninterval = 5\n",
		     "t.ini:3: unknown key 'interval' in [controller]");
	expect_error("[workload a]\npid = @PID@\ntarget = 5\n",
		     "t.ini:3: unknown key 'target' in [workload a]");
	expect_error("[resources]\nllc = 4\n", "t.ini:2: unknown key 'llc' in [resources]");
}

static void test_malformed_number(void **state)
{
	expect_error("[controller]\n\ninterval_ms = 5x0\n",
		     "t.ini:3: interval_ms: '5x0' is not a whole number in 10..60000");
	expect_error("[workload a]\npid = @PID@\ntarget_ms = fast\n",
		     "t.ini:3: target_ms: 'fast' is not a number");
	expect_error("[resources]\nquota = maybe\n",
		     "t.ini:2: quota: 'maybe' is not a boolean (true or false)");
}

static void test_target_not_positive(void **state)
{
	expect_error("[workload a]\npid = @PID@\ntarget_ms = 0\n",
		     "t.ini:3: target_ms must be > 0, not 0");
	expect_error("[workload a]\npid = @PID@\ntarget_ms = -3\n",
		     "t.ini:3: target_ms must be > 0, not -3");
	expect_error("[workload a]\npid = @PID@\n", "t.ini:1: workload a: target_ms is required");
}

static void test_min_above_max(void **state)
{
	expect_error("[resources]\ncpus = 0-1\n"
		     "[workload a]\npid = @PID@\ntarget_ms = 1\nmin_cores = 2\nmax_cores = 1\n",
		     "t.ini:7: workload a: min_cores 2 > max_cores 1");
	expect_error("[resources]\ncpus = 0-1\nquota = true\n"
		     "[workload a]\npid = @PID@\ntarget_ms = 1\nmin_quota = 0.5\nmax_quota = 0.2\n",
		     "t.ini:8: workload a: min_quota 0.5 > max_quota 0.2");
}

/* An initial allocation outside its workload's bounds, each at its line. */
static void test_initial_outside_bounds(void **state)
{
	expect_error("[resources]\ncpus = 0-3\n"
		     "[workload a]\npid = @PID@\ntarget_ms = 1\nmax_cores = 2\ncores = 3\n",
		     "t.ini:7: workload a: cores 3 outside min_cores..max_cores (1..2)");
	expect_error("[resources]\ncpus = 0-1\nquota = true\n"
		     "[workload a]\npid = @PID@\ntarget_ms = 1\nmax_quota = 1\nquota = 1.5\n",
		     "t.ini:8: workload a: quota 1.5 outside min_quota..max_quota (0.1..1)");
}

/* Under smt = shared a cpu is a core: explicit cpus are counted against the
 * cores in the file; under whole the loop counts them against the topology. */
static void test_cpus_against_cores(void **state)
{
	expect_error("[resources]\ncpus = 0-3\nsmt = shared\n"
		     "[workload a]\npid = @PID@\ntarget_ms = 1\ncpus = 0-1\ncores = 1\n",
		     "t.ini:7: workload a: cpus has 2 cpus but cores = 1");
	expect_error("[resources]\ncpus = 0-3\nsmt = shared\n"
		     "[workload a]\npid = @PID@\ntarget_ms = 1\nmax_cores = 2\ncpus = 0-2\n",
		     "t.ini:8: workload a: 3 cpus outside min_cores..max_cores (1..2)");
	assert_int_equal(load("[resources]\ncpus = 0-3\n"
			      "[workload a]\npid = @PID@\ntarget_ms = 1\nmax_cores = 2\n"
			      "cpus = 0-2\n"),
			 0);
}

/* Of several mistakes the first is reported: the [resources] keys together,
 * then each workload in turn (all its resources), then the workloads together. */
static void test_check_order(void **state)
{
	expect_error("[resources]\ncpus = 0-1\nfreq_max_mhz = 1000\nfreq_min_mhz = 2000\n"
		     "[workload a]\npid = @PID@\ntarget_ms = 1\nmin_cores = 2\nmax_cores = 1\n",
		     "t.ini:3: [resources] freq_min_mhz 2000 > freq_max_mhz 1000");
	expect_error("[resources]\ncpus = 0-1\nquota = true\n"
		     "[workload a]\npid = @PID@\ntarget_ms = 1\nmin_quota = 0.5\nmax_quota = 0.2\n"
		     "[workload b]\npid = @PID@\ntarget_ms = 1\nmin_cores = 2\nmax_cores = 1\n",
		     "t.ini:8: workload a: min_quota 0.5 > max_quota 0.2");
	expect_error("[resources]\ncpus = 0-1\nquota = true\nquota_total = 1\n"
		     "[workload a]\npid = @PID@\ntarget_ms = 1\nquota = 1\n"
		     "[workload b]\npid = @PID@\ntarget_ms = 1\nmin_cores = 2\nmax_cores = 1\n",
		     "t.ini:13: workload b: min_cores 2 > max_cores 1");
}

static void test_overlapping_cpus(void **state)
{
	expect_error("[resources]\ncpus = 0-1\n"
		     "[workload a]\npid = @PID@\ntarget_ms = 1\ncpus = 0-1\n"
		     "[workload b]\npid = @PID@\ntarget_ms = 1\ncpus = 1\n",
		     "t.ini:10: workload b: cpus overlap another workload's");
}

static void test_unmanaged_cpus(void **state)
{
	expect_error("[resources]\ncpus = 0-1\n"
		     "[workload a]\npid = @PID@\ntarget_ms = 1\ncpus = 2\n",
		     "t.ini:6: workload a: cpus outside the managed cpus (0-1)");
}

static void test_too_few_cpus(void **state)
{
	expect_error("[resources]\ncpus = 0\n"
		     "[workload a]\npid = @PID@\ntarget_ms = 1\n"
		     "[workload b]\npid = @PID@\ntarget_ms = 1\n",
		     "t.ini:6: workload b: the workloads need at least 2 cpus, 1 are managed");
}

/* Whether the process, pidfile or program exists is config_live.c's
 * (test_config_live.c): parsing never looks. */
static void test_workload_not_found(void **state)
{
	expect_error("[workload a]\ntarget_ms = 1\n",
		     "t.ini:1: workload a: say how to find it (pid, pidfile, command, cgroup or "
		     "unit)");
	expect_error("[workload a]\npid = @PID@\ncommand = true\n",
		     "t.ini:3: workload a: give only one of pid, pidfile, command, cgroup and "
		     "unit (command given after line 2)");
}

static void test_cgroup_unit(void **state)
{
	assert_int_equal(load("[workload a]\ntarget_ms = 1\ncgroup = /system.slice/web.service\n"),
			 0);
	assert_int_equal(cfg.wl[0].find, CFG_FIND_CGROUP);
	assert_int_equal(cfg_find_line(&cfg.wl[0]), 3);
	assert_string_equal(cfg.wl[0].cgroup, "/system.slice/web.service");
	assert_int_equal(load("[workload a]\ntarget_ms = 1\nunit = web@1.service\n"), 0);
	assert_int_equal(cfg.wl[0].find, CFG_FIND_UNIT);
	assert_string_equal(cfg.wl[0].cgroup, "web@1.service");
	expect_error("[workload a]\ntarget_ms = 1\ncgroup = /\n",
		     "t.ini:3: workload a: cgroup '/' is not a cgroup path below the root (e.g. "
		     "/system.slice/web.service; no '..', not the root)");
	expect_error("[workload a]\ntarget_ms = 1\ncgroup = /a/../b\n",
		     "t.ini:3: workload a: cgroup '/a/../b' is not a cgroup path below the root "
		     "(e.g. /system.slice/web.service; no '..', not the root)");
	expect_error("[workload a]\ntarget_ms = 1\nunit = web\n",
		     "t.ini:3: workload a: unit 'web' is not a systemd service name "
		     "(NAME.service)");
	expect_error("[workload a]\ntarget_ms = 1\nunit = a/b.service\n",
		     "t.ini:3: workload a: unit 'a/b.service' is not a systemd service name "
		     "(NAME.service)");
	expect_error("[workload a]\ncgroup = /x\nunit = x.service\n",
		     "t.ini:3: workload a: give only one of pid, pidfile, command, cgroup and "
		     "unit (unit given after line 2)");
	expect_error("[workload a]\nunit = x.service\npid = @PID@\n",
		     "t.ini:3: workload a: give only one of pid, pidfile, command, cgroup and "
		     "unit (pid given after line 2)");
}

static void test_command_ok(void **state)
{
	assert_int_equal(load("[workload a]\ntarget_ms = 1\ncommand = sleep 100\n"), 0);
	assert_int_equal(cfg.wl[0].find, CFG_FIND_COMMAND);
	assert_string_equal(cfg.wl[0].command, "sleep 100");
}

/* Whether the feed file exists is config_live.c's (test_config_live.c). */
static void test_feed_missing(void **state)
{
	expect_error("[workload a]\npid = @PID@\ntarget_ms = 1\nsource = clint\n",
		     "t.ini:4: source: 'clint' must be ebee or client:PATH");
	expect_error("[workload a]\npid = @PID@\ntarget_ms = 1\nebee_latency = queue\n",
		     "t.ini:4: ebee_latency: 'queue' must be service or sojourn");
}

static void test_feed_ok(void **state)
{
	char path[] = "/tmp/test_config_feedXXXXXX", text[512];
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	close(fd);
	snprintf(text, sizeof(text),
		 "[workload a]\npid = @PID@\ntarget_ms = 1\nsource = client:%s\n", path);
	assert_int_equal(load(text), 0);
	assert_int_equal(cfg.wl[0].source, CFG_SRC_CLIENT);
	assert_string_equal(cfg.wl[0].feed, path);
	unlink(path);
}

static void test_syntax_error(void **state)
{
	expect_error("[controller]\ninterval_ms = 100\nthis is not ini\n",
		     "t.ini:3: syntax error (expected [section], key = value or a comment)");
	expect_error("[controller\n", "t.ini:1: syntax error (expected [section], key = value or "
				      "a comment)");
}

static void test_first_error_wins(void **state)
{
	expect_error("[controller]\ninterval_ms = x\nseed = y\n",
		     "t.ini:2: interval_ms: 'x' is not a whole number in 10..60000");
	expect_error("[controller]\nnonsense\ninterval_ms = x\n",
		     "t.ini:2: syntax error (expected [section], key = value or a comment)");
}

static void test_duplicates(void **state)
{
	expect_error("[controller]\ninterval_ms = 100\ninterval_ms = 200\n",
		     "t.ini:3: interval_ms given twice in [controller]");
	expect_error("[workload a]\npid = @PID@\ntarget_ms = 1\ntarget_ms = 2\n",
		     "t.ini:4: target_ms given twice in [workload a]");
	expect_error("[workload a]\npid = @PID@\ntarget_ms = 1\n[workload a]\npid = @PID@\n",
		     "t.ini:4: [workload a] given twice (first at line 1)");
}

static void test_policy_errors(void **state)
{
	expect_error(
	    "[controller]\npolicy = heracles\n",
	    "t.ini:2: policy: unknown policy 'heracles' (have: parties, static, util, mmc)");
	expect_error("[policy parties]\nslack_up = 0.05\ncooldown_s = soon\n",
		     "t.ini:3: [policy parties] cooldown_s: 'soon' is not a number");
	expect_error("[policy clite]\nx = 1\n", "t.ini:1: [policy clite]: unknown policy 'clite'");
	expect_error("[policy static]\nx = 1\n", "t.ini:2: policy static takes no settings (x)");
}

static void test_bad_names(void **state)
{
#define RULE                                                                                 \
	"must be [A-Za-z0-9_-], starting with a letter or digit, 1 to 63 bytes, not tasks, " \
	"notify_on_release or release_agent"
	expect_error("[workload a/b]\npid = 1\n",
		     "t.ini:1: [workload a/b]: workload name 'a/b' " RULE);
	expect_error("[controller]\ncgroup_parent = ../x\n",
		     "t.ini:2: cgroup_parent: '../x' " RULE);
	/* names of cgroup control files: the cgroup would be a file */
	expect_error("[workload tasks]\npid = 1\n",
		     "t.ini:1: [workload tasks]: workload name 'tasks' " RULE);
	expect_error(
	    "[workload notify_on_release]\npid = 1\n",
	    "t.ini:1: [workload notify_on_release]: workload name 'notify_on_release' " RULE);
	expect_error("[workload cgroup.procs]\npid = 1\n",
		     "t.ini:1: [workload cgroup.procs]: workload name 'cgroup.procs' " RULE);
	expect_error("[workload -x]\npid = 1\n",
		     "t.ini:1: [workload -x]: workload name '-x' " RULE);
	expect_error("[controller]\ncgroup_parent = cpuset.cpus\n",
		     "t.ini:2: cgroup_parent: 'cpuset.cpus' " RULE);
#undef RULE
}

static void test_no_workload(void **state)
{
	expect_error("[controller]\ninterval_ms = 100\n",
		     "t.ini:2: no [workload NAME] section: nothing to manage");
}

static void test_quota_sum(void **state)
{
	expect_error(
	    "[resources]\ncpus = 0-1\nquota = true\nquota_total = 1\n"
	    "[workload a]\npid = @PID@\ntarget_ms = 1\nquota = 0.8\n"
	    "[workload b]\npid = @PID@\ntarget_ms = 1\nquota = 0.5\n",
	    "t.ini:4: the workloads' initial quotas add up to 1.3 cores, quota_total is 1");
	/* without quota_total (2 cpus): at the last initial quota */
	expect_error(
	    "[resources]\ncpus = 0-1\nquota = true\n"
	    "[workload a]\npid = @PID@\ntarget_ms = 1\nquota = 1.5\n"
	    "[workload b]\npid = @PID@\ntarget_ms = 1\nquota = 0.6\n",
	    "t.ini:11: the workloads' initial quotas add up to 2.1 cores, quota_total is 2");
}

/* Values that would overflow once turned into integers (millicores, us). */
static void test_out_of_range(void **state)
{
	expect_error("[resources]\nquota = true\nquota_total = 1e300\n",
		     "t.ini:3: quota_total must be at most 1024 cores, not 1e300");
	expect_error("[workload a]\npid = @PID@\ntarget_ms = 1\nmax_quota = 5e18\n",
		     "t.ini:4: max_quota must be at most 1024 cores, not 5e18");
	expect_error("[workload a]\npid = @PID@\ntarget_ms = 1e306\n",
		     "t.ini:3: target_ms must be at most 3600000 (an hour), not 1e306");
	expect_error("[resources]\nfreq_max_mhz = 1000\nfreq_min_mhz = 2000\n"
		     "[workload a]\npid = @PID@\ntarget_ms = 1\n",
		     "t.ini:2: [resources] freq_min_mhz 2000 > freq_max_mhz 1000");
}

/*
 * [resources] cfs_period_us: the CFS period every quota is written in. The
 * default is the kernel's (100 ms, what parties always used); the kernel takes
 * 1 ms to 1 s (max_cfs_quota_period, kernel/sched/core.c). The smallest quota
 * a workload can be given must still be a quota the kernel takes (1 ms).
 */
static void test_cfs_period(void **state)
{
	assert_int_equal(load("[workload a]\npid = @PID@\ntarget_ms = 1\n"), 0);
	assert_int_equal(rv(&cfg, -1, "cfs_period_us"), 100000);
	assert_int_equal(load("[resources]\nquota = true\ncfs_period_us = 10000\n"
			      "[workload a]\npid = @PID@\ntarget_ms = 1\n"),
			 0);
	assert_int_equal(rv(&cfg, -1, "cfs_period_us"), 10000);
	assert_int_equal(rline(&cfg, -1, "cfs_period_us"), 3);
	assert_int_equal(load("[resources]\ncfs_period_us = 1000000\n"
			      "[workload a]\npid = @PID@\ntarget_ms = 1\n"),
			 0);
	assert_int_equal(rv(&cfg, -1, "cfs_period_us"), 1000000);
	expect_error("[resources]\ncfs_period_us = 999\n",
		     "t.ini:2: cfs_period_us: '999' is not a whole number in 1000..1000000");
	expect_error("[resources]\ncfs_period_us = 1000001\n",
		     "t.ini:2: cfs_period_us: '1000001' is not a whole number in 1000..1000000");
	expect_error("[resources]\ncfs_period_us = 10.5\n",
		     "t.ini:2: cfs_period_us: '10.5' is not a whole number in 1000..1000000");
	expect_error("[controller]\ncfs_period_us = 10000\n",
		     "t.ini:2: unknown key 'cfs_period_us' in [controller]");
	/* 0.1 cores of a 5 ms period is 500 us, below what the kernel accepts */
	expect_error("[resources]\nquota = true\ncfs_period_us = 5000\n"
		     "[workload a]\npid = @PID@\ntarget_ms = 1\n",
		     "t.ini:3: cfs_period_us 5000 gives workload a's smallest quota (0.1 cores) "
		     "500 us per period; the kernel takes at least 1000 us");
	/* with quota off the period is never written: no such check */
	assert_int_equal(load("[resources]\ncfs_period_us = 5000\n"
			      "[workload a]\npid = @PID@\ntarget_ms = 1\n"),
			 0);
}

/* inih reports sections only through their keys: one without keys is still checked. */
static void test_section_without_keys(void **state)
{
	expect_error("[controller]\ninterval_ms = 100\n[bogus]\n; nothing\n"
		     "[workload a]\npid = @PID@\ntarget_ms = 1\n",
		     "t.ini:3: unknown section [bogus] (controller, resources, workload NAME, "
		     "policy NAME)");
	expect_error("[workload a]\npid = @PID@\ntarget_ms = 1\n[workload b]\n; pid = 1\n",
		     "t.ini:4: workload b: say how to find it (pid, pidfile, command, cgroup "
		     "or unit)");
	expect_error("[workload a]\npid = @PID@\ntarget_ms = 1\n[resourcs]",
		     "t.ini:4: unknown section [resourcs] (controller, resources, workload NAME, "
		     "policy NAME)");
	assert_int_equal(load("[controller]\n[resources]\ncpus = 0\n"
			      "[workload a]\npid = @PID@\ntarget_ms = 1\n[policy parties]\n"),
			 0);
}

static void test_long_line(void **state)
{
	char text[600];

	snprintf(text, sizeof(text), "[controller]\nlog = /tmp/%0300d\n", 0);
	expect_error(text, "t.ini:2: line longer than 199 characters");
}

static void test_file(void **state)
{
	char path[] = "/tmp/test_config_iniXXXXXX";
	int fd = mkstemp(path);
	FILE *f;

	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fprintf(f, "[workload a]\npid = %d\ntarget_ms = 1\n\nmax_cores = 0x\n", (int)getpid());
	fclose(f);
	assert_int_equal(cfg_load_file(&cfg, path, err, sizeof(err)), -EINVAL);
	{
		char want[256];

		snprintf(want, sizeof(want),
			 "%s:5: max_cores: '0x' is not a whole number in 0..1024", path);
		assert_string_equal(err, want);
	}
	unlink(path);
	assert_int_equal(cfg_load_file(&cfg, "/nonexistent.ini", err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "/nonexistent.ini: cannot open: No such file or directory");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_full),
		cmocka_unit_test(test_cgroup_unit),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_code_flavour_interval),
		cmocka_unit_test(test_policy_params),
		cmocka_unit_test(test_unknown_section),
		cmocka_unit_test(test_unknown_key),
		cmocka_unit_test(test_malformed_number),
		cmocka_unit_test(test_target_not_positive),
		cmocka_unit_test(test_min_above_max),
		cmocka_unit_test(test_initial_outside_bounds),
		cmocka_unit_test(test_cpus_against_cores),
		cmocka_unit_test(test_check_order),
		cmocka_unit_test(test_overlapping_cpus),
		cmocka_unit_test(test_unmanaged_cpus),
		cmocka_unit_test(test_too_few_cpus),
		cmocka_unit_test(test_workload_not_found),
		cmocka_unit_test(test_command_ok),
		cmocka_unit_test(test_feed_missing),
		cmocka_unit_test(test_feed_ok),
		cmocka_unit_test(test_syntax_error),
		cmocka_unit_test(test_first_error_wins),
		cmocka_unit_test(test_duplicates),
		cmocka_unit_test(test_policy_errors),
		cmocka_unit_test(test_bad_names),
		cmocka_unit_test(test_no_workload),
		cmocka_unit_test(test_quota_sum),
		cmocka_unit_test(test_out_of_range),
		cmocka_unit_test(test_cfs_period),
		cmocka_unit_test(test_section_without_keys),
		cmocka_unit_test(test_long_line),
		cmocka_unit_test(test_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
