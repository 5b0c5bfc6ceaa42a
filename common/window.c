// SPDX-License-Identifier: MIT
/*
 * The per-workload window: a ring of the last `cap` requests plus a counted
 * B+tree (an order-statistic B+tree) over the multiset of their latencies.
 *
 * The queries ask for any percentile, exactly, many times a second, over a
 * window of typically 100000 records that slides by one record per request.
 * Copying and sorting the window per query (the paper's fallback) costs
 * milliseconds; a histogram is fast but not exact. A search tree with subtree
 * sizes answers "k-th smallest" in O(log n) and is updated in O(log n) per
 * push and per eviction, so that is what we keep.
 *
 * Why a B+tree: the cost of a push is memory latency, not comparisons. The
 * previous treap (one 24-byte node per record, about 2 x 23 levels per push
 * in a 3.2 MB array) missed the cache at nearly every level: 0.55-0.7 us per
 * push at 100000 records. Here a leaf is 64 sorted latencies in one 512-byte
 * block and an inner node has up to 64 children, so 100000 records are a
 * root, a few dozen inner nodes (about 50 KB, which stay in cache) and about
 * 2000-2500 leaves; a push reads two root-to-leaf paths of three nodes and
 * searches each with a branch-free binary search (see bound()). bench_window
 * measures it at about 0.2 us, and percentile queries about 4x faster too.
 * Leaves of 32 or 128 keys and inner nodes of 16 or 32 children measured
 * the same or slower.
 *
 * The tree holds latencies only, not (latency, slot) pairs: equal latencies
 * are interchangeable for every order statistic, so evicting the oldest
 * record removes any one copy of its latency (the ring remembers which value
 * that is). Keys may repeat, and nothing needs to find a particular record.
 *
 * Invariants (checked by win_check() under EBEE_WINDOW_CHECK, which the unit
 * tests compile in):
 *  - every leaf is at depth `height`; the keys of the leaves, read left to
 *    right, are sorted and are exactly the latencies in the ring;
 *  - an inner node's entry i holds, for its child i, the exact number of keys
 *    below it (cnt) and their exact minimum (min). A node's own size lives in
 *    its parent (w->count for the root), so a leaf is keys and nothing else;
 *  - non-root leaves hold WIN_LEAF_MIN..WIN_LEAF_MAX keys, non-root inner
 *    nodes WIN_INNER_MIN..WIN_INNER_MAX children, the root inner node >= 2.
 * Exact minima make routing exact even with long runs of equal keys: the
 * last child whose min is <= x contains x whenever the subtree does (an
 * earlier child holding x would force that child's min to equal x).
 *
 * Updates are single-pass and top-down (as in CLRS): insert splits a full
 * child before entering it, erase tops up a minimal child (from a sibling,
 * or by merging with it) before entering it, so no change ever propagates
 * back up except an erased leaf minimum, which is fixed along a short path.
 * Nodes come from two pools sized from cap when the window is made (the fill
 * bounds cap how many nodes can be live), so neither a push nor a rebuild
 * allocates.
 *
 * The tree is kept only while someone reads it. A saturated server pushes
 * far more records between two queries (a controller asks a few times a
 * second) than the window holds, and keeping the tree for records evicted
 * unread was most of the tracer's own CPU. A rebuild from the ring (radix
 * sort, then leaves and inner nodes filled to 48 bottom-up: about 2 ms at
 * 100000 records) costs what ~10000 kept pushes cost, so the choice after
 * each query is a rent-or-buy one, made on the gaps between queries (in
 * pushes) seen so far: if either of the last two was longer than cap / 8,
 * the next gap is expected to be long too and the pushes stop keeping the
 * tree at once (the next query rebuilds it); otherwise the tree is kept,
 * and dropped only if the gap reaches cap / 8 after all. Two gaps, not one,
 * so that one short gap (a drain that landed between two queries of the
 * same report) does not buy cap / 8 kept pushes before the next report.
 * Queries at least every cap / 8 pushes keep the tree for good.
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
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "window.h"

#define WIN_LEAF_MAX  64 /* keys per leaf: 512 bytes, eight cache lines */
#define WIN_LEAF_MIN  (WIN_LEAF_MAX / 2)
#define WIN_INNER_MAX 64 /* children per inner node */
#define WIN_INNER_MIN (WIN_INNER_MAX / 2)
/* Inner levels with cap < 2^32: at most 2^27 + 1 leaves, a root with >= 2
 * children and >= 32 below every other inner node give at most 6. */
#define WIN_MAX_HEIGHT 12
#define WIN_NONE       UINT32_MAX

struct win_leaf {
	uint64_t key[WIN_LEAF_MAX]; /* sorted; size in the parent's cnt */
};

struct win_inner {
	uint64_t min[WIN_INNER_MAX]; /* exact minimum of child i's keys */
	uint32_t cnt[WIN_INNER_MAX]; /* exact number of keys below child i */
	uint32_t child[WIN_INNER_MAX];
	uint32_t n; /* children in use */
};

/* Nodes are handed out by bumping `used` and recycled through a free list
 * threaded through the freed nodes themselves, so reset is O(1). */
struct win_pool {
	uint32_t max, used, free;
};

struct ebee_window {
	size_t cap;
	uint64_t max_age_ns;
	size_t head; /* ring slot of the oldest record */
	size_t count;
	unsigned __int128 sum;
	uint64_t *end; /* [cap], by ring slot */
	uint64_t *lat; /* [cap], by ring slot */
	uint32_t root;
	unsigned height; /* 0: the root is a leaf */
	struct win_leaf *leaf;
	struct win_inner *inner;
	struct win_pool leaves, inners;
	uint64_t *scratch; /* [2 * cap]: sort buffers of win_rebuild() */
	size_t unseen;	   /* pushes since the last percentile query (saturates at cap) */
	unsigned gaps;	   /* the last two gaps between queries, bit set: longer than cap / 8 */
	int stale;	   /* the tree is not kept: rebuilt at the next query */
};

/* ---------------------------------------------------------------- pools */

/* The fill bounds make the pools large enough: see ebee_window_new(). */
static uint32_t leaf_new(struct ebee_window *w)
{
	uint32_t i = w->leaves.free;

	if (i == WIN_NONE)
		return w->leaves.used++;
	w->leaves.free = (uint32_t)w->leaf[i].key[0];
	return i;
}

static void leaf_free(struct ebee_window *w, uint32_t i)
{
	w->leaf[i].key[0] = w->leaves.free;
	w->leaves.free = i;
}

static uint32_t inner_new(struct ebee_window *w)
{
	uint32_t i = w->inners.free;

	if (i == WIN_NONE)
		return w->inners.used++;
	w->inners.free = w->inner[i].child[0];
	return i;
}

static void inner_free(struct ebee_window *w, uint32_t i)
{
	w->inner[i].child[0] = w->inners.free;
	w->inners.free = i;
}

/* ---------------------------------------------------------------- helpers */

/*
 * First index in k[0..n) whose key is > x (upper) or >= x (!upper). Without
 * branches on the data: each halving goes either way at random, so a branch
 * would mispredict about half the time, on top of the cache misses.
 */
static inline unsigned bound(const uint64_t *k, unsigned n, uint64_t x, int upper)
{
	const uint64_t *b = k;

	if (!n)
		return 0;
	/* The answer stays within b[0..n]. */
	while (n > 1) {
		unsigned half = n / 2;

		unsigned go = upper ? b[half - 1] <= x : b[half - 1] < x;

		/* A mask, not ?:, or gcc 12 emits a branch anyway. */
		b += half & (0u - go);
		n -= half;
	}
	return (unsigned)(b - k) + (upper ? *b <= x : *b < x);
}

/* The child to enter for x: the last whose min is <= x, else the first. */
static inline unsigned route(const struct win_inner *in, uint64_t x)
{
	unsigned i = bound(in->min, in->n, x, 1);

	return i ? i - 1 : 0;
}

/* Open a gap at entry i of `in` (which has room) for a new child. */
static void inner_open(struct win_inner *in, unsigned i)
{
	unsigned k = in->n - i;

	memmove(&in->min[i + 1], &in->min[i], k * sizeof(in->min[0]));
	memmove(&in->cnt[i + 1], &in->cnt[i], k * sizeof(in->cnt[0]));
	memmove(&in->child[i + 1], &in->child[i], k * sizeof(in->child[0]));
	in->n++;
}

static void inner_close(struct win_inner *in, unsigned i)
{
	unsigned k = in->n - i - 1;

	memmove(&in->min[i], &in->min[i + 1], k * sizeof(in->min[0]));
	memmove(&in->cnt[i], &in->cnt[i + 1], k * sizeof(in->cnt[0]));
	memmove(&in->child[i], &in->child[i + 1], k * sizeof(in->child[0]));
	in->n--;
}

/* Copy k entries src[s..s+k) over dst[d..d+k); ranges may overlap. Returns
 * the keys they hold. */
static uint32_t inner_copy(struct win_inner *dst, unsigned d, const struct win_inner *src,
			   unsigned s, unsigned k)
{
	uint32_t keys = 0;

	memmove(&dst->min[d], &src->min[s], k * sizeof(dst->min[0]));
	memmove(&dst->cnt[d], &src->cnt[s], k * sizeof(dst->cnt[0]));
	memmove(&dst->child[d], &src->child[s], k * sizeof(dst->child[0]));
	for (unsigned j = 0; j < k; j++)
		keys += dst->cnt[d + j];
	return keys;
}

/* ---------------------------------------------------------------- insert */

/* Split in's child i, which is full and `h` levels above the leaves, into
 * entries i and i + 1; `in` has room. */
static void split_child(struct ebee_window *w, struct win_inner *in, unsigned i, unsigned h)
{
	uint32_t r;

	inner_open(in, i + 1);
	if (h == 0) {
		const struct win_leaf *l = &w->leaf[in->child[i]];

		r = leaf_new(w);
		memcpy(w->leaf[r].key, &l->key[WIN_LEAF_MIN],
		       (WIN_LEAF_MAX - WIN_LEAF_MIN) * sizeof(l->key[0]));
		in->cnt[i] = WIN_LEAF_MIN;
		in->cnt[i + 1] = WIN_LEAF_MAX - WIN_LEAF_MIN;
		in->min[i + 1] = w->leaf[r].key[0];
	} else {
		struct win_inner *c = &w->inner[in->child[i]], *rn;
		uint32_t moved;

		r = inner_new(w);
		rn = &w->inner[r];
		moved = inner_copy(rn, 0, c, WIN_INNER_MIN, WIN_INNER_MAX - WIN_INNER_MIN);
		rn->n = WIN_INNER_MAX - WIN_INNER_MIN;
		c->n = WIN_INNER_MIN;
		in->cnt[i] -= moved;
		in->cnt[i + 1] = moved;
		in->min[i + 1] = rn->min[0];
	}
	in->child[i + 1] = r;
}

static int root_full(const struct ebee_window *w)
{
	if (!w->height)
		return w->count == WIN_LEAF_MAX;
	return w->inner[w->root].n == WIN_INNER_MAX;
}

static void tree_insert(struct ebee_window *w, uint64_t x)
{
	uint32_t node;
	size_t size = w->count;
	unsigned h, pos;
	struct win_leaf *l;

	if (root_full(w)) {
		/* Grow at the top: a new root with the old one as its only child,
		 * which the loop below then splits like any other full child. */
		uint32_t r = inner_new(w);
		struct win_inner *in = &w->inner[r];

		in->n = 1;
		in->child[0] = w->root;
		in->cnt[0] = (uint32_t)w->count;
		in->min[0] = w->height ? w->inner[w->root].min[0] : w->leaf[w->root].key[0];
		w->root = r;
		w->height++;
	}
	node = w->root;
	for (h = w->height; h > 0; h--) {
		struct win_inner *in = &w->inner[node];
		unsigned i = route(in, x);
		int full =
		    h == 1 ? in->cnt[i] == WIN_LEAF_MAX : w->inner[in->child[i]].n == WIN_INNER_MAX;

		if (full) {
			split_child(w, in, i, h - 1);
			if (x >= in->min[i + 1])
				i++;
		}
		/* Only the first child can have x as its new minimum. */
		if (x < in->min[i])
			in->min[i] = x;
		size = in->cnt[i]++;
		node = in->child[i];
	}
	l = &w->leaf[node];
	pos = bound(l->key, (unsigned)size, x, 1);
	memmove(&l->key[pos + 1], &l->key[pos], (size - pos) * sizeof(l->key[0]));
	l->key[pos] = x;
}

/* ---------------------------------------------------------------- erase */

/* Move k keys between in's leaf children a and a + 1: from the front of
 * a + 1 to the end of a (left), or from the end of a to the front of a + 1. */
static void leaf_shift(struct ebee_window *w, struct win_inner *in, unsigned a, unsigned k,
		       int left)
{
	uint64_t *l = w->leaf[in->child[a]].key, *r = w->leaf[in->child[a + 1]].key;
	uint32_t nl = in->cnt[a], nr = in->cnt[a + 1];

	if (left) {
		memcpy(&l[nl], r, k * sizeof(*l));
		memmove(r, &r[k], (nr - k) * sizeof(*r));
		in->cnt[a] += k;
		in->cnt[a + 1] -= k;
	} else {
		memmove(&r[k], r, nr * sizeof(*r));
		memcpy(r, &l[nl - k], k * sizeof(*l));
		in->cnt[a] -= k;
		in->cnt[a + 1] += k;
	}
	in->min[a + 1] = r[0];
}

/* The same for inner children: k entries move, with the keys below them. */
static void inner_shift(struct ebee_window *w, struct win_inner *in, unsigned a, unsigned k,
			int left)
{
	struct win_inner *l = &w->inner[in->child[a]], *r = &w->inner[in->child[a + 1]];
	uint32_t keys;

	if (left) {
		keys = inner_copy(l, l->n, r, 0, k);
		inner_copy(r, 0, r, k, r->n - k);
		l->n += k;
		r->n -= k;
		in->cnt[a] += keys;
		in->cnt[a + 1] -= keys;
	} else {
		inner_copy(r, k, r, 0, r->n);
		keys = inner_copy(r, 0, l, l->n - k, k);
		l->n -= k;
		r->n += k;
		in->cnt[a] -= keys;
		in->cnt[a + 1] += keys;
	}
	in->min[a + 1] = r->min[0];
}

/* Merge in's child a + 1 into child a, `h` levels above the leaves. */
static void merge_children(struct ebee_window *w, struct win_inner *in, unsigned a, unsigned h)
{
	uint32_t r = in->child[a + 1];

	if (h == 0) {
		memcpy(&w->leaf[in->child[a]].key[in->cnt[a]], w->leaf[r].key,
		       in->cnt[a + 1] * sizeof(uint64_t));
		leaf_free(w, r);
	} else {
		struct win_inner *l = &w->inner[in->child[a]];

		inner_copy(l, l->n, &w->inner[r], 0, w->inner[r].n);
		l->n += w->inner[r].n;
		inner_free(w, r);
	}
	in->cnt[a] += in->cnt[a + 1];
	inner_close(in, a + 1);
}

/*
 * in's child i, `h` levels above the leaves, is at its minimum fill and about
 * to lose a key: take keys from a sibling (half the surplus, at least one) or,
 * when the sibling is minimal too, merge the two. Returns the index of the
 * child that now holds everything child i held.
 */
static unsigned top_up(struct ebee_window *w, struct win_inner *in, unsigned i, unsigned h)
{
	unsigned a = i + 1 < in->n ? i : i - 1; /* the pair (a, a + 1) */
	unsigned s = a == i ? a + 1 : a;	/* the sibling */
	unsigned min = h ? WIN_INNER_MIN : WIN_LEAF_MIN;
	unsigned ns = h ? w->inner[in->child[s]].n : in->cnt[s];

	if (ns > min) {
		unsigned k = (ns - min + 1) / 2;

		if (h)
			inner_shift(w, in, a, k, s > i);
		else
			leaf_shift(w, in, a, k, s > i);
		return i;
	}
	merge_children(w, in, a, h);
	return a;
}

/* Remove one copy of x, which the tree holds. */
static void tree_erase(struct ebee_window *w, uint64_t x)
{
	struct win_inner *path[WIN_MAX_HEIGHT];
	unsigned idx[WIN_MAX_HEIGHT], depth = 0, h, pos;
	uint32_t node = w->root;
	size_t size = w->count;
	struct win_leaf *l;

	for (h = w->height; h > 0; h--) {
		struct win_inner *in = &w->inner[node];
		unsigned i = route(in, x);
		int minimal =
		    h == 1 ? in->cnt[i] == WIN_LEAF_MIN : w->inner[in->child[i]].n == WIN_INNER_MIN;

		if (minimal) {
			i = top_up(w, in, i, h - 1);
			if (in->n == 1) {
				/* Only the root may get here (others have >= 2
				 * children after a merge): shrink at the top. */
				w->root = in->child[0];
				w->height--;
				inner_free(w, node);
				node = w->root;
				continue;
			}
		}
		path[depth] = in;
		idx[depth++] = i;
		size = in->cnt[i]--;
		node = in->child[i];
	}
	l = &w->leaf[node];
	pos = bound(l->key, (unsigned)size, x, 0);
	memmove(&l->key[pos], &l->key[pos + 1], (size - pos - 1) * sizeof(l->key[0]));
	/* A leaf's minimum went: correct it in the ancestors that record it. */
	if (pos == 0 && size > 1) {
		while (depth--) {
			path[depth]->min[idx[depth]] = l->key[0];
			if (idx[depth])
				break;
		}
	}
}

/* ---------------------------------------------------------------- select */

/* The k-th smallest latency, k in [0, count), and (when next is not NULL and
 * k + 1 < count) the (k + 1)-th, which is usually in the same leaf. */
static uint64_t tree_select2(const struct ebee_window *w, size_t k, uint64_t *next)
{
	uint32_t node = w->root;
	size_t size = w->count, k0 = k;

	for (unsigned h = w->height; h > 0; h--) {
		const struct win_inner *in = &w->inner[node];
		unsigned i = 0;

		while (k >= in->cnt[i])
			k -= in->cnt[i++];
		size = in->cnt[i];
		node = in->child[i];
	}
	if (next && k0 + 1 < w->count)
		*next = k + 1 < size ? w->leaf[node].key[k + 1] : tree_select2(w, k0 + 1, NULL);
	return w->leaf[node].key[k];
}

static uint64_t tree_select(const struct ebee_window *w, size_t k)
{
	return tree_select2(w, k, NULL);
}

/* How many latencies are <= x. Children are in key order, so every child
 * before the last one whose min is <= x holds only keys <= x. */
static size_t tree_rank_le(const struct ebee_window *w, uint64_t x)
{
	uint32_t node = w->root;
	size_t below = 0, size = w->count;

	for (unsigned h = w->height; h > 0; h--) {
		const struct win_inner *in = &w->inner[node];
		unsigned i = bound(in->min, in->n, x, 1);

		if (!i)
			return below;
		for (unsigned j = 0; j + 1 < i; j++)
			below += in->cnt[j];
		size = in->cnt[i - 1];
		node = in->child[i - 1];
	}
	return below + bound(w->leaf[node].key, (unsigned)size, x, 1);
}

/* The k-th smallest latency of the union of n synced windows (k below their
 * total count): the smallest value with more than k latencies <= it, found by
 * bisecting between the smallest minimum and the largest maximum. */
static uint64_t union_select(struct ebee_window *const *ws, size_t n, size_t k)
{
	uint64_t lo = UINT64_MAX, hi = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t first, last;

		if (!ws[i]->count)
			continue;
		first = tree_select(ws[i], 0);
		last = tree_select(ws[i], ws[i]->count - 1);
		if (first < lo)
			lo = first;
		if (last > hi)
			hi = last;
	}
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		size_t r = 0;

		for (size_t i = 0; i < n; i++)
			if (ws[i]->count)
				r += tree_rank_le(ws[i], mid);
		if (r > k)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* The (k + 1)-th smallest of the union, given a, its k-th (k + 1 below the
 * total count): a again if more than k + 1 latencies are <= a, else the
 * smallest latency above a in any window. No second bisection. */
static uint64_t union_next(struct ebee_window *const *ws, size_t n, size_t k, uint64_t a)
{
	uint64_t next = UINT64_MAX;
	size_t below = 0;

	for (size_t i = 0; i < n; i++) {
		size_t r = ws[i]->count ? tree_rank_le(ws[i], a) : 0;
		uint64_t above;

		below += r;
		if (r == ws[i]->count)
			continue;
		above = tree_select(ws[i], r);
		if (above < next)
			next = above;
	}
	return below > k + 1 ? a : next;
}

/* ---------------------------------------------------------------- checker */

#ifdef EBEE_WINDOW_CHECK
#include <stdio.h>

struct win_walk {
	const char *msg; /* first violation, else NULL */
	uint64_t *keys;	 /* [count], filled in order */
	size_t seen;
	unsigned char *leaf_mark, *inner_mark;
	char buf[160];
};

static int win_walk_fail(struct win_walk *wk, const char *what, uint32_t node)
{
	snprintf(wk->buf, sizeof(wk->buf), "%s (node %u)", what, node);
	wk->msg = wk->buf;
	return -1;
}

/* Check the subtree `node`, h levels above the leaves, that its parent says
 * holds `size` keys with minimum `min`; append its keys to wk->keys. 0 or -1
 * with wk->msg set. */
static int win_walk_tree(const struct ebee_window *w, struct win_walk *wk, uint32_t node,
			 unsigned h, size_t size, uint64_t min, int is_root)
{
	const struct win_inner *in;
	size_t total = 0;

	if (h == 0) {
		const uint64_t *k;

		if (node >= w->leaves.used || wk->leaf_mark[node]++)
			return win_walk_fail(wk, "leaf outside the pool or reached twice", node);
		k = w->leaf[node].key;
		if (size > WIN_LEAF_MAX || (!is_root && size < WIN_LEAF_MIN))
			return win_walk_fail(wk, "leaf fill out of bounds", node);
		if (wk->seen + size > w->count)
			return win_walk_fail(wk, "more keys in the tree than in the ring", node);
		if (size && k[0] != min)
			return win_walk_fail(wk, "leaf minimum recorded wrongly in parent", node);
		for (size_t j = 0; j < size; j++) {
			if (wk->seen && k[j] < wk->keys[wk->seen - 1])
				return win_walk_fail(wk, "keys out of order", node);
			wk->keys[wk->seen++] = k[j];
		}
		return 0;
	}
	if (node >= w->inners.used || wk->inner_mark[node]++)
		return win_walk_fail(wk, "inner node outside the pool or reached twice", node);
	in = &w->inner[node];
	if (in->n > WIN_INNER_MAX || in->n < (is_root ? 2u : WIN_INNER_MIN))
		return win_walk_fail(wk, "inner fill out of bounds", node);
	if (in->min[0] != min)
		return win_walk_fail(wk, "inner minimum recorded wrongly in parent", node);
	for (unsigned j = 0; j < in->n; j++) {
		if (win_walk_tree(w, wk, in->child[j], h - 1, in->cnt[j], in->min[j], 0))
			return -1;
		total += in->cnt[j];
	}
	if (total != size)
		return win_walk_fail(wk, "subtree size recorded wrongly in parent", node);
	return 0;
}

static int win_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The header's counts and the pools' fill within their bounds. */
static const char *check_bounds(const struct ebee_window *w)
{
	if (w->count > w->cap || w->head >= w->cap || w->height >= WIN_MAX_HEIGHT)
		return "count, head or height out of range";
	if (w->leaves.used > w->leaves.max || w->inners.used > w->inners.max)
		return "a node pool overflowed";
	return NULL;
}

/* Copy the ring's latencies, oldest first, into ring and check the
 * running sum against theirs. */
static const char *check_ring(const struct ebee_window *w, uint64_t *ring)
{
	unsigned __int128 sum = 0;

	for (size_t j = 0; j < w->count; j++) {
		size_t s = w->head + j;

		ring[j] = w->lat[s >= w->cap ? s - w->cap : s];
		sum += ring[j];
	}
	return sum != w->sum ? "running sum differs from the ring's" : NULL;
}

/* The walk's keys (in order) are the ring's latencies sorted, and select
 * agrees with them. Sorts ring. */
static const char *check_keys(const struct ebee_window *w, const struct win_walk *wk,
			      uint64_t *ring)
{
	qsort(ring, w->count, sizeof(*ring), win_cmp_u64);
	for (size_t j = 0; j < w->count; j++)
		if (wk->keys[j] != ring[j])
			return "the tree's keys are not the ring's latencies";
	/* Cheap enough to do at a sample of ranks: the walk checked the counts. */
	for (size_t j = 0; j < w->count; j += 1 + w->count / 64)
		if (tree_select(w, j) != ring[j])
			return "select disagrees with the in-order walk";
	return NULL;
}

/* Every pool node not reached by the walk is on its free list, once. */
static const char *check_free_lists(const struct ebee_window *w, struct win_walk *wk)
{
	size_t leaves = 0, inners = 0;

	for (uint32_t f = w->leaves.free; f != WIN_NONE; f = (uint32_t)w->leaf[f].key[0])
		if (f >= w->leaves.used || wk->leaf_mark[f]++)
			return "leaf free list broken";
	for (uint32_t f = w->inners.free; f != WIN_NONE; f = w->inner[f].child[0])
		if (f >= w->inners.used || wk->inner_mark[f]++)
			return "inner free list broken";
	for (uint32_t j = 0; j < w->leaves.used; j++)
		leaves += wk->leaf_mark[j];
	for (uint32_t j = 0; j < w->inners.used; j++)
		inners += wk->inner_mark[j];
	if (leaves != w->leaves.used || inners != w->inners.used)
		return "a node is neither in the tree nor free (leak)";
	return NULL;
}

/*
 * Every invariant in the opening comment, plus: the tree's keys are the
 * ring's latencies, the sum is theirs, select agrees with an in-order walk,
 * and every pool node is either in the tree or on its free list. NULL if all
 * hold, else what broke (static storage: test-only, not thread-safe).
 */
static void win_sync(struct ebee_window *w);

static const char *win_check(const struct ebee_window *w)
{
	static struct win_walk wk;
	uint64_t *ring = NULL;

	/* A tree left stale is checked as the next query would find it. */
	win_sync((struct ebee_window *)w);
	memset(&wk, 0, sizeof(wk));
	wk.leaf_mark = calloc(w->leaves.max + 1, 1);
	wk.inner_mark = calloc(w->inners.max + 1, 1);
	wk.keys = calloc(w->count + 1, sizeof(*wk.keys));
	ring = calloc(w->count + 1, sizeof(*ring));
	if (!wk.leaf_mark || !wk.inner_mark || !wk.keys || !ring) {
		wk.msg = "out of memory";
		goto out;
	}
	wk.msg = check_bounds(w);
	if (!wk.msg)
		wk.msg = check_ring(w, ring);
	if (wk.msg)
		goto out;
	if (win_walk_tree(w, &wk, w->root, w->height, w->count,
			  w->height ? w->inner[w->root].min[0] : w->leaf[w->root].key[0], 1))
		goto out;
	if (wk.seen != w->count) {
		wk.msg = "fewer keys in the tree than in the ring";
		goto out;
	}
	wk.msg = check_keys(w, &wk, ring);
	if (!wk.msg)
		wk.msg = check_free_lists(w, &wk);
out:
	free(wk.leaf_mark);
	free(wk.inner_mark);
	free(wk.keys);
	free(ring);
	return wk.msg;
}
#endif /* EBEE_WINDOW_CHECK */

/* ---------------------------------------------------------------- rebuild */

/* Leaves and inner nodes of a rebuilt tree hold about this many entries:
 * room for growth before the next split, and above the minimum. */
#define WIN_BUILD_FILL 48
/* Pushes no query has looked at, beyond which the tree stops being kept:
 * a rebuild of 100000 costs about what 10000 pushes do (bench_window). */
#define WIN_LAZY_FRACTION 8

/* Size of part j when n items are split into `parts` nearly equal parts. */
static size_t part_size(size_t n, size_t parts, size_t j)
{
	return n / parts + (j < n % parts);
}

/* The ring's latencies, sorted (LSD radix sort, 11 bits a pass, passes in
 * which all keys share the digit skipped: 3-4 passes for nanosecond
 * latencies). */
static const uint64_t *win_sorted_lat(struct ebee_window *w)
{
	uint64_t *a = w->scratch, *b = w->scratch + w->cap, *t;
	size_t n = w->count, first = w->cap - w->head;
	uint32_t cnt[1u << 11];

	if (first > n)
		first = n;
	memcpy(a, w->lat + w->head, first * sizeof(*a));
	memcpy(a + first, w->lat, (n - first) * sizeof(*a));
	for (unsigned sh = 0; sh < 64; sh += 11) {
		uint32_t sum = 0;

		memset(cnt, 0, sizeof(cnt));
		for (size_t i = 0; i < n; i++)
			cnt[(a[i] >> sh) & 2047]++;
		if (cnt[(a[0] >> sh) & 2047] == n)
			continue;
		for (unsigned d = 0; d < 2048; d++) {
			uint32_t c = cnt[d];

			cnt[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			b[cnt[(a[i] >> sh) & 2047]++] = a[i];
		t = a;
		a = b;
		b = t;
	}
	return a;
}

/*
 * Build the tree from scratch over the ring's latencies: sort them, cut them
 * into leaves of about WIN_BUILD_FILL keys, then each level into inner nodes
 * of about as many children, bottom-up. After a pool reset, leaf_new() and
 * inner_new() hand out consecutive ids, so a level is its first id and its
 * size. The fill bounds hold: a level of m > WIN_INNER_MAX (or n >
 * WIN_LEAF_MAX) entries is cut into ceil(m / 48) >= 2 parts of
 * m / ceil(m / 48) >= 32 entries, and a level of 2..64 is the root.
 */
static void win_rebuild(struct ebee_window *w)
{
	size_t n = w->count, nl, m, off = 0;
	const uint64_t *keys = n ? win_sorted_lat(w) : NULL;
	uint32_t first = 0;
	int leaves_below = 1;

	w->leaves.used = w->inners.used = 0;
	w->leaves.free = w->inners.free = WIN_NONE;
	w->height = 0;
	if (n <= WIN_LEAF_MAX) {
		w->root = leaf_new(w);
		if (n)
			memcpy(w->leaf[w->root].key, keys, n * sizeof(*keys));
		return;
	}
	nl = (n + WIN_BUILD_FILL - 1) / WIN_BUILD_FILL;
	for (size_t j = 0; j < nl; j++) {
		size_t k = part_size(n, nl, j);

		memcpy(w->leaf[leaf_new(w)].key, keys + off, k * sizeof(*keys));
		off += k;
	}
	for (m = nl;;) {
		size_t parts = m <= WIN_INNER_MAX ? 1 : (m + WIN_BUILD_FILL - 1) / WIN_BUILD_FILL;
		uint32_t level = w->inners.used, c = first;

		for (size_t j = 0; j < parts; j++) {
			struct win_inner *in = &w->inner[inner_new(w)];

			in->n = (uint32_t)part_size(m, parts, j);
			for (unsigned i = 0; i < in->n; i++, c++) {
				in->child[i] = c;
				if (leaves_below) {
					in->cnt[i] = (uint32_t)part_size(n, nl, c);
					in->min[i] = w->leaf[c].key[0];
				} else {
					const struct win_inner *ci = &w->inner[c];
					uint32_t sum = 0;

					for (unsigned t = 0; t < ci->n; t++)
						sum += ci->cnt[t];
					in->cnt[i] = sum;
					in->min[i] = ci->min[0];
				}
			}
		}
		w->height++;
		if (parts == 1) {
			w->root = level;
			return;
		}
		m = parts;
		first = level;
		leaves_below = 0;
	}
}

/* Before the tree is read: catch up if pushes went unkept. */
static void win_sync(struct ebee_window *w)
{
	if (w->unseen) /* a query right after a query says nothing of the gaps */
		w->gaps = ((w->gaps << 1) | (w->unseen > w->cap / WIN_LAZY_FRACTION)) & 3;
	w->unseen = 0;
	if (w->stale) {
		win_rebuild(w);
		w->stale = 0;
	}
}

/* ---------------------------------------------------------------- window */

static void win_evict_oldest(struct ebee_window *w)
{
	uint64_t x = w->lat[w->head];

	if (!w->stale)
		tree_erase(w, x);
	w->sum -= x;
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
	size_t leaves, inners;

	/* Counts are u32 in the tree. */
	if (cap < 1 || cap >= UINT32_MAX) {
		errno = EINVAL;
		return NULL;
	}
	/*
	 * Pool sizes from the fill bounds. A leaf is allocated only by a split,
	 * during an insert into at most cap - 1 keys, after which every leaf but
	 * a lone root holds >= WIN_LEAF_MIN: at most (cap - 1) / WIN_LEAF_MIN + 1
	 * leaves. Each inner level has at most 1 / WIN_INNER_MIN as many nodes as
	 * the level below, or 1: the sum is below leaves / (WIN_INNER_MIN - 1)
	 * plus one per level. Erase allocates nothing.
	 */
	leaves = cap / WIN_LEAF_MIN + 1;
	inners = leaves / (WIN_INNER_MIN - 1) + WIN_MAX_HEIGHT;
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->end = calloc(cap, sizeof(*w->end));
	w->lat = calloc(cap, sizeof(*w->lat));
	w->leaf = aligned_alloc(64, leaves * sizeof(*w->leaf));
	w->inner = malloc(inners * sizeof(*w->inner));
	w->scratch = malloc(2 * cap * sizeof(*w->scratch));
	if (!w->end || !w->lat || !w->leaf || !w->inner || !w->scratch) {
		ebee_window_free(w);
		errno = ENOMEM;
		return NULL;
	}
	w->cap = cap;
	w->max_age_ns = max_age_ns;
	w->leaves.max = (uint32_t)leaves;
	w->inners.max = (uint32_t)inners;
	ebee_window_reset(w);
	return w;
}

void ebee_window_free(struct ebee_window *w)
{
	if (!w)
		return;
	free(w->end);
	free(w->lat);
	free(w->leaf);
	free(w->inner);
	free(w->scratch);
	free(w);
}

void ebee_window_reset(struct ebee_window *w)
{
	/* Stale nodes need no clearing: a node is written before it is read. */
	w->head = 0;
	w->count = 0;
	w->sum = 0;
	w->leaves.used = w->inners.used = 0;
	w->leaves.free = w->inners.free = WIN_NONE;
	w->root = leaf_new(w); /* an empty leaf: the tree always has a root */
	w->height = 0;
	w->unseen = 0;
	w->gaps = 0;
	w->stale = 0;
}

void ebee_window_push(struct ebee_window *w, uint64_t end_ns, uint64_t lat_ns)
{
	size_t slot;

	if (w->count == w->cap)
		win_evict_oldest(w);
	slot = w->head + w->count;
	if (slot >= w->cap)
		slot -= w->cap;

	w->end[slot] = end_ns;
	w->lat[slot] = lat_ns;
	/* Stop keeping the tree when queries have been rare lately, or when
	 * nobody looked at the last cap / 8 pushes: the next query rebuilds it
	 * (a sort, ~2 ms at 100000), cheaper than the pushes at ~0.2 us each
	 * when the window slides faster than it is read (a saturated server
	 * queried once a second pushes several windows' worth in between). */
	if (w->unseen <= w->cap)
		w->unseen++;
	if (!w->stale && (w->gaps || w->unseen > w->cap / WIN_LAZY_FRACTION))
		w->stale = 1;
	if (!w->stale)
		tree_insert(w, lat_ns);
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

int ebee_window_ends(const struct ebee_window *w, uint64_t *oldest, uint64_t *newest)
{
	if (!w->count)
		return -ENODATA;
	*oldest = w->end[w->head];
	*newest = w->end[win_newest_slot(w)];
	return 0;
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
	*lat_ns = w->lat[win_newest_slot(w)];
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
/* Where numpy's rank h = (n - 1) * q falls: below which element (lo), how far
 * towards the next (g); false when h is at or past the last element. */
static bool numpy_rank(size_t n, double p, size_t *lo, double *g)
{
	double h = (double)(n - 1) * (p / 100.0);

	if (h >= (double)(n - 1))
		return false;
	*lo = (size_t)h;
	*g = h - (double)*lo;
	return true;
}

/* numpy's _lerp() between neighbours a <= b at fraction g. */
static double numpy_lerp(uint64_t a, uint64_t b, double g)
{
	volatile double prod;
	double d;

	if (g == 0.0)
		b = a;
	d = (double)(b - a);
	if (g >= 0.5) {
		prod = d * (1.0 - g);
		return (double)b - prod;
	}
	prod = d * g;
	return (double)a + prod;
}

int ebee_window_percentile(const struct ebee_window *w, double p, double *val_ns)
{
	size_t n = w->count, lo;
	uint64_t a, b;
	double g;

	/* The window itself is not const (see ebee_window_new): the tree is a
	 * cache of the ring that a query may have to bring up to date. */
	win_sync((struct ebee_window *)w);
	/* Written so that NaN fails too. */
	if (!(p >= 0.0 && p <= 100.0))
		return -EINVAL;
	if (!n)
		return -ENODATA;
	if (!numpy_rank(n, p, &lo, &g)) {
		*val_ns = (double)tree_select(w, n - 1);
		return 0;
	}
	/* lo + 1 < n here; the neighbour usually shares a leaf. */
	a = tree_select2(w, lo, &b);
	*val_ns = numpy_lerp(a, b, g);
	return 0;
}

int ebee_window_percentile_union(struct ebee_window *const *ws, size_t nw, double p, double *val_ns)
{
	size_t n = 0, lo;
	uint64_t a;
	double g;

	if (!(p >= 0.0 && p <= 100.0) || !nw)
		return -EINVAL;
	for (size_t i = 0; i < nw; i++) {
		win_sync(ws[i]);
		n += ws[i]->count;
	}
	if (!n)
		return -ENODATA;
	if (!numpy_rank(n, p, &lo, &g)) {
		*val_ns = (double)union_select(ws, nw, n - 1);
		return 0;
	}
	a = union_select(ws, nw, lo);
	*val_ns = numpy_lerp(a, g == 0.0 ? a : union_next(ws, nw, lo, a), g);
	return 0;
}
