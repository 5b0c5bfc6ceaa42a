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

/* Every thread of pid and of every descendant process of pid, read from /proc.
 * *tids is malloc'ed (caller frees). -ESRCH if pid does not exist. */
int act__proc_tree(pid_t pid, pid_t **tids, size_t *n);
/* Start time of a thread (field 22 of /proc/tid/stat); 0 if gone. Tells a
 * recorded thread from a later one that reuses its id. */
unsigned long long act__proc_starttime(pid_t tid);
bool act__proc_exists(pid_t pid);

#endif /* ACT_PROC_H */
