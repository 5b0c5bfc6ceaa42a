/* SPDX-License-Identifier: MIT */
/* Start-up check of what the kernel and our privileges must provide (internal). */
#ifndef EBEE_FEATURES_H
#define EBEE_FEATURES_H

#include <stdbool.h>
#include <stddef.h>
#include "ebee.h"
#include "attach.h"

/* How the socket hooks would attach here (auto), whatever the path: the
 * datagram programs use the same hooks on either path. 0, or -ENOENT with
 * msg. */
int ebee_check_sock_attach(struct ebee_sock_attach *att, char *msg, size_t msg_len);

/* Resolve *path (EBEE_PATH_AUTO: socket if the kernel can do it, else
 * syscall) and check what that path needs. On the socket path *att gets how
 * each hook group attaches (want: EBEE_ATTACH_AUTO, or the method forced for
 * the request hooks). 0, or a negative errno with a one-line reason and its
 * fix in msg: -EPERM (not root / no CAP_BPF+CAP_PERFMON), -ENOENT (no BTF,
 * tracefs not mounted, no syscall tracepoints, or the socket path has no
 * usable attach method), -EOPNOTSUPP (no BPF ring buffer or task storage). */
int ebee_check_features(enum ebee_path *path, enum ebee_attach want, struct ebee_sock_attach *att,
			char *msg, size_t msg_len);

#endif
