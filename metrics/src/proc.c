// SPDX-License-Identifier: MIT
/*
 * /proc walking for the start of tracing. Processes forked after the fork
 * hook is attached are added by the kernel; this finds the ones that already
 * existed (an nginx master's workers), so it runs after the hook is live.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proc.h"

/* State and parent from /proc/PID/stat; the comm field may hold spaces and
 * parentheses, so parse from the last ')'. */
static int read_stat(pid_t pid, char *state, pid_t *ppid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c %d", state, ppid) != 2)
		return -EINVAL;
	return 0;
}

bool ebee_proc_alive(pid_t pid)
{
	pid_t ppid;
	char st;

	if (pid <= 0 || read_stat(pid, &st, &ppid))
		return false;
	return st != 'Z' && st != 'X';
}

pid_t ebee_proc_tgid(pid_t pid)
{
	char path[64], line[128];
	pid_t tgid = -ESRCH;
	FILE *f;

	if (pid <= 0)
		return -ESRCH;
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -ESRCH;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

struct pp {
	pid_t pid, ppid;
};

int ebee_proc_descendants(pid_t root, pid_t **out, size_t *n_out)
{
	struct pp *all = NULL;
	size_t n = 0, cap = 0, nres = 0;
	pid_t *res = NULL;
	struct dirent *de;
	DIR *d;
	int err = 0;

	d = opendir("/proc");
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		pid_t pid, ppid;
		char st;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid = atoi(de->d_name);
		if (read_stat(pid, &st, &ppid) || st == 'Z' || st == 'X')
			continue;
		if (n == cap) {
			struct pp *t = realloc(all, (cap = cap ? 2 * cap : 256) * sizeof(*t));

			if (!t) {
				err = -ENOMEM;
				goto out;
			}
			all = t;
		}
		all[n++] = (struct pp){ pid, ppid };
	}
	/* Breadth-first over the parent links: res doubles as the queue. */
	res = malloc((n + 1) * sizeof(*res));
	if (!res) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t head = 0;;) {
		pid_t parent = head == 0 && nres == 0 ? root : res[head - 1];

		for (size_t i = 0; i < n; i++)
			if (all[i].ppid == parent && all[i].pid != root && nres < n)
				res[nres++] = all[i].pid;
		if (head >= nres)
			break;
		head++;
	}
out:
	closedir(d);
	free(all);
	if (err) {
		free(res);
		return err;
	}
	*out = res;
	*n_out = nres;
	return 0;
}
