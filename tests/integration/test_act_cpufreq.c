// SPDX-License-Identifier: MIT
/*
 * The cpufreq backend through the real libcpupower, against a fake sysfs: in a
 * forked child, a private mount namespace (unshare(CLONE_NEWNS), / made
 * private) gets a temporary tree shaped like /sys/devices/system/cpu
 * bind-mounted over the real one. The test process itself never changes
 * namespace. Checks written values, step rounding, range refusal, that the
 * governor (and scaling_setspeed) are never written, and restore.
 *
 * Fake-sysfs caveat: libcpupower writes without O_TRUNC, which real sysfs does
 * not care about but a regular file does; every value here has 7 digits.
 *
 * Also the real machine: without cpufreq (these VMs), the capability report
 * says so with a reason and nothing fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "actuator.h"

#define SYSCPU "/sys/devices/system/cpu"

static char tree[128];

static int put(const char *rel, const char *val)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tree, rel);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "%s\n", val);
	return fclose(f);
}

static unsigned long get_ul(int cpu, const char *file)
{
	char path[256], buf[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), SYSCPU "/cpu%d/cpufreq/%s", cpu, file);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return strtoul(buf, NULL, 10);
}

static int make_tree(void)
{
	char d[512];

	snprintf(tree, sizeof(tree), "/tmp/act-fakesys-%d", getpid());
	if (mkdir(tree, 0755))
		return -1;
	for (int cpu = 0; cpu < 2; cpu++) {
		char rel[64];

		snprintf(d, sizeof(d), "%s/cpu%d", tree, cpu);
		mkdir(d, 0755);
		snprintf(d, sizeof(d), "%s/cpu%d/cpufreq", tree, cpu);
		mkdir(d, 0755);
#define P(file, val)                                                    \
	do {                                                            \
		snprintf(rel, sizeof(rel), "cpu%d/cpufreq/" file, cpu); \
		if (put(rel, val))                                      \
			return -1;                                      \
	} while (0)
		P("cpuinfo_min_freq", "1200000");
		P("cpuinfo_max_freq", "2934000");
		P("scaling_min_freq", "1200000");
		P("scaling_max_freq", "2934000");
		P("scaling_governor", "powersave");
		P("scaling_driver", "fake-pstate");
		P("scaling_setspeed", "<unsupported>");
		P("scaling_available_governors", "performance powersave");
		P("cpuinfo_transition_latency", "0000000");
		P("affected_cpus", cpu ? "1" : "0");
		P("related_cpus", cpu ? "1" : "0");
#undef P
	}
	return put("online", "0-1") || put("present", "0-1") || put("possible", "0-1");
}

static void rm_tree(void)
{
	char cmd[256];

	if (!tree[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tree);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", tree);
}

/* ---- checks inside the child: no cmocka there (its longjmp belongs to the parent) */

static int failures;

#define CHECK(cond, ...)                                                                   \
	do {                                                                               \
		if (!(cond)) {                                                             \
			failures++;                                                        \
			fprintf(stderr, "CHECK failed at line %d: %s: ", __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                                      \
			fprintf(stderr, "\n");                                             \
		}                                                                          \
	} while (0)

static void file_state(const char *file, struct stat *st, char *buf, size_t len)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), SYSCPU "/cpu0/cpufreq/%s", file);
	stat(path, st);
	f = fopen(path, "r");
	buf[0] = '\0';
	if (f) {
		if (!fgets(buf, (int)len, f))
			buf[0] = '\0';
		fclose(f);
	}
}

static void child_checks(void)
{
	struct act_opts o = {
		.sz = sizeof(o),
		.parent = "parties-test-freq",
		.resources = ACT_RES_CPUFREQ,
		.state_dir = "",
		.log_level = ACT_LOG_WARN,
	};
	struct act_cpumask both, one;
	struct stat gov0, gov1, set0, set1;
	char gbuf0[64], gbuf1[64], sbuf0[64], sbuf1[64];
	const struct act_caps *c;
	unsigned long mn, mx, r;
	struct act *act;

	file_state("scaling_governor", &gov0, gbuf0, sizeof(gbuf0));
	file_state("scaling_setspeed", &set0, sbuf0, sizeof(sbuf0));
	act_cpumask_parse("0-1", &both);
	act_cpumask_parse("1", &one);
	act = act_open(&o);
	CHECK(act, "act_open: %s", strerror(errno));
	if (!act)
		return;
	c = act_caps(act);
	CHECK(c->cpufreq, "cpufreq unavailable: %s", c->cpufreq_reason);
	CHECK(c->freq_min_khz == 1200000 && c->freq_max_khz == 2934000, "limits %lu-%lu",
	      c->freq_min_khz, c->freq_max_khz);
	CHECK(c->freq_step_khz == 100000, "step %lu", c->freq_step_khz);
	CHECK(!strcmp(c->cpufreq_driver, "fake-pstate"), "driver %s", c->cpufreq_driver);
	CHECK(!strcmp(c->cpufreq_governor, "powersave"), "governor %s", c->cpufreq_governor);

	/* rounding to 100 MHz steps; the hardware limits themselves stay valid */
	CHECK(act_freq_round(act, 2880000, &r) == 0 && r == 2900000, "2880000 -> %lu", r);
	CHECK(act_freq_round(act, 1250000, &r) == 0 && r == 1300000, "1250000 -> %lu", r);
	CHECK(act_freq_round(act, 1230000, &r) == 0 && r == 1200000, "1230000 -> %lu", r);
	CHECK(act_freq_round(act, 2934000, &r) == 0 && r == 2934000, "2934000 -> %lu", r);
	CHECK(act_freq_round(act, 2930000, &r) == 0 && r == 2900000, "2930000 -> %lu", r);

	/* max only, on both cpus */
	CHECK(act_set_freq(act, &both, 0, 2480000) == 0, "set max: %s", act_last_error(act));
	CHECK(get_ul(0, "scaling_max_freq") == 2500000, "cpu0 max %lu",
	      get_ul(0, "scaling_max_freq"));
	CHECK(get_ul(1, "scaling_max_freq") == 2500000, "cpu1 max %lu",
	      get_ul(1, "scaling_max_freq"));
	CHECK(get_ul(0, "scaling_min_freq") == 1200000, "cpu0 min %lu",
	      get_ul(0, "scaling_min_freq"));
	/* min and max on one cpu, and read back through the API */
	CHECK(act_set_freq(act, &one, 2000000, 2200000) == 0, "set both: %s", act_last_error(act));
	CHECK(get_ul(1, "scaling_min_freq") == 2000000 && get_ul(1, "scaling_max_freq") == 2200000,
	      "cpu1 %lu-%lu", get_ul(1, "scaling_min_freq"), get_ul(1, "scaling_max_freq"));
	CHECK(act_get_freq(act, 1, &mn, &mx) == 0 && mn == 2000000 && mx == 2200000, "get %lu-%lu",
	      mn, mx);
	/* a max below the current min needs min written first... and is refused
	 * for an explicit min: keep the order right for raising both */
	CHECK(act_set_freq(act, &one, 2600000, 2800000) == 0, "raise both: %s",
	      act_last_error(act));
	CHECK(get_ul(1, "scaling_min_freq") == 2600000 && get_ul(1, "scaling_max_freq") == 2800000,
	      "cpu1 %lu-%lu", get_ul(1, "scaling_min_freq"), get_ul(1, "scaling_max_freq"));
	CHECK(act_set_freq(act, &one, 0, 2000000) == -EINVAL, "max below kept min accepted");
	CHECK(get_ul(1, "scaling_max_freq") == 2800000, "refused change wrote %lu",
	      get_ul(1, "scaling_max_freq"));

	/* range refusal, nothing written */
	CHECK(act_set_freq(act, &both, 0, 3000000) == -ERANGE, "3 GHz accepted");
	CHECK(act_set_freq(act, &both, 1100000, 0) == -ERANGE, "1.1 GHz accepted");
	CHECK(act_set_freq(act, &both, 2500000, 2000000) == -EINVAL, "min > max accepted");
	CHECK(get_ul(0, "scaling_max_freq") == 2500000, "cpu0 max changed to %lu",
	      get_ul(0, "scaling_max_freq"));

	/* the governor and scaling_setspeed were never written */
	file_state("scaling_governor", &gov1, gbuf1, sizeof(gbuf1));
	file_state("scaling_setspeed", &set1, sbuf1, sizeof(sbuf1));
	CHECK(!strcmp(gbuf0, gbuf1) && gov0.st_mtim.tv_sec == gov1.st_mtim.tv_sec &&
		  gov0.st_mtim.tv_nsec == gov1.st_mtim.tv_nsec,
	      "scaling_governor touched");
	CHECK(!strcmp(sbuf0, sbuf1) && set0.st_mtim.tv_nsec == set1.st_mtim.tv_nsec,
	      "scaling_setspeed touched");

	/* restore puts the found limits back */
	act_close(act);
	for (int cpu = 0; cpu < 2; cpu++)
		CHECK(get_ul(cpu, "scaling_min_freq") == 1200000 &&
			  get_ul(cpu, "scaling_max_freq") == 2934000,
		      "cpu%d restored to %lu-%lu", cpu, get_ul(cpu, "scaling_min_freq"),
		      get_ul(cpu, "scaling_max_freq"));
}

static void test_fake_sysfs(void **state)
{
	int status = -1;
	pid_t p;

	if (geteuid() != 0) {
		print_message("SKIP: needs root (mount namespace and bind mount)\n");
		skip();
	}
	assert_int_equal(make_tree(), 0);
	p = fork();
	assert_true(p >= 0);
	if (p == 0) {
		alarm(30);
		if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
			perror("unshare/private");
			_exit(2);
		}
		if (mount(tree, SYSCPU, NULL, MS_BIND, NULL)) {
			perror("bind mount");
			_exit(2);
		}
		child_checks();
		_exit(failures ? 1 : 0);
	}
	waitpid(p, &status, 0);
	rm_tree();
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* These VMs have no cpufreq: reported, with a reason, and nothing fails. */
static void test_real_machine(void **state)
{
	struct act_opts o = {
		.sz = sizeof(o),
		.parent = "parties-test-freq",
		.resources = ACT_RES_CPUFREQ,
		.state_dir = "",
	};
	struct act_cpumask m;
	struct act *act;
	const struct act_caps *c;
	struct stat st;

	act = act_open(&o);
	assert_non_null(act);
	c = act_caps(act);
	if (stat(SYSCPU "/cpu0/cpufreq/scaling_max_freq", &st) == 0) {
		print_message("this machine has cpufreq (%s): checking it is reported\n",
			      c->cpufreq_driver);
		assert_true(c->cpufreq);
	} else {
		assert_false(c->cpufreq);
		assert_false(c->resources & ACT_RES_CPUFREQ);
		assert_true(strlen(c->cpufreq_reason) > 0);
		print_message("reported: %s\n", c->cpufreq_reason);
		act_cpumask_parse("0", &m);
		assert_int_equal(act_set_freq(act, &m, 0, 2000000), -EOPNOTSUPP);
	}
	act_close(act);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fake_sysfs),
		cmocka_unit_test(test_real_machine),
	};

	alarm(60);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
