/* SPDX-License-Identifier: MIT */
/*
 * Processes and threads, read from /proc (proc.c). Used by the front to find
 * what to move and to tell a recorded thread from a later one reusing its id.
 * Not part of the public interface.
 */
#ifndef ACT_PROC_H
#define ACT_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Every thread of pid and of every descendant process of pid, read from /proc
 * (common/procfs.h). *tids is malloc'ed (caller frees). -ESRCH if pid is not
 * alive. Start times and liveness come from common/procfs.h directly. */
int act__proc_tree(pid_t pid, pid_t **tids, size_t *n);

#endif /* ACT_PROC_H */
