// SPDX-License-Identifier: MIT
/*
 * Reading processes from /proc (see procfs.h for what "alive" means and
 * why). Each call reads the files afresh: nothing is cached, since a pid's
 * process can change between two calls.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procfs.h"

int procfs_stat_parse(const char *line, struct procfs_stat *st)
{
	const char *lp = strchr(line, '('), *rp = strrchr(line, ')');
	struct procfs_stat s = { 0 };
	size_t len;
	int pid, ppid;

	if (!lp || !rp || rp < lp || sscanf(line, "%d", &pid) != 1)
		return -EINVAL;
	/* after comm: state(3) ppid pgrp session tty_nr tpgid flags(9) minflt
	 * cminflt majflt cmajflt utime(14) stime cutime cstime priority nice
	 * num_threads itrealvalue starttime(22) */
	if (sscanf(rp + 1,
		   " %c %d %*d %*d %*d %*d %lu %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d "
		   "%llu",
		   &s.state, &ppid, &s.flags, &s.utime, &s.stime, &s.starttime) != 6)
		return -EINVAL;
	s.pid = pid;
	s.ppid = ppid;
	len = (size_t)(rp - lp - 1);
	if (len >= sizeof(s.comm))
		len = sizeof(s.comm) - 1;
	memcpy(s.comm, lp + 1, len);
	*st = s;
	return 0;
}

/* A small /proc file into buf (NUL-terminated), in one read so that the
 * kernel produces it at once. Bytes read, or a negative errno: -ENOENT when
 * there is no such pid, -ESRCH when it went between the open and the read. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		n = -errno;
	else if (n == 0)
		n = -ESRCH;
	else
		buf[n] = '\0';
	close(fd);
	return n;
}

static int stat_at(const char *path, struct procfs_stat *st)
{
	char buf[1024];
	ssize_t n = read_small(path, buf, sizeof(buf));

	return n < 0 ? (int)n : procfs_stat_parse(buf, st);
}

int procfs_stat(pid_t pid, struct procfs_stat *st)
{
	char path[64];

	if (pid <= 0)
		return -ENOENT;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	return stat_at(path, st);
}

static bool exited(char state)
{
	return state == 'Z' || state == 'X';
}

/* Does the process of a zombie leader have a thread that still runs? */
static bool other_thread_runs(pid_t pid)
{
	char path[300];
	struct dirent *de;
	bool runs = false;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return false;
	while (!runs && (de = readdir(d))) {
		struct procfs_stat st;
		long tid = strtol(de->d_name, NULL, 10);

		if (tid <= 0 || tid == pid)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%ld/stat", (int)pid, tid);
		runs = !stat_at(path, &st) && !exited(st.state);
	}
	closedir(d);
	return runs;
}

static bool stat_alive(const struct procfs_stat *st)
{
	if (st->state == 'Z')
		return other_thread_runs(st->pid);
	return !exited(st->state);
}

bool procfs_alive(pid_t pid, unsigned long long start)
{
	struct procfs_stat st;

	if (procfs_stat(pid, &st))
		return false;
	if (start && st.starttime != start)
		return false; /* the pid was reused */
	return stat_alive(&st);
}

unsigned long long procfs_starttime(pid_t pid)
{
	struct procfs_stat st;

	return procfs_stat(pid, &st) ? 0 : st.starttime;
}

bool procfs_kthread(const struct procfs_stat *st)
{
	/* pid 2 is kthreadd, the parent of every other kernel thread */
	return (st->flags & PROCFS_PF_KTHREAD) || st->pid == 2 || st->ppid == 2;
}

pid_t procfs_tgid(pid_t pid)
{
	char path[64], line[128];
	pid_t tgid = -ESRCH;
	FILE *f;

	if (pid <= 0)
		return -ESRCH;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -ESRCH;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

int procfs_comm(pid_t pid, char *buf, size_t len)
{
	char path[64], tmp[256];
	ssize_t n;

	if (pid <= 0)
		return -ENOENT;
	if (!len)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	n = read_small(path, tmp, sizeof(tmp));
	if (n < 0)
		return (int)n;
	tmp[strcspn(tmp, "\n")] = '\0';
	snprintf(buf, len, "%s", tmp);
	return 0;
}

static int push(pid_t **v, size_t *n, size_t *cap, pid_t x)
{
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		pid_t *nv = realloc(*v, nc * sizeof(**v));

		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = nc;
	}
	(*v)[(*n)++] = x;
	return 0;
}

struct link {
	pid_t pid, ppid;
};

static int cmp_ppid(const void *a, const void *b)
{
	const struct link *x = a, *y = b;

	return x->ppid < y->ppid ? -1 : x->ppid > y->ppid;
}

/* Every alive process with its parent, sorted by parent. */
static int read_links(struct link **out, size_t *n_out)
{
	struct link *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;
	int err = 0;

	d = opendir("/proc");
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		struct procfs_stat st;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		if (procfs_stat((pid_t)atoi(de->d_name), &st) || !stat_alive(&st))
			continue; /* gone meanwhile, or a zombie */
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 256;
			struct link *t = realloc(v, nc * sizeof(*t));

			if (!t) {
				err = -ENOMEM;
				break;
			}
			v = t;
			cap = nc;
		}
		v[n++] = (struct link){ st.pid, st.ppid };
	}
	closedir(d);
	if (err) {
		free(v);
		return err;
	}
	qsort(v, n, sizeof(*v), cmp_ppid);
	*out = v;
	*n_out = n;
	return 0;
}

int procfs_descendants(pid_t root, pid_t **out, size_t *n_out)
{
	struct link *links = NULL;
	size_t nl = 0, nres = 0;
	pid_t *res;
	int err;

	err = read_links(&links, &nl);
	if (err)
		return err;
	res = malloc((nl + 1) * sizeof(*res));
	if (!res) {
		free(links);
		return -ENOMEM;
	}
	/*
	 * Breadth-first: res is the queue. /proc is read while processes come
	 * and go, so a reused pid could in principle close a cycle; nres < nl
	 * bounds the walk whatever the snapshot says.
	 */
	for (size_t head = 0;; head++) {
		pid_t parent = head == 0 ? root : res[head - 1];
		size_t lo = 0, hi = nl;

		while (lo < hi) { /* the first link whose parent is parent */
			size_t mid = lo + (hi - lo) / 2;

			if (links[mid].ppid < parent)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (; lo < nl && links[lo].ppid == parent && nres < nl; lo++)
			if (links[lo].pid != root)
				res[nres++] = links[lo].pid;
		if (head >= nres)
			break;
	}
	free(links);
	*out = res;
	*n_out = nres;
	return 0;
}

int procfs_threads(pid_t pid, pid_t **tids, size_t *n, size_t *cap)
{
	struct procfs_stat st;
	struct dirent *de;
	char path[64];
	bool leader_exited;
	DIR *d;
	int err = 0;

	/* The kernel releases other threads as they exit (unless a tracer
	 * holds them); only the leader stays, as a zombie, while the rest of
	 * its process runs, and a zombie cannot be moved or signalled. */
	if (procfs_stat(pid, &st))
		return 0;
	leader_exited = exited(st.state);
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return 0; /* exited meanwhile */
	while (!err && (de = readdir(d))) {
		long tid = strtol(de->d_name, NULL, 10);

		if (tid <= 0 || (tid == pid && leader_exited))
			continue;
		err = push(tids, n, cap, (pid_t)tid);
	}
	closedir(d);
	return err;
}
