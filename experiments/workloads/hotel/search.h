/* SPDX-License-Identifier: MIT */
/*
 * The pure logic of the hotel search workload (search.c): the 80-hotel dataset, the geo index,
 * the rate table, the cached form of a rate plan, the ranking of the answer and the parsing of
 * a request. No I/O here, so the unit tests can include search.c and drive it directly.
 */
#ifndef HOTEL_SEARCH_H
#define HOTEL_SEARCH_H

#include <stdbool.h>
#include <stddef.h>

#define HOTEL_COUNT	  80
#define HOTEL_K		  5	 /* nearest hotels the geo service returns */
#define HOTEL_MAX_KM	  10.0	 /* and only within this distance */
#define HOTEL_CELL_KM	  0.5	 /* geo grid cell edge */
#define HOTEL_EARTH_KM	  6371.0 /* mean Earth radius for haversine */
#define HOTEL_STD_LAT	  37.7963
#define HOTEL_STD_LON	  -122.4015
#define HOTEL_STD_IN	  "2015-04-09"
#define HOTEL_STD_OUT	  "2015-04-11"
#define HOTEL_DATE_LEN	  10
#define HOTEL_RATE_VALMAX 256 /* longest cached rate value */

struct hotel_point {
	int id; /* 1..HOTEL_COUNT */
	double lat, lon;
};

/* Hotel id -> coordinates, index id - 1. */
extern const struct hotel_point hotel_points[HOTEL_COUNT];

struct hotel_hit {
	int id;
	double km;
};

/*
 * The geo index: hotels bucketed in a grid of HOTEL_CELL_KM cells (rows of latitude, columns
 * of longitude, the column width taken at the dataset's reference latitude). Read-only once
 * built, so worker threads share one.
 */
struct hotel_geo {
	double lat0, lon0;	   /* south-west corner of cell (0, 0) */
	double cell_lat, cell_lon; /* cell size in degrees */
	double cos_max;		   /* lowest cos(latitude) of any indexed hotel */
	int rows, cols;
	int *start; /* rows * cols + 1 offsets into ids (CSR) */
	int ids[HOTEL_COUNT];
};

/* Build the index over hotel_points. 0 or -ENOMEM. */
int hotel_geo_build(struct hotel_geo *g);
void hotel_geo_free(struct hotel_geo *g);

/* Great-circle distance in km. */
double hotel_haversine_km(double lat1, double lon1, double lat2, double lon2);

/*
 * The k <= HOTEL_K nearest hotels within HOTEL_MAX_KM of (lat, lon), nearest first, ties by
 * lower id, walking the grid ring by ring from the query's cell. Returns how many (0..k).
 */
int hotel_geo_nearest(const struct hotel_geo *g, double lat, double lon, int k,
		      struct hotel_hit *out);

/* The same answer by checking every hotel: the reference the grid walk must equal. */
int hotel_geo_nearest_brute(double lat, double lon, int k, struct hotel_hit *out);

/* One rate plan, as the original's rate database holds it. */
struct hotel_rate {
	int id;
	bool has_plan; /* false: the hotel has no rate plan */
	char code[8];  /* "RACK" */
	char in_date[HOTEL_DATE_LEN + 1], out_date[HOTEL_DATE_LEN + 1];
	char room_code[8];
	char room_desc[32];
	double bookable_rate, total_rate, total_rate_inclusive;
};

/* The "database": the plan of hotel id (1..HOTEL_COUNT). 0, or -ENOENT for an unknown id. */
int hotel_rate_db(int id, struct hotel_rate *out);

/* The value cached in memcached for a plan (or its absence). Returns the length, or -ENOSPC. */
int hotel_rate_encode(const struct hotel_rate *r, char *buf, size_t len);
/* Parse a cached value of hotel id back. 0, or -EINVAL if it is not one we wrote. */
int hotel_rate_decode(int id, const char *val, size_t len, struct hotel_rate *out);

/*
 * The answer: the ids of rates[0..n) that have a plan, by total rate, highest first, ties by
 * lower id. Writes them to ids and returns how many.
 */
int hotel_rank(const struct hotel_rate *rates, int n, int *ids);

/* {"hotelIds":["2","1","3"]} for ids[0..n). Returns the length, or -ENOSPC. */
int hotel_json_ids(const int *ids, int n, char *buf, size_t len);

struct hotel_query {
	double lat, lon;
	char in_date[HOTEL_DATE_LEN + 1], out_date[HOTEL_DATE_LEN + 1];
};

/*
 * Parse the query string of GET /search?... (without the '?'; NULL or "" for none). Missing
 * parameters take the standard query's values; unknown ones are ignored. 0, or -EINVAL with
 * *why naming the bad parameter.
 */
int hotel_parse_query(const char *qs, struct hotel_query *q, const char **why);

#endif
