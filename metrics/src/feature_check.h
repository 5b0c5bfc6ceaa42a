/* SPDX-License-Identifier: MIT */
/* Start-up check of what the kernel and our privileges must provide (internal). */
#ifndef EBEE_FEATURES_H
#define EBEE_FEATURES_H

#include <stdbool.h>
#include <stddef.h>
#include "ebee.h"

/* Resolve *path (EBEE_PATH_AUTO: socket if the kernel has the socket
 * tracepoints, else syscall) and check what that path needs. 0, or a negative
 * errno with a one-line reason and its fix in msg: -EPERM (not root / no
 * CAP_BPF+CAP_PERFMON), -ENOENT (no BTF, tracefs not mounted, no syscall or
 * socket tracepoints), -EOPNOTSUPP (no BPF ring buffer or task storage). */
int ebee_check_features(enum ebee_path *path, char *msg, size_t msg_len);

/* True if the kernel's BTF has all four socket tracepoints ebee uses. */
bool ebee_have_sock_tracepoints(void);

#endif
