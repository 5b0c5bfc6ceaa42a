// SPDX-License-Identifier: MIT
/*
 * The framing scope's set logic (metrics/src/cgv2.c): which cgroup covers
 * which, and the reduction to cgroups no other covers, so that the framing
 * program is never attached both to a cgroup and to one of its ancestors
 * (it would then walk every packet below twice). No kernel needed. And, as
 * libebee alone links it, the hierarchy's root found through
 * common/cgroupfs.c (compiled into libebee): opened where it is mounted, and
 * a workload forgotten without an open hierarchy is nothing to do.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../../metrics/src/cgv2.h"
#include "cgroupfs.h"

static void test_covers(void **state)
{
	(void)state;
	assert_true(ebee_cg2_covers("/", "/"));
	assert_true(ebee_cg2_covers("/", "/a/b"));
	assert_true(ebee_cg2_covers("/a", "/a"));
	assert_true(ebee_cg2_covers("/a", "/a/b"));
	assert_true(ebee_cg2_covers("/a/b", "/a/b/c.service"));
	/* A name that begins like another is not below it. */
	assert_false(ebee_cg2_covers("/a", "/ab"));
	assert_false(ebee_cg2_covers("/system.slice/x", "/system.slice/x.service"));
	assert_false(ebee_cg2_covers("/a/b", "/a"));
	assert_false(ebee_cg2_covers("/a", "/"));
}

/* reduce over a copy of the given paths; the result joined with spaces. */
static const char *reduced(const char *const *in, size_t n)
{
	static char out[512];
	char **p = calloc(n ? n : 1, sizeof(*p));
	size_t m, off = 0;

	for (size_t i = 0; i < n; i++)
		p[i] = strdup(in[i]);
	m = ebee_cg2_reduce(p, n);
	out[0] = 0;
	for (size_t i = 0; i < m; i++) {
		off += snprintf(out + off, sizeof(out) - off, "%s%s", i ? " " : "", p[i]);
		free(p[i]);
	}
	free(p);
	return out;
}

static void test_reduce(void **state)
{
	static const char *const dup[] = { "/a", "/b", "/a" };
	static const char *const nested[] = { "/a/b", "/c", "/a", "/a/b/c" };
	static const char *const root[] = { "/x", "/", "/y/z", "/" };
	static const char *const prefix[] = { "/ab", "/a" };
	static const char *const one[] = { "/system.slice/redis.service" };

	(void)state;
	assert_string_equal(reduced(dup, 3), "/a /b");
	/* The order of what stays is kept. */
	assert_string_equal(reduced(nested, 4), "/c /a");
	assert_string_equal(reduced(root, 4), "/");
	assert_string_equal(reduced(prefix, 2), "/ab /a");
	assert_string_equal(reduced(one, 1), "/system.slice/redis.service");
	assert_string_equal(reduced(NULL, 0), "");
}

/* ebee_cg2_open() opens the mount cgfs_v2_mount() finds on this host, and
 * fails as it does when there is none. */
static void test_open_here(void **state)
{
	struct ebee_cg2 *cg = NULL;
	char mnt[512];
	int err = cgfs_v2_mount(mnt, sizeof(mnt), NULL);

	(void)state;
	if (err) {
		assert_int_equal(ebee_cg2_open(&cg), err);
		return;
	}
	assert_int_equal(ebee_cg2_open(&cg), 0);
	assert_non_null(cg);
	ebee_cg2_wl_del(cg, 1); /* no such workload */
	ebee_cg2_close(cg);
	ebee_cg2_wl_del(NULL, 1); /* no hierarchy: nothing to forget */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_covers),
		cmocka_unit_test(test_reduce),
		cmocka_unit_test(test_open_here),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
