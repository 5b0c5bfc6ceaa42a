// SPDX-License-Identifier: MIT
/* The one table of resources, built from POL_RES_LIST (policy.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
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

void res_err(char *dst, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(dst, len, fmt, ap);
	va_end(ap);
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
