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
#include <sys/ioctl.h>

#include "ebee.h"
#include "cgwatch.h"
#include "ebee_prom.h"
#include "jsonw.h"
#include "procfs.h"
#include "promhttp.h"

#define MAX_PIDS 64

#ifndef EBEE_VERSION
#define EBEE_VERSION "unknown"
#endif

static volatile sig_atomic_t stop_flag;

/* ebee top --sort */
static enum top_sort { S_P99, S_RPS, S_REQ, S_PID } top_sort_key;

static void on_signal(int sig)
{
	stop_flag = 1;
}

struct cli {
	pid_t pids[MAX_PIDS];
	char names[MAX_PIDS][EPROM_NAME_LEN]; /* workload label; "" = comm */
	char comms[MAX_PIDS][16];	      /* /proc/PID/comm when tracing began */
	int npids;
	const char *listen; /* --listen ADDR */
	const char *cgroup; /* --cgroup PATH */
	int hist;	    /* --hist */
	double duration_s;  /* 0: until SIGINT */
	long interval_ms;   /* 0: summary only (trace); 1000 default for top */
	enum ebee_mode mode;
	int json;
	int verbose;
	int top;
	int all; /* --all: pid 1 asked for explicitly */
	struct ebee_opts eo;
};

/*
 * Size caps. The ring buffers (one per CPU) are locked kernel memory that the
 * consumer drains continuously: at 40 bytes a record (32 + the ring's 8-byte
 * header), 64 MiB holds 1.6 million records, far more than any burst between
 * two polls, while 1 GiB was accepted and took 2.1 GB. A window entry costs ~32 bytes
 * (two ring slots and a B+tree key in half-full leaves at worst); 10 million
 * latencies (~320 MB) is more than a minute and a half at 100k requests/s.
 */
#define RINGBUF_MAX (64L << 20)
#define WINDOW_MAX  10000000L

static bool kernel_thread(pid_t pid)
{
	struct procfs_stat st;

	if (procfs_stat(pid, &st))
		return pid == 2; /* kthreadd, even where /proc does not show it */
	return procfs_kthread(&st);
}

/* stdout went somewhere that refuses it (a full disk, a closed pipe): say so, exit 1. */
static int output_failed(void)
{
	if (fflush(stdout) != EOF && !ferror(stdout))
		return 0;
	fprintf(stderr, "ebee: cannot write the output: %s\n", strerror(errno ? errno : EIO));
	return 1;
}

/* The help text, one string table: as long as the text, not split. */
/* text after head, wrapped at 80 columns on its ", " separators, the lines
 * after the first indented as far as head (the list comes from libebee, so
 * a new framer needs no edit here). */
static void usage_wrapped(FILE *f, const char *head, const char *text)
{
	size_t col = strlen(head), ind = col;
	const char *p = text;

	fputs(head, f);
	while (*p) {
		const char *e = strstr(p, ", ");
		size_t n = e ? (size_t)(e - p) + 1 : strlen(p);

		if (col > ind && col + 1 + n > 80) {
			fprintf(f, "\n%*s", (int)ind, "");
			col = ind;
		} else if (col > ind) {
			fputc(' ', f);
			col++;
		}
		fwrite(p, 1, n, f);
		col += n;
		p += n + (e ? 1 : 0);
	}
	fputs("\n\n", f);
}

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "Usage: ebee trace --pid PID [--pid PID ...] [options]\n"
	    "       ebee trace --cgroup PATH [options]\n"
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
	    "  -p, --pid PID[:NAME]   process to trace (repeatable, up to %d); NAME is its\n"
	    "                         workload label in metrics (default: its comm); not a\n"
	    "                         kernel thread; pid 1 (every process) needs --all\n"
	    "      --all              trace pid 1 and so every process on the host (warns)\n"
	    "  -g, --cgroup PATH      trace every process of this cgroup and its descendants,\n"
	    "                         including processes that join later (checked every\n"
	    "                         200 ms); PATH is a cgroup directory or a path under\n"
	    "                         the cgroup v2 mount or systemd's v1 hierarchy (as\n"
	    "                         mounted); label: its name\n"
	    "  -d, --duration S       stop after S seconds (decimals allowed; default: SIGINT)\n"
	    "  -i, --interval MS      print every MS milliseconds\n"
	    "  -m, --mode MODE        auto (default), conn (accept..close), io (read..write),\n"
	    "                         grpc (gRPC C-core server streams, multiplexed on one\n"
	    "                         connection; the process must map libgrpc). auto picks\n"
	    "                         grpc for a process whose libgrpc serves streams;\n"
	    "                         dgram (UDP: a datagram received .. the next one sent\n"
	    "                         back to its sender), which auto picks for a process\n"
	    "                         that answers UDP datagrams and has no TCP requests\n"
	    "      --path PATH        auto (default: socket if the kernel has the socket\n"
	    "                         tracepoints or allows fentry, else syscall), socket\n"
	    "                         or syscall\n"
	    "      --attach HOW       socket path: auto (default: the tracepoints where the\n"
	    "                         kernel has them, else fentry/fexit), tp_btf or fentry\n"
	    "  -j, --json             one JSON object per pid per line, latencies in ns:\n"
	    "                         time (UTC), pid, comm, name (the workload label),\n"
	    "                         mode, requests, rps, latest_ns, avg_ns, p50_ns,\n"
	    "                         p90_ns, p99_ns, p999_ns (service latency), sojourn_avg_ns,\n"
	    "                         sojourn_p50_ns, sojourn_p90_ns, sojourn_p99_ns,\n"
	    "                         sojourn_p999_ns (null on the syscall path), dropped,\n"
	    "                         probes, window, exited, path, attach (socket path:\n"
	    "                         tp_btf or fentry; null on the syscall path), expired\n"
	    "                         (dgram: datagrams never answered), framing (one of\n"
	    "                         the framings below; null before a connection),\n"
	    "                         untrusted, warning (null, or why the\n"
	    "                         figures cannot be taken as exact: every reason\n"
	    "                         whole, \"; \" between), warnings (the same, one\n"
	    "                         object each: reason, its id; count; text),\n"
	    "                         aborted (http2: requests ended by a reset, among\n"
	    "                         requests),\n"
	    "                         unanswered (memcache: noreply and quiet requests,\n"
	    "                         which get no response, not among requests), verified\n"
	    "                         (memcache: connections counted by length once 32\n"
	    "                         requests in a row came one at a time), late (of them,\n"
	    "                         seen sending requests together later: untrusted),\n"
	    "                         handshake_data (connections whose first bytes\n"
	    "                         completed the handshake, as with TCP_DEFER_ACCEPT:\n"
	    "                         framed from the listener's copy), unseen (connections\n"
	    "                         whose first bytes ebee did not see: by length,\n"
	    "                         untrusted), overlap (socket path: connections counted\n"
	    "                         by length whose client sent more while a response\n"
	    "                         was being written: untrusted), reordered (client\n"
	    "                         segments that reached ebee before the bytes just\n"
	    "                         before them: held and parsed in order, not a gap),\n"
	    "                         midstream (connections opened before tracing, framed\n"
	    "                         from where their protocol was found again), resync\n"
	    "                         (times a framed direction that lost sync found a\n"
	    "                         message start again, parsed from there), desync\n"
	    "                         (times a framed direction lost sync), gap_lost\n"
	    "                         (http2: streams opened inside a gap, not among\n"
	    "                         requests), regained (times a connection that lost\n"
	    "                         sync was trusted again: 16 requests answered in\n"
	    "                         sync), regaining (connections not yet: untrusted),\n"
	    "                         covered (share 0..1 of the window's requests whose\n"
	    "                         records arrived: the latencies are over them; below\n"
	    "                         0.99: untrusted), window_requests and window_lost (the\n"
	    "                         kernel's count of the window's requests, and of those\n"
	    "                         whose records were lost)\n"
	    "      --no-framing       socket path: read no bytes, frame every request by\n"
	    "                         length (read/write bursts)\n"
	    "      --ringbuf-size B   BPF ring bytes per CPU, a power of two, 4096 to 67108864\n"
	    "                         (default 1048576, less with more than 32 CPUs,\n"
	    "                         down to 131072; locked kernel memory)\n"
	    "      --window N         latencies kept per pid for the statistics, at most\n"
	    "                         10000000 (default 100000; ~32 bytes each)\n"
	    "      --window-age MS    also forget latencies older than MS (default: none)\n"
	    "  -L, --listen ADDR      serve Prometheus metrics at http://ADDR/metrics while\n"
	    "                         tracing; ADDR is HOST:PORT, :PORT (all interfaces) or\n"
	    "                         [V6]:PORT\n"
	    "  -H, --hist             with each report, a log2 histogram of every request's\n"
	    "                         latency in us since tracing began (as bcc's runqlat);\n"
	    "                         with --json, the counts as \"log2_us\" (slot k >= 1:\n"
	    "                         2^(k-1) .. 2^k-1 us)\n"
	    "  -s, --sort KEY         top: order rows by p99 (default), rps, requests\n"
	    "                         (largest first) or pid; columns that do not fit the\n"
	    "                         terminal are left out, least useful first\n"
	    "  -v, --verbose          log mode choices and probe changes to stderr\n"
	    "  -V, --version          print the version and exit\n"
	    "  -h, --help             this text\n"
	    "\n",
	    MAX_PIDS);
	usage_wrapped(f, "Framings: ", ebee_framing_list());
	fprintf(f,
		"requests counts every request completed while tracing, and rps those over the\n"
		"window, both counted in the kernel: exact when records are lost (dropped);\n"
		"latencies and percentiles are over the window's records that arrived. Service\n"
		"latency runs from the server's first read (conn: the connection's first read or\n"
		"write) to the end of the response;\n"
		"sojourn latency from the request's arrival at the server (its first bytes; conn:\n"
		"the TCP handshake) to the same end, so it includes queueing before the server\n"
		"reads. Exit status: 0, or 1 with a one-line reason.\n");
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

static int valid_name(const char *s)
{
	size_t n = strlen(s);

	if (!n || n >= EPROM_NAME_LEN)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '.' || *s == '-'))
			return 0;
	return 1;
}

/* The process's comm, the workload's default name. */
static void comm_of(pid_t pid, char *buf, size_t len)
{
	if (procfs_comm(pid, buf, len))
		snprintf(buf, len, "%d", (int)pid);
}

static void log_cb(enum ebee_log_level lvl, const char *msg, void *ctx)
{
	fprintf(stderr, "%s\n", msg);
}

/* --pid PID[:NAME]: 0, or die()'s 1 with the reason on stderr. */
static int add_pid(struct cli *c, const char *arg)
{
	const char *colon = strchr(arg, ':');
	size_t n = colon ? (size_t)(colon - arg) : strlen(arg);
	char num[32];
	long v;

	snprintf(num, sizeof(num), "%.*s", (int)(n < 31 ? n : 31), arg);
	if (n >= sizeof(num) || parse_long(num, 1, INT_MAX, &v))
		return die("bad pid '%s'", arg);
	if (colon && !valid_name(colon + 1))
		return die("bad workload name in '%s' (1-63 of A-Z a-z 0-9 _ . -)", arg);
	if (c->npids == MAX_PIDS)
		return die("too many pids (at most 64): '%s'", arg);
	snprintf(c->names[c->npids], sizeof(c->names[0]), "%s", colon ? colon + 1 : "");
	c->pids[c->npids++] = v;
	return 0;
}

/* --sort KEY for ebee top: 0, or -EINVAL for an unknown key. */
static int parse_sort_key(const char *arg)
{
	static const struct {
		const char *name;
		enum top_sort key;
	} keys[] = { { "p99", S_P99 }, { "rps", S_RPS }, { "requests", S_REQ }, { "pid", S_PID } };

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (!strcmp(arg, keys[i].name)) {
			top_sort_key = keys[i].key;
			return 0;
		}
	}
	return -EINVAL;
}

/* What to trace, once every option is read: --all adds pid 1, which is
 * refused without it; kernel threads are refused; something must be given. */
static int check_targets(struct cli *c)
{
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
	if (!c->npids && !c->cgroup)
		return die("%sno --pid given (nor --cgroup)", "");
	return 0;
}

/* ebee trace/top's long options; the short ones are in parse_args. */
static const struct option long_opts[] = {
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
	{ "listen", required_argument, NULL, 'L' },
	{ "version", no_argument, NULL, 'V' },
	{ "cgroup", required_argument, NULL, 'g' },
	{ "hist", no_argument, NULL, 'H' },
	{ "sort", required_argument, NULL, 's' },
	{ "path", required_argument, NULL, 'P' },
	{ "attach", required_argument, NULL, 'T' },
	{ "all", no_argument, NULL, 'a' },
	{ "no-framing", no_argument, NULL, 'F' },
	{},
};

/* After the options: no stray argument, and the targets make sense. */
static int check_rest(int argc, char **argv, struct cli *c)
{
	if (optind < argc)
		return die("unexpected argument '%s'", argv[optind]);
	return check_targets(c);
}

/* One flat case per option: longer than a screen, read one case at a time. */
static int parse_args(int argc, char **argv, struct cli *c)
{
	long v;
	int o;

	opterr = 0;
	while ((o = getopt_long(argc, argv, ":p:d:i:m:jvhL:Vg:Hs:", long_opts, NULL)) != -1) {
		switch (o) {
		case 'p':
			if (add_pid(c, optarg))
				return 1;
			break;
		case 'L':
			c->listen = optarg;
			break;
		case 'g':
			c->cgroup = optarg;
			break;
		case 'H':
			c->hist = 1;
			break;
		case 's':
			if (parse_sort_key(optarg))
				return die("bad sort key '%s' (p99, rps, requests or pid)", optarg);
			break;
		case 'V':
			printf("ebee %s\n", EBEE_VERSION);
			exit(0);
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
				return die("bad mode '%s' (auto, conn, io, grpc or dgram)", optarg);
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
				return die(
				    "bad ring buffer size '%s' (a power of two, 4096 to at "
				    "most 67108864 per CPU: locked kernel memory, and 64 MiB "
				    "holds 1.6 million records)",
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
		case 'T':
			if (ebee_attach_parse(optarg, &c->eo.attach))
				return die("bad attach method '%s' (auto, tp_btf or fentry)",
					   optarg);
			break;
		case 'a':
			c->all = 1;
			break;
		case 'F':
			c->eo.no_framing = true;
			break;
		case ':':
			return die("option '%s' needs a value", argv[optind - 1]);
		default:
			return die("unknown option '%s'", argv[optind - 1]);
		}
	}
	return check_rest(argc, argv, c);
}

struct row {
	pid_t pid;
	int err;
	struct ebee_stats st;
	double rps, avg, p[4];
	double soj_avg, soj_p[4]; /* sojourn latency */
	uint64_t latest;
	int have_rps, have_lat, have_soj;
	/* The reasons of st.untrusted, from the same reading (ebee_get_warnings()),
	 * each text whole: allocated, freed by the next collect() into the row. */
	int nwarn;
	struct {
		const char *id;
		uint64_t count;
		char *text;
	} warn[EBEE_WARN_COUNT];
};

static const double pcts[4] = { 50, 90, 99, 99.9 };
static enum ebee_path path_in_use;
static char attach_in_use[48]; /* "tp_btf", "fentry", or per hook; "" off the socket path */

/* The socket path's request hooks' attach method: one word when the I/O and
 * arrival hooks agree (they do on every kernel seen: their tracepoints came
 * together in 6.3), else each. */
static void attach_describe(const struct ebee_global_stats *g, char *buf, size_t len)
{
	if (g->path != EBEE_PATH_SOCKET)
		buf[0] = 0;
	else if (g->attach_io == g->attach_arrive)
		snprintf(buf, len, "%s", ebee_attach_str(g->attach_io));
	else
		snprintf(buf, len, "io=%s,arrive=%s", ebee_attach_str(g->attach_io),
			 ebee_attach_str(g->attach_arrive));
}

static void row_free(struct row *r)
{
	for (int i = 0; i < r->nwarn; i++)
		free(r->warn[i].text);
	r->nwarn = 0;
}

static int row_warn(const struct ebee_warning *w, void *ctx)
{
	struct row *r = ctx;
	char *t;

	if (r->nwarn == EBEE_WARN_COUNT)
		return 0;
	t = strdup(w->text);
	if (!t) /* the row still shows, with the library's warning (print_text()) */
		return 0;
	r->warn[r->nwarn].id = w->id;
	r->warn[r->nwarn].count = w->count;
	r->warn[r->nwarn++].text = t;
	return 0;
}

/* The row's reasons joined as the library's warning joins them ("; "
 * between), whole however long: allocated, NULL for none. */
static char *row_warning(const struct row *r)
{
	size_t len = 1;
	char *s;

	if (!r->nwarn)
		return NULL;
	for (int i = 0; i < r->nwarn; i++)
		len += strlen(r->warn[i].text) + 2;
	s = malloc(len);
	if (!s)
		return NULL;
	s[0] = 0;
	for (int i = 0; i < r->nwarn; i++) {
		if (i)
			strcat(s, "; ");
		strcat(s, r->warn[i].text);
	}
	return s;
}

static void collect(struct ebee *eb, pid_t pid, struct row *r)
{
	row_free(r);
	memset(r, 0, sizeof(*r));
	r->pid = pid;
	r->st.sz = sizeof(r->st);
	r->err = ebee_get_warnings(eb, pid, &r->st, row_warn, r);
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

static struct eprom prom; /* request hook's histograms: --listen, --hist */

static void print_json(const struct row *r, const char *name, const char *comm, int hist)
{
	char probes[96], *warning = row_warning(r);
	struct jw j;

	jw_begin(&j, stdout);
	jw_time(&j, "time");
	jw_int(&j, "pid", r->pid);
	jw_str(&j, "comm", comm);
	jw_str(&j, "name", name);
	jw_str(&j, "mode", ebee_mode_str(r->st.mode));
	jw_uint(&j, "requests", r->st.requests);
	if (r->have_rps)
		jw_num(&j, "rps", r->rps, 1);
	else
		jw_int(&j, "rps", 0);
	if (r->have_lat) {
		jw_uint(&j, "latest_ns", r->latest);
		jw_num(&j, "avg_ns", r->avg, 0);
		jw_num(&j, "p50_ns", r->p[0], 0);
		jw_num(&j, "p90_ns", r->p[1], 0);
		jw_num(&j, "p99_ns", r->p[2], 0);
		jw_num(&j, "p999_ns", r->p[3], 0);
	} else {
		static const char *const k[] = { "latest_ns", "avg_ns", "p50_ns",
						 "p90_ns",    "p99_ns", "p999_ns" };

		for (int i = 0; i < 6; i++)
			jw_null(&j, k[i]);
	}
	if (r->have_soj) {
		jw_num(&j, "sojourn_avg_ns", r->soj_avg, 0);
		jw_num(&j, "sojourn_p50_ns", r->soj_p[0], 0);
		jw_num(&j, "sojourn_p90_ns", r->soj_p[1], 0);
		jw_num(&j, "sojourn_p99_ns", r->soj_p[2], 0);
		jw_num(&j, "sojourn_p999_ns", r->soj_p[3], 0);
	} else {
		static const char *const k[] = { "sojourn_avg_ns", "sojourn_p50_ns",
						 "sojourn_p90_ns", "sojourn_p99_ns",
						 "sojourn_p999_ns" };

		for (int i = 0; i < 5; i++)
			jw_null(&j, k[i]);
	}
	jw_uint(&j, "dropped", r->st.dropped);
	jw_str(&j, "probes", ebee_probes_str(r->st.probes, probes, sizeof(probes)));
	jw_uint(&j, "window", r->st.window_count);
	jw_bool(&j, "exited", r->st.exited);
	jw_str(&j, "path", ebee_path_str(path_in_use));
	jw_str(&j, "attach", attach_in_use[0] ? attach_in_use : NULL);
	jw_uint(&j, "expired", r->st.expired);
	jw_str(&j, "framing", r->st.framing[0] ? r->st.framing : NULL);
	jw_bool(&j, "untrusted", r->st.untrusted);
	/* The reasons whole: joined (what warning always was, no longer cut), and
	 * one object each, with its id and count. */
	jw_str(&j, "warning", warning ? warning : r->st.warning[0] ? r->st.warning : NULL);
	jw_arr(&j, "warnings");
	for (int i = 0; i < r->nwarn; i++) {
		jw_obj(&j, NULL);
		jw_str(&j, "reason", r->warn[i].id);
		jw_uint(&j, "count", r->warn[i].count);
		jw_str(&j, "text", r->warn[i].text);
		jw_close(&j);
	}
	jw_close(&j);
	free(warning);
	jw_uint(&j, "aborted", r->st.aborted);
	jw_uint(&j, "unanswered", r->st.unanswered);
	jw_uint(&j, "verified", r->st.verified);
	jw_uint(&j, "late", r->st.late);
	jw_uint(&j, "handshake_data", r->st.handshake_data);
	jw_uint(&j, "unseen", r->st.unseen);
	jw_uint(&j, "overlap", r->st.overlap);
	jw_uint(&j, "reordered", r->st.reordered);
	jw_uint(&j, "midstream", r->st.midstream);
	jw_uint(&j, "resync", r->st.resync);
	jw_uint(&j, "desync", r->st.desync);
	jw_uint(&j, "gap_lost", r->st.gap_lost);
	jw_uint(&j, "regained", r->st.regained);
	jw_uint(&j, "regaining", r->st.regaining);
	jw_num(&j, "covered", r->st.covered, 4);
	jw_uint(&j, "window_requests", r->st.window_requests);
	jw_uint(&j, "window_lost", r->st.window_lost);
	if (hist) {
		int n = __atomic_load_n(&prom.nwl, __ATOMIC_ACQUIRE);

		for (int i = 0; i < n; i++) {
			if (prom.wl[i].pid != r->pid)
				continue;
			jw_arr(&j, "log2_us");
			for (int k = 0; k < EPROM_LOG2_SLOTS; k++)
				jw_uint(&j, NULL,
					__atomic_load_n(&prom.wl[i].log2_us[k], __ATOMIC_RELAXED));
			jw_close(&j);
		}
	}
	jw_end(&j);
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
	for (int i = 0; i < r->nwarn; i++)
		printf("%-8d warning: %s\n", r->pid, r->warn[i].text);
	if (r->st.untrusted && !r->nwarn) /* no memory for the reasons */
		printf("%-8d warning: %s\n", r->pid, r->st.warning);
}

static void report(struct ebee *eb, const struct cli *c, int header)
{
	struct row r = { 0 };

	if (!c->json && header)
		print_header();
	for (int i = 0; i < c->npids; i++) {
		collect(eb, c->pids[i], &r);
		if (r.err)
			continue;
		if (c->json) {
			print_json(&r, c->names[i], c->comms[i], c->hist);
		} else {
			print_text(&r);
			if (c->hist) {
				printf("\npid %d (%s) request latency:\n", r.pid, c->comms[i]);
				eprom_print_log2(&prom, r.pid, stdout);
				printf("\n");
			}
		}
	}
	row_free(&r);
	fflush(stdout);
}

/* ebee top's columns; on a narrow terminal the highest drop numbers go
 * first, so the row never wraps and the columns never shift. */
enum {
	C_PID,
	C_MODE,
	C_REQ,
	C_RPS,
	C_LATEST,
	C_AVG,
	C_P50,
	C_P90,
	C_P99,
	C_P999,
	C_SOJ_P99,
	C_DROP,
	C_FRAMING,
	NCOL
};
static const struct {
	const char *hdr;
	int w, drop;
} cols[NCOL] = {
	[C_PID] = { "PID", 8, 0 },
	[C_MODE] = { "MODE", 5, 0 },
	[C_REQ] = { "REQUESTS", 10, 1 },
	[C_RPS] = { "RPS", 10, 0 },
	[C_LATEST] = { "LATEST_us", 10, 7 },
	[C_AVG] = { "AVG_us", 10, 5 },
	[C_P50] = { "P50_us", 10, 4 },
	[C_P90] = { "P90_us", 10, 6 },
	[C_P99] = { "P99_us", 10, 0 },
	[C_P999] = { "P99.9_us", 10, 3 },
	[C_SOJ_P99] = { "SOJ_P99_us", 11, 0 },
	[C_DROP] = { "DROPPED", 8, 2 },
	[C_FRAMING] = { "FRAMING", 7, 8 }, /* "!" after it: untrusted, warning below */
};

static int term_width(void)
{
	struct winsize ws;
	const char *e = getenv("COLUMNS");

	if (e && atoi(e) > 0)
		return atoi(e);
	if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_col)
		return ws.ws_col;
	return 1000;
}

/* Columns shown for a width: drop the highest drop numbers until it fits. */
static void top_columns(int width, bool show[NCOL])
{
	for (int level = 8;; level--) {
		int w = 0;

		for (int k = 0; k < NCOL; k++) {
			show[k] = cols[k].drop <= level;
			w += show[k] ? cols[k].w + (k ? 1 : 0) : 0;
		}
		if (w <= width || level == 0)
			return;
	}
}

static int row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	double kx, ky;

	switch (top_sort_key) {
	case S_RPS:
		kx = x->have_rps ? x->rps : -1, ky = y->have_rps ? y->rps : -1;
		break;
	case S_REQ:
		kx = x->st.requests, ky = y->st.requests;
		break;
	case S_PID:
		return x->pid - y->pid;
	default:
		kx = x->have_lat ? x->p[2] : -1, ky = y->have_lat ? y->p[2] : -1;
		break;
	}
	if (kx != ky)
		return kx < ky ? 1 : -1; /* largest first */
	return x->pid - y->pid;
}

static void top_cell(const struct row *r, int k, char *buf, size_t len)
{
	const double us[] = {
		[C_LATEST] = r->latest / 1e3, [C_AVG] = r->avg / 1e3,  [C_P50] = r->p[0] / 1e3,
		[C_P90] = r->p[1] / 1e3,      [C_P99] = r->p[2] / 1e3, [C_P999] = r->p[3] / 1e3
	};

	switch (k) {
	case C_PID:
		snprintf(buf, len, "%d", r->pid);
		break;
	case C_FRAMING:
		snprintf(buf, len, "%s%s", r->st.framing[0] ? r->st.framing : "-",
			 r->st.untrusted ? "!" : "");
		break;
	case C_MODE:
		snprintf(buf, len, "%s", ebee_mode_str(r->st.mode));
		break;
	case C_REQ:
		snprintf(buf, len, "%llu", (unsigned long long)r->st.requests);
		break;
	case C_RPS:
		snprintf(buf, len, "%.1f", r->have_rps ? r->rps : 0.0);
		break;
	case C_DROP:
		snprintf(buf, len, "%llu", (unsigned long long)r->st.dropped);
		break;
	case C_SOJ_P99:
		if (r->have_soj)
			snprintf(buf, len, "%.1f", r->soj_p[2] / 1e3);
		else
			snprintf(buf, len, "-");
		break;
	default:
		if (r->have_lat)
			snprintf(buf, len, "%.1f", us[k]);
		else
			snprintf(buf, len, "-");
	}
}

/* first, then text on as many lines as it needs (the next ones indented as
 * far), each at most width columns: broken at spaces, a word longer than a
 * line broken where the line ends; never cut. */
static void print_wrapped(const char *first, const char *text, int width)
{
	int indent = strlen(first), room = width - indent;
	const char *p = text;

	if (room < 20) /* past a very narrow terminal rather than a word a line */
		room = 20;
	printf("%s", first);
	if (!*p)
		printf("\n");
	while (*p) {
		int n = strlen(p);

		if (n > room) {
			n = room;
			while (n > 0 && p[n] != ' ')
				n--;
			if (!n)
				n = room;
		}
		printf("%.*s\n", n, p);
		p += n;
		while (*p == ' ')
			p++;
		if (*p)
			printf("%*s", indent, "");
	}
}

/* One screen of top; clear = 0 for the final one, left on the terminal. */
static void top_screen(struct ebee *eb, const struct cli *c, double elapsed, int clear)
{
	static const char *const sort_names[] = { "p99", "rps", "requests", "pid" };
	struct ebee_global_stats g = { .sz = sizeof(g) };
	static struct row rows[MAX_PIDS];
	int width = term_width(), n = 0;
	bool show[NCOL];
	char probes[96], line[1024], cell[32];

	ebee_get_global_stats(eb, &g);
	for (int i = 0; i < c->npids; i++) {
		collect(eb, c->pids[i], &rows[n]);
		if (!rows[n].err)
			n++;
	}
	qsort(rows, n, sizeof(rows[0]), row_cmp);
	top_columns(width, show);
	if (width > (int)sizeof(line) - 1)
		width = sizeof(line) - 1;
	if (clear)
		printf("\033[H\033[J");
	snprintf(
	    line, sizeof(line),
	    "ebee top  %.0fs  %s path%s%s%s  workloads %u  records %llu  dropped %llu  sort %s  "
	    "probes [%s]",
	    elapsed, ebee_path_str(g.path), attach_in_use[0] ? " (" : "", attach_in_use,
	    attach_in_use[0] ? ")" : "", g.workloads, (unsigned long long)g.records,
	    (unsigned long long)g.dropped, sort_names[top_sort_key],
	    ebee_probes_str(g.probes, probes, sizeof(probes)));
	printf("%.*s\n\n", width, line);
	for (int pass = 0; pass <= n; pass++) {
		const struct row *r = pass ? &rows[pass - 1] : NULL;
		int off = 0;

		for (int k = 0; k < NCOL; k++) {
			if (!show[k])
				continue;
			if (r)
				top_cell(r, k, cell, sizeof(cell));
			off += snprintf(line + off, sizeof(line) - off,
					k == C_PID || k == C_MODE || k == C_FRAMING ? "%s%-*s"
										    : "%s%*s",
					off ? " " : "", cols[k].w, r ? cell : cols[k].hdr);
		}
		printf("%.*s\n", width, line);
		if (r) {
			snprintf(line, sizeof(line),
				 "         procs %u  probes [%s]  window %llu over %.2fs  covered "
				 "%.1f%%  mode switches %llu",
				 r->st.nprocs,
				 ebee_probes_str(r->st.probes, probes, sizeof(probes)),
				 (unsigned long long)r->st.window_count, r->st.window_span_ns / 1e9,
				 100 * r->st.covered, (unsigned long long)r->st.mode_switches);
			printf("%.*s\n", width, line);
			if (r->st.expired) {
				snprintf(line, sizeof(line), "         expired %llu",
					 (unsigned long long)r->st.expired);
				printf("%.*s\n", width, line);
			}
			for (int i = 0; i < r->nwarn; i++)
				print_wrapped("         warning: ", r->warn[i].text, width);
			if (r->st.untrusted && !r->nwarn) /* no memory for the reasons */
				print_wrapped("         warning: ", r->st.warning, width);
		}
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
	if (c->cgroup)
		return 0; /* processes may join the cgroup later */
	for (int i = 0; i < c->npids; i++) {
		struct ebee_stats st = { .sz = sizeof(st) };

		if (!ebee_get_stats(eb, c->pids[i], &st) && !st.exited)
			return 0;
	}
	return 1;
}

/* Trace the cgroup's processes not traced yet. Children of traced processes
 * are already followed by ebee (-EEXIST/-EBUSY): remembered, not retried. */
static void cgroup_scan(struct ebee *eb, struct cli *c, const struct cgwatch *cw,
			struct eprom *prom, const struct ebee_trace_opts *to)
{
	static pid_t skip[4096];
	static int nskip, warned;
	pid_t pids[1024];
	int n = cgwatch_scan(cw, pids, 1024);

	for (int i = 0; i < n; i++) {
		int known = 0, err;

		for (int k = 0; k < c->npids && !known; k++)
			known = c->pids[k] == pids[i];
		for (int k = 0; k < nskip && !known; k++)
			known = skip[k] == pids[i];
		if (known)
			continue;
		if (c->npids == MAX_PIDS) {
			if (!warned++)
				fprintf(stderr,
					"ebee: cgroup %s: more than %d processes; "
					"the rest are not traced\n",
					cw->name, MAX_PIDS);
			return;
		}
		/* before tracing starts, so the request hook finds the entry */
		if (c->listen || c->hist)
			eprom_add(prom, pids[i], cw->name);
		err = ebee_start_tracing(eb, pids[i], to);
		if (!err) {
			snprintf(c->names[c->npids], sizeof(c->names[0]), "%s", cw->name);
			comm_of(pids[i], c->comms[c->npids], sizeof(c->comms[0]));
			c->pids[c->npids++] = pids[i];
			if (c->verbose)
				fprintf(stderr, "ebee: cgroup %s: tracing pid %d\n", cw->name,
					pids[i]);
		} else if (nskip < (int)(sizeof(skip) / sizeof(skip[0]))) {
			skip[nskip++] = pids[i];
		}
	}
}

/* Before anything is loaded: every pid alive (so the reason is the pid), the
 * cgroup open, each workload's name and metrics entry. 0, or 1 with the reason. */
static int prepare_targets(struct cli *c, struct cgwatch *cw)
{
	char msg[512];

	for (int i = 0; i < c->npids; i++)
		if (!procfs_alive(c->pids[i], 0)) {
			fprintf(stderr, "ebee: no such process: %d\n", c->pids[i]);
			return 1;
		}

	if (c->cgroup && cgwatch_open(cw, c->cgroup, cgfs_here(), msg, sizeof(msg))) {
		fprintf(stderr, "ebee: %s\n", msg);
		return 1;
	}
	for (int i = 0; i < c->npids; i++) {
		comm_of(c->pids[i], c->comms[i], sizeof(c->comms[i]));
		if (!c->names[i][0]) { /* comm (< 16 bytes) fits: names hold 64 */
			size_t n = strnlen(c->comms[i], sizeof(c->comms[i]) - 1);

			memcpy(c->names[i], c->comms[i], n);
			c->names[i][n] = '\0';
		}
		eprom_add(&prom, c->pids[i], c->names[i]);
	}
	if (c->listen || c->hist) {
		c->eo.on_request = eprom_on_request;
		c->eo.on_request_ctx = &prom;
	}
	return 0;
}

/* Load the probes and note the path and attach method in force: NULL, with
 * the reason on stderr, when that fails. */
static struct ebee *open_tracer(const struct cli *c)
{
	struct ebee_global_stats g = { .sz = sizeof(g) };
	struct ebee *eb;
	char msg[512];

	eb = ebee_open(&c->eo, msg, sizeof(msg));
	if (!eb) {
		fprintf(stderr, "%s\n", msg[0] ? msg : "ebee: cannot start tracing");
		return NULL;
	}
	if (!ebee_get_global_stats(eb, &g)) {
		path_in_use = g.path;
		attach_describe(&g, attach_in_use, sizeof(attach_in_use));
	}
	return eb;
}

/* Trace every --pid: 0, or 1 with the reason on stderr (the caller closes). */
static int start_pids(struct ebee *eb, const struct cli *c, const struct ebee_trace_opts *to)
{
	for (int i = 0; i < c->npids; i++) {
		int err = ebee_start_tracing(eb, c->pids[i], to);

		if (!err)
			continue;
		if (err == -ESRCH)
			fprintf(stderr, "ebee: no such process: %d\n", c->pids[i]);
		else if (err == -EINVAL)
			fprintf(stderr, "ebee: %d is a thread, not a process: pass its tgid\n",
				c->pids[i]);
		else if (err == -EEXIST || err == -EBUSY)
			fprintf(stderr,
				"ebee: pid %d is already traced (listed twice, or a "
				"descendant of another --pid)\n",
				c->pids[i]);
		else if (err != -EOPNOTSUPP) /* that one was logged with its reason */
			fprintf(stderr, "ebee: cannot trace pid %d: %s\n", c->pids[i],
				strerror(-err));
		return 1;
	}
	return 0;
}

/* --listen: serve the metrics; NULL, with the reason on stderr, when that fails. */
static struct promhttp *start_metrics(struct ebee *eb, const struct cli *c)
{
	struct promhttp *http;
	char msg[512];

	prom.eb = eb;
	http = promhttp_start(c->listen, eprom_render, &prom, msg, sizeof(msg));
	if (!http) {
		fprintf(stderr, "ebee: %s\n", msg);
		return NULL;
	}
	fprintf(stderr, "ebee: metrics at http://%s/metrics (port %d)\n", c->listen,
		promhttp_port(http));
	return http;
}

/* Until --duration, a signal, or every traced process exits: follow the
 * cgroup and print every --interval. 0, or 1 when stdout refused a report
 * (the caller closes). */
static int run_loop(struct ebee *eb, struct cli *c, const struct cgwatch *cw,
		    const struct ebee_trace_opts *to, double start)
{
	double next = start + c->interval_ms / 1e3;

	while (!stop_flag) {
		double now = mono_s(), until = c->duration_s ? start + c->duration_s : INFINITY;
		double wake = c->interval_ms ? (next < until ? next : until) : until;
		double dt = wake - now;

		if (now >= until)
			break;
		if (all_exited(eb, c))
			break;
		if (dt > 0.2)
			dt = 0.2; /* notice exits and signals promptly */
		if (dt > 0)
			usleep(dt * 1e6);
		if (c->cgroup)
			cgroup_scan(eb, c, cw, &prom, to);
		now = mono_s();
		if (c->interval_ms && now >= next) {
			if (c->top)
				top_screen(eb, c, now - start, 1);
			else
				report(eb, c, 0);
			if (output_failed())
				return 1;
			next += c->interval_ms / 1e3;
			if (next < now)
				next = now + c->interval_ms / 1e3;
		}
	}
	return 0;
}

/* What is left in the rings, then the summary (trace) or last screen (top). */
static void final_report(struct ebee *eb, const struct cli *c, double start)
{
	ebee_flush(eb);
	if (c->top) {
		printf("\n");
		top_screen(eb, c, mono_s() - start, 0);
	} else {
		report(eb, c, 1);
	}
}

int main(int argc, char **argv)
{
	struct ebee_trace_opts to = { .sz = sizeof(to) };
	struct cli c = { .eo = { .sz = sizeof(struct ebee_opts) } };
	struct sigaction sa = { .sa_handler = on_signal };
	struct cgwatch cw;
	struct promhttp *http = NULL;
	struct ebee *eb;
	double start;

	if (argc >= 2 && (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version"))) {
		printf("ebee %s\n", EBEE_VERSION);
		return 0;
	}
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

	if (prepare_targets(&c, &cw))
		return 1;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	eb = open_tracer(&c);
	if (!eb)
		return 1;
	to.mode = c.mode;
	to.allow_init = c.all; /* --all: pid 1 asked for */
	if (start_pids(eb, &c, &to)) {
		ebee_close(eb);
		return 1;
	}
	if (c.cgroup)
		cgroup_scan(eb, &c, &cw, &prom, &to);
	if (c.listen) {
		http = start_metrics(eb, &c);
		if (!http) {
			ebee_close(eb);
			return 1;
		}
	}
	fprintf(stderr,
		"ebee: tracing %d process%s%s%s, %s path%s%s%s, probes live (Ctrl-C to stop)\n",
		c.npids, c.npids == 1 ? "" : "es", c.cgroup ? " of cgroup " : "",
		c.cgroup ? cw.dir : "", ebee_path_str(path_in_use), attach_in_use[0] ? " (" : "",
		attach_in_use, attach_in_use[0] ? ")" : "");

	start = mono_s();
	if (run_loop(eb, &c, &cw, &to, start)) {
		promhttp_stop(http); /* its thread reads the library */
		ebee_close(eb);
		return 1;
	}
	final_report(eb, &c, start);
	promhttp_stop(http); /* before the library it reads from */
	ebee_close(eb);
	return output_failed();
}
