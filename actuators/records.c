// SPDX-License-Identifier: MIT
/*
 * What the actuators found before changing anything: the cgroups and affinity
 * of every thread they moved, the frequency limits of every CPU they touched.
 * Kept in memory for act_restore() and in a small text file so that a daemon
 * restarted after SIGKILL can put the machine back (act_open()/act_cleanup()).
 *
 * File format, one record per line, tab-separated (cgroup paths may contain
 * spaces but not tabs or newlines):
 *   act-state 1
 *   owner PARENT                 (this daemon created the parent cgroup)
 *   pgrp  PGID STARTTIME WL      (a process group it launched)
 *   wl    NAME CPUSET-PATH CPU-PATH
 *   inplace NAME GRP CPUS|- QUOTA-US|- PERIOD-US   (an in-place workload's values as found)
 *   mems NAME NODES|.                             (its cpuset.mems as found, NUMA machines only)
 *   task  TID STARTTIME WL AFFINITY|- CPUSET-PATH CPU-PATH
 *   freq  CPU MIN-KHZ MAX-KHZ
 *   cmd   WL KIND MOUNT          (a launched command's cgroup, MOUNT/<parent>.cmd/WL)
 *   subtree GRP|/ CONTROLLERS   (v2: controllers it added to GRP's cgroup.subtree_control,
 *                                "/" the root; CONTROLLERS e.g. "cpuset,cpu")
 * Records are written before the change they allow to undo.
 */
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "act_records.h"

/* A cpu list in the file: any mask of ACT_CPUMASK_MAX cpus fits ("0,2,...,1022"). */
#define ACT_STATE_CPUS_MAX 4096
/* A line: the longest record (a task: a cpu list, two cgroup paths, a name) with room. */
#define ACT_STATE_LINE_MAX (3 * ACT_PATH_MAX + ACT_STATE_CPUS_MAX + 104)
/* Fields of the longest record (task: 7), and one to tell a longer line. */
#define ACT_STATE_FIELDS_MAX 8
/*
 * Opens of the lock file before giving up: a holder that ends unlinks it
 * between our open and our flock, and the next open gets the new file. More
 * than a couple of retries means daemons starting and ending in a loop.
 */
#define ACT_LOCK_TRIES 10
/* 50 ms waits for the lock of a daemon that is gone (its unexec'd child): 5 s */
#define ACT_LOCK_DEAD_WAITS 100

#define GROW(arr, n)                                                   \
	({                                                             \
		void *_p = realloc((arr), ((n) + 1) * sizeof(*(arr))); \
		if (_p)                                                \
			(arr) = _p;                                    \
		_p;                                                    \
	})

int act__rec_add_task(struct act_records *r, const struct act_rec_task *t)
{
	struct act_rec_task *old = act__rec_find_task(r, t->tid);

	if (old) {
		*old = *t;
		return 0;
	}
	if (!GROW(r->tasks, r->ntasks))
		return -ENOMEM;
	r->tasks[r->ntasks++] = *t;
	return 0;
}

int act__rec_add_wl(struct act_records *r, const struct act_rec_wl *w)
{
	struct act_rec_wl *old = act__rec_find_wl(r, w->name);

	if (old) {
		*old = *w;
		return 0;
	}
	if (!GROW(r->wls, r->nwls))
		return -ENOMEM;
	r->wls[r->nwls++] = *w;
	return 0;
}

int act__rec_add_freq(struct act_records *r, const struct act_rec_freq *f)
{
	if (act__rec_find_freq(r, f->cpu))
		return 0; /* the first value found is the one to restore */
	if (!GROW(r->freqs, r->nfreqs))
		return -ENOMEM;
	r->freqs[r->nfreqs++] = *f;
	return 0;
}

struct act_rec_task *act__rec_find_task(struct act_records *r, pid_t tid)
{
	for (size_t i = 0; i < r->ntasks; i++)
		if (r->tasks[i].tid == tid)
			return &r->tasks[i];
	return NULL;
}

struct act_rec_wl *act__rec_find_wl(struct act_records *r, const char *name)
{
	for (size_t i = 0; i < r->nwls; i++)
		if (!strcmp(r->wls[i].name, name))
			return &r->wls[i];
	return NULL;
}

struct act_rec_freq *act__rec_find_freq(struct act_records *r, int cpu)
{
	for (size_t i = 0; i < r->nfreqs; i++)
		if (r->freqs[i].cpu == cpu)
			return &r->freqs[i];
	return NULL;
}

void act__rec_drop_wl(struct act_records *r, const char *wl)
{
	size_t j = 0;

	for (size_t i = 0; i < r->ntasks; i++)
		if (strcmp(r->tasks[i].wl, wl))
			r->tasks[j++] = r->tasks[i];
	r->ntasks = j;
	j = 0;
	for (size_t i = 0; i < r->nwls; i++)
		if (strcmp(r->wls[i].name, wl))
			r->wls[j++] = r->wls[i];
	r->nwls = j;
}

void act__rec_drop_freq(struct act_records *r, int cpu)
{
	size_t j = 0;

	for (size_t i = 0; i < r->nfreqs; i++)
		if (r->freqs[i].cpu != cpu)
			r->freqs[j++] = r->freqs[i];
	r->nfreqs = j;
}

int act__rec_add_pgrp(struct act_records *r, const struct act_rec_pgrp *g)
{
	for (size_t i = 0; i < r->npgrps; i++)
		if (r->pgrps[i].pgid == g->pgid) {
			r->pgrps[i] = *g;
			return 0;
		}
	if (!GROW(r->pgrps, r->npgrps))
		return -ENOMEM;
	r->pgrps[r->npgrps++] = *g;
	return 0;
}

struct act_rec_cmd *act__rec_find_cmd(struct act_records *r, const char *wl)
{
	for (size_t i = 0; i < r->ncmds; i++)
		if (!strcmp(r->cmds[i].wl, wl))
			return &r->cmds[i];
	return NULL;
}

int act__rec_add_cmd(struct act_records *r, const struct act_rec_cmd *c)
{
	struct act_rec_cmd *old = act__rec_find_cmd(r, c->wl);

	if (old) {
		*old = *c;
		return 0;
	}
	if (!GROW(r->cmds, r->ncmds))
		return -ENOMEM;
	r->cmds[r->ncmds++] = *c;
	return 0;
}

void act__rec_drop_cmd(struct act_records *r, const char *wl)
{
	size_t j = 0;

	for (size_t i = 0; i < r->ncmds; i++)
		if (strcmp(r->cmds[i].wl, wl))
			r->cmds[j++] = r->cmds[i];
	r->ncmds = j;
}

int act__rec_add_subtree(struct act_records *r, const char *grp, unsigned int res)
{
	for (size_t i = 0; i < r->nsubtrees; i++)
		if (!strcmp(r->subtrees[i].grp, grp)) {
			r->subtrees[i].res |= res;
			return 0;
		}
	if (strlen(grp) >= sizeof(r->subtrees[0].grp))
		return -ENAMETOOLONG;
	if (!GROW(r->subtrees, r->nsubtrees))
		return -ENOMEM;
	snprintf(r->subtrees[r->nsubtrees].grp, sizeof(r->subtrees[0].grp), "%s", grp);
	r->subtrees[r->nsubtrees++].res = res;
	return 0;
}

void act__rec_free(struct act_records *r)
{
	free(r->cmds);
	free(r->subtrees);
	free(r->pgrps);
	free(r->tasks);
	free(r->wls);
	free(r->freqs);
	memset(r, 0, sizeof(*r));
}

static int mkdir_p(const char *file)
{
	char dir[ACT_PATH_MAX], *s;

	snprintf(dir, sizeof(dir), "%s", file);
	s = strrchr(dir, '/');
	if (!s || s == dir)
		return 0;
	*s = '\0';
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	/* the state directory itself: root's alone (the daemon checked the ones above) */
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

int act__state_file_lock(const char *state_path, pid_t *holder)
{
	char path[ACT_PATH_MAX + 8], buf[32];
	int fd, err, dead_wait = 0;
	ssize_t n;

	err = mkdir_p(state_path);
	if (err)
		return err;
	snprintf(path, sizeof(path), "%s.lock", state_path);
	for (int tries = 0;; tries++) {
		struct stat a, b;

		fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
		if (fd < 0)
			return -errno;
		if (flock(fd, LOCK_EX | LOCK_NB)) {
			err = errno == EWOULDBLOCK ? -EBUSY : -errno;
			n = pread(fd, buf, sizeof(buf) - 1, 0);
			buf[n > 0 ? n : 0] = '\0';
			*holder = (pid_t)strtol(buf, NULL, 10);
			close(fd);
			/* Held, but the daemon that wrote its pid is gone: a command
			 * it forked and had not exec'd yet still has the lock's open
			 * file, and dies with it (PR_SET_PDEATHSIG) a moment later.
			 * Wait for that, bounded, rather than refuse a --cleanup
			 * run right after a SIGKILL. */
			if (err == -EBUSY && *holder > 0 && kill(*holder, 0) && errno == ESRCH &&
			    dead_wait++ < ACT_LOCK_DEAD_WAITS) {
				struct timespec ts = { 0, 50 * 1000 * 1000 };

				nanosleep(&ts, NULL);
				tries--;
				continue;
			}
			return err;
		}
		/* the holder unlinks the file when it ends: a lock on an unlinked file is none */
		if (!fstat(fd, &a) && !stat(path, &b) && a.st_dev == b.st_dev &&
		    a.st_ino == b.st_ino)
			break;
		close(fd);
		if (tries == ACT_LOCK_TRIES)
			return -EAGAIN;
	}
	n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) || pwrite(fd, buf, (size_t)n, 0) != n) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

void act__state_file_unlock(const char *state_path, int fd)
{
	char path[ACT_PATH_MAX + 8];

	if (fd < 0)
		return;
	snprintf(path, sizeof(path), "%s.lock", state_path);
	unlink(path);
	close(fd);
}

static void write_wl(FILE *f, const struct act_rec_wl *w)
{
	char cpus[ACT_STATE_CPUS_MAX], q[32] = "-";

	if (!w->inplace) {
		fprintf(f, "wl\t%s\t%s\t%s\n", w->name, w->origin.cpuset, w->origin.cpu);
		return;
	}
	if (!w->has_cpus || act_cpumask_format(&w->cpus, cpus, sizeof(cpus)) < 0)
		snprintf(cpus, sizeof(cpus), "-");
	if (w->has_quota)
		snprintf(q, sizeof(q), "%lld", (long long)w->quota_us);
	fprintf(f, "inplace\t%s\t%s\t%s\t%s\t%llu\n", w->name, w->grp, cpus, q,
		(unsigned long long)w->period_us);
	/* after its inplace line; "." is the empty list (a v2 cpuset.mems
	 * that follows the parent's) */
	if (w->has_mems)
		fprintf(f, "mems\t%s\t%s\n", w->name, w->mems[0] ? w->mems : ".");
}

static void write_task(FILE *f, const struct act_rec_task *t)
{
	char aff[ACT_STATE_CPUS_MAX];

	if (!t->has_aff || act_cpumask_format(&t->aff, aff, sizeof(aff)) < 0)
		snprintf(aff, sizeof(aff), "-");
	fprintf(f, "task\t%d\t%llu\t%s\t%s\t%s\t%s\n", t->tid, t->start, t->wl, aff,
		t->origin.cpuset, t->origin.cpu);
}

static void write_records(FILE *f, const struct act_records *r)
{
	fprintf(f, "act-state 1\n");
	if (r->owns_parent)
		fprintf(f, "owner\t-\n");
	for (size_t i = 0; i < r->ncmds; i++)
		fprintf(f, "cmd\t%s\t%d\t%s\n", r->cmds[i].wl, (int)r->cmds[i].kind,
			r->cmds[i].mnt);
	for (size_t i = 0; i < r->npgrps; i++)
		fprintf(f, "pgrp\t%d\t%llu\t%s\n", r->pgrps[i].pgid, r->pgrps[i].start,
			r->pgrps[i].wl);
	for (size_t i = 0; i < r->nwls; i++)
		write_wl(f, &r->wls[i]);
	for (size_t i = 0; i < r->ntasks; i++)
		write_task(f, &r->tasks[i]);
	for (size_t i = 0; i < r->nfreqs; i++)
		fprintf(f, "freq\t%d\t%lu\t%lu\n", r->freqs[i].cpu, r->freqs[i].min_khz,
			r->freqs[i].max_khz);
	for (size_t i = 0; i < r->nsubtrees; i++) {
		const struct act_rec_subtree *t = &r->subtrees[i];

		fprintf(f, "subtree\t%s\t%s%s%s\n", t->grp[0] ? t->grp : "/",
			t->res & ACT_RES_CPUSET ? "cpuset" : "",
			(t->res & ACT_RES_CPUSET) && (t->res & ACT_RES_QUOTA) ? "," : "",
			t->res & ACT_RES_QUOTA ? "cpu" : "");
	}
}

/* A new tmp file (0600), never through a planted symlink or into someone else's file. */
static FILE *create_tmp(const char *tmp, int *err)
{
	FILE *f;
	int fd;

	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		*err = -errno;
		return NULL;
	}
	f = fdopen(fd, "w");
	if (!f) {
		*err = -errno;
		close(fd);
		unlink(tmp);
	}
	return f;
}

/* Flush, sync and close f (tmp), then rename it over path; tmp is removed on failure. */
static int replace_with(FILE *f, const char *tmp, const char *path)
{
	int err;

	if (fflush(f) || fsync(fileno(f))) {
		err = -errno;
		fclose(f);
		unlink(tmp);
		return err;
	}
	if (fclose(f) || rename(tmp, path)) {
		err = -errno;
		unlink(tmp);
		return err;
	}
	return 0;
}

int act__state_file_write(const char *path, const struct act_records *r)
{
	char tmp[ACT_PATH_MAX + 8];
	FILE *f;
	int err;

	err = mkdir_p(path);
	if (err)
		return err;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = create_tmp(tmp, &err);
	if (!f)
		return err;
	write_records(f, r);
	return replace_with(f, tmp, path);
}

/* Split a line at tabs into at most max fields. */
static int split(char *line, char **f, int max)
{
	int n = 0;
	char *s = line;

	line[strcspn(line, "\n")] = '\0';
	while (n < max) {
		f[n++] = s;
		s = strchr(s, '\t');
		if (!s)
			break;
		*s++ = '\0';
	}
	return n;
}

static int parse_owner(struct act_records *r, char **f)
{
	r->owns_parent = true;
	return 0;
}

static int parse_pgrp(struct act_records *r, char **f)
{
	struct act_rec_pgrp g = { 0 };

	g.pgid = (pid_t)strtol(f[1], NULL, 10);
	g.start = strtoull(f[2], NULL, 10);
	snprintf(g.wl, sizeof(g.wl), "%.63s", f[3]);
	return g.pgid > 1 ? act__rec_add_pgrp(r, &g) : 0;
}

static int parse_wl(struct act_records *r, char **f)
{
	struct act_rec_wl w = { 0 };

	snprintf(w.name, sizeof(w.name), "%.63s", f[1]);
	snprintf(w.origin.cpuset, sizeof(w.origin.cpuset), "%.511s", f[2]);
	snprintf(w.origin.cpu, sizeof(w.origin.cpu), "%.511s", f[3]);
	return act__rec_add_wl(r, &w);
}

static int parse_inplace(struct act_records *r, char **f)
{
	struct act_rec_wl w = { .inplace = true };

	snprintf(w.name, sizeof(w.name), "%.63s", f[1]);
	snprintf(w.grp, sizeof(w.grp), "%.511s", f[2]);
	w.has_cpus = strcmp(f[3], "-") && !act_cpumask_parse(f[3], &w.cpus);
	w.has_quota = strcmp(f[4], "-") != 0;
	w.quota_us = w.has_quota ? strtoll(f[4], NULL, 10) : -1;
	w.period_us = strtoull(f[5], NULL, 10);
	return w.grp[0] ? act__rec_add_wl(r, &w) : 0;
}

static int parse_mems(struct act_records *r, char **f)
{
	struct act_rec_wl *w = act__rec_find_wl(r, f[1]);

	if (!w || !w->inplace)
		return 0;
	w->has_mems = true;
	snprintf(w->mems, sizeof(w->mems), "%.63s", strcmp(f[2], ".") ? f[2] : "");
	return 0;
}

static int parse_task(struct act_records *r, char **f)
{
	struct act_rec_task t = { 0 };

	t.tid = (pid_t)strtol(f[1], NULL, 10);
	t.start = strtoull(f[2], NULL, 10);
	snprintf(t.wl, sizeof(t.wl), "%.63s", f[3]);
	t.has_aff = strcmp(f[4], "-") && !act_cpumask_parse(f[4], &t.aff);
	snprintf(t.origin.cpuset, sizeof(t.origin.cpuset), "%.511s", f[5]);
	snprintf(t.origin.cpu, sizeof(t.origin.cpu), "%.511s", f[6]);
	return t.tid > 0 ? act__rec_add_task(r, &t) : 0;
}

static int parse_freq(struct act_records *r, char **f)
{
	struct act_rec_freq q = { 0 };

	q.cpu = (int)strtol(f[1], NULL, 10);
	q.min_khz = strtoul(f[2], NULL, 10);
	q.max_khz = strtoul(f[3], NULL, 10);
	return act__rec_add_freq(r, &q);
}

static int parse_cmd(struct act_records *r, char **f)
{
	struct act_rec_cmd c = { 0 };

	snprintf(c.wl, sizeof(c.wl), "%.63s", f[1]);
	c.kind = (enum act_cmd_kind)strtol(f[2], NULL, 10);
	snprintf(c.mnt, sizeof(c.mnt), "%.511s", f[3]);
	if (c.kind <= ACT_CMD_NONE || c.kind > ACT_CMD_FREEZER || c.mnt[0] != '/')
		return 0;
	return act__rec_add_cmd(r, &c);
}

static int parse_subtree(struct act_records *r, char **f)
{
	unsigned int res = 0;
	char *tok, *save = NULL;

	for (tok = strtok_r(f[2], ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		res |= !strcmp(tok, "cpuset") ? ACT_RES_CPUSET
		       : !strcmp(tok, "cpu")  ? ACT_RES_QUOTA
					      : 0;
	if (!res || strstr(f[1], ".."))
		return 0;
	return act__rec_add_subtree(r, strcmp(f[1], "/") ? f[1] : "", res);
}

/* The record kinds: name, number of fields (0 = any), parser. */
static const struct {
	const char *kind;
	int nfields;
	int (*parse)(struct act_records *r, char **f);
} kinds[] = {
	{ "owner", 0, parse_owner },	 { "pgrp", 4, parse_pgrp }, { "wl", 4, parse_wl },
	{ "inplace", 6, parse_inplace }, { "mems", 3, parse_mems }, { "task", 7, parse_task },
	{ "freq", 4, parse_freq },	 { "cmd", 4, parse_cmd },   { "subtree", 3, parse_subtree },
};

/* One line into r; lines of unknown kinds (a newer writer) are skipped. */
static int parse_line(struct act_records *r, char *line)
{
	char *f[ACT_STATE_FIELDS_MAX];
	int n = split(line, f, ACT_STATE_FIELDS_MAX);

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(f[0], kinds[i].kind) && (!kinds[i].nfields || n == kinds[i].nfields))
			return kinds[i].parse(r, f);
	return 0;
}

/* The state file, if it is ours (a regular file of our uid, not writable by others). */
static FILE *open_own(const char *path, int *err)
{
	FILE *fp = fopen(path, "re");
	struct stat st;

	if (!fp) {
		*err = -errno;
		return NULL;
	}
	/* only a file of ours proves anything */
	if (fstat(fileno(fp), &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022)) {
		fclose(fp);
		*err = -EPERM;
		return NULL;
	}
	return fp;
}

int act__state_file_read(const char *path, struct act_records *r)
{
	char line[ACT_STATE_LINE_MAX];
	FILE *fp;
	int err = 0;

	fp = open_own(path, &err);
	if (!fp)
		return err;
	if (!fgets(line, sizeof(line), fp) || strncmp(line, "act-state 1", 11)) {
		fclose(fp);
		return -EINVAL;
	}
	while (!err && fgets(line, sizeof(line), fp))
		err = parse_line(r, line);
	fclose(fp);
	return err;
}
