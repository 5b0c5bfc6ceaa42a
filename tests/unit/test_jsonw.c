// SPDX-License-Identifier: MIT
/*
 * The one JSON writer (common/jsonw.c) behind the parties log, `ebee trace
 * --json` and the load generator's summary: commas and nesting, string
 * escaping, null for non-finite numbers and NULL strings, the time format,
 * and a line Python's json module reads back.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "jsonw.h"

static char *buf;
static size_t len;

static FILE *mem(void)
{
	free(buf);
	buf = NULL;
	return open_memstream(&buf, &len);
}

static void test_nesting(void **state)
{
	FILE *f = mem();
	struct jw j;

	jw_begin(&j, f);
	jw_int(&j, "a", -3);
	jw_arr(&j, "wl");
	jw_obj(&j, NULL);
	jw_str(&j, "name", "web");
	jw_uint(&j, "n", 18446744073709551615ull);
	jw_close(&j);
	jw_obj(&j, NULL);
	jw_bool(&j, "alive", false);
	jw_end(&j); /* closes the object and the array */
	fclose(f);
	assert_string_equal(buf, "{\"a\":-3,\"wl\":[{\"name\":\"web\",\"n\":18446744073709551615},"
				 "{\"alive\":false}]}\n");
}

static void test_values(void **state)
{
	FILE *f = mem();
	struct jw j;

	jw_begin(&j, f);
	jw_str(&j, "s", "q\"b\\s\n\x01");
	jw_str(&j, "nul", NULL);
	jw_num(&j, "nan", NAN, 1);
	jw_num(&j, "inf", INFINITY, 1);
	jw_num(&j, "x", 2.25, 1);
	jw_null(&j, "z");
	jw_end(&j);
	fclose(f);
	assert_string_equal(buf, "{\"s\":\"q\\\"b\\\\s\\u000a\\u0001\",\"nul\":null,\"nan\":null,"
				 "\"inf\":null,\"x\":2.2,\"z\":null}\n");
}

static void test_time(void **state)
{
	FILE *f = mem();
	struct jw j;
	int y, mo, d, h, mi, s, ms;
	char z;

	jw_begin(&j, f);
	jw_time(&j, "time");
	jw_end(&j);
	fclose(f);
	assert_int_equal(strlen(buf), strlen("{\"time\":\"2026-11-30T18:55:53.123Z\"}\n"));
	assert_int_equal(sscanf(buf, "{\"time\":\"%4d-%2d-%2dT%2d:%2d:%2d.%3d%c", &y, &mo, &d, &h,
				&mi, &s, &ms, &z),
			 8);
	assert_true(y >= 2024 && mo >= 1 && mo <= 12 && ms >= 0 && ms <= 999);
	assert_int_equal(z, 'Z');
}

static void test_python_reads_it(void **state)
{
	FILE *f;
	struct jw j;
	char cmd[4096];

	if (system("command -v python3 >/dev/null 2>&1")) {
		skip();
		return;
	}
	f = fopen("/tmp/test_jsonw.json", "w");
	assert_non_null(f);
	jw_begin(&j, f);
	jw_time(&j, "time");
	jw_str(&j, "odd", "tab\there \"quoted\" \\ back");
	jw_arr(&j, "h");
	for (int i = 0; i < 3; i++)
		jw_uint(&j, NULL, i);
	jw_end(&j);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "python3 -c 'import json; o = json.load(open(\"/tmp/test_jsonw.json\")); "
		 "assert o[\"odd\"] == \"tab\\there \\\"quoted\\\" \\\\ back\", o; "
		 "assert o[\"h\"] == [0, 1, 2]'");
	assert_int_equal(system(cmd), 0);
	remove("/tmp/test_jsonw.json");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nesting),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_time),
		cmocka_unit_test(test_python_reads_it),
	};
	int ret = cmocka_run_group_tests(tests, NULL, NULL);

	free(buf);
	return ret;
}
