// SPDX-License-Identifier: MIT
/*
 * parties: the daemon. Arguments, signals, start-up order and the promise
 * that whatever happens (normal end, SIGINT, SIGTERM, a fatal error) every
 * allocation is put back before exit. After SIGKILL, the next start (same
 * cgroup_parent) repairs the machine first; `parties --cleanup -c FILE`
 * does only that.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <pwd.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "actuator.h"
#include "config.h"
#include "log.h"
#include "loop.h"
#include "inplace.h"
#include "machine.h"
#include "sim_run.h"
#include "journal.h"
#include "pmetrics.h"
#include "reload.h"
#include "source.h"
#include "svc.h"

#ifndef PARTIES_VERSION
#define PARTIES_VERSION "unknown"
#endif

static volatile sig_atomic_t stop_sig;

static void on_signal(int sig)
{
	stop_sig = sig;
}

static volatile sig_atomic_t hup;

static void on_hup(int sig)
{
	hup = 1;
}

/* SIGHUP: re-read the configuration (validated first, see reload.h) and
 * reopen the log (logrotate renames it, then sends SIGHUP). */
static FILE *log_open(const char *path, char *err, size_t len);

static void reload(const char *cfg_path, struct cfg *cfg, struct loop *l, FILE **log,
		   const char *log_cli, bool dry_run)
{
	static struct cfg next;
	const char *path;
	char msg[512];

	if (reload_check(cfg_path, cfg, &next, msg, sizeof(msg)) ||
	    reload_apply(cfg, &next, l, msg, sizeof(msg))) {
		fprintf(stderr, "parties: reload failed, keeping the running configuration: %s\n",
			msg);
	} else {
		fprintf(stderr, "parties: reloaded %s: %s\n", cfg_path,
			msg[0] ? msg : "nothing changed");
	}
	/* The same rules as at start-up: a dry run writes only --log, and the
	 * file is opened as log_open() opens it (no symlink, 0640, regular). */
	path = log_cli ? log_cli : (cfg->log[0] && !dry_run ? cfg->log : NULL);
	if (path) {
		FILE *f = log_open(path, msg, sizeof(msg));

		if (!f) {
			fprintf(stderr, "parties: %s; still writing the old one\n", msg);
			return;
		}
		if (*log)
			fclose(*log);
		*log = f;
	} else if (*log) {
		fclose(*log);
		*log = NULL;
	}
	l->log = *log;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: parties -c FILE.ini [--dry-run] [--duration S] [--log FILE.jsonl] [-v]\n"
		"       parties -c FILE.ini --cleanup\n"
		"       parties -c FILE.ini --simulate [--seed N] [--log FILE.jsonl]\n"
		"       parties --check-config FILE.ini\n"
		"\n"
		"Closed-loop resource manager for co-located latency-critical services. Every\n"
		"interval it reads each workload's p99 (from ebee, in-process eBPF tracing, or a\n"
		"client feed file), asks the policy for a decision, checks it and applies it to\n"
		"the workloads' cgroups (cpuset cores, cpu quota) and cpufreq limits.\n"
		"\n"
		"  -c, --config FILE    INI file; every key is documented in configs/example.ini\n"
		"  -n, --dry-run        change nothing outside its own output: log what would be\n"
		"                       written; workload commands are NOT started (those\n"
		"                       workloads are reported as not observed), the config's\n"
		"                       log is not written (--log is), no state file or lock;\n"
		"                       tracing still needs root when a workload uses ebee\n"
		"      --check-config FILE  validate FILE, including against this machine (cpus,\n"
		"                       pids, users, files and directories), change nothing,\n"
		"                       exit 0 when it would start, 2 with file:line if not\n"
		"  -d, --duration S     stop after S seconds (default: run until SIGINT/SIGTERM)\n"
		"  -l, --log FILE       append one JSON line per interval here (overrides\n"
		"                       [controller] log); a summary line ends the run\n"
		"      --cleanup        only repair what a killed daemon with this config's\n"
		"                       cgroup_parent left behind, then exit\n"
		"  -m, --metrics ADDR   serve Prometheus metrics at http://ADDR/metrics\n"
		"                       (ADDR: HOST:PORT, :PORT for all interfaces, [V6]:PORT)\n"
		"  -v, --verbose        log every actuator write to stderr\n"
		"      --simulate       run the loop and the policy against the request-level\n"
		"                       model of the config's [simulation] section, in virtual\n"
		"                       time (no root, nothing on the machine changes); --log\n"
		"                       is then truncated, --duration is virtual seconds\n"
		"      --seed N         override [controller] seed (policy and model)\n"
		"  -V, --version        print the version and exit\n"
		"  -h, --help           this text\n"
		"\n"
		"On exit (end of --duration, SIGINT, SIGTERM, or a fatal error) every cgroup and\n"
		"frequency limit the daemon changed is restored and launched commands are\n"
		"stopped. Exit status: 0 on a normal or signalled end, 1 on a runtime failure,\n"
		"2 on bad arguments or configuration (reported as file:line: what is wrong).\n"
		"\n"
		"Policies:\n");
	for (int i = 0; pol_registry[i]; i++)
		fprintf(f, "  %-10s %s\n", pol_registry[i]->name,
			pol_registry[i]->desc ? pol_registry[i]->desc : "");
}

/*
 * Who a command runs as: root unless the workload names a user (its
 * primary group and supplementary groups) and/or a group. Looked up before
 * fork: the child only makes system calls.
 */
struct ident {
	bool drop;
	uid_t uid;
	gid_t gid;
	char user[CFG_NAME_LEN];
};

static int ident_of(const struct cfg_workload *w, struct ident *id)
{
	memset(id, 0, sizeof(*id));
	id->uid = getuid();
	id->gid = getgid();
	if (w->user[0]) {
		struct passwd *pw = getpwnam(w->user);

		if (!pw)
			return -ENOENT;
		id->uid = pw->pw_uid;
		id->gid = pw->pw_gid;
		snprintf(id->user, sizeof(id->user), "%s", w->user);
		id->drop = true;
	}
	if (w->group[0]) {
		struct group *gr = getgrnam(w->group);

		if (!gr)
			return -ENOENT;
		id->gid = gr->gr_gid;
		id->drop = true;
	}
	return 0;
}

/* In the child: groups first (setgid needs root), then the uid; any failure is fatal. */
static int ident_drop(const struct ident *id)
{
	if (!id->drop)
		return 0;
	if (id->user[0] ? initgroups(id->user, id->gid) : setgroups(0, NULL))
		return -1;
	if (setresgid(id->gid, id->gid, id->gid) || setresuid(id->uid, id->uid, id->uid))
		return -1;
	/* must not be able to get root back */
	if (id->uid != 0 && setuid(0) == 0)
		return -1;
	return 0;
}

static pid_t launch(const char *cmd, const struct ident *id)
{
	pid_t pid = fork();

	if (pid == 0) {
		char buf[CFG_CMD_LEN + 8];
		sigset_t none;

		setpgid(0, 0);
		if (ident_drop(id)) {
			fprintf(stderr, "parties: cannot drop privileges for '%s': %s\n", cmd,
				strerror(errno));
			_exit(126);
		}
		/* our handler would swallow a SIGTERM that arrives before exec */
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		dup2(STDERR_FILENO, STDOUT_FILENO); /* our stdout carries only --help */
		snprintf(buf, sizeof(buf), "exec %s", cmd);
		execl("/bin/sh", "sh", "-c", buf, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		setpgid(pid, pid);
	return pid;
}

/*
 * Every process below us: launched commands, what they forked, and (as a
 * subreaper) what they orphaned, e.g. a command that called setsid and
 * left its process group. *n at most max.
 */
static size_t descendants(pid_t *out, size_t max)
{
	size_t n = 0;
	bool grew = true;

	while (grew) {
		DIR *d = opendir("/proc");
		struct dirent *e;

		grew = false;
		if (!d)
			return n;
		while ((e = readdir(d)) && n < max) {
			char path[64], buf[512], *p;
			int pid = atoi(e->d_name), ppid;
			bool mine = false, seen = false;
			FILE *f;

			if (pid <= 0)
				continue;
			snprintf(path, sizeof(path), "/proc/%d/stat", pid);
			f = fopen(path, "re");
			if (!f)
				continue;
			p = fgets(buf, sizeof(buf), f);
			fclose(f);
			if (!p || !(p = strrchr(buf, ')')) || sscanf(p + 1, " %*c %d", &ppid) != 1)
				continue;
			mine = ppid == getpid();
			for (size_t i = 0; i < n; i++) {
				seen |= out[i] == pid;
				mine |= out[i] == ppid;
			}
			if (mine && !seen) {
				out[n++] = pid;
				grew = true;
			}
		}
		closedir(d);
	}
	return n;
}

/*
 * On exit: SIGTERM to every descendant, a grace period, then SIGKILL; reap.
 * Catches what stop_child() cannot: processes that left the launched group.
 */
static void stop_descendants(void)
{
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	pid_t pids[1024];
	size_t n = descendants(pids, 1024);

	for (size_t i = 0; i < n; i++)
		kill(pids[i], SIGTERM);
	for (int t = 0; n && t < ACT_PGRP_GRACE_MS / 50; t++) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		n = descendants(pids, 1024);
		if (n)
			nanosleep(&ts, NULL);
	}
	n = descendants(pids, 1024);
	for (size_t i = 0; i < n; i++)
		kill(pids[i], SIGKILL);
	while (waitpid(-1, NULL, n ? 0 : WNOHANG) > 0)
		;
}

/* Stop a launched command and its process group: SIGTERM, then SIGKILL. */
static void stop_child(pid_t pid)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	kill(-pid, SIGTERM);
	kill(pid, SIGTERM);
	for (int i = 0; i < 150; i++) {
		pid_t r = waitpid(pid, NULL, WNOHANG);

		if (r == pid)
			goto group;
		/* an adopted command is not our child: wait for it to be gone */
		if (r < 0 && errno == ECHILD && kill(pid, 0) && errno == ESRCH)
			goto group;
		nanosleep(&ts, NULL);
	}
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
group:
	kill(-pid, SIGKILL); /* stragglers of the group */
}

/*
 * The decision log: never through a symlink, never a FIFO or device (it
 * would block or write somewhere unexpected), created 0640 whatever the
 * umask, appended to.
 */
static FILE *log_open(const char *path, char *err, size_t len)
{
	int fd = open(
	    path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY,
	    0640);
	struct stat st;
	FILE *f;

	if (fd < 0) {
		snprintf(err, len, "cannot open log %s: %s%s", path, strerror(errno),
			 errno == ELOOP ? " (a symbolic link: refused)" : "");
		return NULL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(err, len, "log %s is not a regular file", path);
		close(fd);
		return NULL;
	}
	fcntl(fd, F_SETFL, O_APPEND);
	f = fdopen(fd, "a");
	if (!f) {
		snprintf(err, len, "cannot open log %s: %s", path, strerror(errno));
		close(fd);
	}
	return f;
}

/* "FILE:LINE: " of the config for messages about a key (static buffer). */
static const char *cfg_where(const struct cfg *c, int line)
{
	static char buf[CFG_PATH_LEN + 24];

	snprintf(buf, sizeof(buf), line > 0 ? "%s:%d: " : "%s: ", c->file, line);
	return buf;
}

/* CPU time of this thread or process in ms (ns resolution, unlike rusage). */
static double cpu_ms(clockid_t clk)
{
	struct timespec ts;

	if (clock_gettime(clk, &ts))
		return NAN;
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* --simulate: the loop against the model (sim_run.c); nothing real is touched. */
static int simulate_main(const struct cfg *c, const struct pol_ops *pol, bool simulate,
			 const char *log_path, double duration)
{
	struct sim_run_opts o = { .sz = sizeof(o), .cfg = c, .pol = pol, .duration_s = duration };
	struct sim_run_result r;
	char err[512] = "";
	int ret;

	if (!simulate) {
		fprintf(stderr,
			"parties: %s has a [simulation] section: run it with --simulate (its "
			"workloads are models, not processes)\n",
			c->file);
		return 2;
	}
	if (!c->sim.enabled) {
		fprintf(stderr, "parties: %s: no [simulation] section: nothing to simulate\n",
			c->file);
		return 2;
	}
	if (!log_path && c->log[0])
		log_path = c->log;
	if (log_path) {
		o.log = fopen(log_path, "w");
		if (!o.log) {
			fprintf(stderr, "parties: cannot open log %s: %s\n", log_path,
				strerror(errno));
			return 2;
		}
	}
	ret = sim_run(&o, &r, err, sizeof(err));
	if (o.log && fclose(o.log) && !ret) {
		fprintf(stderr, "parties: writing %s: %s\n", log_path, strerror(errno));
		return 1;
	}
	if (ret) {
		fprintf(stderr, "parties: %s\n", err);
		return ret == -EINVAL ? 2 : 1;
	}
	fprintf(stderr,
		"parties: simulated %.1f s (seed %llu, policy %s) in %.2f s wall, %.2f s CPU: "
		"%llu requests, %llu events (%.2f M events/s), %llu intervals, %llu actions, "
		"%llu refused\n",
		r.virtual_s, (unsigned long long)c->seed, pol->name, r.wall_s, r.cpu_s,
		(unsigned long long)r.requests, (unsigned long long)r.events,
		r.cpu_s > 0 ? (double)r.events / r.cpu_s / 1e6 : 0.0,
		(unsigned long long)r.intervals, (unsigned long long)r.actions,
		(unsigned long long)r.refused);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "duration", required_argument, NULL, 'd' },
		{ "log", required_argument, NULL, 'l' },
		{ "cleanup", no_argument, NULL, 'C' },
		{ "check-config", required_argument, NULL, 'K' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "simulate", no_argument, NULL, 'S' },
		{ "seed", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ "metrics", required_argument, NULL, 'm' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	const char *cfg_path = NULL, *log_path = NULL, *metrics_addr = NULL;
	struct pmetrics *pm = NULL;
	bool dry_run = false, cleanup = false, verbose = false, check_only = false;
	bool simulate = false;
	const char *seed_arg = NULL;
	double duration = 0, loop_cpu = 0, wall0_ms, proc_cpu0;
	static struct cfg cfg;
	static struct loop loop;
	struct loop_args la = { .sz = sizeof(la) };
	struct src_ebee *eb = NULL;
	struct mach *m = NULL;
	pid_t launched[CFG_MAX_WL] = { 0 };
	static char procs[CFG_MAX_WL][INPLACE_PATH_MAX]; /* in-place workloads: their cgroup.procs */
	bool loop_ok = false, need_ebee = false;
	char err[512] = "";
	FILE *log = NULL;
	int opt, ret = 1;
	uint64_t next, end = 0;
	struct sigaction sa;

	journal_stderr_init();
	while ((opt = getopt_long(argc, argv, "c:nd:l:vhm:V", lopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			cfg_path = optarg;
			break;
		case 'n':
			dry_run = true;
			break;
		case 'd': {
			char *e;

			duration = strtod(optarg, &e);
			/* bounded: it becomes a uint64_t of ms ("inf" would not fit) */
			if (*e || e == optarg || !(duration > 0) || !(duration <= 1e9)) {
				fprintf(stderr,
					"parties: --duration: '%s' is not a number of "
					"seconds > 0 (at most 1e9)\n",
					optarg);
				return 2;
			}
			break;
		}
		case 'l':
			log_path = optarg;
			break;
		case 'C':
			cleanup = true;
			break;
		case 'K':
			cfg_path = optarg;
			check_only = true;
			break;
		case 'm':
			metrics_addr = optarg;
			break;
		case 'V':
			printf("parties %s\n", PARTIES_VERSION);
			return 0;
		case 'v':
			verbose = true;
			break;
		case 'S':
			simulate = true;
			break;
		case 's':
			seed_arg = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "parties: unexpected argument '%s' (see --help)\n", argv[optind]);
		return 2;
	}
	if (!cfg_path) {
		fprintf(stderr, "parties: no configuration: give -c FILE.ini (see --help)\n");
		return 2;
	}
	if (cfg_load_file(&cfg, cfg_path, err, sizeof(err))) {
		fprintf(stderr, "parties: %s\n", err);
		return 2;
	}
	if (seed_arg) {
		char *e;

		errno = 0;
		cfg.seed = strtoull(seed_arg, &e, 0);
		if (errno || *e || e == seed_arg || *seed_arg == '-') {
			fprintf(stderr, "parties: --seed: '%s' is not a whole number >= 0\n",
				seed_arg);
			return 2;
		}
	}
	la.pol = pol_find(cfg.policy);
	if (loop_check_policy(&cfg, la.pol, err, sizeof(err))) {
		fprintf(stderr, "parties: %s\n", err);
		return 2;
	}
	if (check_only && cfg.sim.enabled) {
		/* a simulation touches nothing real: no live checks */
		fprintf(stderr, "parties: %s: ok (simulation, %d workload(s), policy %s)\n",
			cfg_path, cfg.nwl, cfg.policy);
		return 0;
	}
	if (simulate || cfg.sim.enabled)
		return simulate_main(&cfg, la.pol, simulate, log_path, duration);
	if (dry_run && !log_path && cfg.log[0])
		fprintf(stderr, "parties: dry run: not writing the config's log %s (give --log)\n",
			cfg.log);
	if (!log_path && cfg.log[0] && !dry_run)
		log_path = cfg.log;
	/* --cleanup repairs after workloads that may be gone: only the state_dir matters */
	if (!cleanup &&
	    cfg_check_live(&cfg, log_path == cfg.log ? NULL : log_path, err, sizeof(err))) {
		fprintf(stderr, "parties: %s\n", err);
		return 2;
	}
	if (check_only) {
		fprintf(stderr, "parties: %s: ok (%d workload(s), policy %s)\n", cfg_path, cfg.nwl,
			cfg.policy);
		return 0;
	}
	if (cleanup) {
		struct act_opts o = { .sz = sizeof(o),
				      .parent = cfg.cgroup_parent,
				      .state_dir = cfg.state_dir };
		int e = act_cleanup(&o);

		if (e < 0) {
			fprintf(stderr, "parties: cleanup of cgroup parent %s failed: %s\n",
				cfg.cgroup_parent, strerror(-e));
			return 1;
		}
		fprintf(stderr, "parties: cleanup of %s: %s\n", cfg.cgroup_parent,
			e ? "repaired what an earlier instance left"
			  : "nothing was left to repair");
		return 0;
	}

	/* orphans of launched commands (setsid, double fork) become our children: stoppable */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: the loop's sleep must wake */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_hup;
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (log_path) {
		log = log_open(log_path, err, sizeof(err));
		if (!log) {
			fprintf(stderr, "parties: %s%s\n",
				log_path == cfg.log ? cfg_where(&cfg, cfg.line_of[CFG_LOG])
						    : "--log: ",
				err);
			return 2;
		}
	}

	for (int i = 0; i < cfg.nwl; i++)
		if (cfg.wl[i].source == CFG_SRC_EBEE)
			need_ebee = true;
	if (cfg.ebee == CFG_ON)
		need_ebee = true;
	if (need_ebee) {
		eb = src_ebee_lib_open(cfg.ebee_window_ms, err, sizeof(err));
		if (!eb) {
			fprintf(stderr, "parties: cannot start ebee tracing: %s\n",
				err[0] ? err : strerror(errno));
			goto out;
		}
	}

	m = mach_open(&cfg, dry_run, verbose, err, sizeof(err));
	if (!m) {
		fprintf(stderr, "parties: %s\n", err);
		goto out;
	}

	for (int i = 0; i < cfg.nwl; i++) {
		const struct cfg_workload *w = &cfg.wl[i];
		unsigned int stale = cfg.stale_intervals * cfg.interval_ms;

		if (w->find == CFG_FIND_COMMAND && dry_run) {
			/* a dry run starts nothing: there is no process to observe */
			fprintf(stderr,
				"parties: dry run: workload %s not started (would run '%s' as %s); "
				"it is not observed\n",
				w->name, w->command, w->user[0] ? w->user : "root");
			la.pid[i] = 0;
		} else if (w->find == CFG_FIND_COMMAND &&
			   (launched[i] = mach_adopt_pgrp(m, w->name)) > 0) {
			fprintf(stderr,
				"parties: workload %s: adopting pid %d, started by an earlier "
				"instance (not starting a second copy)\n",
				w->name, (int)launched[i]);
			la.pid[i] = launched[i];
		} else if (w->find == CFG_FIND_COMMAND) {
			struct ident id;

			if (ident_of(w, &id)) {
				fprintf(stderr, "parties: workload %s: user/group vanished\n",
					w->name);
				goto out;
			}
			launched[i] = launch(w->command, &id);
			if (launched[i] < 0) {
				fprintf(stderr, "parties: workload %s: cannot start '%s': %s\n",
					w->name, w->command, strerror(errno));
				goto out;
			}
			la.pid[i] = launched[i];
			if (mach_record_pgrp(m, w->name, launched[i]))
				fprintf(stderr,
					"parties: workload %s: cannot record process group %d in "
					"the state file\n",
					w->name, (int)launched[i]);
		} else if (w->find == CFG_FIND_CGROUP || w->find == CFG_FIND_UNIT) {
			/* managed in place: its first process stands for it (liveness,
			 * ebee); the actuators write its own cgroup */
			struct inplace_roots r;
			char grp[INPLACE_PATH_MAX], msg[512];

			if (inplace_roots_find(&r) ||
			    inplace_resolve(&r, w, grp, sizeof(grp), msg, sizeof(msg)) ||
			    inplace_pids(&r, grp, &la.pid[i], 1) <= 0 ||
			    inplace_procs_path(&r, grp, procs[i], sizeof(procs[i]))) {
				fprintf(stderr, "parties: workload %s: cgroup %s has no process\n",
					w->name, w->cgroup);
				goto out;
			}
		} else {
			int e = cfg_workload_pid(w, &la.pid[i]);

			if (e) {
				fprintf(stderr, "parties: workload %s: process is gone (%s)\n",
					w->name, strerror(-e));
				goto out;
			}
		}
		if (eb && la.pid[i] > 0) {
			enum ebee_latency lat = w->ebee_latency == CFG_LAT_SOJOURN
							? EBEE_LAT_SOJOURN
							: EBEE_LAT_SERVICE;
			struct src *s;

			if (procs[i][0])
				s = src_ebee_open_cgroup(eb, procs[i], w->ebee_mode, lat,
							 w->line_of[CFG_WL_EBEE_LATENCY] > 0, err,
							 sizeof(err));
			else
				s = src_ebee_open(eb, la.pid[i], w->ebee_mode, lat,
						  w->line_of[CFG_WL_EBEE_LATENCY] > 0, err,
						  sizeof(err));

			if (!s) {
				fprintf(stderr, "parties: workload %s: %s\n", w->name, err);
				goto out;
			}
			if (w->source == CFG_SRC_EBEE)
				la.src[i] = s;
			else
				la.aux[i] = s;
		}
		if (w->feed[0]) {
			struct src *s = src_client_open(w->feed, stale < 300 ? 300 : stale);

			if (!s) {
				fprintf(stderr, "parties: workload %s: feed %s: %s\n", w->name,
					w->feed, strerror(errno));
				goto out;
			}
			if (w->source == CFG_SRC_CLIENT)
				la.src[i] = s;
			else
				la.aux[i] = s;
		}
	}

	mach_stop_unadopted(m);
	la.cfg = &cfg;
	la.mops = &mach_ops;
	la.mctx = m;
	la.log = log;
	if (loop_init(&loop, &la, err, sizeof(err))) {
		fprintf(stderr, "parties: %s\n", err);
		goto out;
	}
	loop_ok = true;
	if (!loop_alive_count(&loop)) {
		fprintf(stderr, "parties: dry run: no workload is running, nothing to observe\n");
		goto out;
	}
	if (metrics_addr) {
		pm = pmetrics_start(metrics_addr, err, sizeof(err));
		if (!pm) {
			fprintf(stderr, "parties: --metrics: %s\n", err);
			ret = 2;
			goto out;
		}
		fprintf(stderr, "parties: metrics at http://%s/metrics (port %d)\n", metrics_addr,
			pmetrics_port(pm));
	}
	fprintf(stderr, "parties: managing %d workload(s) with policy %s every %u ms%s\n", cfg.nwl,
		cfg.policy, cfg.interval_ms, dry_run ? " (dry run)" : "");
	svc_ready(&loop, cfg.policy);

	wall0_ms = (double)loop_now_ms();
	proc_cpu0 = cpu_ms(CLOCK_PROCESS_CPUTIME_ID);
	next = loop_now_ms();
	if (duration > 0)
		end = next + (uint64_t)(duration * 1000.0);
	while (!stop_sig) {
		double c0 = cpu_ms(CLOCK_THREAD_CPUTIME_ID), w0 = cpu_ms(CLOCK_MONOTONIC);
		uint64_t now = loop_now_ms();
		struct timespec ts;

		if (end && now >= end)
			break;
		loop_step(&loop, now);
		loop_cpu += cpu_ms(CLOCK_THREAD_CPUTIME_ID) - c0;
		pmetrics_update(pm, &loop, (cpu_ms(CLOCK_MONOTONIC) - w0) / 1e3);
		svc_interval(&loop);
		if (!loop_alive_count(&loop)) {
			fprintf(stderr, "parties: every workload has exited; stopping\n");
			break;
		}
		/* orphans reparented to us (subreaper) */
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		next += cfg.interval_ms;
		now = loop_now_ms();
		if (next < now)
			next = now; /* overran: do not try to catch up */
		if (end && next > end)
			next = end;
		ts.tv_sec = (time_t)(next / 1000);
		ts.tv_nsec = (long)(next % 1000) * 1000000L;
		/* a reload between intervals keeps the interval's rhythm */
		for (;;) {
			if (hup) {
				hup = 0;
				reload(cfg_path, &cfg, &loop, &log,
				       log_path == cfg.log ? NULL : log_path, dry_run);
			}
			if (stop_sig ||
			    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != EINTR)
				break;
		}
	}
	ret = 0;
	{
		double wall = (double)loop_now_ms() - wall0_ms;
		double proc = cpu_ms(CLOCK_PROCESS_CPUTIME_ID) - proc_cpu0;
		uint64_t n = loop.stats.intervals;

		fprintf(
		    stderr,
		    "parties: %s after %.1f s: %llu intervals, %llu actions, %llu refused, "
		    "%llu failed, %llu exits; controller CPU %.1f us/interval (%.3f%% of a "
		    "core), whole process %.3f%% of a core (includes ebee's consumer)\n",
		    stop_sig ? "stopped by signal" : "done", wall / 1000.0, (unsigned long long)n,
		    (unsigned long long)loop.stats.actions, (unsigned long long)loop.stats.rejected,
		    (unsigned long long)loop.stats.failed, (unsigned long long)loop.stats.exits,
		    n ? loop_cpu * 1000.0 / (double)n : 0.0,
		    wall > 0 ? 100.0 * loop_cpu / wall : 0.0, wall > 0 ? 100.0 * proc / wall : 0.0);
		if (log) {
			struct log_json j;

			log_json_begin(&j, log);
			log_json_bool(&j, "summary", true);
			log_json_str(&j, "end", stop_sig ? "signal" : "done");
			log_json_num(&j, "wall_s", wall / 1000.0, 3);
			log_json_int(&j, "intervals", (long long)n);
			log_json_int(&j, "actions", (long long)loop.stats.actions);
			log_json_int(&j, "refused", (long long)loop.stats.rejected);
			log_json_int(&j, "failed", (long long)loop.stats.failed);
			log_json_int(&j, "exits", (long long)loop.stats.exits);
			log_json_num(&j, "loop_cpu_ms", loop_cpu, 3);
			log_json_num(&j, "loop_cpu_us_per_interval",
				     n ? loop_cpu * 1000.0 / (double)n : NAN, 1);
			log_json_num(&j, "loop_cpu_pct", wall > 0 ? 100.0 * loop_cpu / wall : NAN,
				     4);
			log_json_num(&j, "process_cpu_pct", wall > 0 ? 100.0 * proc / wall : NAN,
				     4);
			log_json_end(&j);
		}
	}
out:
	svc_stopping();
	pmetrics_stop(pm); /* before the loop state it reads */
	if (loop_ok) {
		loop_fini(&loop);
	} else {
		/* start-up failed: the sources opened so far are still ours (before the library) */
		for (int i = 0; i < cfg.nwl; i++) {
			src_close(la.src[i]);
			src_close(la.aux[i]);
		}
	}
	if (m && mach_restore(m))
		fprintf(stderr, "parties: restoring the machine was incomplete (see above); "
				"run parties --cleanup -c FILE\n");
	mach_close(m);
	src_ebee_lib_close(eb);
	for (int i = 0; i < cfg.nwl; i++)
		if (launched[i] > 0)
			stop_child(launched[i]);
	stop_descendants();
	if (log)
		fclose(log);
	return ret;
}
