// SPDX-License-Identifier: MIT
/*
 * The kernel's request counters of a workload, sampled (kcount.h): the
 * history of readings and the interpolation over it. Pure logic.
 */
#include <string.h>

#include "kcount.h"

static const uint64_t step_ns[EBEE_KC_LEVELS] = { 100ull * 1000 * 1000, 2000ull * 1000 * 1000 };

void ebee_kc_init(struct ebee_kc *h, uint64_t now_ns)
{
	memset(h, 0, sizeof(*h));
	h->start.t_ns = now_ns;
	h->last.t_ns = now_ns;
}

static const struct ebee_kc_sample *lv_at(const struct ebee_kc *h, int l, unsigned int i)
{
	return &h->lv[l].s[(h->lv[l].head + i) % EBEE_KC_RING];
}

void ebee_kc_update(struct ebee_kc *h, uint64_t t_ns, const struct ebee_kcount *c)
{
	struct ebee_kc_sample s = { .t_ns = t_ns, .c = *c };

	if (t_ns < h->last.t_ns)
		return;
	h->last = s;
	for (int l = 0; l < EBEE_KC_LEVELS; l++) {
		unsigned int n = h->lv[l].n;

		/* Just under a step apart still counts: the housekeeper's
		 * rounds come every step, give or take. */
		if (n && t_ns - lv_at(h, l, n - 1)->t_ns < step_ns[l] - step_ns[l] / 8)
			continue;
		if (n == EBEE_KC_RING) {
			h->lv[l].head = (h->lv[l].head + 1) % EBEE_KC_RING;
			n--;
		}
		h->lv[l].s[(h->lv[l].head + n) % EBEE_KC_RING] = s;
		h->lv[l].n = n + 1;
	}
}

/* Linear between a and b at t (a.t <= t <= b.t). */
static double lerp(uint64_t ta, uint64_t va, uint64_t tb, uint64_t vb, uint64_t t)
{
	if (tb <= ta || t <= ta)
		return (double)va;
	if (t >= tb)
		return (double)vb;
	return (double)va + ((double)vb - (double)va) * (double)(t - ta) / (double)(tb - ta);
}

/* The two readings around time t (a->t_ns <= t <= b->t_ns, or t past the
 * latest: both the latest), from the finest level whose history reaches
 * back to t. */
static void kc_around(const struct ebee_kc *h, uint64_t t, const struct ebee_kc_sample **a,
		      const struct ebee_kc_sample **b)
{
	if (t >= h->last.t_ns) {
		*a = *b = &h->last;
		return;
	}
	for (int l = 0; l < EBEE_KC_LEVELS; l++) {
		unsigned int n = h->lv[l].n;

		if (!n || lv_at(h, l, 0)->t_ns > t)
			continue;
		for (unsigned int i = 1; i < n; i++) {
			if (lv_at(h, l, i)->t_ns >= t) {
				*a = lv_at(h, l, i - 1);
				*b = lv_at(h, l, i);
				return;
			}
		}
		*a = lv_at(h, l, n - 1);
		*b = &h->last;
		return;
	}
	/* Older than every level: between the start and the oldest reading. */
	*a = &h->start;
	for (int l = EBEE_KC_LEVELS - 1; l >= 0; l--)
		if (h->lv[l].n) {
			*b = lv_at(h, l, 0);
			return;
		}
	*b = &h->last;
}

/* Pattern k's counters at time t. */
static void kc_at(const struct ebee_kc *h, int k, uint64_t t, double *req, double *lost)
{
	const struct ebee_kc_sample *a, *b;

	kc_around(h, t, &a, &b);
	*req = lerp(a->t_ns, a->c.req[k], b->t_ns, b->c.req[k], t);
	*lost = lerp(a->t_ns, a->c.lost[k], b->t_ns, b->c.lost[k], t);
}

void ebee_kc_between(const struct ebee_kc *h, int k, uint64_t lo_ns, uint64_t hi_ns,
		     struct ebee_kc_span *out)
{
	double rlo, llo, rhi, lhi;

	memset(out, 0, sizeof(*out));
	out->covered = 1;
	if (k < 0 || k >= EBEE_KC_MAX || hi_ns < lo_ns)
		return;
	kc_at(h, k, lo_ns, &rlo, &llo);
	kc_at(h, k, hi_ns, &rhi, &lhi);
	out->requests = rhi > rlo ? rhi - rlo : 0;
	out->lost = lhi > llo ? lhi - llo : 0;
	if (out->lost > out->requests)
		out->lost = out->requests;
	out->covered = ebee_kc_covered(out->requests, out->lost);
}

void ebee_kc_window(const struct ebee_kc *h, int k, uint64_t lo_ns, uint64_t hi_ns, uint64_t nrec,
		    struct ebee_kc_span *out)
{
	ebee_kc_between(h, k, lo_ns, hi_ns, out);
	out->requests = (double)nrec + out->lost;
	out->covered = ebee_kc_covered(out->requests, out->lost);
}

void ebee_kc_io_between(const struct ebee_kc *h, uint64_t lo_ns, uint64_t hi_ns,
			struct ebee_kc_io *out)
{
	const struct ebee_kc_sample *alo, *blo, *ahi, *bhi;

	memset(out, 0, sizeof(*out));
	if (hi_ns < lo_ns)
		return;
	/* No interpolation: a request and its bytes in the reading interval
	 * around an end would be split alike, and its bytes then seen with
	 * no request (a false zero as the traffic stops). The requests over
	 * the span widened to the readings around it, the bytes over it
	 * narrowed to the readings inside it: I/O with no request is said
	 * only where no reading could hold a request for it. */
	kc_around(h, lo_ns, &alo, &blo);
	kc_around(h, hi_ns, &ahi, &bhi);
	for (int k = 0; k < EBEE_KC_MAX; k++)
		if (bhi->c.req[k] > alo->c.req[k])
			out->requests += (double)(bhi->c.req[k] - alo->c.req[k]);
	if (ahi->t_ns >= blo->t_ns && ahi->c.io_bytes > blo->c.io_bytes) {
		out->bytes = ahi->c.io_bytes - blo->c.io_bytes;
		out->calls = ahi->c.io_calls - blo->c.io_calls;
	}
}

double ebee_kc_covered(double requests, double lost)
{
	double c;

	if (!(requests > 0))
		return 1;
	c = 1 - lost / requests;
	return c < 0 ? 0 : c > 1 ? 1 : c;
}

bool ebee_kc_lossy(double requests, double lost)
{
	return requests > 0 && lost > EBEE_KC_LOST_MAX * requests;
}
