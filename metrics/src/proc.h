/* SPDX-License-Identifier: MIT */
/* Processes seen through /proc: liveness and descendants (internal). */
#ifndef EBEE_PROC_H
#define EBEE_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* True while pid exists and is not a zombie. */
bool ebee_proc_alive(pid_t pid);
/* The thread group id of pid (pid itself for a process), or -ESRCH. */
pid_t ebee_proc_tgid(pid_t pid);
/* Every live process descended from root (not root itself), into a malloc'd
 * array. 0 or a negative errno. */
int ebee_proc_descendants(pid_t root, pid_t **out, size_t *n);

/* The fds of process pid that are accepted TCP connections (established,
 * local port = a port something listens on in its network namespace), into
 * a malloc'd array. 0 or a negative errno. */
int ebee_proc_accepted_fds(pid_t pid, int **out, size_t *n);

/* The same with each connection's ports (host order) and IPv4 peer address
 * as the kernel stores it (0 for IPv6 sockets): what identifies the socket
 * to the socket path's programs. */
struct ebee_proc_conn {
	int fd;
	uint16_t lport, rport;
	uint32_t raddr;
};
int ebee_proc_accepted_conns(pid_t pid, struct ebee_proc_conn **out, size_t *n);

#endif
