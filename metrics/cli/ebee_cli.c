// SPDX-License-Identifier: MIT
/*
 * The ebee command: trace processes and print their request latency and
 * throughput, as a summary, a time series (--interval) or a live view (top).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ebee.h"

#define MAX_PIDS 64

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	stop_flag = 1;
}

struct cli {
	pid_t pids[MAX_PIDS];
	int npids;
	double duration_s; /* 0: until SIGINT */
	long interval_ms;  /* 0: summary only (trace); 1000 default for top */
	enum ebee_mode mode;
	int json;
	int verbose;
	int top;
	int all; /* --all: pid 1 asked for explicitly */
	struct ebee_opts eo;
};

/*
 * Size caps. The ring buffer is locked kernel memory that the consumer drains
 * continuously: at 32 bytes a record (24 + the ring's 8-byte header), 64 MiB
 * holds two million records, far more than any burst between two polls,
 * while 1 GiB was accepted and took 2.1 GB. A window entry costs ~32 bytes
 * (two ring slots and a B+tree key in half-full leaves at worst); 10 million
 * latencies (~320 MB) is more than a minute and a half at 100k requests/s.
 */
#define RINGBUF_MAX (64L << 20)
#define WINDOW_MAX  10000000L

/* PF_KTHREAD in the flags field of /proc/PID/stat */
#define PF_KTHREAD 0x00200000UL

static bool kernel_thread(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long flags = 0;
	int ppid = 0;
	FILE *f;

	if (pid == 2)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	if (!p || !(p = strrchr(buf, ')')) ||
	    sscanf(p + 1, " %*c %d %*d %*d %*d %*d %lu", &ppid, &flags) != 2)
		return false;
	return (flags & PF_KTHREAD) || ppid == 2;
}

/* stdout went somewhere that refuses it (a full disk, a closed pipe): say so, exit 1. */
static int output_failed(void)
{
	if (fflush(stdout) != EOF && !ferror(stdout))
		return 0;
	fprintf(stderr, "ebee: cannot write the output: %s\n", strerror(errno ? errno : EIO));
	return 1;
}

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "Usage: ebee trace --pid PID [--pid PID ...] [options]\n"
	    "       ebee top   --pid PID [--pid PID ...] [options]\n"
	    "\n"
	    "Observe the server-side request latency and throughput of running processes\n"
	    "from eBPF events alone (socket tracepoints, or syscall tracepoints on kernels\n"
	    "without them; uprobes on libgrpc for gRPC). Needs root and kernel BTF; the\n"
	    "syscall path also needs tracefs.\n"
	    "Each PID is traced with every process it has forked or forks later.\n"
	    "\n"
	    "  trace   trace until --duration ends, SIGINT, or every traced process exits,\n"
	    "          then print a summary per pid (with --interval, also every interval)\n"
	    "  top     live view, refreshed every --interval (default 1000 ms)\n"
	    "\n"
	    "Options:\n"
	    "  -p, --pid PID          process to trace (repeatable, up to %d); not a kernel\n"
	    "                         thread; pid 1 (every process) needs --all\n"
	    "      --all              trace pid 1 and so every process on the host (warns)\n"
	    "  -d, --duration S       stop after S seconds (decimals allowed; default: SIGINT)\n"
	    "  -i, --interval MS      print every MS milliseconds\n"
	    "  -m, --mode MODE        auto (default), conn (accept..close), io (read..write),\n"
	    "                         grpc (gRPC C-core server streams, multiplexed on one\n"
	    "                         connection; the process must map libgrpc). auto picks\n"
	    "                         grpc for a process whose libgrpc serves streams\n"
	    "      --path PATH        auto (default: socket if the kernel has the socket\n"
	    "                         tracepoints, else syscall), socket or syscall\n"
	    "  -j, --json             one JSON object per pid per line, latencies in ns:\n"
	    "                         pid, mode, requests, rps, latest_ns, avg_ns, p50_ns,\n"
	    "                         p90_ns, p99_ns, p999_ns (service latency), sojourn_avg_ns,\n"
	    "                         sojourn_p50_ns, sojourn_p90_ns, sojourn_p99_ns,\n"
	    "                         sojourn_p999_ns (null on the syscall path), dropped,\n"
	    "                         probes, window, exited, path\n"
	    "      --ringbuf-size B   BPF ring buffer bytes, a power of two, 4096 to 67108864\n"
	    "                         (default 131072; locked kernel memory)\n"
	    "      --window N         latencies kept per pid for the statistics, at most\n"
	    "                         10000000 (default 100000; ~32 bytes each)\n"
	    "      --window-age MS    also forget latencies older than MS (default: none)\n"
	    "  -v, --verbose          log mode choices and probe changes to stderr\n"
	    "  -h, --help             this text\n"
	    "\n"
	    "requests counts every request completed while tracing; rps, latencies and\n"
	    "percentiles are over the window. Service latency runs from the server's first\n"
	    "read (conn: the connection's first read or write) to the end of the response;\n"
	    "sojourn latency from the request's arrival at the server (its first bytes; conn:\n"
	    "the TCP handshake) to the same end, so it includes queueing before the server\n"
	    "reads. Exit status: 0, or 1 with a one-line reason.\n",
	    MAX_PIDS);
}

static int die(const char *fmt, const char *arg)
{
	fprintf(stderr, "ebee: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see ebee --help)\n");
	return 1;
}

static int parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static void log_cb(enum ebee_log_level lvl, const char *msg, void *ctx)
{
	fprintf(stderr, "%s\n", msg);
}

static int parse_args(int argc, char **argv, struct cli *c)
{
	static const struct option lo[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "duration", required_argument, NULL, 'd' },
		{ "interval", required_argument, NULL, 'i' },
		{ "mode", required_argument, NULL, 'm' },
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "ringbuf-size", required_argument, NULL, 'R' },
		{ "window", required_argument, NULL, 'W' },
		{ "window-age", required_argument, NULL, 'A' },
		{ "path", required_argument, NULL, 'P' },
		{ "all", no_argument, NULL, 'L' },
		{},
	};
	long v;
	int o;

	opterr = 0;
	while ((o = getopt_long(argc, argv, ":p:d:i:m:jvh", lo, NULL)) != -1) {
		switch (o) {
		case 'p':
			if (parse_long(optarg, 1, INT_MAX, &v))
				return die("bad pid '%s'", optarg);
			if (c->npids == MAX_PIDS)
				return die("too many pids (at most 64): '%s'", optarg);
			c->pids[c->npids++] = v;
			break;
		case 'd': {
			char *end;

			errno = 0;
			c->duration_s = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(c->duration_s > 0) ||
			    !isfinite(c->duration_s))
				return die("bad duration '%s' (seconds > 0)", optarg);
			break;
		}
		case 'i':
			if (parse_long(optarg, 1, 86400000, &v))
				return die("bad interval '%s' (milliseconds >= 1)", optarg);
			c->interval_ms = v;
			break;
		case 'm':
			if (ebee_mode_parse(optarg, &c->mode))
				return die("bad mode '%s' (auto, conn, io or grpc)", optarg);
			break;
		case 'j':
			c->json = 1;
			break;
		case 'v':
			c->verbose = 1;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'R':
			if (parse_long(optarg, 4096, RINGBUF_MAX, &v) || (v & (v - 1)))
				return die("bad ring buffer size '%s' (a power of two, 4096 to at "
					   "most 67108864: locked kernel memory, and 64 MiB holds "
					   "two million records)",
					   optarg);
			c->eo.ringbuf_size = v;
			break;
		case 'W':
			if (parse_long(optarg, 1, WINDOW_MAX, &v))
				return die(
				    "bad window length '%s' (1 to at most 10000000 latencies, "
				    "~32 bytes each)",
				    optarg);
			c->eo.window_len = v;
			break;
		case 'A':
			if (parse_long(optarg, 1, 86400000, &v))
				return die("bad window age '%s' (milliseconds)", optarg);
			c->eo.window_age_ns = (uint64_t)v * 1000000ull;
			break;
		case 'P':
			if (ebee_path_parse(optarg, &c->eo.path))
				return die("bad path '%s' (auto, socket or syscall)", optarg);
			break;
		case 'L':
			c->all = 1;
			break;
		case ':':
			return die("option '%s' needs a value", argv[optind - 1]);
		default:
			return die("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return die("unexpected argument '%s'", argv[optind]);
	if (c->all) {
		bool have = false;

		for (int i = 0; i < c->npids; i++)
			have |= c->pids[i] == 1;
		if (!have && c->npids < MAX_PIDS)
			c->pids[c->npids++] = 1;
	}
	for (int i = 0; i < c->npids; i++) {
		if (c->pids[i] == 1 && !c->all)
			return die("%spid 1 is init: tracing it traces every process on the host; "
				   "give --all if that is what you mean",
				   "");
		if (kernel_thread(c->pids[i])) {
			fprintf(stderr,
				"ebee: pid %d is a kernel thread: it makes no system calls to "
				"trace (see ebee --help)\n",
				c->pids[i]);
			return 1;
		}
	}
	if (c->all)
		fprintf(stderr, "ebee: warning: --all: tracing pid 1 and its descendants, i.e. "
				"every process on the host\n");
	if (!c->npids)
		return die("%sno --pid given", "");
	return 0;
}

struct row {
	pid_t pid;
	int err;
	struct ebee_stats st;
	double rps, avg, p[4];
	double soj_avg, soj_p[4]; /* sojourn latency */
	uint64_t latest;
	int have_rps, have_lat, have_soj;
};

static const double pcts[4] = { 50, 90, 99, 99.9 };
static enum ebee_path path_in_use;

static void collect(struct ebee *eb, pid_t pid, struct row *r)
{
	memset(r, 0, sizeof(*r));
	r->pid = pid;
	r->st.sz = sizeof(r->st);
	r->err = ebee_get_stats(eb, pid, &r->st);
	if (r->err)
		return;
	r->have_rps = !ebee_get_rps(eb, pid, &r->rps);
	r->have_lat = !ebee_get_latest_latency(eb, pid, &r->latest) &&
		      !ebee_get_average_latency(eb, pid, &r->avg);
	for (int i = 0; i < 4 && r->have_lat; i++)
		if (ebee_get_latency_percentile(eb, pid, pcts[i], &r->p[i]))
			r->have_lat = 0;
	r->have_soj = !ebee_get_average_latency_of(eb, pid, EBEE_LAT_SOJOURN, &r->soj_avg);
	for (int i = 0; i < 4 && r->have_soj; i++)
		if (ebee_get_latency_percentile_of(eb, pid, EBEE_LAT_SOJOURN, pcts[i],
						   &r->soj_p[i]))
			r->have_soj = 0;
}

static void print_json(const struct row *r)
{
	char probes[96];

	printf("{\"pid\":%d,\"mode\":\"%s\",\"requests\":%llu,", r->pid, ebee_mode_str(r->st.mode),
	       (unsigned long long)r->st.requests);
	if (r->have_rps)
		printf("\"rps\":%.1f,", r->rps);
	else
		printf("\"rps\":0,");
	if (r->have_lat)
		printf("\"latest_ns\":%llu,\"avg_ns\":%.0f,\"p50_ns\":%.0f,\"p90_ns\":%.0f,"
		       "\"p99_ns\":%.0f,\"p999_ns\":%.0f,",
		       (unsigned long long)r->latest, r->avg, r->p[0], r->p[1], r->p[2], r->p[3]);
	else
		printf("\"latest_ns\":null,\"avg_ns\":null,\"p50_ns\":null,\"p90_ns\":null,"
		       "\"p99_ns\":null,\"p999_ns\":null,");
	if (r->have_soj)
		printf("\"sojourn_avg_ns\":%.0f,\"sojourn_p50_ns\":%.0f,\"sojourn_p90_ns\":%.0f,"
		       "\"sojourn_p99_ns\":%.0f,\"sojourn_p999_ns\":%.0f,",
		       r->soj_avg, r->soj_p[0], r->soj_p[1], r->soj_p[2], r->soj_p[3]);
	else
		printf("\"sojourn_avg_ns\":null,\"sojourn_p50_ns\":null,\"sojourn_p90_ns\":null,"
		       "\"sojourn_p99_ns\":null,\"sojourn_p999_ns\":null,");
	printf("\"dropped\":%llu,\"probes\":\"%s\",\"window\":%llu,\"exited\":%s,"
	       "\"path\":\"%s\"}\n",
	       (unsigned long long)r->st.dropped,
	       ebee_probes_str(r->st.probes, probes, sizeof(probes)),
	       (unsigned long long)r->st.window_count, r->st.exited ? "true" : "false",
	       ebee_path_str(path_in_use));
}

static void print_header(void)
{
	printf("%-8s %-5s %10s %10s %10s %10s %10s %10s %10s %10s %11s %8s\n", "PID", "MODE",
	       "REQUESTS", "RPS", "LATEST_us", "AVG_us", "P50_us", "P90_us", "P99_us", "P99.9_us",
	       "SOJ_P99_us", "DROPPED");
}

static void print_text(const struct row *r)
{
	printf("%-8d %-5s %10llu %10.1f", r->pid, ebee_mode_str(r->st.mode),
	       (unsigned long long)r->st.requests, r->have_rps ? r->rps : 0.0);
	if (r->have_lat)
		printf(" %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f", r->latest / 1e3, r->avg / 1e3,
		       r->p[0] / 1e3, r->p[1] / 1e3, r->p[2] / 1e3, r->p[3] / 1e3);
	else
		printf(" %10s %10s %10s %10s %10s %10s", "-", "-", "-", "-", "-", "-");
	if (r->have_soj)
		printf(" %11.1f", r->soj_p[2] / 1e3);
	else
		printf(" %11s", "-");
	printf(" %8llu%s\n", (unsigned long long)r->st.dropped, r->st.exited ? "  (exited)" : "");
}

static void report(struct ebee *eb, const struct cli *c, int header)
{
	struct row r;

	if (!c->json && header)
		print_header();
	for (int i = 0; i < c->npids; i++) {
		collect(eb, c->pids[i], &r);
		if (r.err)
			continue;
		if (c->json)
			print_json(&r);
		else
			print_text(&r);
	}
	fflush(stdout);
}

static void top_screen(struct ebee *eb, const struct cli *c, double elapsed)
{
	struct ebee_global_stats g = { .sz = sizeof(g) };
	char probes[96];
	struct row r;

	ebee_get_global_stats(eb, &g);
	printf("\033[H\033[J");
	printf(
	    "ebee top  %.0fs  %s path  workloads %u  records %llu  dropped %llu  probes [%s]\n\n",
	    elapsed, ebee_path_str(g.path), g.workloads, (unsigned long long)g.records,
	    (unsigned long long)g.dropped, ebee_probes_str(g.probes, probes, sizeof(probes)));
	print_header();
	for (int i = 0; i < c->npids; i++) {
		collect(eb, c->pids[i], &r);
		if (r.err)
			continue;
		print_text(&r);
		printf(
		    "         procs %u  probes [%s]  window %llu over %.2fs  mode switches %llu\n",
		    r.st.nprocs, ebee_probes_str(r.st.probes, probes, sizeof(probes)),
		    (unsigned long long)r.st.window_count, r.st.window_span_ns / 1e9,
		    (unsigned long long)r.st.mode_switches);
	}
	fflush(stdout);
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int all_exited(struct ebee *eb, const struct cli *c)
{
	for (int i = 0; i < c->npids; i++) {
		struct ebee_stats st = { .sz = sizeof(st) };

		if (!ebee_get_stats(eb, c->pids[i], &st) && !st.exited)
			return 0;
	}
	return 1;
}

int main(int argc, char **argv)
{
	struct ebee_trace_opts to = { .sz = sizeof(to) };
	struct cli c = { .eo = { .sz = sizeof(struct ebee_opts) } };
	struct sigaction sa = { .sa_handler = on_signal };
	double start, next;
	struct ebee *eb;
	char msg[512];
	int err;

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 1 : 0;
	}
	if (!strcmp(argv[1], "top"))
		c.top = 1;
	else if (strcmp(argv[1], "trace"))
		return die("unknown command '%s' (trace or top)", argv[1]);
	if (parse_args(argc - 1, argv + 1, &c))
		return 1;
	if (c.top && !c.interval_ms)
		c.interval_ms = 1000;
	c.eo.log = log_cb;
	c.eo.log_level = c.verbose ? EBEE_LOG_DEBUG : EBEE_LOG_WARN;

	/* Check the pids before loading anything, so the reason is the pid. */
	for (int i = 0; i < c.npids; i++)
		if (kill(c.pids[i], 0) && errno == ESRCH) {
			fprintf(stderr, "ebee: no such process: %d\n", c.pids[i]);
			return 1;
		}

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	eb = ebee_open(&c.eo, msg, sizeof(msg));
	if (!eb) {
		fprintf(stderr, "%s\n", msg[0] ? msg : "ebee: cannot start tracing");
		return 1;
	}
	{
		struct ebee_global_stats g = { .sz = sizeof(g) };

		if (!ebee_get_global_stats(eb, &g))
			path_in_use = g.path;
	}
	to.mode = c.mode;
	for (int i = 0; i < c.npids; i++) {
		err = ebee_start_tracing(eb, c.pids[i], &to);
		if (err) {
			if (err == -ESRCH)
				fprintf(stderr, "ebee: no such process: %d\n", c.pids[i]);
			else if (err == -EINVAL)
				fprintf(stderr,
					"ebee: %d is a thread, not a process: pass its tgid\n",
					c.pids[i]);
			else if (err == -EEXIST || err == -EBUSY)
				fprintf(stderr,
					"ebee: pid %d is already traced (listed twice, or a "
					"descendant of another --pid)\n",
					c.pids[i]);
			else if (err != -EOPNOTSUPP) /* that one was logged with its reason */
				fprintf(stderr, "ebee: cannot trace pid %d: %s\n", c.pids[i],
					strerror(-err));
			ebee_close(eb);
			return 1;
		}
	}
	fprintf(stderr, "ebee: tracing %d process%s, probes live (Ctrl-C to stop)\n", c.npids,
		c.npids == 1 ? "" : "es");

	start = mono_s();
	next = start + c.interval_ms / 1e3;
	while (!stop_flag) {
		double now = mono_s(), until = c.duration_s ? start + c.duration_s : INFINITY;
		double wake = c.interval_ms ? (next < until ? next : until) : until;
		double dt = wake - now;

		if (now >= until)
			break;
		if (all_exited(eb, &c))
			break;
		if (dt > 0.2)
			dt = 0.2; /* notice exits and signals promptly */
		if (dt > 0)
			usleep(dt * 1e6);
		now = mono_s();
		if (c.interval_ms && now >= next) {
			if (c.top)
				top_screen(eb, &c, now - start);
			else
				report(eb, &c, 0);
			if (output_failed()) {
				ebee_close(eb);
				return 1;
			}
			next += c.interval_ms / 1e3;
			if (next < now)
				next = now + c.interval_ms / 1e3;
		}
	}
	ebee_flush(eb);
	if (!c.top || !c.json) {
		if (c.top)
			printf("\n");
		report(eb, &c, 1);
	}
	ebee_close(eb);
	return output_failed();
}
