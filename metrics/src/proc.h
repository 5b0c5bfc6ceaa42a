/* SPDX-License-Identifier: MIT */
/* A process's sockets and accepted TCP connections, seen through /proc (internal). */
#ifndef EBEE_PROC_H
#define EBEE_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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

/* The socket fds of /proc/PID/fd (any kind), with their inodes, into a
 * malloc'd array (may be empty). 0 or a negative errno. */
struct ebee_proc_sockfd {
	int fd;
	unsigned long inode;
};
int ebee_proc_socket_fds(pid_t pid, struct ebee_proc_sockfd **out, size_t *n);

#endif
