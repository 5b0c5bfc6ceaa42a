// SPDX-License-Identifier: MIT
/*
 * parties' metrics page (controller/pmetrics.c) from a hand-made loop state:
 * base units (quota in cores, frequency in hertz, seconds), unmanaged
 * resources absent, actions counted by workload and kind across intervals,
 * NaN slack when the latency is not fresh, and promtool accepts the page.
 */
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

#include "pmetrics.h"

static struct loop l;

static void setup_loop(void)
{
	memset(&l, 0, sizeof(l));
	l.nwl = 2;
	l.obs.nwl = 2;
	l.obs.res[POL_RES_CORES].avail = true;
	l.obs.res[POL_RES_QUOTA].avail = true;
	snprintf(l.obs.wl[0].name, POL_NAME_LEN, "web");
	snprintf(l.obs.wl[1].name, POL_NAME_LEN, "batch \"x\"");
	l.obs.wl[0].alive = l.obs.wl[1].alive = true;
	l.obs.wl[0].target_ns = 1000e3;
	l.obs.wl[0].p99_ns = 1250e3;
	l.obs.wl[0].slack = -0.25;
	l.obs.wl[1].target_ns = 25000e3;
	l.obs.wl[1].state = POL_LAT_STALE;
	l.wl[0].alloc[POL_RES_CORES] = 2;
	l.wl[0].alloc[POL_RES_QUOTA] = 1500;
	l.wl[1].alloc[POL_RES_CORES] = 1;
	snprintf(l.dec.wl[0].action, POL_ACTION_LEN, "up cores");
	snprintf(l.dec.wl[1].action, POL_ACTION_LEN, "hold");
	l.stats.intervals = 1;
}

static void test_page(void **state)
{
	struct pmetrics_state *s = pmetrics_state_new();
	struct prom_buf b;

	setup_loop();
	pmetrics_state_update(s, &l, 0.0005);
	l.stats.intervals = 2;
	pmetrics_state_update(s, &l, 0.0004);
	snprintf(l.dec.wl[0].action, POL_ACTION_LEN, "down quota");
	pmetrics_state_update(s, &l, 0.0003);
	prom_init(&b);
	assert_int_equal(pmetrics_state_render(s, &b), 0);
	assert_non_null(strstr(b.p, "parties_target_seconds{workload=\"web\"} 0.001\n"));
	assert_non_null(
	    strstr(b.p, "parties_target_seconds{workload=\"batch \\\"x\\\"\"} 0.025\n"));
	assert_non_null(strstr(b.p, "parties_latency_p99_seconds{workload=\"web\"} 0.00125\n"));
	assert_non_null(strstr(b.p, "parties_slack_ratio{workload=\"web\"} -0.25\n"));
	assert_non_null(strstr(b.p, "parties_slack_ratio{workload=\"batch \\\"x\\\"\"} NaN\n"));
	assert_non_null(strstr(b.p, "parties_cores{workload=\"web\"} 2\n"));
	assert_non_null(strstr(b.p, "parties_quota_cores{workload=\"web\"} 1.5\n"));
	assert_null(strstr(b.p, "parties_frequency_hertz")); /* not managed */
	assert_non_null(
	    strstr(b.p, "parties_actions_total{workload=\"web\",kind=\"up cores\"} 2\n"));
	assert_non_null(
	    strstr(b.p, "parties_actions_total{workload=\"web\",kind=\"down quota\"} 1\n"));
	assert_null(strstr(b.p, "kind=\"hold\""));
	assert_non_null(strstr(b.p, "parties_interval_duration_seconds 0.0003\n"));
	assert_non_null(strstr(b.p, "parties_intervals_total 2\n"));
	assert_non_null(strstr(b.p, "# TYPE process_cpu_seconds_total counter\n"));

	if (!system("command -v promtool >/dev/null 2>&1")) {
		char path[] = "/tmp/test_pmetrics.XXXXXX", cmd[128];
		int fd = mkstemp(path);

		assert_true(fd >= 0);
		assert_int_equal(write(fd, b.p, b.len), (ssize_t)b.len);
		close(fd);
		snprintf(cmd, sizeof(cmd), "promtool check metrics < %s", path);
		assert_int_equal(system(cmd), 0);
		unlink(path);
	}
	prom_free(&b);
	pmetrics_state_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_page),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
