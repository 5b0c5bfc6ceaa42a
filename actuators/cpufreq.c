// SPDX-License-Identifier: MIT
/*
 * Per-core frequency limits through libcpupower: scaling_min_freq and
 * scaling_max_freq only (cpufreq_modify_policy_min/max). The governor is
 * never written: cpufreq_set_frequency() switches it to userspace and
 * cpufreq_set_policy() rewrites it, so neither is used.
 *
 * libcpupower's conventions: getters return 0 (or NULL) on failure, setters
 * report any failed write as -ENODEV (and 0 on success). We therefore read
 * back after writing to tell "refused" from "absent".
 *
 * Without cpufreq (no /sys/devices/system/cpu/cpuN/cpufreq, as on these VMs)
 * probe() says so and nothing fails.
 */
#include <cpufreq.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "act_backend.h"

struct fbe {
	const struct act_be_conf *conf;
	struct act *act;
};

static int f_open(const struct act_be_conf *conf, void **out)
{
	struct fbe *be = calloc(1, sizeof(*be));

	if (!be)
		return -ENOMEM;
	be->conf = conf;
	be->act = conf->act;
	*out = be;
	return 0;
}

static void f_close(void *p)
{
	free(p);
}

static int f_probe(void *p, const struct act_cpumask *cpus, struct act_caps *caps)
{
	unsigned long lo = 0, hi = ~0ul;
	int cpu, n = 0;

	caps->cpufreq = false;
	act_cpumask_for_each(cpu, cpus)
	{
		unsigned long mn = 0, mx = 0;
		struct cpufreq_policy *pol;
		char *drv;

		if (cpufreq_get_hardware_limits(cpu, &mn, &mx) || !mn || !mx) {
			snprintf(caps->cpufreq_reason, sizeof(caps->cpufreq_reason),
				 "cpu%d has no cpufreq (no /sys/devices/system/cpu/cpu%d/cpufreq "
				 "limits; a VM or a disabled driver): running with cores only",
				 cpu, cpu);
			return 0;
		}
		pol = cpufreq_get_policy(cpu);
		if (!pol) {
			snprintf(caps->cpufreq_reason, sizeof(caps->cpufreq_reason),
				 "cannot read the cpufreq policy of cpu%d", cpu);
			return 0;
		}
		if (n == 0) {
			snprintf(caps->cpufreq_governor, sizeof(caps->cpufreq_governor), "%s",
				 pol->governor ? pol->governor : "");
			drv = cpufreq_get_driver(cpu);
			snprintf(caps->cpufreq_driver, sizeof(caps->cpufreq_driver), "%s",
				 drv ? drv : "");
			if (drv)
				cpufreq_put_driver(drv);
		}
		cpufreq_put_policy(pol);
		if (mn > lo)
			lo = mn;
		if (mx < hi)
			hi = mx;
		n++;
	}
	if (!n) {
		snprintf(caps->cpufreq_reason, sizeof(caps->cpufreq_reason), "no cpus to manage");
		return 0;
	}
	if (lo > hi) {
		snprintf(caps->cpufreq_reason, sizeof(caps->cpufreq_reason),
			 "the managed cpus have no common frequency range");
		return 0;
	}
	caps->cpufreq = true;
	caps->cpufreq_reason[0] = '\0';
	caps->freq_min_khz = lo;
	caps->freq_max_khz = hi;
	return 0;
}

static int f_get(void *p, int cpu, unsigned long *min_khz, unsigned long *max_khz)
{
	struct cpufreq_policy *pol = cpufreq_get_policy(cpu);

	if (!pol)
		return -ENODEV;
	*min_khz = pol->min;
	*max_khz = pol->max;
	cpufreq_put_policy(pol);
	return 0;
}

static int write_one(struct fbe *be, int cpu, bool is_max, unsigned long khz)
{
	unsigned long mn, mx;
	int ret;

	ret = is_max ? cpufreq_modify_policy_max(cpu, khz) : cpufreq_modify_policy_min(cpu, khz);
	if (ret == 0 && !f_get(be, cpu, &mn, &mx) && (is_max ? mx : mn) == khz)
		return 0;
	return act_be_err(be->act, ret ? -EIO : -EINVAL,
			  "cannot set scaling_%s_freq of cpu%d to %lu kHz (the driver %s)",
			  is_max ? "max" : "min", cpu, khz,
			  ret ? "refused the write" : "kept another value");
}

static int f_set(void *p, int cpu, unsigned long min_khz, unsigned long max_khz)
{
	struct fbe *be = p;
	unsigned long omin, omax;
	int err;

	err = f_get(be, cpu, &omin, &omax);
	if (err)
		return act_be_err(be->act, err, "cannot read the cpufreq policy of cpu%d", cpu);
	/* keep min <= max after each write */
	if (min_khz > omax) {
		err = max_khz != omax ? write_one(be, cpu, true, max_khz) : 0;
		if (!err && min_khz != omin)
			err = write_one(be, cpu, false, min_khz);
		if (err)
			write_one(be, cpu, true, omax);
	} else {
		err = min_khz != omin ? write_one(be, cpu, false, min_khz) : 0;
		if (!err && max_khz != omax)
			err = write_one(be, cpu, true, max_khz);
		if (err && min_khz != omin)
			write_one(be, cpu, false, omin);
	}
	if (!err)
		act_be_log(be->act, ACT_LOG_DEBUG, "cpu%d frequency limits %lu-%lu kHz", cpu,
			   min_khz, max_khz);
	return err;
}

const struct act_freq_ops act_cpufreq_ops = {
	.name = "cpufreq",
	.open = f_open,
	.close = f_close,
	.probe = f_probe,
	.get = f_get,
	.set = f_set,
};
