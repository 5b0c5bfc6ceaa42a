// SPDX-License-Identifier: MIT
/* parties' command line (controller/args.c): what each option sets, and the
 * answers main() turns into exit statuses. */
#include <errno.h>
#include <getopt.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "args.h"

#define PARSE(a, ...)                                                             \
	({                                                                        \
		char *argv[] = { "parties", __VA_ARGS__, NULL };                  \
		optind = 0; /* glibc: start over */                               \
		args_parse((int)(sizeof(argv) / sizeof(argv[0])) - 1, argv, (a)); \
	})

static void test_options(void **state)
{
	struct args a;

	assert_int_equal(PARSE(&a, "-c", "x.ini", "-n", "-d", "2.5", "--log", "l.jsonl", "-v",
			       "--metrics", ":9000", "--seed", "7"),
			 0);
	assert_string_equal(a.cfg_path, "x.ini");
	assert_true(a.dry_run);
	assert_true(a.duration == 2.5);
	assert_string_equal(a.log_path, "l.jsonl");
	assert_true(a.verbose);
	assert_string_equal(a.metrics_addr, ":9000");
	assert_string_equal(a.seed_arg, "7"); /* read once the file is loaded */
	assert_false(a.cleanup || a.check_only || a.simulate);

	assert_int_equal(PARSE(&a, "--check-config", "y.ini"), 0);
	assert_string_equal(a.cfg_path, "y.ini");
	assert_true(a.check_only);
	assert_null(a.log_path);
	assert_true(a.duration == 0);

	assert_int_equal(PARSE(&a, "-c", "z.ini", "--cleanup", "--simulate"), 0);
	assert_true(a.cleanup && a.simulate);
}

static void test_refusals(void **state)
{
	struct args a;

	assert_int_equal(PARSE(&a, "-n"), -EINVAL);			  /* no config */
	assert_int_equal(PARSE(&a, "-c", "x.ini", "extra"), -EINVAL);	  /* a stray argument */
	assert_int_equal(PARSE(&a, "-c", "x.ini", "-d", "0"), -EINVAL);	  /* not > 0 */
	assert_int_equal(PARSE(&a, "-c", "x.ini", "-d", "inf"), -EINVAL); /* not bounded */
	assert_int_equal(PARSE(&a, "-c", "x.ini", "-d", "2s"), -EINVAL);  /* not a number */
	assert_int_equal(PARSE(&a, "-c", "x.ini", "--nosuch"), -EINVAL);  /* usage on stderr */
}

static void test_done(void **state)
{
	struct args a;

	assert_int_equal(PARSE(&a, "--version"), ARGS_DONE);
	assert_int_equal(PARSE(&a, "-V", "--nosuch"),
			 ARGS_DONE); /* in order, as getopt sees them */
	assert_int_equal(PARSE(&a, "--nosuch", "-V"), -EINVAL);
	assert_int_equal(PARSE(&a, "-h"), ARGS_DONE);
	assert_int_equal(PARSE(&a, "--list-policies"), ARGS_DONE); /* no -c needed */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_options),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_done),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
