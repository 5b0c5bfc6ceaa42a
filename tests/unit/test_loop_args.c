// SPDX-License-Identifier: MIT
/*
 * loop_init() reads struct loop_args by its sz, as libbpf reads options:
 * too small for the required fields or a newer caller's unknown fields set
 * is refused; an older caller (no log, alive, alive_ctx) gets the defaults;
 * unknown fields left zero are fine.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "loop.h"

static int fm_caps(void *p, struct loop_caps *c)
{
	memset(c, 0, sizeof(*c));
	c->res[POL_RES_CORES] = true;
	act_cpumask_from_u64(&c->cpus, 0x3);
	return 0;
}

static int fm_add(void *p, int wl, const char *name, pid_t pid, const struct act_cpumask *cpus,
		  const long alloc[POL_RES_COUNT])
{
	return 0;
}

static int fm_remove(void *p, int wl)
{
	return 0;
}

static const char *fm_err(void *p)
{
	return "fake";
}

static const struct loop_mach_ops fake_ops = {
	.caps = fm_caps,
	.add = fm_add,
	.remove = fm_remove,
	.last_error = fm_err,
};

static int decide(void *st, const struct pol_observation *obs, struct pol_decision *dec)
{
	return 0;
}

static const struct pol_ops hold = { .name = "hold", .decide = decide };

/* A caller built with a newer loop.h: a field this build does not know. */
struct newer_args {
	struct loop_args a;
	long newer_field;
};

static struct cfg cfg;
static struct loop l;
static struct newer_args na;

static int setup(void **state)
{
	char ini[256], err[256];

	snprintf(ini, sizeof(ini),
		 "[resources]\ncpus = 0-1\n[workload a]\npid = %d\ntarget_ms = 1\ncores = 1\n",
		 (int)getpid());
	assert_int_equal(cfg_load_string(&cfg, "t.ini", ini, err, sizeof(err)), 0);
	memset(&na, 0, sizeof(na));
	na.a.cfg = &cfg;
	na.a.pol = &hold;
	na.a.mops = &fake_ops;
	na.a.pid[0] = getpid();
	return 0;
}

static void test_sz_too_small(void **state)
{
	char err[256] = "";

	na.a.sz = offsetof(struct loop_args, aux); /* aux cut off */
	assert_int_equal(loop_init(&l, &na.a, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "struct loop_args"));
	na.a.sz = 0;
	assert_int_equal(loop_init(&l, &na.a, err, sizeof(err)), -EINVAL);
}

static void test_newer_caller(void **state)
{
	char err[256] = "";

	na.a.sz = sizeof(na);
	na.newer_field = 1; /* something this build would ignore: refused */
	assert_int_equal(loop_init(&l, &na.a, err, sizeof(err)), -EINVAL);
	na.newer_field = 0; /* left zero: fine */
	assert_int_equal(loop_init(&l, &na.a, err, sizeof(err)), 0);
	assert_int_equal(loop_alive_count(&l), 1);
	loop_fini(&l);
}

static void test_older_caller(void **state)
{
	char err[256] = "";
	FILE *f = tmpfile();

	/* an older caller: log, alive and alive_ctx are past its sz and must
	 * not be read, whatever the bytes there hold */
	na.a.sz = offsetof(struct loop_args, log);
	na.a.log = f;
	assert_int_equal(loop_init(&l, &na.a, err, sizeof(err)), 0);
	assert_null(l.log);
	assert_ptr_equal(l.alive, loop_pid_alive);
	loop_step(&l, loop_now_ms());
	loop_fini(&l);
	assert_int_equal(ftell(f), 0);
	fclose(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_sz_too_small, setup),
		cmocka_unit_test_setup(test_newer_caller, setup),
		cmocka_unit_test_setup(test_older_caller, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
