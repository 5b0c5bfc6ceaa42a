// SPDX-License-Identifier: MIT
/*
 * The connections a process accepted before tracing began, read from its
 * /proc/PID/net/tcp{,6} and /proc/PID/fd, so that requests on them are
 * counted too. Which processes to look at (alive, descendants) is
 * common/procfs.h's business.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"

struct sock_ent {
	unsigned long inode;
	unsigned int lport, rport;
	unsigned int st;
	uint32_t raddr; /* IPv4 only; 0 for tcp6 */
};

/* Sockets of /proc/PID/net/tcp{,6}: the process's network namespace. */
static int read_tcp(pid_t pid, const char *file, struct sock_ent **v, size_t *n, size_t *cap)
{
	char path[64], line[512];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/net/%s", pid, file);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (!fgets(line, sizeof(line), f)) { /* header */
		fclose(f);
		return 0;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned int lport, rport, st;
		unsigned long inode;
		char laddr[64], raddr[64];

		/* sl local rem st tx:rx tr:when retr uid timeout inode */
		if (sscanf(line,
			   " %*s %63[0-9A-Fa-f]:%x %63[0-9A-Fa-f]:%x %x %*s %*s %*s %*s %*s %lu",
			   laddr, &lport, raddr, &rport, &st, &inode) != 6)
			continue;
		if (*n == *cap) {
			struct sock_ent *t =
			    realloc(*v, (*cap = *cap ? 2 * *cap : 64) * sizeof(*t));

			if (!t) {
				fclose(f);
				return -ENOMEM;
			}
			*v = t;
		}
		/* The address is the kernel's __be32 printed as a number, which
		 * is how a BPF program reading skc_daddr sees it too. */
		(*v)[(*n)++] =
		    (struct sock_ent){ inode, lport, rport, st,
				       strlen(raddr) == 8 ? (uint32_t)strtoul(raddr, NULL, 16)
							  : 0 };
	}
	fclose(f);
	return 0;
}

static int cmp_inode(const void *a, const void *b)
{
	const struct sock_ent *x = a, *y = b;

	return x->inode < y->inode ? -1 : x->inode > y->inode;
}

static int cmp_uint(const void *a, const void *b)
{
	unsigned int x = *(const unsigned int *)a, y = *(const unsigned int *)b;

	return x < y ? -1 : x > y;
}

#define TCP_ESTABLISHED_ST 0x01
#define TCP_LISTEN_ST	   0x0A

int ebee_proc_accepted_fds(pid_t pid, int **out, size_t *n_out)
{
	struct ebee_proc_conn *c;
	size_t n;
	int *fds, err = ebee_proc_accepted_conns(pid, &c, &n);

	if (err)
		return err;
	fds = malloc((n + 1) * sizeof(*fds));
	if (!fds) {
		free(c);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		fds[i] = c[i].fd;
	free(c);
	*out = fds;
	*n_out = n;
	return 0;
}

int ebee_proc_socket_fds(pid_t pid, struct ebee_proc_sockfd **out, size_t *n_out)
{
	char dir[64], path[320], target[64];
	struct ebee_proc_sockfd *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
	d = opendir(dir);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		unsigned long inode;
		ssize_t len;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		len = readlink(path, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = 0;
		if (sscanf(target, "socket:[%lu]", &inode) != 1)
			continue;
		if (n == cap) {
			struct ebee_proc_sockfd *t =
				realloc(v, (cap = cap ? 2 * cap : 16) * sizeof(*t));

			if (!t) {
				closedir(d);
				free(v);
				return -ENOMEM;
			}
			v = t;
		}
		v[n++] = (struct ebee_proc_sockfd){ atoi(de->d_name), inode };
	}
	closedir(d);
	*out = v;
	*n_out = n;
	return 0;
}

/*
 * The fds first: a process with no socket (most of a host, under --all)
 * costs one directory scan, not a read of its namespace's whole TCP table
 * (thousands of lines on a busy host: tracing every process read 46 000
 * times and took 6 s before this order).
 */
int ebee_proc_accepted_conns(pid_t pid, struct ebee_proc_conn **out, size_t *n_out)
{
	struct sock_ent *socks = NULL, key = {}, *e;
	size_t ns = 0, cap = 0, nsk = 0, nfd = 0, nl = 0;
	struct ebee_proc_conn *fds = NULL;
	unsigned int *lports = NULL;
	struct ebee_proc_sockfd *sk = NULL;
	int err;

	err = ebee_proc_socket_fds(pid, &sk, &nsk);
	if (err)
		return err;
	if (!nsk)
		goto out;
	err = read_tcp(pid, "tcp", &socks, &ns, &cap);
	if (err && err != -ENOENT)
		goto out;
	read_tcp(pid, "tcp6", &socks, &ns, &cap);
	err = 0;
	/* Sorted, so each fd costs two binary searches, not a scan. */
	lports = malloc((ns + 1) * sizeof(*lports));
	fds = malloc(nsk * sizeof(*fds));
	if (!lports || !fds) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < ns; i++)
		if (socks[i].st == TCP_LISTEN_ST)
			lports[nl++] = socks[i].lport;
	qsort(lports, nl, sizeof(*lports), cmp_uint);
	qsort(socks, ns, sizeof(*socks), cmp_inode);
	for (size_t i = 0; i < nsk; i++) {
		key.inode = sk[i].inode;
		e = bsearch(&key, socks, ns, sizeof(*socks), cmp_inode);
		if (!e || e->st != TCP_ESTABLISHED_ST ||
		    !bsearch(&e->lport, lports, nl, sizeof(*lports), cmp_uint))
			continue;
		fds[nfd++] = (struct ebee_proc_conn){ sk[i].fd, e->lport, e->rport, e->raddr };
	}
out:
	free(sk);
	free(socks);
	free(lports);
	if (err) {
		free(fds);
		return err;
	}
	*out = fds;
	*n_out = nfd;
	return 0;
}
