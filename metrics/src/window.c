// SPDX-License-Identifier: MIT
/*
 * The per-workload window: a ring of the last `cap` requests plus an
 * order-statistic treap over their latencies.
 *
 * The queries ask for any percentile, exactly, many times a second, over a
 * window of typically 100000 records that slides by one record per request.
 * Copying and sorting the window per query (the paper's fallback) costs
 * milliseconds; a histogram is fast but not exact. A balanced search tree with
 * subtree sizes answers "k-th smallest" in O(log n) and is updated in O(log n)
 * per push and per eviction, so that is what we keep.
 *
 * Layout: node i + 1 is ring slot i, so the tree needs no allocator, no free
 * list and no malloc per push; evicting the oldest record means deleting the
 * node of the ring's head slot. Node 0 is the nil sentinel (size 0), which
 * removes the NULL checks from size arithmetic. Keys are (lat_ns, slot), so
 * equal latencies are still distinct keys and a node is always found by
 * descending from the root. A treap was chosen over AVL or red-black trees
 * because insert and delete are a few lines each (split/merge), which keeps
 * the code checkable; its priorities come from a per-window xorshift so that
 * runs are reproducible. Expected depth is about 2 ln n (23 at 100000).
 *
 * Sum of latencies is kept exactly in an unsigned __int128 (2^64 * 2^32
 * cannot overflow it), so the average never drifts however long the window
 * slides.
 *
 * Known limits: records are evicted in push order, so with an age limit a
 * record that arrived out of order (end older than its predecessor) stays
 * until it reaches the head; and the span saturates at 0 if the newest end
 * is older than the oldest.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "window.h"

struct win_node {
	uint64_t lat;  /* key, with the node index as tie-breaker */
	uint32_t l, r; /* children, 0 = nil */
	uint32_t size; /* nodes in this subtree */
	uint32_t prio; /* heap order: parent's prio >= children's */
};

struct ebee_window {
	size_t cap;
	uint64_t max_age_ns;
	size_t head; /* ring slot of the oldest record */
	size_t count;
	uint32_t root;
	uint32_t rng; /* xorshift32 state for treap priorities */
	unsigned __int128 sum;
	uint64_t *end;	       /* [cap], by ring slot */
	struct win_node *node; /* [cap + 1], node i + 1 <-> slot i; [0] is nil */
};

/* Any non-zero constant; fixed so that the tree shape is reproducible. */
#define WIN_RNG_SEED 2463534242u

static uint32_t win_rand(struct ebee_window *w)
{
	uint32_t x = w->rng;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	w->rng = x;
	return x;
}

static inline int node_less(const struct win_node *n, uint32_t a, uint32_t b)
{
	return n[a].lat < n[b].lat || (n[a].lat == n[b].lat && a < b);
}

static inline void node_update(struct win_node *n, uint32_t t)
{
	n[t].size = n[n[t].l].size + n[n[t].r].size + 1;
}

/* Split subtree t into keys < x (*l) and keys > x (*r); x is not in t. */
static void tree_split(struct win_node *n, uint32_t t, uint32_t x, uint32_t *l, uint32_t *r)
{
	if (!t) {
		*l = *r = 0;
		return;
	}
	if (node_less(n, t, x)) {
		tree_split(n, n[t].r, x, &n[t].r, r);
		*l = t;
	} else {
		tree_split(n, n[t].l, x, l, &n[t].l);
		*r = t;
	}
	node_update(n, t);
}

/* Join a and b, every key of a being smaller than every key of b. */
static uint32_t tree_merge(struct win_node *n, uint32_t a, uint32_t b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	if (n[a].prio > n[b].prio) {
		n[a].r = tree_merge(n, n[a].r, b);
		node_update(n, a);
		return a;
	}
	n[b].l = tree_merge(n, a, n[b].l);
	node_update(n, b);
	return b;
}

static uint32_t tree_insert(struct win_node *n, uint32_t t, uint32_t x)
{
	if (!t)
		return x;
	if (n[x].prio > n[t].prio) {
		tree_split(n, t, x, &n[x].l, &n[x].r);
		node_update(n, x);
		return x;
	}
	/* x lands below t whichever side it takes: t grows by one. */
	n[t].size++;
	if (node_less(n, x, t))
		n[t].l = tree_insert(n, n[t].l, x);
	else
		n[t].r = tree_insert(n, n[t].r, x);
	return t;
}

/* x must be in t: the ring and the tree hold the same set of slots. */
static uint32_t tree_erase(struct win_node *n, uint32_t t, uint32_t x)
{
	if (t == x)
		return tree_merge(n, n[t].l, n[t].r);
	n[t].size--;
	if (node_less(n, x, t))
		n[t].l = tree_erase(n, n[t].l, x);
	else
		n[t].r = tree_erase(n, n[t].r, x);
	return t;
}

/* The k-th smallest latency, k in [0, size(t)). */
static uint64_t tree_select(const struct win_node *n, uint32_t t, size_t k)
{
	for (;;) {
		size_t ls = n[n[t].l].size;

		if (k < ls) {
			t = n[t].l;
		} else if (k == ls) {
			return n[t].lat;
		} else {
			k -= ls + 1;
			t = n[t].r;
		}
	}
}

static void win_evict_oldest(struct ebee_window *w)
{
	uint32_t x = (uint32_t)w->head + 1;

	w->root = tree_erase(w->node, w->root, x);
	w->sum -= w->node[x].lat;
	if (++w->head == w->cap)
		w->head = 0;
	w->count--;
}

/* Drop records whose end is older than cutoff, oldest first. */
static void win_evict_before(struct ebee_window *w, uint64_t cutoff)
{
	while (w->count && w->end[w->head] < cutoff)
		win_evict_oldest(w);
}

static size_t win_newest_slot(const struct ebee_window *w)
{
	size_t s = w->head + w->count - 1;

	return s >= w->cap ? s - w->cap : s;
}

struct ebee_window *ebee_window_new(size_t cap, uint64_t max_age_ns)
{
	struct ebee_window *w;

	/* Node indices are u32 and index 0 is the sentinel. */
	if (cap < 1 || cap >= UINT32_MAX) {
		errno = EINVAL;
		return NULL;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->end = calloc(cap, sizeof(*w->end));
	w->node = calloc(cap + 1, sizeof(*w->node));
	if (!w->end || !w->node) {
		ebee_window_free(w);
		errno = ENOMEM;
		return NULL;
	}
	w->cap = cap;
	w->max_age_ns = max_age_ns;
	ebee_window_reset(w);
	return w;
}

void ebee_window_free(struct ebee_window *w)
{
	if (!w)
		return;
	free(w->end);
	free(w->node);
	free(w);
}

void ebee_window_reset(struct ebee_window *w)
{
	/* Stale nodes need no clearing: push rewrites every field of a node. */
	w->head = 0;
	w->count = 0;
	w->root = 0;
	w->sum = 0;
	w->rng = WIN_RNG_SEED;
}

void ebee_window_push(struct ebee_window *w, uint64_t end_ns, uint64_t lat_ns)
{
	struct win_node *x;
	size_t slot;

	if (w->count == w->cap)
		win_evict_oldest(w);
	slot = w->head + w->count;
	if (slot >= w->cap)
		slot -= w->cap;

	w->end[slot] = end_ns;
	x = &w->node[slot + 1];
	x->lat = lat_ns;
	x->l = x->r = 0;
	x->size = 1;
	x->prio = win_rand(w);
	w->root = tree_insert(w->node, w->root, (uint32_t)slot + 1);
	w->sum += lat_ns;
	w->count++;

	/* The new record itself is never older than its own cutoff. */
	if (w->max_age_ns && end_ns > w->max_age_ns)
		win_evict_before(w, end_ns - w->max_age_ns);
}

void ebee_window_expire(struct ebee_window *w, uint64_t now_ns)
{
	if (w->max_age_ns && now_ns > w->max_age_ns)
		win_evict_before(w, now_ns - w->max_age_ns);
}

size_t ebee_window_count(const struct ebee_window *w)
{
	return w->count;
}

uint64_t ebee_window_span(const struct ebee_window *w)
{
	uint64_t oldest, newest;

	if (w->count < 2)
		return 0;
	oldest = w->end[w->head];
	newest = w->end[win_newest_slot(w)];
	return newest > oldest ? newest - oldest : 0;
}

int ebee_window_rps(const struct ebee_window *w, double *rps)
{
	uint64_t span = ebee_window_span(w);

	if (!span)
		return -ENODATA;
	*rps = (double)w->count * 1e9 / (double)span;
	return 0;
}

int ebee_window_latest(const struct ebee_window *w, uint64_t *lat_ns)
{
	if (!w->count)
		return -ENODATA;
	*lat_ns = w->node[win_newest_slot(w) + 1].lat;
	return 0;
}

int ebee_window_average(const struct ebee_window *w, double *avg_ns)
{
	uint64_t q, r;

	if (!w->count)
		return -ENODATA;
	/*
	 * Both exact in a double (sum below 2^53 ns, i.e. 104 days of summed
	 * latency: every realistic window): one IEEE division, correctly
	 * rounded, whatever the width of long double on this machine.
	 */
	if (w->sum < (unsigned __int128)1 << 53) {
		*avg_ns = (double)(uint64_t)w->sum / (double)w->count;
		return 0;
	}
	/*
	 * Otherwise the quotient is at most the largest latency, so it fits a
	 * u64 and is exact in an x86 long double (64-bit mantissa); only the
	 * fraction r / count is rounded, once more when narrowing to double.
	 */
	q = (uint64_t)(w->sum / w->count);
	r = (uint64_t)(w->sum % w->count);
	*avg_ns = (double)((long double)q + (long double)r / (long double)w->count);
	return 0;
}

/*
 * numpy's default ("linear") method, evaluated as numpy >= 1.22 does it so that
 * results match np.percentile() bit for bit on values below 2^53: q = p / 100,
 * h = (n - 1) * q in double, both neighbours the last element once h >= n - 1,
 * and numpy's _lerp(), which interpolates from the upper neighbour when the
 * fraction is >= 0.5 so that a fraction of 1 gives exactly the upper value.
 * The difference b - a is taken in integers first, as numpy does on u64.
 * The products go through volatile so that no compiler fuses them into an FMA
 * (e.g. on arm64), which would round differently from numpy.
 */
int ebee_window_percentile(const struct ebee_window *w, double p, double *val_ns)
{
	volatile double prod;
	double h, g, d;
	uint64_t a, b;
	size_t n = w->count, lo;

	/* Written so that NaN fails too. */
	if (!(p >= 0.0 && p <= 100.0))
		return -EINVAL;
	if (!n)
		return -ENODATA;

	h = (double)(n - 1) * (p / 100.0);
	if (h >= (double)(n - 1)) {
		*val_ns = (double)tree_select(w->node, w->root, n - 1);
		return 0;
	}
	lo = (size_t)h;
	g = h - (double)lo;
	a = tree_select(w->node, w->root, lo);
	b = g > 0.0 ? tree_select(w->node, w->root, lo + 1) : a;
	d = (double)(b - a);
	if (g >= 0.5) {
		prod = d * (1.0 - g);
		*val_ns = (double)b - prod;
	} else {
		prod = d * g;
		*val_ns = (double)a + prod;
	}
	return 0;
}
