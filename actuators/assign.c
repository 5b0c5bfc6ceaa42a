// SPDX-License-Identifier: MIT
/*
 * Core assignments. A batch of new core sets (act_assign_cpus()) is a
 * proposal: it is checked as one, by a pure function of the proposed sets and
 * the current ones, before anything is written. Only the final state must be
 * disjoint, so two workloads may swap cores, which no sequence of single
 * disjoint moves can do. It is then applied grow-then-shrink, so no workload
 * is ever left without cores, and rolled back as a whole if a write fails.
 */
#include <errno.h>
#include <stdlib.h>

#include "act_front.h"

/* What is wrong with a proposal: the first element at fault, and why. */
struct proposal_fault {
	int err;			  /* 0, -EINVAL (empty), -ERANGE (unmanaged), -EBUSY */
	size_t i;			  /* the element of the proposal at fault */
	const struct act_workload *other; /* -EBUSY: the workload it would overlap */
};

/* The cores w would hold with the proposal in force. */
static const struct act_cpumask *final_cpus(const struct act_workload *w,
					    const struct act_assign *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i].wl == w)
			return &a[i].cpus;
	return &w->cpus;
}

/*
 * Would the workloads' core sets be valid with the proposal a[0..n) in force
 * (listed workloads on their proposed sets, the others on theirs)? Each
 * proposed set must be non-empty, within managed, and disjoint from every
 * other workload's final set. An element with a NULL wl is a workload still
 * to be added. Reads the workload list, writes nothing.
 */
static struct proposal_fault check_proposal(const struct act_cpumask *managed,
					    const struct act_workload *wls,
					    const struct act_assign *a, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (act_cpumask_empty(&a[i].cpus))
			return (struct proposal_fault){ -EINVAL, i, NULL };
		if (!act_cpumask_subset(&a[i].cpus, managed))
			return (struct proposal_fault){ -ERANGE, i, NULL };
		for (const struct act_workload *w = wls; w; w = w->next)
			if (w != a[i].wl && act_cpumask_intersects(&a[i].cpus, final_cpus(w, a, n)))
				return (struct proposal_fault){ -EBUSY, i, w };
	}
	return (struct proposal_fault){ 0, 0, NULL };
}

/* The message for fault f of a proposal a (name: the workload of a[f->i]). */
static int proposal_err(struct act *act, const struct proposal_fault *f, const char *name,
			const struct act_assign *a, size_t n)
{
	char x[ACT_CPUS_TEXT], y[ACT_CPUS_TEXT];

	switch (f->err) {
	case 0:
		return 0;
	case -EINVAL:
		return ERR(act, -EINVAL, "workload %s: an empty core set is not allowed", name);
	case -ERANGE:
		act__fmt_cpus(&a[f->i].cpus, x, sizeof(x));
		act__fmt_cpus(&act->caps.cpus, y, sizeof(y));
		return ERR(act, -ERANGE, "workload %s: cpus %s are not all managed (managed: %s)",
			   name, x, y);
	default:
		act__fmt_cpus(&a[f->i].cpus, x, sizeof(x));
		act__fmt_cpus(final_cpus(f->other, a, n), y, sizeof(y));
		return ERR(act, f->err, "workload %s: cpus %s overlap workload %s (cpus %s)", name,
			   x, f->other->name, y);
	}
}

int act__check_new_cpus(struct act *act, const char *name, const struct act_cpumask *cpus)
{
	struct act_assign a = { .wl = NULL };
	struct proposal_fault f;

	if (cpus)
		a.cpus = *cpus;
	f = check_proposal(&act->caps.cpus, act->wls, &a, 1);
	return proposal_err(act, &f, name, &a, 1);
}

/* Every element names a managed workload, and none twice. */
static int check_listed(struct act *act, const struct act_assign *a, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!a[i].wl || !act__wl_listed(act, a[i].wl))
			return ERR(act, -EINVAL, "core assignment %zu: not a managed workload", i);
		for (size_t j = 0; j < i; j++)
			if (a[j].wl == a[i].wl)
				return ERR(act, -EINVAL,
					   "workload %s listed twice in one assignment",
					   a[i].wl->name);
	}
	return 0;
}

/* How far the application of element i got, for the rollback. */
struct step {
	struct act_cpumask old; /* its cores before */
	bool grown;		/* its group holds old | new */
	bool set;		/* its group holds new */
};

int act__set_mems(struct act *act, const char *grp, const struct act_cpumask *cpus)
{
	char list[256];

	if (!act->numa || !managed_cpuset(act))
		return 0;
	act_topo_nodes_format(act_topo_mems_for(&act->topo, cpus), list, sizeof(list));
	return act->cg->set_mems(act->cgbe, grp, list);
}

/* First every workload that gains cores gets old | new: nobody shrinks yet.
 * Its mems widen first, so no moment has cpus on a node it may not use. */
static int grow(struct act *act, const struct act_assign *a, struct step *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct act_cpumask u;
		int err;

		if (act_cpumask_subset(&a[i].cpus, &s[i].old))
			continue;
		act_cpumask_or(&u, &s[i].old, &a[i].cpus);
		err = act__set_mems(act, a[i].wl->grp, &u);
		if (!err)
			err = act->cg->set_cpus(act->cgbe, a[i].wl->grp, &u);
		if (err)
			return err;
		s[i].grown = true;
	}
	return 0;
}

/* Then every workload that loses cores gets exactly its new set. */
static int shrink(struct act *act, const struct act_assign *a, struct step *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct act_cpumask u;
		int err;

		act_cpumask_or(&u, &s[i].old, &a[i].cpus);
		if (act_cpumask_equal(&u, &a[i].cpus))
			continue;
		err = act->cg->set_cpus(act->cgbe, a[i].wl->grp, &a[i].cpus);
		if (err)
			return err;
		s[i].set = true;
		/* mems narrow after the cpus have left the node */
		err = act__set_mems(act, a[i].wl->grp, &a[i].cpus);
		if (err)
			return err;
	}
	return 0;
}

/* Cores a capped workload gains take its cap. */
static int cap_gained(struct act *act, const struct act_assign *a, const struct step *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct act_workload *wl = a[i].wl;
		struct act_cpumask gained;
		int err;

		act_cpumask_andnot(&gained, &a[i].cpus, &s[i].old);
		if (!wl->freq_cap || !managed_freq(act) || act_cpumask_empty(&gained))
			continue;
		err = act__freq_apply(act, &gained, 0, wl->freq_cap, true);
		/* on failure the cpus of earlier workloads keep their new cap:
		 * harmless, the cores go back to those workloads' old owners */
		if (err)
			return err;
	}
	return 0;
}

/* Back to the union where a group was shrunk, then to the old sets. */
static void rollback(struct act *act, const struct act_assign *a, struct step *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct act_cpumask u;

		if (!s[i].set)
			continue;
		act_cpumask_or(&u, &s[i].old, &a[i].cpus);
		act->cg->set_cpus(act->cgbe, a[i].wl->grp, &u);
		s[i].grown = true;
	}
	for (size_t i = 0; i < n; i++) {
		if (!s[i].grown)
			continue;
		act->cg->set_cpus(act->cgbe, a[i].wl->grp, &s[i].old);
		act__set_mems(act, a[i].wl->grp, &s[i].old);
	}
}

/* The writes went through: the handles take their new sets. */
static void commit(struct act *act, const struct act_assign *a, const struct step *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char x[ACT_CPUS_TEXT], y[ACT_CPUS_TEXT];

		act__fmt_cpus(&s[i].old, x, sizeof(x));
		act__fmt_cpus(&a[i].cpus, y, sizeof(y));
		a[i].wl->cpus = a[i].cpus;
		act_be_log(act, ACT_LOG_DEBUG, "workload %s: cpus %s -> %s", a[i].wl->name, x, y);
	}
}

int act_assign_cpus(struct act *act, const struct act_assign *assign, size_t n)
{
	struct proposal_fault f;
	struct step *s;
	int err;

	if (!act || (!assign && n))
		return -EINVAL;
	if (!managed_cpuset(act))
		return ERR(act, -EOPNOTSUPP, "cpuset is not usable: %s", act->caps.cpuset_reason);
	if (n == 0)
		return 0;
	err = check_listed(act, assign, n);
	if (err)
		return err;
	f = check_proposal(&act->caps.cpus, act->wls, assign, n);
	if (f.err)
		return proposal_err(act, &f, assign[f.i].wl->name, assign, n);

	s = calloc(n, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		s[i].old = assign[i].wl->cpus;
	err = grow(act, assign, s, n);
	if (!err)
		err = shrink(act, assign, s, n);
	if (!err)
		err = cap_gained(act, assign, s, n);
	if (err)
		rollback(act, assign, s, n);
	else
		commit(act, assign, s, n);
	free(s);
	return err;
}

int act_set_cpus(struct act *act, struct act_workload *wl, const struct act_cpumask *cpus)
{
	struct act_assign a;

	if (!cpus)
		return -EINVAL;
	a.wl = wl;
	a.cpus = *cpus;
	return act_assign_cpus(act, &a, 1);
}
