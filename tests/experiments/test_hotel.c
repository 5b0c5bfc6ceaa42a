// SPDX-License-Identifier: MIT
/*
 * The hotel search workload's logic (experiments/workloads/hotel/search.c, mc.c): the
 * documented answer for the standard query, the grid walk against brute force, the 10 km
 * cut-off, the rate table, the cached value format and the memcached reply parser.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../../experiments/workloads/hotel/search.c"
#include "../../experiments/workloads/hotel/mc.c"

static int setup_geo(void **state)
{
	static struct hotel_geo g;

	if (hotel_geo_build(&g))
		return -1;
	*state = &g;
	return 0;
}

static int teardown_geo(void **state)
{
	hotel_geo_free(*state);
	return 0;
}

static void test_standard_nearest(void **state)
{
	const struct hotel_geo *g = *state;
	struct hotel_hit hits[HOTEL_K];
	int want[] = { 4, 6, 2, 1, 3 }; /* by distance: 0.80, 1.11, 1.21, 1.37, 1.52 km */
	int n = hotel_geo_nearest(g, HOTEL_STD_LAT, HOTEL_STD_LON, HOTEL_K, hits);

	assert_int_equal(n, 5);
	for (int i = 0; i < 5; i++)
		assert_int_equal(hits[i].id, want[i]);
	assert_true(hits[0].km > 0.79 && hits[0].km < 0.82);
	assert_true(hits[4].km > 1.50 && hits[4].km < 1.54);
}

static void test_standard_answer(void **state)
{
	const struct hotel_geo *g = *state;
	struct hotel_hit hits[HOTEL_K];
	struct hotel_rate rates[HOTEL_K];
	int ids[HOTEL_K], n;
	char json[128];

	n = hotel_geo_nearest(g, HOTEL_STD_LAT, HOTEL_STD_LON, HOTEL_K, hits);
	for (int i = 0; i < n; i++)
		assert_int_equal(hotel_rate_db(hits[i].id, &rates[i]), 0);
	n = hotel_rank(rates, n, ids);
	assert_int_equal(n, 3);
	assert_int_equal(ids[0], 2);
	assert_int_equal(ids[1], 1);
	assert_int_equal(ids[2], 3);
	assert_true(hotel_json_ids(ids, n, json, sizeof(json)) > 0);
	assert_string_equal(json, "{\"hotelIds\":[\"2\",\"1\",\"3\"]}");
	/* The order of the input does not matter. */
	for (int i = 0; i < 3; i++)
		hotel_rate_db(3 - i, &rates[i]);
	n = hotel_rank(rates, 3, ids);
	assert_int_equal(ids[0] * 100 + ids[1] * 10 + ids[2], 213);
}

static void assert_same(const struct hotel_hit *a, int na, const struct hotel_hit *b, int nb,
			double lat, double lon)
{
	if (na != nb)
		fail_msg("query %.6f,%.6f: grid found %d, brute force %d", lat, lon, na, nb);
	for (int i = 0; i < na; i++) {
		if (a[i].id != b[i].id || a[i].km != b[i].km)
			fail_msg("query %.6f,%.6f: #%d grid %d (%.4f km), brute %d (%.4f km)", lat,
				 lon, i, a[i].id, a[i].km, b[i].id, b[i].km);
	}
}

static void test_grid_equals_brute(void **state)
{
	const struct hotel_geo *g = *state;
	unsigned int seed = 12345;
	int some = 0, full = 0;

	/* The dataset's box (37.78..38.27, -122.42..-121.77) with 15 km of margin. */
	for (int i = 0; i < 20000; i++) {
		double lat = 37.64 + 0.77 * rand_r(&seed) / RAND_MAX;
		double lon = -122.59 + 0.99 * rand_r(&seed) / RAND_MAX;
		struct hotel_hit a[HOTEL_K], b[HOTEL_K];
		int k = 1 + i % HOTEL_K;
		int na = hotel_geo_nearest(g, lat, lon, k, a);
		int nb = hotel_geo_nearest_brute(lat, lon, k, b);

		assert_same(a, na, b, nb, lat, lon);
		some += na > 0;
		full += na == k;
	}
	/* The sample covers near, partial and empty answers. */
	assert_true(full > 1000 && some > full && some < 20000);
	/* Exactly on hotels and on cell corners. */
	for (int i = 0; i < HOTEL_COUNT; i++) {
		struct hotel_hit a[HOTEL_K], b[HOTEL_K];
		double lat = hotel_points[i].lat, lon = hotel_points[i].lon;
		int na = hotel_geo_nearest(g, lat, lon, HOTEL_K, a);

		assert_same(a, na, b, hotel_geo_nearest_brute(lat, lon, HOTEL_K, b), lat, lon);
		assert_int_equal(a[0].id, hotel_points[i].id);
		lat = g->lat0 + (i % 7) * g->cell_lat;
		lon = g->lon0 + (i % 11) * g->cell_lon;
		na = hotel_geo_nearest(g, lat, lon, HOTEL_K, a);
		assert_same(a, na, b, hotel_geo_nearest_brute(lat, lon, HOTEL_K, b), lat, lon);
	}
}

static void test_cutoff_10km(void **state)
{
	const struct hotel_geo *g = *state;
	const struct hotel_point *h80 = &hotel_points[79], *h79 = &hotel_points[78];
	struct hotel_hit a[HOTEL_K];
	double lat, lon;
	int n;

	/* Beyond hotel 80 along the diagonal, 9.5 km from it: hotel 79 is about 10.4 km away. */
	for (double t = 0;; t += 0.01) {
		lat = h80->lat + t * (h80->lat - h79->lat);
		lon = h80->lon + t * (h80->lon - h79->lon);
		if (hotel_haversine_km(lat, lon, h80->lat, h80->lon) >= 9.5)
			break;
	}
	assert_true(hotel_haversine_km(lat, lon, h79->lat, h79->lon) > HOTEL_MAX_KM);
	n = hotel_geo_nearest(g, lat, lon, HOTEL_K, a);
	assert_int_equal(n, 1);
	assert_int_equal(a[0].id, 80);
	/* 50 km south of downtown: nothing, and far away on the globe: nothing. */
	assert_int_equal(hotel_geo_nearest(g, 37.34, -122.41, HOTEL_K, a), 0);
	assert_int_equal(hotel_geo_nearest(g, -33.86, 151.2, HOTEL_K, a), 0);
	assert_int_equal(hotel_geo_nearest(g, 90, 0, HOTEL_K, a), 0);
	/* Every answer lies within 10 km. */
	for (double d = 0; d < 0.3; d += 0.01) {
		n = hotel_geo_nearest(g, 37.70 - d, -122.45 - d, HOTEL_K, a);
		for (int i = 0; i < n; i++)
			assert_true(a[i].km <= HOTEL_MAX_KM);
	}
}

static void test_rate_table(void **state)
{
	struct {
		int id;
		double total;
	} want[] = {
		{ 1, 109 },  { 2, 139 },  { 3, 109 },  { 4, 0 },    { 5, 0 },	 { 6, 0 },
		{ 7, 0 },    { 8, 0 },	  { 9, 232 },  { 12, 124 }, { 15, 109 }, { 18, 132 },
		{ 21, 120 }, { 24, 232 }, { 78, 132 }, { 79, 0 },   { 80, 0 },
	};
	struct hotel_rate r;
	int plans = 0;

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_int_equal(hotel_rate_db(want[i].id, &r), 0);
		assert_int_equal(r.id, want[i].id);
		assert_int_equal(r.has_plan, want[i].total > 0);
		if (want[i].total > 0) {
			assert_true(r.total_rate == want[i].total);
			assert_string_equal(r.code, "RACK");
			assert_string_equal(r.in_date, "2015-04-09");
		}
	}
	hotel_rate_db(9, &r);
	assert_string_equal(r.out_date, "2015-04-24");
	hotel_rate_db(12, &r);
	assert_string_equal(r.out_date, "2015-04-17");
	for (int id = 1; id <= HOTEL_COUNT; id++) {
		assert_int_equal(hotel_rate_db(id, &r), 0);
		plans += r.has_plan;
		assert_int_equal(r.has_plan, id <= 3 || (id >= 7 && id % 3 == 0));
	}
	assert_int_equal(plans, 3 + 24);
	assert_int_equal(hotel_rate_db(0, &r), -ENOENT);
	assert_int_equal(hotel_rate_db(81, &r), -ENOENT);
}

static void test_rate_cache_format(void **state)
{
	char val[HOTEL_RATE_VALMAX + 1];
	struct hotel_rate r, back;
	int len;

	for (int id = 1; id <= HOTEL_COUNT; id++) {
		hotel_rate_db(id, &r);
		len = hotel_rate_encode(&r, val, sizeof(val));
		assert_true(len > 0);
		assert_int_equal(hotel_rate_decode(id, val, len, &back), 0);
		assert_int_equal(back.has_plan, r.has_plan);
		assert_true(back.total_rate == r.total_rate);
		/* A value for another hotel, or a truncated one, is not a hit. */
		if (r.has_plan) {
			assert_int_equal(hotel_rate_decode(id + 1, val, len, &back), -EINVAL);
			assert_int_equal(hotel_rate_decode(id, val, len - 1, &back), -EINVAL);
		}
	}
	assert_int_equal(hotel_rate_decode(2, "garbage", 7, &back), -EINVAL);
}

static void test_mc_parse(void **state)
{
	const char *reply = "VALUE rate:4 0 4\r\nnone\r\nVALUE rate:9 0 3\r\nbad\r\nEND\r\n";
	int ids[] = { 2, 4, 9 };
	struct hotel_rate out[3];
	bool hit[3] = { false };
	size_t len = strlen(reply);

	for (size_t cut = 0; cut < len; cut++)
		assert_int_equal(mc_parse_get(reply, cut, ids, 3, out, hit), 0);
	memset(hit, 0, sizeof(hit));
	assert_int_equal(mc_parse_get(reply, len, ids, 3, out, hit), (int)len);
	assert_false(hit[0]);
	assert_true(hit[1] && !out[1].has_plan);
	assert_false(hit[2]); /* not a value we wrote: a miss */
	assert_int_equal(mc_parse_get("ERROR\r\n", 7, ids, 3, out, hit), -EPROTO);
	assert_int_equal(mc_parse_get("END\r\n", 5, ids, 3, out, hit), 5);
}

static void test_parse_query(void **state)
{
	struct hotel_query q;
	const char *why;

	assert_int_equal(hotel_parse_query(NULL, &q, &why), 0);
	assert_true(q.lat == HOTEL_STD_LAT && q.lon == HOTEL_STD_LON);
	assert_string_equal(q.in_date, "2015-04-09");
	assert_string_equal(q.out_date, "2015-04-11");
	assert_int_equal(hotel_parse_query("lat=37.5&lon=-122%2E1&x=y&&inDate=2015-05-01&"
					   "outDate=2015-05-03",
					   &q, &why),
			 0);
	assert_true(q.lat == 37.5 && q.lon == -122.1);
	assert_string_equal(q.out_date, "2015-05-03");
	assert_int_equal(hotel_parse_query("lat=91", &q, &why), -EINVAL);
	assert_string_equal(why, "lat");
	assert_int_equal(hotel_parse_query("lon=abc", &q, &why), -EINVAL);
	assert_string_equal(why, "lon");
	assert_int_equal(hotel_parse_query("lat=", &q, &why), -EINVAL);
	assert_int_equal(hotel_parse_query("lat=nan", &q, &why), -EINVAL);
	assert_int_equal(hotel_parse_query("lat=1%zz", &q, &why), -EINVAL);
	assert_int_equal(hotel_parse_query("inDate=2015-13-01", &q, &why), -EINVAL);
	assert_string_equal(why, "inDate");
	assert_int_equal(hotel_parse_query("outDate=2015-04-09", &q, &why), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_standard_nearest),  cmocka_unit_test(test_standard_answer),
		cmocka_unit_test(test_grid_equals_brute), cmocka_unit_test(test_cutoff_10km),
		cmocka_unit_test(test_rate_table),	  cmocka_unit_test(test_rate_cache_format),
		cmocka_unit_test(test_mc_parse),	  cmocka_unit_test(test_parse_query),
	};

	return cmocka_run_group_tests(tests, setup_geo, teardown_geo);
}
