// SPDX-License-Identifier: MIT
/* The one table of resources, built from POL_RES_LIST (policy.h). */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "res.h"

#define RES_DECLARE(e, n) extern const struct res_ops res_##n##_ops;
POL_RES_LIST(RES_DECLARE)
#undef RES_DECLARE

const struct res_ops *const res_table[POL_RES_COUNT] = {
#define RES_ENTRY(e, n) [POL_RES_##e] = &res_##n##_ops,
	POL_RES_LIST(RES_ENTRY)
#undef RES_ENTRY
};

/* The bytes of each key of tab that needs a restart, in a and b. */
static bool keys_same(const struct cfg_key *tab, int n, unsigned int initial, const void *a,
		      const void *b)
{
	for (int k = 0; k < n; k++)
		if (!(initial >> k & 1) &&
		    memcmp((const char *)a + tab[k].off, (const char *)b + tab[k].off, tab[k].size))
			return false;
	return true;
}

bool res_keys_same(const struct cfg *a, const struct cfg *b, bool wl, int i)
{
	for (int r = 0; r < POL_RES_COUNT; r++) {
		const struct res_ops *o = res_table[r];

		if (wl ? !keys_same(o->cfg.wl_keys, o->cfg.nwl_keys, o->cfg.wl_initial,
				    a->wl[i].res[r].conf, b->wl[i].res[r].conf)
		       : !keys_same(o->cfg.keys, o->cfg.nkeys, 0, a->res[r].conf, b->res[r].conf))
			return false;
	}
	return true;
}

long res_used(const struct loop *l, enum pol_res r)
{
	long used = 0;

	for (int i = 0; i < l->nwl; i++)
		if (l->wl[i].alive)
			used += l->wl[i].alloc[r];
	return used;
}

void res_view(struct loop *l, enum pol_res r, struct res_view *v)
{
	v->cfg = l->cfg;
	v->r = r;
	v->info = &l->res[r];
	v->caps = &l->caps;
	v->nwl = l->nwl;
	for (int i = 0; i < l->nwl; i++) {
		struct loop_wl *w = &l->wl[i];

		v->wl[i] = (struct res_wl){ .name = w->name,
					    .alive = w->alive,
					    .alloc = &w->alloc[r],
					    .min = &w->min[r],
					    .max = &w->max[r],
					    .cpus = &w->cpus };
	}
	v->cores = &l->cores;
	v->assign = l->mops ? l->mops->assign_cpus : NULL;
	v->last_error = l->mops ? l->mops->last_error : NULL;
	v->ctx = l->mctx;
}

void res_view_const(const struct loop *l, enum pol_res r, struct res_view *v)
{
	res_view((struct loop *)l, r, v);
}

/* A stored number of k at base, as a long. */
static long key_value(const struct cfg_key *k, const void *base)
{
	const char *p = (const char *)base + k->off;

	switch (k->store) {
	case CFG_KEY_S_INT:
		return *(const int *)p;
	case CFG_KEY_S_UINT:
		return (long)*(const unsigned int *)p;
	case CFG_KEY_S_LONG:
		return *(const long *)p;
	case CFG_KEY_S_U64:
		return (long)*(const uint64_t *)p;
	case CFG_KEY_S_DOUBLE:
		return lround(*(const double *)p);
	case CFG_KEY_S_BOOL:
		return *(const bool *)p;
	case CFG_KEY_S_BYTES:
		break;
	}
	return 0;
}

int res_cfg_value(const struct cfg *c, int wl, const char *key, long *v, int *line)
{
	for (int r = 0; r < POL_RES_COUNT; r++) {
		const struct res_ops *o = res_table[r];
		const struct cfg_res *cr = wl < 0 ? &c->res[r] : &c->wl[wl].res[r];
		const struct cfg_key *tab = wl < 0 ? o->cfg.keys : o->cfg.wl_keys;
		int n = wl < 0 ? o->cfg.nkeys : o->cfg.nwl_keys;
		const struct cfg_key *k = cfg_key_find(tab, n, key);

		if (!k)
			continue;
		if (v)
			*v = key_value(k, cr->conf);
		if (line)
			*line = cr->line_of[k - tab];
		return 0;
	}
	return -ENOENT;
}

const char *pol_res_str(enum pol_res r)
{
	if ((int)r < 0 || r >= POL_RES_COUNT)
		return NULL;
	return res_table[r]->name;
}

long pol_res_shown(enum pol_res r, long v)
{
	return v / res_table[r]->shown_div;
}

int pol_res_parse(const char *s, enum pol_res *r)
{
	for (int i = 0; i < POL_RES_COUNT; i++) {
		if (!strcmp(s, res_table[i]->name)) {
			*r = (enum pol_res)i;
			return 0;
		}
	}
	return -EINVAL;
}
