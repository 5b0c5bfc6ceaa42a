// SPDX-License-Identifier: MIT
/* The static policy never moves anything, whatever the latencies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "policy.h"

static void test_static_never_moves(void **state)
{
	const struct pol_ops *ops = pol_find("static");
	struct pol_observation obs;
	struct pol_decision dec;

	assert_non_null(ops);
	assert_non_null(ops->decide);
	memset(&obs, 0, sizeof(obs));
	obs.nwl = 2;
	obs.res[POL_RES_CORES] = (struct pol_res_info){
		.avail = true, .pooled = true, .step = 1, .total = 4, .free = 1
	};
	for (int i = 0; i < 2; i++) {
		obs.wl[i].alive = true;
		obs.wl[i].state = POL_LAT_FRESH;
		obs.wl[i].target_ns = 1000e3;
		obs.wl[i].alloc[POL_RES_CORES] = 1 + i;
		obs.wl[i].min[POL_RES_CORES] = 1;
		obs.wl[i].max[POL_RES_CORES] = 4;
	}
	obs.wl[0].slack = -5;
	obs.wl[1].slack = 0.9;
	for (int t = 0; t < 10; t++) {
		obs.now_ms = 1000 + 500 * (uint64_t)t;
		obs.tick = (uint64_t)t;
		pol_decision_init(&dec, &obs);
		assert_int_equal(ops->decide(NULL, &obs, &dec), 0);
		for (int i = 0; i < 2; i++)
			assert_memory_equal(dec.wl[i].alloc, obs.wl[i].alloc,
					    sizeof(obs.wl[i].alloc));
		assert_string_equal(dec.wl[0].action, "hold");
		assert_string_equal(dec.wl[1].action, "hold");
	}
}

static void test_registry(void **state)
{
	int n = 0;

	for (int i = 0; pol_registry[i]; i++, n++)
		assert_non_null(pol_registry[i]->decide);
	assert_true(n >= 2);
	assert_non_null(pol_find("parties"));
	assert_non_null(pol_find("static"));
	assert_null(pol_find("nope"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_static_never_moves),
		cmocka_unit_test(test_registry),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
