// SPDX-License-Identifier: MIT
/* The one table of resources, built from POL_RES_LIST (policy.h). */
#include <errno.h>
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

bool res_keys_same(const struct cfg *a, const struct cfg *b, bool wl, int i)
{
	const char *pa = wl ? (const char *)&a->wl[i] : (const char *)a;
	const char *pb = wl ? (const char *)&b->wl[i] : (const char *)b;

	for (int r = 0; r < POL_RES_COUNT; r++) {
		for (int k = 0; k < res_table[r]->nkeys; k++) {
			const struct res_key *rk = &res_table[r]->keys[k];

			if (rk->wl == wl && !rk->initial &&
			    memcmp(pa + rk->key.off, pb + rk->key.off, rk->key.size))
				return false;
		}
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
