// SPDX-License-Identifier: MIT
/*
 * parties: the daemon's run. Start-up in order (signals, the log, ebee, the
 * actuators, each workload and its sources, the loop), then every interval
 * one loop_step() (observe, decide, validate, apply, reflect, log: loop.h),
 * and the promise that whatever happens (the end of --duration, SIGINT,
 * SIGTERM, a fatal error) every allocation is put back before it returns.
 * After SIGKILL, the next start (same cgroup_parent) repairs the machine
 * first; `parties --cleanup -c FILE` does only that.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon.h"
#include "inplace.h"
#include "launch.h"
#include "log.h"
#include "loop.h"
#include "machine.h"
#include "pmetrics.h"
#include "reload.h"
#include "source.h"
#include "svc.h"

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

struct daemon {
	const struct args *a;
	struct cfg *cfg;
	FILE *log; /* a->log_path, or NULL */
	struct src_ebee *eb;
	struct mach *m;
	struct loop_args la;
	struct loop loop;
	bool loop_ok; /* loop_init() succeeded: the loop owns the sources */
	struct pmetrics *pm;
	struct launched launched[CFG_MAX_WL];
	char cgdir[CFG_MAX_WL][INPLACE_PATH_MAX]; /* in-place workloads: their cgroup directory */
	double loop_cpu;			  /* ms of CPU spent in loop_step() */
	double wall0_ms, proc_cpu0;		  /* when the first interval began */
};

/* SIGINT and SIGTERM end the run, SIGHUP reloads; orphans of launched
 * commands (setsid, double fork) become our children, so they can be
 * stopped. */
static void signals_init(void)
{
	struct sigaction sa;

	prctl(PR_SET_CHILD_SUBREAPER, 1);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: the loop's sleep must wake */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_hup;
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
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

/* --log, or NULL when the log is the config's (a reload may move that). */
static const char *log_cli(const struct daemon *d)
{
	return d->a->log_path == d->cfg->log ? NULL : d->a->log_path;
}

/* The decision log, before anything is started. 0, or -1 said on stderr. */
static int open_log(struct daemon *d)
{
	char err[512];

	if (!d->a->log_path)
		return 0;
	d->log = log_open(d->a->log_path, err, sizeof(err));
	if (!d->log) {
		fprintf(stderr, "parties: %s%s\n",
			log_cli(d) ? "--log: " : cfg_where(d->cfg, d->cfg->line_of[CFG_LOG]), err);
		return -1;
	}
	return 0;
}

/* SIGHUP: re-read the configuration (validated first, see reload.h) and
 * reopen the log (logrotate renames it, then sends SIGHUP). */
static void reload(struct daemon *d)
{
	static struct cfg next;
	struct cfg *cfg = d->cfg;
	char msg[512], old_log[sizeof(cfg->log)];
	const char *path;

	memcpy(old_log, cfg->log, sizeof(old_log));
	if (reload_check(d->a->cfg_path, cfg, &next, msg, sizeof(msg)) ||
	    reload_apply(cfg, &next, &d->loop, msg, sizeof(msg))) {
		fprintf(stderr, "parties: reload failed, keeping the running configuration: %s\n",
			msg);
	} else {
		fprintf(stderr, "parties: reloaded %s: %s\n", d->a->cfg_path,
			msg[0] ? msg : "nothing changed");
	}
	/* The same rules as at start-up: a dry run writes only --log, the file
	 * passes start-up's check (cfg_check_log(): ours, in a directory only
	 * root may write) and is opened as log_open() opens it (no symlink,
	 * 0640, regular). */
	path = log_cli(d) ? log_cli(d) : (cfg->log[0] && !d->a->dry_run ? cfg->log : NULL);
	if (path) {
		FILE *f = NULL;

		if (!cfg_check_log(cfg, log_cli(d), msg, sizeof(msg)))
			f = log_open(path, msg, sizeof(msg));
		if (!f) {
			fprintf(stderr, "parties: reload: %s; still writing the old log\n", msg);
			/* the configuration names the file really written */
			memcpy(cfg->log, old_log, sizeof(cfg->log));
			return;
		}
		if (d->log)
			fclose(d->log);
		d->log = f;
	} else if (d->log) {
		fclose(d->log);
		d->log = NULL;
	}
	d->loop.log = d->log;
}

/* Workload i's process into la.pid[i]: started (or adopted from a killed
 * instance) when it names a command, found otherwise; 0 in a dry run, which
 * starts nothing. 0, or -1 said on stderr. */
static int start_workload(struct daemon *d, int i)
{
	const struct cfg_workload *w = &d->cfg->wl[i];
	pid_t *pid = &d->la.pid[i];

	if (w->find == CFG_FIND_COMMAND && d->a->dry_run) {
		/* a dry run starts nothing: there is no process to observe */
		fprintf(stderr,
			"parties: dry run: workload %s not started (would run '%s' as %s); "
			"it is not observed\n",
			w->name, w->command, w->user[0] ? w->user : "root");
		*pid = 0;
	} else if (w->find == CFG_FIND_COMMAND && (*pid = mach_adopt_pgrp(d->m, w->name)) > 0) {
		fprintf(stderr,
			"parties: workload %s: adopting pid %d, started by an earlier "
			"instance (not starting a second copy)\n",
			w->name, (int)*pid);
		launch_adopted(&d->launched[i], *pid);
	} else if (w->find == CFG_FIND_COMMAND) {
		char msg[CFG_CMD_LEN + 640];

		if (launch_command(w, d->m, &d->launched[i], msg, sizeof(msg))) {
			fprintf(stderr, "parties: workload %s: %s\n", w->name, msg);
			return -1;
		}
		*pid = d->launched[i].pid;
	} else if (w->find == CFG_FIND_CGROUP || w->find == CFG_FIND_UNIT) {
		/* managed in place: its first process stands for it (liveness,
		 * ebee); the actuators write its own cgroup */
		char grp[INPLACE_PATH_MAX], msg[512];
		struct cgfs r;

		if (cgfs_find(&r, NULL, NULL) ||
		    inplace_resolve(&r, w, grp, sizeof(grp), msg, sizeof(msg)) ||
		    inplace_pids(&r, grp, pid, 1) <= 0 ||
		    inplace_dir(&r, grp, d->cgdir[i], sizeof(d->cgdir[i]))) {
			fprintf(stderr, "parties: workload %s: cgroup %s has no process\n", w->name,
				w->cgroup);
			return -1;
		}
	} else {
		int e = cfg_workload_pid(w, pid);

		if (e) {
			fprintf(stderr, "parties: workload %s: process is gone (%s)\n", w->name,
				strerror(-e));
			return -1;
		}
	}
	return 0;
}

/*
 * Everything before the first interval, in order: ebee (when a workload
 * needs it), the actuators, each workload and its sources, the loop (which
 * adds every workload to the machine), --metrics. 0, or the exit status with
 * the reason on stderr; what was started is stopped by stop().
 */
static int start(struct daemon *d)
{
	const struct cfg *c = d->cfg;
	char err[1024];

	if (src_open_lib(c, &d->eb, err, sizeof(err))) {
		fprintf(stderr, "parties: cannot start ebee tracing: %s\n", err);
		return 1;
	}
	d->m = mach_open(c, d->a->dry_run, d->a->verbose, err, sizeof(err));
	if (!d->m) {
		fprintf(stderr, "parties: %s\n", err);
		return 1;
	}
	for (int i = 0; i < c->nwl; i++) {
		if (start_workload(d, i))
			return 1;
		if (src_open_workload(c, i, d->eb, d->la.pid[i], d->cgdir[i], &d->la.src[i],
				      &d->la.aux[i], err, sizeof(err))) {
			fprintf(stderr, "parties: %s\n", err);
			return 1;
		}
	}
	mach_stop_unadopted(d->m);
	d->la.cfg = c;
	d->la.mops = &mach_ops;
	d->la.mctx = d->m;
	d->la.log = d->log;
	if (loop_init(&d->loop, &d->la, err, sizeof(err))) {
		fprintf(stderr, "parties: %s\n", err);
		return 1;
	}
	d->loop_ok = true;
	if (!loop_alive_count(&d->loop)) {
		fprintf(stderr, "parties: dry run: no workload is running, nothing to observe\n");
		return 1;
	}
	if (d->a->metrics_addr) {
		d->pm = pmetrics_start(d->a->metrics_addr, err, sizeof(err));
		if (!d->pm) {
			fprintf(stderr, "parties: --metrics: %s\n", err);
			return 2;
		}
		fprintf(stderr, "parties: metrics at http://%s/metrics (port %d)\n",
			d->a->metrics_addr, pmetrics_port(d->pm));
	}
	loop_print_cores(&d->loop, stderr);
	fprintf(stderr, "parties: managing %d workload(s) with policy %s every %u ms%s\n", c->nwl,
		c->policy, c->interval_ms, d->a->dry_run ? " (dry run)" : "");
	svc_ready(&d->loop, c->policy);
	return 0;
}

/* One interval: loop_step() (observe, decide, validate, apply, reflect,
 * log), what it cost, the metrics, the watchdog. */
static void interval(struct daemon *d, uint64_t now)
{
	double c0 = cpu_ms(CLOCK_THREAD_CPUTIME_ID), w0 = cpu_ms(CLOCK_MONOTONIC);

	loop_step(&d->loop, now);
	d->loop_cpu += cpu_ms(CLOCK_THREAD_CPUTIME_ID) - c0;
	pmetrics_update(d->pm, &d->loop, (cpu_ms(CLOCK_MONOTONIC) - w0) / 1e3);
	svc_interval(&d->loop);
}

/* Sleep until next (monotonic ms). A reload between intervals keeps the
 * interval's rhythm: the sleep goes on to the same deadline. */
static void sleep_until(struct daemon *d, uint64_t next)
{
	struct timespec ts = { .tv_sec = (time_t)(next / 1000),
			       .tv_nsec = (long)(next % 1000) * 1000000L };

	for (;;) {
		if (hup) {
			hup = 0;
			reload(d);
		}
		if (stop_sig || clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != EINTR)
			break;
	}
}

/* Every interval until the end of --duration, a signal, or every workload
 * gone. An interval that overran is not caught up. */
static void run_intervals(struct daemon *d)
{
	uint64_t next, end = 0;

	d->wall0_ms = (double)loop_now_ms();
	d->proc_cpu0 = cpu_ms(CLOCK_PROCESS_CPUTIME_ID);
	next = loop_now_ms();
	if (d->a->duration > 0)
		end = next + (uint64_t)(d->a->duration * 1000.0);
	while (!stop_sig) {
		uint64_t now = loop_now_ms();

		if (end && now >= end)
			break;
		interval(d, now);
		if (!loop_alive_count(&d->loop)) {
			fprintf(stderr, "parties: every workload has exited; stopping\n");
			break;
		}
		/* orphans reparented to us (subreaper) */
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		next += d->cfg->interval_ms;
		now = loop_now_ms();
		if (next < now)
			next = now; /* overran: do not try to catch up */
		if (end && next > end)
			next = end;
		sleep_until(d, next);
	}
}

/* NAN (nothing to divide by) as 0, for the line on stderr. */
static double or0(double v)
{
	return isnan(v) ? 0.0 : v;
}

/* The run's figures, once: a line on stderr and the decision log's last
 * record (controller/README.md, "The log"). */
static void summary(const struct daemon *d)
{
	const struct loop_stats *s = &d->loop.stats;
	const char *end = stop_sig ? "signal" : "done";
	double wall = (double)loop_now_ms() - d->wall0_ms;
	double proc = cpu_ms(CLOCK_PROCESS_CPUTIME_ID) - d->proc_cpu0;
	uint64_t n = s->intervals;
	double per_interval = n ? d->loop_cpu * 1000.0 / (double)n : NAN;
	double loop_pct = wall > 0 ? 100.0 * d->loop_cpu / wall : NAN;
	double proc_pct = wall > 0 ? 100.0 * proc / wall : NAN;
	struct log_json j;

	fprintf(stderr,
		"parties: %s after %.1f s: %llu intervals, %llu actions, %llu refused, "
		"%llu failed, %llu exits; controller CPU %.1f us/interval (%.3f%% of a "
		"core), whole process %.3f%% of a core (includes ebee's consumer)\n",
		stop_sig ? "stopped by signal" : "done", wall / 1000.0, (unsigned long long)n,
		(unsigned long long)s->actions, (unsigned long long)s->rejected,
		(unsigned long long)s->failed, (unsigned long long)s->exits, or0(per_interval),
		or0(loop_pct), or0(proc_pct));
	if (!d->log)
		return;
	log_json_begin(&j, d->log);
	log_json_bool(&j, "summary", true);
	log_json_str(&j, "end", end);
	log_json_num(&j, "wall_s", wall / 1000.0, 3);
	log_json_int(&j, "intervals", (long long)n);
	log_json_int(&j, "actions", (long long)s->actions);
	log_json_int(&j, "refused", (long long)s->rejected);
	log_json_int(&j, "failed", (long long)s->failed);
	log_json_int(&j, "exits", (long long)s->exits);
	log_json_num(&j, "loop_cpu_ms", d->loop_cpu, 3);
	log_json_num(&j, "loop_cpu_us_per_interval", per_interval, 1);
	log_json_num(&j, "loop_cpu_pct", loop_pct, 4);
	log_json_num(&j, "process_cpu_pct", proc_pct, 4);
	log_json_end(&j);
}

/* Whatever start() got to, undone: the machine restored, launched commands
 * and everything below us stopped, the log closed. */
static void stop(struct daemon *d)
{
	svc_stopping();
	pmetrics_stop(d->pm); /* before the loop state it reads */
	if (d->loop_ok) {
		loop_fini(&d->loop);
	} else {
		/* start-up failed: the sources opened so far are still ours (before the library) */
		for (int i = 0; i < d->cfg->nwl; i++) {
			src_close(d->la.src[i]);
			src_close(d->la.aux[i]);
		}
	}
	/* the commands (and everything they started) before the machine is put
	 * back, while their cgroups are still known */
	for (int i = 0; i < d->cfg->nwl; i++)
		launch_stop(d->m, d->cfg->wl[i].name, &d->launched[i]);
	launch_stop_descendants();
	if (d->m && mach_restore(d->m))
		fprintf(stderr, "parties: restoring the machine was incomplete (see above); "
				"run parties --cleanup -c FILE\n");
	mach_close(d->m);
	src_ebee_lib_close(d->eb);
	if (d->log)
		fclose(d->log);
}

int daemon_run(const struct args *a, struct cfg *cfg, const struct pol_ops *pol)
{
	static struct daemon d;
	int ret;

	memset(&d, 0, sizeof(d));
	for (int i = 0; i < CFG_MAX_WL; i++)
		d.launched[i].pidfd = -1;
	d.a = a;
	d.cfg = cfg;
	d.la = (struct loop_args){ .sz = sizeof(d.la), .pol = pol };
	signals_init();
	if (open_log(&d))
		return 2;
	ret = start(&d);
	if (!ret) {
		run_intervals(&d);
		summary(&d);
	}
	stop(&d);
	return ret;
}
