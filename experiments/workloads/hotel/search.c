// SPDX-License-Identifier: MIT
/*
 * The work of vSwarm's hotel "search" service (benchmarks/hotel-app, itself DeathStarBench's
 * hotelReservation): the k = 5 nearest hotels within 10 km of the query point, then the rate
 * plan of each, answering with the ids of the hotels that have a plan, highest total rate
 * first.
 *
 * Dataset, as in the original's seed data (geo.json, inventory.json, rate/db.go):
 * hotels 1-6 sit at fixed San Francisco coordinates (the original's values, not
 * approximations); hotel i in 7..80 at lat = 37.7835 + i/500*3, lon = -122.41 + i/500*4, a
 * diagonal running north-east from downtown with about 0.9 km between neighbours. For the
 * standard query (37.7963, -122.4015) the nearest five are 4, 6, 2, 1, 3 (0.80, 1.11, 1.21,
 * 1.37, 1.52 km); hotel 5 is 2.1 km away and hotel 7 more than 5 km.
 *
 * Rates: hotels 1, 2 and 3 have the plans of the original's inventory.json (total rate 109,
 * 139 and 109). Every i in 7..80 with i % 3 == 0 has one plan whose total rate follows
 * i % 5 as in the original's rate/db.go:
 *
 *	i % 5:      0     1     2     3     4
 *	total:    109   120   124   132   232    (inclusive 123.17 140 144 158 258)
 *
 * so the six totals are 109/120/124/132/232 plus hotel 2's 139. All plans are code "RACK",
 * in 2015-04-09; out 2015-04-10 for hotels 1-3 and 2015-04-17 (i even) or 2015-04-24 (i odd)
 * otherwise, again as in the original. As there, the dates are carried, not matched against
 * the query. Hotels 4, 5 and 6 have no plan, so the standard query answers 2, 1, 3: hotel 2
 * (139) first, then hotels 1 and 3 (109 each) by lower id. The original breaks that tie by
 * the order its rate service happened to collect the plans (a Go map), so any order of 1 and
 * 3 is the original's behaviour; lower id first makes ours deterministic.
 *
 * The geo index is a grid of 0.5 km cells, walked ring by ring (Chebyshev distance in cells)
 * from the query's cell. After ring r every unvisited hotel differs from the query by more
 * than r cells of latitude or of longitude, which bounds its haversine distance from below
 * (see ring_bound_km()); the walk stops when that bound exceeds the 10 km cut-off or the
 * k-th distance found. Known limit: longitudes do not wrap at +-180 degrees, which only
 * matters for queries thousands of km from the dataset (they find nothing either way).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"

#define P(i)                                                              \
	{                                                                 \
		(i), 37.7835 + (i) / 500.0 * 3, -122.41 + (i) / 500.0 * 4 \
	}

const struct hotel_point hotel_points[HOTEL_COUNT] = {
	{ 1, 37.7867, -122.4112 },
	{ 2, 37.7854, -122.4005 },
	{ 3, 37.7834, -122.4071 },
	{ 4, 37.7936, -122.3930 },
	{ 5, 37.7831, -122.4181 },
	{ 6, 37.7863, -122.4015 },
	P(7),
	P(8),
	P(9),
	P(10),
	P(11),
	P(12),
	P(13),
	P(14),
	P(15),
	P(16),
	P(17),
	P(18),
	P(19),
	P(20),
	P(21),
	P(22),
	P(23),
	P(24),
	P(25),
	P(26),
	P(27),
	P(28),
	P(29),
	P(30),
	P(31),
	P(32),
	P(33),
	P(34),
	P(35),
	P(36),
	P(37),
	P(38),
	P(39),
	P(40),
	P(41),
	P(42),
	P(43),
	P(44),
	P(45),
	P(46),
	P(47),
	P(48),
	P(49),
	P(50),
	P(51),
	P(52),
	P(53),
	P(54),
	P(55),
	P(56),
	P(57),
	P(58),
	P(59),
	P(60),
	P(61),
	P(62),
	P(63),
	P(64),
	P(65),
	P(66),
	P(67),
	P(68),
	P(69),
	P(70),
	P(71),
	P(72),
	P(73),
	P(74),
	P(75),
	P(76),
	P(77),
	P(78),
	P(79),
	P(80),
};

#undef P

static double rad(double deg)
{
	return deg * (M_PI / 180.0);
}

double hotel_haversine_km(double lat1, double lon1, double lat2, double lon2)
{
	double s1 = sin(rad(lat2 - lat1) / 2), s2 = sin(rad(lon2 - lon1) / 2);
	double h = s1 * s1 + cos(rad(lat1)) * cos(rad(lat2)) * s2 * s2;

	return 2 * HOTEL_EARTH_KM * asin(sqrt(fmin(1.0, h)));
}

int hotel_geo_build(struct hotel_geo *g)
{
	double lat_min = 90, lat_max = -90, lon_min = 180, lon_max = -180, ref;
	int *fill, n;

	memset(g, 0, sizeof(*g));
	for (int i = 0; i < HOTEL_COUNT; i++) {
		lat_min = fmin(lat_min, hotel_points[i].lat);
		lat_max = fmax(lat_max, hotel_points[i].lat);
		lon_min = fmin(lon_min, hotel_points[i].lon);
		lon_max = fmax(lon_max, hotel_points[i].lon);
	}
	ref = (lat_min + lat_max) / 2;
	g->cell_lat = HOTEL_CELL_KM / (HOTEL_EARTH_KM * M_PI / 180.0);
	g->cell_lon = g->cell_lat / cos(rad(ref));
	g->lat0 = lat_min;
	g->lon0 = lon_min;
	g->cos_max = fmin(cos(rad(lat_min)), cos(rad(lat_max)));
	g->rows = (int)floor((lat_max - lat_min) / g->cell_lat) + 1;
	g->cols = (int)floor((lon_max - lon_min) / g->cell_lon) + 1;
	n = g->rows * g->cols;
	g->start = calloc(n + 1, sizeof(*g->start));
	fill = calloc(n, sizeof(*fill));
	if (!g->start || !fill) {
		free(fill);
		hotel_geo_free(g);
		return -ENOMEM;
	}
	/* Counting sort of the hotels by cell: ids of cell c are ids[start[c]..start[c+1]). */
	for (int i = 0; i < HOTEL_COUNT; i++) {
		int r = (int)floor((hotel_points[i].lat - g->lat0) / g->cell_lat);
		int c = (int)floor((hotel_points[i].lon - g->lon0) / g->cell_lon);

		g->start[r * g->cols + c + 1]++;
	}
	for (int c = 0; c < n; c++)
		g->start[c + 1] += g->start[c];
	for (int i = 0; i < HOTEL_COUNT; i++) {
		int r = (int)floor((hotel_points[i].lat - g->lat0) / g->cell_lat);
		int c = (int)floor((hotel_points[i].lon - g->lon0) / g->cell_lon);
		int cell = r * g->cols + c;

		g->ids[g->start[cell] + fill[cell]++] = hotel_points[i].id;
	}
	free(fill);
	return 0;
}

void hotel_geo_free(struct hotel_geo *g)
{
	free(g->start);
	g->start = NULL;
}

/* Is (km, id) nearer than b? Equal distances go to the lower id. */
static bool hit_before(double km, int id, const struct hotel_hit *b)
{
	return km < b->km || (km == b->km && id < b->id);
}

/* Offer a hotel to the sorted top-k list out[0..*n). */
static void topk_offer(struct hotel_hit *out, int *n, int k, int id, double km)
{
	int i;

	if (km > HOTEL_MAX_KM)
		return;
	if (*n == k && !hit_before(km, id, &out[k - 1]))
		return;
	i = *n < k ? (*n)++ : k - 1;
	for (; i > 0 && hit_before(km, id, &out[i - 1]); i--)
		out[i] = out[i - 1];
	out[i] = (struct hotel_hit){ .id = id, .km = km };
}

static void visit_cell(const struct hotel_geo *g, long r, long c, double lat, double lon,
		       struct hotel_hit *out, int *n, int k)
{
	int cell = (int)(r * g->cols + c);

	for (int i = g->start[cell]; i < g->start[cell + 1]; i++) {
		const struct hotel_point *p = &hotel_points[g->ids[i] - 1];

		topk_offer(out, n, k, p->id, hotel_haversine_km(lat, lon, p->lat, p->lon));
	}
}

/*
 * A lower bound on the distance from the query to any hotel outside rings 0..r. Such a hotel
 * is more than r cells away in latitude or in longitude (less a hair for rounding in the cell
 * assignment). By latitude alone its distance is at least R * dlat. By longitude, haversine
 * gives hav(d/R) >= cos(lat_q) cos(lat_p) hav(dlon) >= cos(lat_q) cos_max hav(dlon).
 */
static double ring_bound_km(const struct hotel_geo *g, long r, double lat)
{
	const double eps = 1e-9;
	double dlat = fmax(0, r * g->cell_lat - eps), dlon = fmax(0, r * g->cell_lon - eps);
	double by_lat = HOTEL_EARTH_KM * rad(fmin(dlat, 180));
	double s = sqrt(fmax(0, cos(rad(lat)) * g->cos_max)) * sin(rad(fmin(dlon, 180)) / 2);

	return fmin(by_lat, 2 * HOTEL_EARTH_KM * asin(fmin(1.0, s)));
}

int hotel_geo_nearest(const struct hotel_geo *g, double lat, double lon, int k,
		      struct hotel_hit *out)
{
	long qr = (long)floor((lat - g->lat0) / g->cell_lat);
	long qc = (long)floor((lon - g->lon0) / g->cell_lon);
	int n = 0;

	if (k <= 0)
		return 0;
	if (k > HOTEL_K)
		k = HOTEL_K;
	for (long ring = 0;; ring++) {
		long r0 = qr - ring, r1 = qr + ring, c0 = qc - ring, c1 = qc + ring;
		double bound;

		/* Top and bottom rows of the ring, whole width; then the side columns. */
		for (long r = r0; r <= r1; r += (ring ? 2 * ring : 1)) {
			if (r < 0 || r >= g->rows)
				continue;
			for (long c = (c0 < 0 ? 0 : c0); c <= c1 && c < g->cols; c++)
				visit_cell(g, r, c, lat, lon, out, &n, k);
		}
		for (long c = c0; ring && c <= c1; c += 2 * ring) {
			if (c < 0 || c >= g->cols)
				continue;
			for (long r = (r0 + 1 < 0 ? 0 : r0 + 1); r < r1 && r < g->rows; r++)
				visit_cell(g, r, c, lat, lon, out, &n, k);
		}
		/* This ring covered the whole grid: nothing is left. */
		if (r0 <= 0 && r1 >= g->rows - 1 && c0 <= 0 && c1 >= g->cols - 1)
			break;
		bound = ring_bound_km(g, ring, lat);
		if (bound > HOTEL_MAX_KM || (n == k && bound > out[k - 1].km))
			break;
	}
	return n;
}

int hotel_geo_nearest_brute(double lat, double lon, int k, struct hotel_hit *out)
{
	int n = 0;

	if (k > HOTEL_K)
		k = HOTEL_K;
	for (int i = 0; i < HOTEL_COUNT && k > 0; i++) {
		const struct hotel_point *p = &hotel_points[i];

		topk_offer(out, &n, k, p->id, hotel_haversine_km(lat, lon, p->lat, p->lon));
	}
	return n;
}

int hotel_rate_db(int id, struct hotel_rate *out)
{
	/* Hotels 1-3: inventory.json. Others: rate/db.go, total rate by i % 5. */
	static const struct {
		double total, inclusive;
	} by_mod5[5] = { { 109, 123.17 }, { 120, 140 }, { 124, 144 }, { 132, 158 }, { 232, 258 } };
	struct hotel_rate r = { .id = id };

	if (id < 1 || id > HOTEL_COUNT)
		return -ENOENT;
	strcpy(r.code, "RACK");
	strcpy(r.in_date, "2015-04-09");
	strcpy(r.room_code, "KNG");
	strcpy(r.room_desc, "King sized bed");
	if (id <= 3) {
		r.has_plan = true;
		strcpy(r.out_date, "2015-04-10");
		r.total_rate = r.bookable_rate = id == 2 ? 139 : 109;
		r.total_rate_inclusive = id == 2 ? 153.09 : 123.17;
		if (id == 2) {
			strcpy(r.room_code, "QN");
			strcpy(r.room_desc, "Queen sized bed");
		}
	} else if (id >= 7 && id % 3 == 0) {
		r.has_plan = true;
		strcpy(r.out_date, id % 2 == 0 ? "2015-04-17" : "2015-04-24");
		r.total_rate = r.bookable_rate = by_mod5[id % 5].total;
		r.total_rate_inclusive = by_mod5[id % 5].inclusive;
	}
	if (!r.has_plan)
		r = (struct hotel_rate){ .id = id };
	*out = r;
	return 0;
}

#define RATE_FMT                                                                                  \
	"{\"hotelId\":\"%d\",\"code\":\"%s\",\"inDate\":\"%s\",\"outDate\":\"%s\",\"roomType\":{" \
	"\"bookableRate\":%.2f,\"code\":\"%s\",\"roomDescription\":\"%s\",\"totalRate\":%.2f,"    \
	"\"totalRateInclusive\":%.2f}}"
#define RATE_NONE "none"

int hotel_rate_encode(const struct hotel_rate *r, char *buf, size_t len)
{
	int n;

	if (!r->has_plan)
		n = snprintf(buf, len, RATE_NONE);
	else
		n = snprintf(buf, len, RATE_FMT, r->id, r->code, r->in_date, r->out_date,
			     r->bookable_rate, r->room_code, r->room_desc, r->total_rate,
			     r->total_rate_inclusive);
	return n < 0 || (size_t)n >= len ? -ENOSPC : n;
}

int hotel_rate_decode(int id, const char *val, size_t len, struct hotel_rate *out)
{
	char copy[HOTEL_RATE_VALMAX + 1], again[HOTEL_RATE_VALMAX + 1];
	struct hotel_rate r = { .id = id };
	int got_id, n;

	if (len > HOTEL_RATE_VALMAX)
		return -EINVAL;
	memcpy(copy, val, len);
	copy[len] = '\0';
	if (!strcmp(copy, RATE_NONE)) {
		*out = r;
		return 0;
	}
	n = sscanf(
	    copy,
	    "{\"hotelId\":\"%d\",\"code\":\"%7[^\"]\",\"inDate\":\"%10[^\"]\","
	    "\"outDate\":\"%10[^\"]\",\"roomType\":{\"bookableRate\":%lf,\"code\":\"%7[^\"]\","
	    "\"roomDescription\":\"%31[^\"]\",\"totalRate\":%lf,\"totalRateInclusive\":%lf}}",
	    &got_id, r.code, r.in_date, r.out_date, &r.bookable_rate, r.room_code, r.room_desc,
	    &r.total_rate, &r.total_rate_inclusive);
	if (n != 9 || got_id != id)
		return -EINVAL;
	r.has_plan = true;
	/* Only a value we would have written ourselves: anything else in the cache is a miss. */
	n = hotel_rate_encode(&r, again, sizeof(again));
	if (n < 0 || (size_t)n != len || memcmp(again, val, len))
		return -EINVAL;
	*out = r;
	return 0;
}

int hotel_rank(const struct hotel_rate *rates, int n, int *ids)
{
	const struct hotel_rate *sel[HOTEL_COUNT];
	int m = 0;

	for (int i = 0; i < n && m < HOTEL_COUNT; i++) {
		const struct hotel_rate *r = &rates[i];
		int j;

		if (!r->has_plan)
			continue;
		/* Insertion sort: highest total first, then lower id. */
		for (j = m++; j > 0; j--) {
			const struct hotel_rate *p = sel[j - 1];

			if (p->total_rate > r->total_rate ||
			    (p->total_rate == r->total_rate && p->id < r->id))
				break;
			sel[j] = p;
		}
		sel[j] = r;
	}
	for (int i = 0; i < m; i++)
		ids[i] = sel[i]->id;
	return m;
}

int hotel_json_ids(const int *ids, int n, char *buf, size_t len)
{
	size_t off;
	int w;

	w = snprintf(buf, len, "{\"hotelIds\":[");
	if (w < 0 || (size_t)w >= len)
		return -ENOSPC;
	off = w;
	for (int i = 0; i < n; i++) {
		w = snprintf(buf + off, len - off, "%s\"%d\"", i ? "," : "", ids[i]);
		if (w < 0 || (size_t)w >= len - off)
			return -ENOSPC;
		off += w;
	}
	w = snprintf(buf + off, len - off, "]}");
	if (w < 0 || (size_t)w >= len - off)
		return -ENOSPC;
	return (int)(off + w);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decode s[0..len) into out (size cap). 0, or -EINVAL. */
static int url_decode(const char *s, size_t len, char *out, size_t cap)
{
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (c == '%') {
			int hi, lo;

			if (i + 2 >= len)
				return -EINVAL;
			hi = hexval(s[i + 1]);
			lo = hexval(s[i + 2]);
			if (hi < 0 || lo < 0)
				return -EINVAL;
			c = (char)(hi * 16 + lo);
			i += 2;
		} else if (c == '+') {
			c = ' ';
		}
		if (c == '\0' || o + 1 >= cap)
			return -EINVAL;
		out[o++] = c;
	}
	out[o] = '\0';
	return 0;
}

static int parse_coord(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

/* YYYY-MM-DD with a plausible month and day. */
static int parse_date(const char *s, char *out)
{
	int y, m, d, n = 0;

	if (strlen(s) != HOTEL_DATE_LEN || s[4] != '-' || s[7] != '-')
		return -EINVAL;
	for (int i = 0; i < HOTEL_DATE_LEN; i++)
		if (i != 4 && i != 7 && (s[i] < '0' || s[i] > '9'))
			return -EINVAL;
	if (sscanf(s, "%4d-%2d-%2d%n", &y, &m, &d, &n) != 3 || n != HOTEL_DATE_LEN || m < 1 ||
	    m > 12 || d < 1 || d > 31)
		return -EINVAL;
	memcpy(out, s, HOTEL_DATE_LEN + 1);
	return 0;
}

int hotel_parse_query(const char *qs, struct hotel_query *q, const char **why)
{
	*q = (struct hotel_query){ .lat = HOTEL_STD_LAT, .lon = HOTEL_STD_LON };
	strcpy(q->in_date, HOTEL_STD_IN);
	strcpy(q->out_date, HOTEL_STD_OUT);
	*why = NULL;
	while (qs && *qs) {
		size_t len = strcspn(qs, "&");
		const char *eq = memchr(qs, '=', len);
		char key[16], val[64];
		int err = 0;

		if (len == 0) {
			qs++;
			continue;
		}
		if (!eq || url_decode(qs, eq - qs, key, sizeof(key))) {
			/* A key we would not recognise anyway: ignore it. */
			goto next;
		}
		err = url_decode(eq + 1, len - (eq + 1 - qs), val, sizeof(val));
		if (!strcmp(key, "lat")) {
			*why = "lat";
			err = err ?: parse_coord(val, -90, 90, &q->lat);
		} else if (!strcmp(key, "lon")) {
			*why = "lon";
			err = err ?: parse_coord(val, -180, 180, &q->lon);
		} else if (!strcmp(key, "inDate")) {
			*why = "inDate";
			err = err ?: parse_date(val, q->in_date);
		} else if (!strcmp(key, "outDate")) {
			*why = "outDate";
			err = err ?: parse_date(val, q->out_date);
		} else {
			err = 0;
		}
		if (err)
			return -EINVAL;
		*why = NULL;
	next:
		qs += len;
		if (*qs == '&')
			qs++;
	}
	if (strcmp(q->in_date, q->out_date) >= 0) {
		*why = "outDate (must be after inDate)";
		return -EINVAL;
	}
	return 0;
}
