/* SPDX-License-Identifier: MIT */
/*
 * Processes as /proc shows them: the one place the project reads
 * /proc/PID/stat, decides whether a process is alive and walks a process's
 * descendants. ebee (pruning traced pids, finding a server's workers), the
 * actuators (moving a workload's threads) and parties (a workload gone, the
 * pid checks of a configuration, stopping what it launched) all use it.
 *
 * Alive. A process is alive while it can still run code: its pid exists
 * and it has a thread that has not exited. A zombie is not alive: it has
 * exited, runs no code and only waits for its parent to collect its status.
 * That is the meaning every caller needs: a workload whose process is a
 * zombie is gone (parties stops controlling it and ebee stops tracing it,
 * whether or not its parent has reaped it yet), and a zombie cannot be
 * moved (the kernel skips exiting tasks when it migrates a cgroup, so a
 * zombie listed among a workload's threads would look "not moved yet"
 * forever). The one zombie that is alive is a thread-group leader whose
 * other threads still run (its main thread called pthread_exit(): /proc
 * shows the process as 'Z' while its workers serve requests); its threads
 * are checked before it is called dead.
 *
 * Identity. A pid is reused once its process is reaped. The start time
 * (field 22 of stat, in clock ticks since boot) tells the process a pid was
 * recorded for from a later one: procfs_alive() compares it when the caller
 * knows it, and procfs_starttime() gives it to record. A zombie still has
 * its start time: identity and liveness are separate questions (a process
 * group whose leader is a zombie may still have running members).
 *
 * Everything here is racy by nature: processes fork and exit while /proc is
 * read. Callers that need a stable answer repeat (the actuators) or have
 * another way to catch what is missed (ebee's fork hook).
 */
#ifndef PROCFS_H
#define PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* PF_KTHREAD in the flags field (include/linux/sched.h) */
#define PROCFS_PF_KTHREAD 0x00200000UL

/* The fields of /proc/PID/stat the project uses. */
struct procfs_stat {
	pid_t pid;
	char comm[64];		      /* as stat shows it (the kernel escapes some bytes) */
	char state;		      /* 'R', 'S', 'D', 'Z', 'X', ... */
	pid_t ppid;		      /* the parent process (its tgid) */
	unsigned long flags;	      /* PF_* */
	unsigned long long utime;     /* clock ticks, every thread of a process */
	unsigned long long stime;     /* clock ticks */
	unsigned long long starttime; /* clock ticks since boot */
};

/*
 * Parse one /proc/PID/stat line. The comm field may hold spaces and
 * parentheses, so it ends at the last ')'. 0, or -EINVAL when a field the
 * struct holds is missing.
 */
int procfs_stat_parse(const char *line, struct procfs_stat *st);
/* Read and parse /proc/PID/stat (pid may be a thread id). 0 or a negative
 * errno: -ENOENT when there is no such pid (-ESRCH if it went while read). */
int procfs_stat(pid_t pid, struct procfs_stat *st);

/*
 * Is process pid alive (see above)? start: its start time when the caller
 * recorded one (a process with another start time reused the pid and is not
 * the one asked about), or 0 when unknown.
 */
bool procfs_alive(pid_t pid, unsigned long long start);
/* Start time of pid (clock ticks since boot), 0 if there is no such pid.
 * A zombie still has one. */
unsigned long long procfs_starttime(pid_t pid);
/* Is st a kernel thread (PF_KTHREAD, kthreadd or one of its children)? */
bool procfs_kthread(const struct procfs_stat *st);
/* The thread group id of pid (pid itself for a process), or -ESRCH. */
pid_t procfs_tgid(pid_t pid);
/* /proc/PID/comm (without its newline) into buf. 0 or a negative errno
 * (-ENOENT: no such pid). */
int procfs_comm(pid_t pid, char *buf, size_t len);

/*
 * Every alive process descended from root (children, their children, ...),
 * root itself excluded, breadth-first, into a malloc'd array the caller
 * frees. A process whose parent exited was reparented and is found only
 * below its new parent. 0 or a negative errno.
 */
int procfs_descendants(pid_t root, pid_t **out, size_t *n);
/*
 * Append the thread ids of process pid that have not exited to the malloc'd
 * array *tids (*n used, *cap allocated; start with NULL, 0, 0). A process
 * that is gone adds nothing. 0 or -ENOMEM.
 */
int procfs_threads(pid_t pid, pid_t **tids, size_t *n, size_t *cap);

#endif /* PROCFS_H */
