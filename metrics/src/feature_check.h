/* SPDX-License-Identifier: MIT */
/* Start-up check of what the kernel and our privileges must provide (internal). */
#ifndef EBEE_FEATURES_H
#define EBEE_FEATURES_H

#include <stddef.h>

/* 0, or a negative errno with a one-line reason and its fix in msg:
 * -EPERM (not root / no CAP_BPF+CAP_PERFMON), -ENOENT (no BTF, tracefs not
 * mounted, no syscall tracepoints), -EOPNOTSUPP (no BPF ring buffer). */
int ebee_check_features(char *msg, size_t msg_len);

#endif
