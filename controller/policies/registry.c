// SPDX-License-Identifier: MIT
/*
 * The one table of policies. Adding a policy is one file in this folder and
 * one line here.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cfg_key.h"
#include "opts.h"
#include "policy.h"

extern const struct pol_ops pol_parties_ops;
extern const struct pol_ops pol_static_ops;
extern const struct pol_ops pol_util_ops;
extern const struct pol_ops pol_mmc_ops;

const struct pol_ops *const pol_registry[] = {
	&pol_parties_ops, &pol_static_ops, &pol_util_ops, &pol_mmc_ops, NULL,
};

const struct pol_ops *pol_find(const char *name)
{
	for (int i = 0; pol_registry[i]; i++)
		if (!strcmp(pol_registry[i]->name, name))
			return pol_registry[i];
	return NULL;
}

/* Shrinks first, then grants by least slack while the pool lasts. */
void pol_grant(const struct pol_observation *obs, int r, const long *want, struct pol_decision *dec)
{
	int order[POL_MAX_WORKLOADS], n = 0;
	long pool = obs->res[r].total;

	for (int i = 0; i < obs->nwl; i++) {
		if (!obs->wl[i].alive)
			continue;
		dec->wl[i].alloc[r] = want[i] < obs->wl[i].alloc[r] ? want[i] : obs->wl[i].alloc[r];
		pool -= dec->wl[i].alloc[r];
		if (want[i] > obs->wl[i].alloc[r])
			order[n++] = i;
	}
	for (int a = 1; a < n; a++) /* insertion sort by slack, unknown last */
		for (int b = a; b > 0; b--) {
			double sa = obs->wl[order[b]].state == POL_LAT_FRESH
					? obs->wl[order[b]].slack
					: INFINITY;
			double sb = obs->wl[order[b - 1]].state == POL_LAT_FRESH
					? obs->wl[order[b - 1]].slack
					: INFINITY;
			int t;

			if (sa >= sb)
				break;
			t = order[b];
			order[b] = order[b - 1];
			order[b - 1] = t;
		}
	for (int k = 0; k < n; k++) {
		int i = order[k];
		long g = want[i] - dec->wl[i].alloc[r];

		g = g < pool ? g : pool;
		dec->wl[i].alloc[r] += g;
		pool -= g;
	}
}

void pol_decision_init(struct pol_decision *dec, const struct pol_observation *obs)
{
	memset(dec, 0, sizeof(*dec));
	dec->nwl = obs->nwl;
	for (int i = 0; i < obs->nwl; i++) {
		memcpy(dec->wl[i].alloc, obs->wl[i].alloc, sizeof(dec->wl[i].alloc));
		snprintf(dec->wl[i].action, sizeof(dec->wl[i].action), "hold");
	}
}

int pol_param_set(const struct cfg_key *tab, int n, void *base, const char *key, const char *val,
		  char *err, size_t err_len)
{
	int e = cfg_key_setting(tab, n, base, key, val, err, err_len);
	char names[256];

	if (e != -ENOENT)
		return e;
	cfg_key_list(tab, n, names, sizeof(names));
	snprintf(err, err_len, "unknown setting '%s' (%s)", key, names);
	return -EINVAL;
}

int pol_parse_params(struct pol_init_args *a, void *base,
		     int (*set)(void *base, const char *key, const char *val, char *err,
				size_t err_len))
{
	for (int i = 0; i < a->nparams; i++) {
		int err = set(base, a->params[i].key, a->params[i].val, a->err, a->err_len);

		if (err) {
			if (OPTS_HAS(a, err_param)) /* an older caller's sz stops before it */
				a->err_param = i;
			return err;
		}
	}
	return 0;
}

double pol_threads_per_core(const struct pol_observation *obs, int i)
{
	const struct pol_wl_obs *w = &obs->wl[i];

	if (obs->topo.smt != POL_SMT_WHOLE)
		return 1;
	if (w->alloc[POL_RES_CORES] > 0 && w->threads > 0)
		return (double)w->threads / (double)w->alloc[POL_RES_CORES];
	if (obs->topo.threads_max > 1)
		return obs->topo.threads_max;
	return 1;
}
