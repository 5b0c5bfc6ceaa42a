/* SPDX-License-Identifier: MIT */
/*
 * The one place that knows how cgroups are laid out on this host: where the
 * hierarchies are mounted (v1 controllers' mounts, the v2 unified mount, or
 * both on a hybrid host), which one parties places workloads in, how a path
 * is built from a mount, which processes a cgroup holds (one meaning: its own
 * and its descendants'; the one reader of a cgroup's process and thread
 * lists), and whether a cgroup is parties' own. Both programs use it:
 * libebee (the v2 hierarchy's root), `ebee trace --cgroup` and parties (its
 * config checks, daemon, metric sources, CPU accounting and actuators).
 *
 * Mounts are read from a mounts table (/proc/self/mounts) with a root put in
 * front of every mount point, so the unit tests run it against a fake table
 * and a fake tree in a temp dir (as act_opts.topo_root does for sysfs).
 * libebee's one need, the whole v2 hierarchy, is read from mountinfo, which
 * tells a mount's root (cgfs_v2_mount()). Compiled into libebee too, which is
 * installed alone (its version script keeps these names unexported).
 */
#ifndef COMMON_CGROUPFS_H
#define COMMON_CGROUPFS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define CGFS_PATH_MAX 512
/* How deep cgfs_procs() follows descendants: systemd's slices and a
 * container runtime's nesting stay far below; a loop of bind mounts cannot
 * make it run forever. */
#define CGFS_DEPTH_MAX 16

/* Mount points, "" when not mounted: the first mount of each kind counts. */
struct cgfs {
	char v2[CGFS_PATH_MAX]; /* the cgroup2 (unified) hierarchy */
	char v1_cpuset[CGFS_PATH_MAX];
	char v1_cpu[CGFS_PATH_MAX];
	char v1_cpuacct[CGFS_PATH_MAX]; /* often the cpu one (cpu,cpuacct) */
	char v1_freezer[CGFS_PATH_MAX];
	char v1_systemd[CGFS_PATH_MAX]; /* systemd's named v1 hierarchy (name=systemd) */
	/*
	 * 1 or 2: the hierarchy parties places workloads in. A v1 cpuset
	 * hierarchy means cpuset is not on v2 here (1); else v2 when it offers
	 * cpuset or cpu (2); else the v1 cpu hierarchy (1); else 1, whose
	 * messages say what to mount.
	 */
	int version;
};

/*
 * Fill fs from the mounts table at mounts (NULL: /proc/self/mounts), root (NULL
 * or "": none) put before every mount point. 0 or -errno (fs then says nothing
 * is mounted, version 1).
 */
int cgfs_find(struct cgfs *fs, const char *mounts, const char *root);

/*
 * The mount point of the whole cgroup v2 hierarchy (/sys/fs/cgroup on a unified
 * host, /sys/fs/cgroup/unified on a hybrid one) into buf: the first cgroup2
 * mount of the mountinfo table at mountinfo (NULL: /proc/self/mountinfo) whose
 * root is the hierarchy's. libebee resolves /proc/PID/cgroup paths and cgroup
 * ids against it and attaches its cgroup programs to its root, so a bind
 * mount of one cgroup below (a container's view without a cgroup namespace)
 * does not count here; cgfs_find()'s v2, where parties builds its paths, is
 * the first cgroup2 mount whatever its root. 0, -ENOENT (none, or longer than
 * len) or -errno (the table unreadable).
 */
int cgfs_v2_mount(char *buf, size_t len, const char *mountinfo);

/* This host's mounts, read once per process (for readers that run every
 * interval); an unreadable table leaves nothing mounted. */
const struct cgfs *cgfs_here(void);

/* The mount of v1 controller ctrl ("cpuset", "cpu", "cpuacct", "freezer",
 * "name=systemd"): "" when it is not mounted on v1 or not one of these. */
const char *cgfs_v1(const struct cgfs *fs, const char *ctrl);

/*
 * The hierarchy a cgroup must exist in and its processes are listed in: on
 * v1 the cpuset one (where parties pins them), else the cpu one, else (no
 * controller parties writes is usable) the v2 mount, where the checks say
 * what is missing; on v2 the unified mount. "" when none is mounted.
 */
const char *cgfs_home(const struct cgfs *fs);

/* "<mnt>/<grp>/<file>" into buf (grp NULL or "", file NULL: left out). 0 or -ENAMETOOLONG. */
int cgfs_path(char *buf, size_t len, const char *mnt, const char *grp, const char *file);

/* Read a small file into buf (NUL-terminated, trailing newlines and spaces
 * stripped). 0 or -errno. */
int cgfs_read_file(const char *path, char *buf, size_t len);
/* Write str to an existing file (no O_CREAT). 0 or -errno (-EIO: a short write). */
int cgfs_write_file(const char *path, const char *str);
/* Is ctrl a word of <dir>/<file> (cgroup.controllers, cgroup.subtree_control)? */
bool cgfs_listed(const char *dir, const char *file, const char *ctrl);

/* Is dir a cgroup (a directory with a readable cgroup.procs)? */
bool cgfs_is_cgroup(const char *dir);

/*
 * Each id that file of the cgroup directory dir lists (cgroup.procs: its
 * processes; cgroup.threads, or v1's tasks: its threads), in the file's order
 * and as it lists them, to fn(id, arg). How many were listed, or -errno when
 * the file cannot be read (-ENOENT: the cgroup is gone).
 */
int cgfs_each_pid(const char *dir, const char *file, void (*fn)(pid_t id, void *arg), void *arg);

/*
 * The processes (tgids) of the cgroup directory dir and of its descendants,
 * down to CGFS_DEPTH_MAX levels, each once, up to max of them into out (what
 * `ebee trace --cgroup` and parties' ebee source trace, so both trace the same
 * set). Returns how many were found, more than max when there were more (those
 * are counted, not told apart from duplicates), or -errno when dir's own
 * cgroup.procs cannot be read (-ENOENT: the cgroup is gone). A descendant
 * removed meanwhile is skipped.
 */
int cgfs_procs(const char *dir, pid_t *out, int max);

/*
 * Is grp (relative to the hierarchy root, no leading '/') parent or below it?
 * What parties owns (its cgroup_parent) is never a workload's own cgroup.
 */
bool cgfs_within(const char *grp, const char *parent);

#endif /* COMMON_CGROUPFS_H */
