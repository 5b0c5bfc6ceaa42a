// SPDX-License-Identifier: MIT
/*
 * Frequency limits (scaling_min_freq, scaling_max_freq) of the managed CPUs:
 * rounding to the step, changes of several CPUs rolled back as a whole, each
 * CPU's limits recorded before its first change and put back on restore, and
 * a workload's cap (the maximum its cores get, also cores it gains later).
 */
#include <errno.h>
#include <string.h>

#include "act_front.h"

/*
 * CPUs one change may touch: the undo log lives on the stack (24 bytes a CPU).
 * A change of more CPUs is refused with -E2BIG; the workloads this daemon
 * co-locates hold a few cores each.
 */
#define ACT_FREQ_BATCH_MAX 64

struct freq_undo {
	int cpu;
	unsigned long min, max;
};

int act_freq_round(const struct act *act, unsigned long khz, unsigned long *out)
{
	const struct act_caps *c = &act->caps;
	unsigned long step = c->freq_step_khz ? c->freq_step_khz : ACT_DEFAULT_FREQ_STEP_KHZ;
	unsigned long r;

	if (!(c->resources & ACT_RES_CPUFREQ))
		return -EOPNOTSUPP;
	if (khz < c->freq_min_khz || khz > c->freq_max_khz)
		return -ERANGE;
	if (khz == c->freq_min_khz || khz == c->freq_max_khz) {
		*out = khz;
		return 0;
	}
	r = (khz + step / 2) / step * step;
	if (r < c->freq_min_khz)
		r = c->freq_min_khz;
	if (r > c->freq_max_khz)
		r = c->freq_max_khz;
	*out = r;
	return 0;
}

/*
 * Read the limits of every cpu in cpus into undo[] (*n of them) and record
 * those not recorded yet, in memory and in the state file.
 */
static int freq_record(struct act *act, const struct act_cpumask *cpus, struct freq_undo *undo,
		       size_t *n)
{
	bool dirty = false;
	int cpu, err;

	*n = 0;
	act_cpumask_for_each(cpu, cpus)
	{
		struct act_rec_freq rf = { .cpu = cpu };

		err = act->fq->get(act->fqbe, cpu, &rf.min_khz, &rf.max_khz);
		if (err)
			return ERR(act, err, "cannot read the frequency limits of cpu%d: %s", cpu,
				   strerror(-err));
		undo[*n] = (struct freq_undo){ .cpu = cpu, .min = rf.min_khz, .max = rf.max_khz };
		(*n)++;
		if (!act__rec_find_freq(&act->rec, cpu)) {
			err = act__rec_add_freq(&act->rec, &rf);
			if (err)
				return err;
			dirty = true;
		}
	}
	return dirty ? act__persist(act) : 0;
}

/* Write the new limits of undo[0..n); *written of them may need undoing. */
static int freq_write(struct act *act, const struct freq_undo *undo, size_t n, unsigned long min,
		      unsigned long max, bool clamp_min, size_t *written)
{
	for (size_t i = 0; i < n; i++) {
		unsigned long nmin = min ? min : undo[i].min, nmax = max ? max : undo[i].max;
		int err;

		if (clamp_min && !min && nmin > nmax)
			nmin = nmax;
		if (nmin > nmax)
			return ERR(
			    act, -EINVAL,
			    "cpu%d: minimum frequency %lu kHz would exceed the maximum %lu kHz",
			    undo[i].cpu, nmin, nmax);
		err = act->fq->set(act->fqbe, undo[i].cpu, nmin, nmax);
		*written = i + 1; /* the backend leaves a failed cpu as it was; undo is harmless */
		if (err)
			return err;
	}
	return 0;
}

int act__freq_apply(struct act *act, const struct act_cpumask *cpus, unsigned long min,
		    unsigned long max, bool clamp_min)
{
	struct freq_undo undo[ACT_FREQ_BATCH_MAX];
	size_t n = 0, written = 0;
	int err;

	if (act_cpumask_count(cpus) > ACT_FREQ_BATCH_MAX)
		return ERR(act, -E2BIG, "too many cpus in one frequency change");
	err = freq_record(act, cpus, undo, &n);
	if (err)
		return err;
	err = freq_write(act, undo, n, min, max, clamp_min, &written);
	for (size_t i = 0; err && i < written; i++)
		act->fq->set(act->fqbe, undo[i].cpu, undo[i].min, undo[i].max);
	return err;
}

int act__freq_restore(struct act *act, const struct act_cpumask *only)
{
	int first = 0;

	for (size_t i = 0; i < act->rec.nfreqs;) {
		struct act_rec_freq *f = &act->rec.freqs[i];
		int err;

		if (only && !act_cpumask_isset(only, f->cpu)) {
			i++;
			continue;
		}
		err = act->fq->set(act->fqbe, f->cpu, f->min_khz, f->max_khz);
		if (err && !first)
			first = err;
		act__rec_drop_freq(&act->rec, f->cpu);
	}
	return first;
}

int act_set_freq(struct act *act, const struct act_cpumask *cpus, unsigned long min_khz,
		 unsigned long max_khz)
{
	unsigned long rmin = 0, rmax = 0;
	int err;

	if (!act || !cpus)
		return -EINVAL;
	if (!managed_freq(act))
		return ERR(act, -EOPNOTSUPP, "cpufreq is not usable: %s", act->caps.cpufreq_reason);
	if (!act_cpumask_subset(cpus, &act->caps.cpus))
		return ERR(act, -ERANGE, "frequency change on cpus outside the managed set");
	if (min_khz && (err = act_freq_round(act, min_khz, &rmin)))
		return ERR(act, err, "minimum frequency %lu kHz is outside %lu-%lu kHz", min_khz,
			   act->caps.freq_min_khz, act->caps.freq_max_khz);
	if (max_khz && (err = act_freq_round(act, max_khz, &rmax)))
		return ERR(act, err, "maximum frequency %lu kHz is outside %lu-%lu kHz", max_khz,
			   act->caps.freq_min_khz, act->caps.freq_max_khz);
	if (rmin && rmax && rmin > rmax)
		return ERR(act, -EINVAL, "minimum frequency %lu kHz above maximum %lu kHz", rmin,
			   rmax);
	return act__freq_apply(act, cpus, rmin, rmax, false);
}

int act_get_freq(struct act *act, int cpu, unsigned long *min_khz, unsigned long *max_khz)
{
	if (!act || !min_khz || !max_khz)
		return -EINVAL;
	if (!managed_freq(act))
		return -EOPNOTSUPP;
	return act->fq->get(act->fqbe, cpu, min_khz, max_khz);
}

int act_workload_set_freq(struct act *act, struct act_workload *wl, unsigned long max_khz)
{
	unsigned long r;
	int err;

	if (!act || !wl)
		return -EINVAL;
	if (!managed_freq(act))
		return ERR(act, -EOPNOTSUPP, "cpufreq is not usable: %s", act->caps.cpufreq_reason);
	if (max_khz == 0) {
		err = act__freq_apply(act, &wl->cpus, 0, act->caps.freq_max_khz, true);
		if (!err)
			wl->freq_cap = 0;
		return err;
	}
	err = act_freq_round(act, max_khz, &r);
	if (err)
		return ERR(act, err, "workload %s: frequency %lu kHz is outside %lu-%lu kHz",
			   wl->name, max_khz, act->caps.freq_min_khz, act->caps.freq_max_khz);
	err = act__freq_apply(act, &wl->cpus, 0, r, true);
	if (!err)
		wl->freq_cap = r;
	return err;
}
