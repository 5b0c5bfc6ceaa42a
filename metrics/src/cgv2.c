// SPDX-License-Identifier: MIT
/*
 * The cgroup v2 hierarchy for libebee: its root (the mount from
 * common/cgroupfs.c), a process's and a socket's cgroup, and the framing
 * scope (cgv2.h says why a scope).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "cgroupfs.h"
#include "cgv2.h"
#include "proc.h"
#include "procfs.h"

#define CG_PATH_MAX	 512
#define TCP_LISTEN_STATE 10 /* include/net/tcp_states.h */
/* struct file_handle's type for a kernfs node (include/linux/exportfs.h):
 * the handle is the node's 64-bit id, which is the cgroup id. */
#define FILEID_KERNFS_ 0xfe

struct cg_wl {
	uint32_t wid;
	char **paths;
	size_t n;
};

struct ebee_cg2 {
	int root_fd;
	char mount[CG_PATH_MAX];
	struct cg_wl *wls;
	size_t nwls;
	char **applied; /* the scope last handed out (reduced) */
	size_t napplied;
	bool force_root; /* the root from then on: a scope failed or went away */
};

bool ebee_cg2_covers(const char *anc, const char *path)
{
	size_t n = strlen(anc);

	if (!strcmp(anc, "/"))
		return true;
	return !strncmp(anc, path, n) && (path[n] == 0 || path[n] == '/');
}

size_t ebee_cg2_reduce(char **paths, size_t n)
{
	size_t out = 0;
	bool *drop;

	/* Judged against the whole set first, freed after: a path dropped
	 * may still be what covers a later one. */
	drop = calloc(n ? n : 1, sizeof(*drop));
	if (!drop)
		return n; /* no memory: kept as they are (a packet may be walked twice) */
	for (size_t i = 0; i < n; i++)
		/* Covered by another: by a different path, or by the same path
		 * earlier in the list (the first copy stays). */
		for (size_t j = 0; j < n && !drop[i]; j++)
			if (j != i && ebee_cg2_covers(paths[j], paths[i]) &&
			    (strcmp(paths[j], paths[i]) || j < i))
				drop[i] = true;
	for (size_t i = 0; i < n; i++) {
		if (drop[i])
			free(paths[i]);
		else
			paths[out++] = paths[i];
	}
	free(drop);
	return out;
}

int ebee_cg2_open(struct ebee_cg2 **out)
{
	struct ebee_cg2 *cg = calloc(1, sizeof(*cg));
	int err;

	if (!cg)
		return -ENOMEM;
	err = cgfs_v2_mount(cg->mount, sizeof(cg->mount), NULL);
	if (!err) {
		cg->root_fd = open(cg->mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (cg->root_fd < 0)
			err = -errno;
	}
	if (err) {
		free(cg);
		return err;
	}
	*out = cg;
	return 0;
}

static void free_paths(char **p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(p[i]);
	free(p);
}

void ebee_cg2_close(struct ebee_cg2 *cg)
{
	if (!cg)
		return;
	for (size_t i = 0; i < cg->nwls; i++)
		free_paths(cg->wls[i].paths, cg->wls[i].n);
	free(cg->wls);
	free_paths(cg->applied, cg->napplied);
	close(cg->root_fd);
	free(cg);
}

int ebee_cg2_open_path(const struct ebee_cg2 *cg, const char *path)
{
	int fd;

	if (!strcmp(path, "/"))
		fd = openat(cg->root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	else
		fd = openat(cg->root_fd, path + 1, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int ebee_cg2_of_pid(pid_t pid, char *buf, size_t len)
{
	char file[64], line[CG_PATH_MAX + 8];
	int err = -ENOENT;
	FILE *f;

	snprintf(file, sizeof(file), "/proc/%d/cgroup", pid);
	f = fopen(file, "re");
	if (!f)
		return -errno;
	while (err && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		/* "0::/path": the v2 hierarchy's line; " (deleted)" for a
		 * cgroup removed with the process still in it. */
		if (strncmp(line, "0::/", 4) || strstr(line, " (deleted)"))
			continue;
		err = snprintf(buf, len, "%s", line + 3) < (int)len ? 0 : -ENAMETOOLONG;
	}
	fclose(f);
	return err;
}

/* The cgroup below directory fd dir (whose path is `path`, "" for the root)
 * whose directory's inode is id (a kernfs node's inode number is its id),
 * its path into buf; true when found. Cgroup trees are small; depth bounded. */
static bool find_ino(int dir, const char *path, uint64_t id, int depth, char *buf, size_t len)
{
	struct stat st;
	struct dirent *de;
	bool found = false;
	DIR *d;
	int fd;

	if (!fstat(dir, &st) && st.st_ino == id)
		return snprintf(buf, len, "%s", path[0] ? path : "/") < (int)len;
	if (depth >= 32)
		return false;
	fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	while (!found && (de = readdir(d))) {
		char sub[CG_PATH_MAX];
		int c;

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if (snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name) >= (int)sizeof(sub))
			continue;
		c = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (c < 0)
			continue;
		found = find_ino(c, sub, id, depth + 1, buf, len);
		close(c);
	}
	closedir(d);
	return found;
}

int ebee_cg2_of_id(const struct ebee_cg2 *cg, uint64_t id, char *buf, size_t len)
{
	struct {
		struct file_handle fh;
		uint64_t id;
	} h = { .fh = { .handle_bytes = sizeof(uint64_t), .handle_type = FILEID_KERNFS_ } };
	char link[64], target[CG_PATH_MAX + CG_PATH_MAX];
	size_t mlen = strlen(cg->mount);
	ssize_t n;
	int fd, err = 0;

	h.id = id;
	fd = open_by_handle_at(cg->root_fd, &h.fh, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* Without CAP_DAC_READ_SEARCH (parties' unit does not keep it): the
	 * tree, by inode. */
	if (fd < 0 && errno == EPERM)
		return find_ino(cg->root_fd, "", id, 0, buf, len) ? 0 : -ENOENT;
	if (fd < 0)
		return -errno;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		err = -errno;
	close(fd);
	if (err)
		return err;
	target[n] = 0;
	/* Under the mount: the root itself is the mount point. */
	if (strncmp(target, cg->mount, mlen) || (target[mlen] && target[mlen] != '/'))
		return -ENOENT;
	return snprintf(buf, len, "%s", target[mlen] ? target + mlen : "/") < (int)len
		   ? 0
		   : -ENAMETOOLONG;
}

struct diag_thread {
	int nsfd;
	int fd; /* the socket, or a negative errno */
};

static void *diag_thread_fn(void *arg)
{
	struct diag_thread *t = arg;

	if (setns(t->nsfd, CLONE_NEWNET)) {
		t->fd = -errno;
		return NULL;
	}
	t->fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (t->fd < 0)
		t->fd = -errno;
	return NULL;
}

/* A NETLINK_SOCK_DIAG socket in pid's network namespace (a socket stays in
 * the namespace it was made in). Another namespace is entered by a thread of
 * its own that ends right after: no thread of the caller's changes. */
static int diag_socket(pid_t pid)
{
	struct diag_thread t = { .fd = -EIO };
	struct stat a, b;
	char file[64];
	pthread_t th;
	int err;

	snprintf(file, sizeof(file), "/proc/%d/ns/net", pid);
	if (stat(file, &a) || stat("/proc/thread-self/ns/net", &b))
		return -errno;
	if (a.st_ino == b.st_ino && a.st_dev == b.st_dev) {
		t.fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
		return t.fd < 0 ? -errno : t.fd;
	}
	t.nsfd = open(file, O_RDONLY | O_CLOEXEC);
	if (t.nsfd < 0)
		return -errno;
	err = -pthread_create(&th, NULL, diag_thread_fn, &t);
	if (!err)
		pthread_join(th, NULL);
	close(t.nsfd);
	return err ? err : t.fd;
}

static int cmp_ulong(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

	return x < y ? -1 : x > y;
}

static int add_id(uint64_t **ids, size_t *n, uint64_t id)
{
	uint64_t *t;

	for (size_t i = 0; i < *n; i++)
		if ((*ids)[i] == id)
			return 0;
	t = realloc(*ids, (*n + 1) * sizeof(*t));
	if (!t)
		return -ENOMEM;
	t[(*n)++] = id;
	*ids = t;
	return 0;
}

/* One family's TCP listeners: the cgroup id of each whose inode is in
 * inodes (sorted). */
static int diag_dump(int fd, int family, const unsigned long *inodes, size_t ninodes,
		     uint64_t **ids, size_t *n)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 r;
	} req = {
		.nlh = { .nlmsg_len = sizeof(req),
			 .nlmsg_type = SOCK_DIAG_BY_FAMILY,
			 .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
		.r = { .sdiag_family = family,
		       .sdiag_protocol = IPPROTO_TCP,
		       .idiag_states = 1u << TCP_LISTEN_STATE },
	};
	const size_t bufsz = 32768;
	void *buf = NULL;
	int err = 0;

	if (send(fd, &req, sizeof(req), 0) < 0)
		return -errno;
	buf = malloc(bufsz); /* aligned for struct nlmsghdr */
	if (!buf)
		return -ENOMEM;
	while (!err) {
		ssize_t len = recv(fd, buf, bufsz, 0);
		struct nlmsghdr *h;

		if (len <= 0) {
			err = len < 0 ? -errno : -EIO;
			break;
		}
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)len); h = NLMSG_NEXT(h, len)) {
			struct inet_diag_msg *m = NLMSG_DATA(h);
			unsigned long ino;
			struct rtattr *a;
			int alen;

			if (h->nlmsg_type == NLMSG_DONE)
				goto out;
			if (h->nlmsg_type == NLMSG_ERROR) {
				err = -EPROTO;
				goto out;
			}
			ino = m->idiag_inode;
			if (!bsearch(&ino, inodes, ninodes, sizeof(*inodes), cmp_ulong))
				continue;
			alen = h->nlmsg_len - NLMSG_LENGTH(sizeof(*m));
			for (a = (struct rtattr *)(m + 1); RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
				uint64_t id;

				if (a->rta_type != INET_DIAG_CGROUP_ID ||
				    RTA_PAYLOAD(a) < (int)sizeof(id))
					continue;
				memcpy(&id, RTA_DATA(a), sizeof(id));
				err = add_id(ids, n, id);
				if (err)
					goto out;
			}
		}
	}
out:
	free(buf);
	return err;
}

int ebee_cg2_listeners(pid_t pid, uint64_t **ids_out, size_t *n_out)
{
	struct ebee_proc_sockfd *sk = NULL;
	unsigned long *inodes = NULL;
	uint64_t *ids = NULL;
	size_t nsk = 0, n = 0;
	int fd = -1, err;

	err = ebee_proc_socket_fds(pid, &sk, &nsk);
	if (err || !nsk)
		goto out;
	inodes = malloc(nsk * sizeof(*inodes));
	if (!inodes) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nsk; i++)
		inodes[i] = sk[i].inode;
	qsort(inodes, nsk, sizeof(*inodes), cmp_ulong);
	fd = diag_socket(pid);
	if (fd < 0) {
		err = fd;
		goto out;
	}
	err = diag_dump(fd, AF_INET, inodes, nsk, &ids, &n);
	if (!err)
		err = diag_dump(fd, AF_INET6, inodes, nsk, &ids, &n);
out:
	if (fd >= 0)
		close(fd);
	free(sk);
	free(inodes);
	if (err) {
		free(ids);
		return err;
	}
	*ids_out = ids;
	*n_out = n;
	return 0;
}

static struct cg_wl *find_wl(struct ebee_cg2 *cg, uint32_t wid)
{
	for (size_t i = 0; i < cg->nwls; i++)
		if (cg->wls[i].wid == wid)
			return &cg->wls[i];
	return NULL;
}

static int wl_add_path(struct cg_wl *w, const char *path)
{
	char **t, *p;

	for (size_t i = 0; i < w->n; i++)
		if (!strcmp(w->paths[i], path))
			return 0;
	p = strdup(path);
	t = p ? realloc(w->paths, (w->n + 1) * sizeof(*t)) : NULL;
	if (!t) {
		free(p);
		return -ENOMEM;
	}
	t[w->n++] = p;
	w->paths = t;
	return 0;
}

/* Process pid's cgroup and its listeners'; the root for what cannot be read
 * (its cgroup removed, another namespace not entered), except that a worker
 * gone since it was listed is skipped: nothing of it is left to cover. */
static int wl_add_pid(struct ebee_cg2 *cg, struct cg_wl *w, pid_t pid, bool worker)
{
	char path[CG_PATH_MAX];
	uint64_t *ids = NULL;
	size_t n = 0;
	int err;
	struct stat st;
	uint64_t own = 0;

	err = ebee_cg2_of_pid(pid, path, sizeof(path));
	if (err == -ENOENT && worker && kill(pid, 0) && errno == ESRCH)
		return 0;
	if (err || ebee_cg2_listeners(pid, &ids, &n))
		return wl_add_path(w, "/");
	err = wl_add_path(w, path);
	/* Its own cgroup's id (the directory's inode): listeners there, the
	 * common case, need no lookup by id. */
	if (!fstatat(cg->root_fd, strcmp(path, "/") ? path + 1 : ".", &st, 0))
		own = st.st_ino;
	for (size_t i = 0; i < n && !err; i++) {
		if (ids[i] == own)
			continue;
		err = ebee_cg2_of_id(cg, ids[i], path, sizeof(path)) ? wl_add_path(w, "/")
								     : wl_add_path(w, path);
	}
	free(ids);
	return err;
}

int ebee_cg2_wl_add(struct ebee_cg2 *cg, uint32_t wid, pid_t pid, bool children)
{
	struct cg_wl *w, *t;
	pid_t *kids = NULL;
	size_t nkids = 0;
	int err;

	ebee_cg2_wl_del(cg, wid);
	t = realloc(cg->wls, (cg->nwls + 1) * sizeof(*t));
	if (!t)
		return -ENOMEM;
	cg->wls = t;
	w = &cg->wls[cg->nwls++];
	*w = (struct cg_wl){ .wid = wid };
	/* pid 1 with its descendants is every process: the root. */
	if (pid == 1 && children)
		return wl_add_path(w, "/");
	err = wl_add_pid(cg, w, pid, false);
	/* Workers that exist already may sit in cgroups of their own. */
	if (!err && children && !procfs_descendants(pid, &kids, &nkids)) {
		for (size_t i = 0; i < nkids && !err; i++)
			err = wl_add_pid(cg, w, kids[i], true);
		free(kids);
	}
	return err;
}

void ebee_cg2_wl_del(struct ebee_cg2 *cg, uint32_t wid)
{
	struct cg_wl *w = cg ? find_wl(cg, wid) : NULL;

	if (!w)
		return;
	free_paths(w->paths, w->n);
	*w = cg->wls[--cg->nwls];
}

int ebee_cg2_wl_missed(struct ebee_cg2 *cg, uint32_t wid, uint64_t id, char *path, size_t path_len)
{
	struct cg_wl *w = find_wl(cg, wid);
	int err;

	err = ebee_cg2_of_id(cg, id, path, path_len);
	if (err)
		snprintf(path, path_len, "?");
	if (!w)
		return 0; /* stopped since */
	if (err) {
		wl_add_path(w, "/");
		return err;
	}
	for (size_t i = 0; i < cg->napplied; i++)
		if (ebee_cg2_covers(cg->applied[i], path))
			return 0;
	err = wl_add_path(w, path);
	return err ? err : 1;
}

static bool same_set(char **a, size_t na, char **b, size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++) {
		bool found = false;

		for (size_t j = 0; j < nb && !found; j++)
			found = !strcmp(a[i], b[j]);
		if (!found)
			return false;
	}
	return true;
}

int ebee_cg2_scope(struct ebee_cg2 *cg, int **fds_out, size_t *n_out, bool *root, bool *changed,
		   char *desc, size_t desc_len)
{
	char **all = NULL;
	size_t n = 0, cap = 0, off = 0;
	int *fds = NULL, err = 0;

	for (size_t i = 0; i < cg->nwls; i++)
		for (size_t j = 0; j < cg->wls[i].n; j++) {
			if (n == cap) {
				char **t = realloc(all, (cap = cap ? 2 * cap : 8) * sizeof(*t));

				if (!t) {
					err = -ENOMEM;
					goto out;
				}
				all = t;
			}
			if (!(all[n] = strdup(cg->wls[i].paths[j]))) {
				err = -ENOMEM;
				goto out;
			}
			n++;
		}
	if (cg->force_root) {
		free_paths(all, n);
		n = 0;
		all = NULL;
	}
	n = ebee_cg2_reduce(all, n);
	if (!n) {
		/* No workload (or given up on a scope): the root. */
		free(all);
		all = malloc(sizeof(*all));
		if (!all || !(all[0] = strdup("/"))) {
			err = -ENOMEM;
			goto out;
		}
		n = 1;
	}
	*changed = !same_set(all, n, cg->applied, cg->napplied);
	*root = !strcmp(all[0], "/");
	*fds_out = NULL;
	*n_out = 0;
	if (desc_len)
		desc[0] = 0;
	for (size_t i = 0; i < n && off < desc_len; i++)
		off += snprintf(desc + off, desc_len - off, "%s%s", i ? " " : "", all[i]);
	if (!*changed)
		goto out;
	if (!*root) {
		fds = malloc(n * sizeof(*fds));
		if (!fds) {
			err = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < n; i++) {
			fds[i] = ebee_cg2_open_path(cg, all[i]);
			if (fds[i] < 0) {
				/* Removed since it was read (its processes gone,
				 * a socket of it still open): the root from now
				 * on, rather than a scope retried and missed at
				 * every round. */
				while (i--)
					close(fds[i]);
				free(fds);
				free_paths(all, n);
				cg->force_root = true;
				return ebee_cg2_scope(cg, fds_out, n_out, root, changed, desc,
						      desc_len);
			}
		}
		*fds_out = fds;
		*n_out = n;
	}
	/* Handed out: what the next call compares with. */
	free_paths(cg->applied, cg->napplied);
	cg->applied = all;
	cg->napplied = n;
	return 0;
out:
	free_paths(all, n);
	return err;
}

void ebee_cg2_scope_failed(struct ebee_cg2 *cg)
{
	cg->force_root = true;
}
