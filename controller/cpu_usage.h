/* SPDX-License-Identifier: MIT */
/*
 * CPU time a managed workload has used, for the observation's cpu_used: the
 * workload's cgroup when it has a CPU accounting file (cgroup v2 cpu.stat,
 * v1 cpuacct.usage), else the sum over the processes of its cpuset cgroup,
 * else its main process (/proc/PID/stat, all threads).
 */
#ifndef PARTIES_CPU_USAGE_H
#define PARTIES_CPU_USAGE_H

#include <stdint.h>
#include <sys/types.h>

#include "cgroupfs.h"

/* Of cgroup <parent>/<name> (relative to each hierarchy) in the hierarchies of
 * fs, else of process pid: 0 with *ns, or a negative errno. */
int cpu_usage_cg_ns(const struct cgfs *fs, const char *parent, const char *name, pid_t pid,
		    uint64_t *ns);
/* The same on this host (cgfs_here()). */
int cpu_usage_ns(const char *parent, const char *name, pid_t pid, uint64_t *ns);
/* utime + stime of one process (every thread), in ns. */
int cpu_usage_pid_ns(pid_t pid, uint64_t *ns);

#endif /* PARTIES_CPU_USAGE_H */
