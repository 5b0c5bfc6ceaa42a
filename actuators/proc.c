// SPDX-License-Identifier: MIT
/*
 * Finding the threads of a workload: its main process, every thread of it and
 * every descendant process with all their threads. Read from /proc; racy by
 * nature (processes fork while we read), so callers repeat until stable.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "act_proc.h"

struct pp {
	pid_t pid, ppid;
};

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

/* ppid from /proc/pid/stat: the comm field may contain spaces and ')'. */
static pid_t read_ppid(pid_t pid)
{
	char path[64], buf[1024], *p;
	FILE *f;
	size_t r;
	int ppid;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	r = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[r] = '\0';
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %d", &ppid) != 1)
		return -1;
	return ppid;
}

unsigned long long act__proc_starttime(pid_t tid)
{
	char path[64], buf[1024], *p;
	unsigned long long st = 0;
	FILE *f;
	size_t r;

	snprintf(path, sizeof(path), "/proc/%d/stat", tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	r = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[r] = '\0';
	p = strrchr(buf, ')');
	/* after ')': state(3) ppid pgrp session tty tpgid flags minflt cminflt majflt
	 * cmajflt utime stime cutime cstime priority nice threads itrealvalue
	 * starttime(22) */
	if (!p || sscanf(p + 1,
			 " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
			 "%*d %*d %llu",
			 &st) != 1)
		return 0;
	return st;
}

bool act__proc_exists(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d", pid);
	return pid > 0 && access(path, F_OK) == 0;
}

static int add_threads(pid_t pid, pid_t **v, size_t *n, size_t *cap)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return 0; /* exited meanwhile */
	while ((de = readdir(d))) {
		long tid = strtol(de->d_name, NULL, 10);

		if (tid <= 0)
			continue;
		err = push(v, n, cap, (pid_t)tid);
		if (err)
			break;
	}
	closedir(d);
	return err;
}

int act__proc_tree(pid_t pid, pid_t **tids, size_t *n)
{
	struct pp *all = NULL;
	size_t nall = 0, capall = 0;
	pid_t *procs = NULL, *out = NULL;
	size_t nprocs = 0, capprocs = 0, nout = 0, capout = 0;
	struct dirent *de;
	DIR *d;
	int err = 0;

	*tids = NULL;
	*n = 0;
	if (!act__proc_exists(pid))
		return -ESRCH;
	d = opendir("/proc");
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		long p = strtol(de->d_name, NULL, 10);
		pid_t pp;

		if (p <= 0)
			continue;
		pp = read_ppid((pid_t)p);
		if (pp < 0)
			continue;
		if (nall == capall) {
			size_t nc = capall ? capall * 2 : 256;
			struct pp *na = realloc(all, nc * sizeof(*all));

			if (!na) {
				err = -ENOMEM;
				break;
			}
			all = na;
			capall = nc;
		}
		all[nall].pid = (pid_t)p;
		all[nall].ppid = pp;
		nall++;
	}
	closedir(d);
	if (err)
		goto out;

	/* breadth-first over the parent links */
	err = push(&procs, &nprocs, &capprocs, pid);
	for (size_t i = 0; !err && i < nprocs; i++)
		for (size_t j = 0; !err && j < nall; j++)
			if (all[j].ppid == procs[i] && all[j].pid != pid)
				err = push(&procs, &nprocs, &capprocs, all[j].pid);
	for (size_t i = 0; !err && i < nprocs; i++)
		err = add_threads(procs[i], &out, &nout, &capout);
	if (!err && nout == 0)
		err = -ESRCH;
out:
	free(all);
	free(procs);
	if (err) {
		free(out);
		return err;
	}
	*tids = out;
	*n = nout;
	return 0;
}
