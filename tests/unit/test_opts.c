// SPDX-License-Identifier: MIT
/*
 * The one options check (common/opts.h, libbpf's OPTS_VALID and OPTS_GET) and
 * libebee's use of it (no root: ebee_open() checks its options before it
 * touches anything).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "ebee.h"
#include "opts.h"

/* A build's view of an options struct, and a newer caller's. */
struct t_opts {
	size_t sz;
	int need; /* required */
	long opt; /* optional */
};

struct t_opts_newer {
	struct t_opts o;
	long newer;
};

#define T_MIN	OPTS_KNOWN_END(struct t_opts, need)
#define T_KNOWN OPTS_KNOWN_END(struct t_opts, opt)

static void test_check(void **state)
{
	struct t_opts_newer n = { .o = { .sz = sizeof(n), .need = 1, .opt = 2 } };

	assert_int_equal(opts_check(NULL, T_KNOWN), 0);
	assert_int_equal(opts_check(&n.o, T_KNOWN), 0); /* a zero tail: fine */
	n.newer = 1;					/* something this build would ignore */
	assert_int_equal(opts_check(&n.o, T_KNOWN), -E2BIG);
	assert_int_equal(opts_check_min(&n.o, T_MIN, T_KNOWN), -E2BIG);
	n.newer = 0;
	n.o.sz = 0; /* cannot hold itself */
	assert_int_equal(opts_check(&n.o, T_KNOWN), -EINVAL);
	n.o.sz = offsetof(struct t_opts, need); /* the required field cut off */
	assert_int_equal(opts_check(&n.o, T_KNOWN), 0);
	assert_int_equal(opts_check_min(&n.o, T_MIN, T_KNOWN), -EINVAL);
	n.o.sz = T_MIN; /* an older caller: without opt */
	assert_int_equal(opts_check_min(&n.o, T_MIN, T_KNOWN), 0);
	assert_int_equal(opts_check_min(NULL, T_MIN, T_KNOWN), 0);
}

static void test_get(void **state)
{
	struct t_opts o = { .sz = sizeof(o), .need = 1, .opt = 7 };
	struct t_opts *p = &o; /* as a call sees its options: a pointer */
	const struct t_opts *none = NULL;

	assert_true(OPTS_HAS(p, opt));
	assert_int_equal(OPTS_GET(p, opt, 3), 7);
	p->sz = T_MIN; /* older caller: opt is past its sz, whatever the bytes hold */
	assert_false(OPTS_HAS(p, opt));
	assert_int_equal(OPTS_GET(p, opt, 3), 3);
	assert_true(OPTS_HAS(p, need));
	assert_false(OPTS_HAS(none, need));
	assert_int_equal(OPTS_GET(none, opt, 3), 3);
}

static void test_ebee_open_newer_caller(void **state)
{
	struct {
		struct ebee_opts o;
		long newer;
	} big = { .o = { .sz = sizeof(big) }, .newer = 1 };
	char msg[256] = "";

	errno = 0;
	assert_null(ebee_open(&big.o, msg, sizeof(msg)));
	assert_int_equal(errno, E2BIG);
	assert_non_null(strstr(msg, "unknown to this libebee"));
	big.o.sz = 1; /* cannot hold itself */
	errno = 0;
	assert_null(ebee_open(&big.o, msg, sizeof(msg)));
	assert_int_equal(errno, EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_get),
		cmocka_unit_test(test_ebee_open_newer_caller),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
