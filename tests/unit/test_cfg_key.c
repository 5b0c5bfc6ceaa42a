// SPDX-License-Identifier: MIT
/*
 * cfg_key: a table of keys read into a struct. Each type's parsing, range
 * rules and messages, unit scaling (exact for whole numbers, a value above 0
 * never rounding to the 0 that means "default"), defaults, a key given
 * twice, and a policy setting the table does not have.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "cfg_key.h"

enum mode { MODE_A = 0, MODE_B };

struct sec {
	unsigned int ms;
	long khz;
	long mc;
	double ns;
	int whole;
	bool on;
	enum cfg_tristate tri;
	enum mode mode;
	char name[8];
	char path[32];
	uint64_t seed;
};

static int parse_seed(const struct cfg_key *k, void *base, const char *val, void *ctx, char *err,
		      size_t len)
{
	if (strcmp(val, "lucky"))
		return cfg_key_fail(k, val, err, len);
	((struct sec *)base)->seed = 7;
	return 0;
}

#define S(f) CFG_KEY_AT(struct sec, f)
static const struct cfg_key keys[] = {
	{ "ms", CFG_KEY_WHOLE, S(ms), .lo = 10, .hi = 600, .def = 500 },
	{ "mhz", CFG_KEY_WHOLE, S(khz), .lo = 0, .hi = 100000, .scale = 1000, .def = 100 },
	{ "cores", CFG_KEY_REAL, S(mc),
	  .rule = { { 0, INFINITY, CFG_KEY_LO_OPEN, "%s must be > 0 cores, not %s" },
		    { -INFINITY, 1024, 0, "%s must be at most 1024 cores, not %s" } },
	  .scale = 1000 },
	{ "target_ms", CFG_KEY_REAL, S(ns), .rule = { { 0, 10 } }, .scale = 1e6 },
	{ "whole", CFG_KEY_REAL, S(whole),
	  .rule = { { 1, 100 },
		    { -INFINITY, INFINITY, CFG_KEY_INTEGRAL, "%s: '%s' is not a whole number" } } },
	{ "on", CFG_KEY_BOOL, S(on), .def = true },
	{ "tri", CFG_KEY_TRISTATE, S(tri), .def = CFG_OFF },
	{ "mode", CFG_KEY_CHOICE, S(mode), .names = (const char *const[]){ "a", "b", NULL },
	  .msg = "%1$s must be a or b, not '%2$s'", .def = MODE_B },
	{ "name", CFG_KEY_STRING, S(name), .msg = "%1$s: '%2$s' is not a %1$s" },
	{ "path", CFG_KEY_STRING, S(path), .def_str = "/run/x" },
	{ "seed", CFG_KEY_CUSTOM, S(seed), .msg = "%s: '%s' is not lucky", .parse = parse_seed },
};
#define NKEYS ((int)(sizeof(keys) / sizeof(keys[0])))

static struct sec s;
static char err[256];

static int set(const char *key, const char *val)
{
	const struct cfg_key *k = cfg_key_find(keys, NKEYS, key);

	assert_non_null(k);
	err[0] = '\0';
	return cfg_key_set(k, &s, val, NULL, err, sizeof(err));
}

static void expect(const char *key, const char *val, const char *msg)
{
	assert_int_equal(set(key, val), -EINVAL);
	assert_string_equal(err, msg);
}

static void test_defaults(void **state)
{
	memset(&s, 0, sizeof(s));
	cfg_key_defaults(keys, NKEYS, &s);
	assert_int_equal(s.ms, 500);
	assert_int_equal(s.khz, 100000);
	assert_int_equal(s.mc, 0); /* no default: left alone */
	assert_true(s.on);
	assert_int_equal(s.tri, CFG_OFF);
	assert_int_equal(s.mode, MODE_B);
	assert_string_equal(s.path, "/run/x");
}

static void test_whole(void **state)
{
	assert_int_equal(set("ms", "600"), 0);
	assert_int_equal(s.ms, 600);
	expect("ms", "601", "ms: '601' is not a whole number in 10..600");
	expect("ms", "1.5", "ms: '1.5' is not a whole number in 10..600");
	expect("ms", "", "ms: '' is not a whole number in 10..600");
	assert_int_equal(set("mhz", "2301"), 0);
	assert_int_equal(s.khz, 2301000); /* MHz into kHz, exactly */
}

static void test_real_rules(void **state)
{
	assert_int_equal(set("cores", "0.5"), 0);
	assert_int_equal(s.mc, 500);
	assert_int_equal(set("cores", "0.0015"), 0);
	assert_int_equal(s.mc, 2);
	/* above 0, so never the 0 that means "not given" */
	assert_int_equal(set("cores", "0.0004"), 0);
	assert_int_equal(s.mc, 1);
	expect("cores", "0", "cores must be > 0 cores, not 0");
	expect("cores", "2000", "cores must be at most 1024 cores, not 2000");
	expect("cores", "x", "cores: 'x' is not a number");
	expect("cores", "inf", "cores: 'inf' is not a number");
	assert_int_equal(set("target_ms", "2.5"), 0);
	assert_true(s.ns == 2.5e6);
	/* a bare range says the same for a bad number and a number out of range */
	expect("target_ms", "11", "target_ms: '11' is not a number in 0..10");
	expect("target_ms", "soon", "target_ms: 'soon' is not a number in 0..10");
	assert_int_equal(set("whole", "4"), 0);
	assert_int_equal(s.whole, 4);
	expect("whole", "2.5", "whole: '2.5' is not a whole number");
	expect("whole", "0", "whole: '0' is not a number in 1..100");
}

static void test_words(void **state)
{
	assert_int_equal(set("on", "off"), 0);
	assert_false(s.on);
	expect("on", "maybe", "on: 'maybe' is not a boolean (true or false)");
	assert_int_equal(set("tri", "auto"), 0);
	assert_int_equal(s.tri, CFG_AUTO);
	assert_int_equal(set("tri", "yes"), 0);
	assert_int_equal(s.tri, CFG_ON);
	expect("tri", "2", "tri: '2' must be auto, true or false");
	assert_int_equal(set("mode", "a"), 0);
	assert_int_equal(s.mode, MODE_A);
	expect("mode", "c", "mode must be a or b, not 'c'");
	assert_int_equal(set("name", "web"), 0);
	assert_string_equal(s.name, "web");
	expect("name", "", "name: '' is not a name");
	expect("name", "too-long-a-name", "name: 'too-long-a-name' is not a name");
	assert_int_equal(set("seed", "lucky"), 0);
	assert_int_equal(s.seed, 7);
	expect("seed", "13", "seed: '13' is not lucky");
}

static void test_take(void **state)
{
	int line_of[NKEYS] = { 0 };

	assert_int_equal(
	    cfg_key_take(keys, NKEYS, line_of, &s, "ms", "20", 3, "sec", NULL, err, sizeof(err)),
	    1);
	assert_int_equal(line_of[0], 3);
	assert_int_equal(s.ms, 20);
	assert_int_equal(
	    cfg_key_take(keys, NKEYS, line_of, &s, "ms", "30", 4, "sec", NULL, err, sizeof(err)),
	    -EINVAL);
	assert_string_equal(err, "ms given twice in [sec]");
	assert_int_equal(s.ms, 20);
	assert_int_equal(
	    cfg_key_take(keys, NKEYS, line_of, &s, "nokey", "1", 5, "sec", NULL, err, sizeof(err)),
	    0);
}

static void test_setting(void **state)
{
	assert_int_equal(cfg_key_setting(keys, NKEYS, &s, "ms", "40", err, sizeof(err)), 0);
	assert_int_equal(s.ms, 40);
	assert_int_equal(cfg_key_setting(keys, NKEYS, &s, "bogus", "1", err, sizeof(err)), -ENOENT);
	assert_int_equal(cfg_key_setting(keys, NKEYS, &s, "bogus", "x", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "bogus: 'x' is not a number");
}

static void test_list(void **state)
{
	char buf[32];

	cfg_key_list(keys, 3, buf, sizeof(buf));
	assert_string_equal(buf, "ms, mhz, cores");
	cfg_key_list(keys, NKEYS, buf, sizeof(buf)); /* cut, terminated */
	assert_int_equal(strlen(buf), sizeof(buf) - 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),   cmocka_unit_test(test_whole),
		cmocka_unit_test(test_real_rules), cmocka_unit_test(test_words),
		cmocka_unit_test(test_take),	   cmocka_unit_test(test_setting),
		cmocka_unit_test(test_list),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
