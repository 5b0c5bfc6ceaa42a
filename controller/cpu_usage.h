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

/* 0 with *ns, or a negative errno. */
int cpu_usage_ns(const char *parent, const char *name, pid_t pid, uint64_t *ns);
/* utime + stime of one process (every thread), in ns. */
int cpu_usage_pid_ns(pid_t pid, uint64_t *ns);

#endif /* PARTIES_CPU_USAGE_H */
