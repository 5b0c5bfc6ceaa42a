// SPDX-License-Identifier: MIT
/*
 * parties: the daemon. Arguments, signals, start-up order and the promise
 * that whatever happens (normal end, SIGINT, SIGTERM, a fatal error) every
 * allocation is put back before exit. After SIGKILL, the next start (same
 * cgroup_parent) repairs the machine first; `parties --cleanup -c FILE`
 * does only that.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "actuator.h"
#include "config.h"
#include "log.h"
#include "loop.h"
#include "machine.h"
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
static void reload(const char *cfg_path, struct cfg *cfg, struct loop *l, FILE **log,
		   const char *log_cli)
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
	path = log_cli ? log_cli : (cfg->log[0] ? cfg->log : NULL);
	if (path) {
		FILE *f = fopen(path, "a");

		if (!f) {
			fprintf(stderr,
				"parties: cannot reopen log %s: %s; still writing the old one\n",
				path, strerror(errno));
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
		"\n"
		"Closed-loop resource manager for co-located latency-critical services. Every\n"
		"interval it reads each workload's p99 (from ebee, in-process eBPF tracing, or a\n"
		"client feed file), asks the policy for a decision, checks it and applies it to\n"
		"the workloads' cgroups (cpuset cores, cpu quota) and cpufreq limits.\n"
		"\n"
		"  -c, --config FILE    INI file; every key is documented in configs/example.ini\n"
		"  -n, --dry-run        change nothing: log what would be written (tracing still\n"
		"                       needs root when a workload uses source = ebee)\n"
		"  -d, --duration S     stop after S seconds (default: run until SIGINT/SIGTERM)\n"
		"  -l, --log FILE       append one JSON line per interval here (overrides\n"
		"                       [controller] log); a summary line ends the run\n"
		"      --cleanup        only repair what a killed daemon with this config's\n"
		"                       cgroup_parent left behind, then exit\n"
		"  -m, --metrics ADDR   serve Prometheus metrics at http://ADDR/metrics\n"
		"                       (ADDR: HOST:PORT, :PORT for all interfaces, [V6]:PORT)\n"
		"  -v, --verbose        log every actuator write to stderr\n"
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

static pid_t launch(const char *cmd)
{
	pid_t pid = fork();

	if (pid == 0) {
		char buf[CFG_CMD_LEN + 8];
		sigset_t none;

		setpgid(0, 0);
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

/* Stop a launched command and its process group: SIGTERM, then SIGKILL. */
static void stop_child(pid_t pid)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	kill(-pid, SIGTERM);
	kill(pid, SIGTERM);
	for (int i = 0; i < 150; i++) {
		pid_t r = waitpid(pid, NULL, WNOHANG);

		if (r == pid || (r < 0 && errno == ECHILD))
			goto group;
		nanosleep(&ts, NULL);
	}
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
group:
	kill(-pid, SIGKILL); /* stragglers of the group */
}

/* CPU time of this thread or process in ms (ns resolution, unlike rusage). */
static double cpu_ms(clockid_t clk)
{
	struct timespec ts;

	if (clock_gettime(clk, &ts))
		return NAN;
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "duration", required_argument, NULL, 'd' },
		{ "log", required_argument, NULL, 'l' },
		{ "cleanup", no_argument, NULL, 'C' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "metrics", required_argument, NULL, 'm' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	const char *cfg_path = NULL, *log_path = NULL, *metrics_addr = NULL;
	struct pmetrics *pm = NULL;
	bool dry_run = false, cleanup = false, verbose = false;
	double duration = 0, loop_cpu = 0, wall0_ms, proc_cpu0;
	static struct cfg cfg;
	static struct loop loop;
	struct loop_args la = { .sz = sizeof(la) };
	struct src_ebee *eb = NULL;
	struct mach *m = NULL;
	pid_t launched[CFG_MAX_WL] = { 0 };
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
		case 'm':
			metrics_addr = optarg;
			break;
		case 'V':
			printf("parties %s\n", PARTIES_VERSION);
			return 0;
		case 'v':
			verbose = true;
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
	la.pol = pol_find(cfg.policy);
	if (loop_check_policy(&cfg, la.pol, err, sizeof(err))) {
		fprintf(stderr, "parties: %s\n", err);
		return 2;
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
			e ? "repaired leftovers" : "nothing was left");
		return 0;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: the loop's sleep must wake */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_hup;
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (!log_path && cfg.log[0])
		log_path = cfg.log;
	if (log_path) {
		log = fopen(log_path, "a");
		if (!log) {
			fprintf(stderr, "parties: cannot open log %s: %s\n", log_path,
				strerror(errno));
			return 2;
		}
	}

	for (int i = 0; i < cfg.nwl; i++)
		if (cfg.wl[i].source == CFG_SRC_EBEE)
			need_ebee = true;
	if (cfg.ebee == CFG_ON)
		need_ebee = true;
	if (need_ebee) {
		unsigned int win = cfg.ebee_window_ms ? cfg.ebee_window_ms : 2 * cfg.interval_ms;

		eb = src_ebee_lib_open(win, err, sizeof(err));
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

		if (w->find == CFG_FIND_COMMAND) {
			launched[i] = launch(w->command);
			if (launched[i] < 0) {
				fprintf(stderr, "parties: workload %s: cannot start '%s': %s\n",
					w->name, w->command, strerror(errno));
				goto out;
			}
			la.pid[i] = launched[i];
		} else {
			int e = cfg_workload_pid(w, &la.pid[i]);

			if (e) {
				fprintf(stderr, "parties: workload %s: process is gone (%s)\n",
					w->name, strerror(-e));
				goto out;
			}
		}
		if (eb) {
			struct src *s =
			    src_ebee_open(eb, la.pid[i], w->ebee_mode, err, sizeof(err));

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

	la.cfg = &cfg;
	la.mops = &mach_ops;
	la.mctx = m;
	la.log = log;
	if (loop_init(&loop, &la, err, sizeof(err))) {
		fprintf(stderr, "parties: %s\n", err);
		goto out;
	}
	loop_ok = true;
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
				       log_path == cfg.log ? NULL : log_path);
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
	if (log)
		fclose(log);
	return ret;
}
