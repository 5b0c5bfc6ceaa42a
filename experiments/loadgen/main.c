// SPDX-License-Identifier: MIT
/*
 * loadgen: open-loop load generator for the Figure 11 experiments (docs/workloads.md 5).
 * Options and output here; the event loop is loop.c.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonw.h"
#include "loadgen.h"

static const char usage_text[] =
    "usage: loadgen [--host A.B.C.D] --port P (--schedule T:RPS,T:RPS,... | --rate R --duration "
    "S)\n"
    "               [--proto http|memcached] [--scale K] [--keepalive] [--path /x]\n"
    "               [--conns N] [--max-conns N] [--max-queue N] [--late-us U]\n"
    "               [--req-timeout S] [--drain S] [--seed N]\n"
    "               [--keys K] [--zipf-alpha A] [--get-ratio G] [--value-size B] [--no-preload]\n"
    "               [--feed FILE] [--feed-ms MS] [--feed-window S] [--feed-min-samples N]\n"
    "               [--summary] [--json] [--verbose]\n"
    "\n"
    "Open-loop load on HOST:P: Poisson arrivals whose rate follows a piecewise-linear\n"
    "schedule, sent at their intended times whatever happened to earlier requests; latency is\n"
    "measured from the intended send time.\n"
    "\n"
    "  --host A.B.C.D      the server's IPv4 address (default 127.0.0.1)\n"
    "  --schedule T:R,...  time_s:rps points, linear in between, first at 0; the run lasts\n"
    "                      until the last point. E.g. 0:100,30:1000,60:100\n"
    "  --rate R --duration S   a constant rate instead\n"
    "  --scale K           multiply every rate by K (e.g. a schedule in % of max, K = max/100)\n"
    "  --proto P           http (default) or memcached\n"
    "  --keepalive         http: persistent connections; default one request per connection\n"
    "                      (Connection: close, a new connection per request)\n"
    "  --path /x           http request path (default /)\n"
    "  --conns N           persistent connections opened at start (default 16)\n"
    "  --max-conns N       cap on open connections; an arrival that finds none free opens one\n"
    "                      below the cap, else waits in a queue (default 1000)\n"
    "  --max-queue N       arrivals allowed to wait for a connection; more are dropped and\n"
    "                      counted as errors (default 100000)\n"
    "  --late-us U         a send more than U us after its intended time is late (default 1000)\n"
    "  --req-timeout S     a reply not complete S s after the intended send time is an error\n"
    "                      (default 10)\n"
    "  --drain S           after the schedule ends, wait up to S s for replies (default 5)\n"
    "  --seed N            random seed (default 1)\n"
    "  memcached: 80% gets by default; keys lg:0..lg:K-1 with Zipf popularity\n"
    "  --keys K            key count (default 10000)\n"
    "  --zipf-alpha A      Zipf exponent (default 0.915)\n"
    "  --get-ratio G       fraction of gets (default 0.8)\n"
    "  --value-size B      mean value size; sets use sizes uniform in [B/2, 3B/2] (default 1024)\n"
    "  --no-preload        do not set every key once before the run (default: preload, so gets\n"
    "                      hit; the preload runs before the schedule's time 0)\n"
    "  --feed FILE         every --feed-ms (default 100) append \"t_ms p99_us rps\": the p99 and\n"
    "                      completion rate over a trailing window of --feed-window s (default 1)\n"
    "                      or the last --feed-min-samples (default 200), whichever covers more.\n"
    "                      No line before the first reply. t_ms counts from the schedule's start\n"
    "  --summary           print a summary at the end (default if --json is not given)\n"
    "  --json              print the summary as one JSON object on stdout\n"
    "  --verbose           report connection errors on stderr\n"
    "\n"
    "Exit status: 0 if every request succeeded, 1 if any failed, 2 on bad usage or setup\n"
    "failure. SIGINT/SIGTERM end the run early with a summary.\n";

static volatile int stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static double num(const char *name, const char *s, double min, double max)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= min && v <= max)) {
		fprintf(stderr, "loadgen: bad value '%s' for %s (expected %.15g..%.15g)\n", s, name,
			min, max);
		exit(2);
	}
	return v;
}

/* "loadgen: " and the reason on stderr, exit 2 (bad usage). */
__attribute__((format(printf, 1, 2), noreturn)) static void die_usage(const char *fmt, ...)
{
	va_list ap;

	fputs("loadgen: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

/* Numeric options that go straight into struct lg_config: long name, field,
 * bounds. One line here adds the option, its parsing and its range check. */
#define NUM_OPTS(X)                                 \
	X("port", port, 1, 65535)                   \
	X("conns", conns, 1, 65536)                 \
	X("max-conns", max_conns, 1, 65536)         \
	X("max-queue", max_queue, 1, 1e8)           \
	X("late-us", late_us, 0, 1e9)               \
	X("req-timeout", req_timeout, 0.001, 1e6)   \
	X("drain", drain_s, 0, 1e6)                 \
	X("seed", seed, 0, 1e18)                    \
	X("keys", keys, 1, 1e8)                     \
	X("zipf-alpha", zipf_alpha, 0, 10)          \
	X("get-ratio", get_ratio, 0, 1)             \
	X("value-size", value_size, 1, 1 << 20)     \
	X("feed-ms", feed_ms, 1, 1e6)               \
	X("feed-window", feed_window_s, 0.001, 1e6) \
	X("feed-min-samples", feed_min_samples, 1, 1e8)

enum {
	O_HOST = 256,
	O_SCHEDULE,
	O_RATE,
	O_DURATION,
	O_SCALE,
	O_PROTO,
	O_KEEPALIVE,
	O_PATH,
	O_NO_PRELOAD,
	O_FEED,
	O_SUMMARY,
	O_JSON,
	O_VERBOSE,
#define NUM_ENUM(name, field, lo, hi) O_##field,
	NUM_OPTS(NUM_ENUM)
#undef NUM_ENUM
};

#define NUM_LOPT(name, field, lo, hi) { name, required_argument, NULL, O_##field },
/* clang-format would glue the macro's entries to the next line */
// clang-format off
static const struct option lopts[] = {
	NUM_OPTS(NUM_LOPT)
	{ "host", required_argument, NULL, O_HOST },
	{ "schedule", required_argument, NULL, O_SCHEDULE },
	{ "rate", required_argument, NULL, O_RATE },
	{ "duration", required_argument, NULL, O_DURATION },
	{ "scale", required_argument, NULL, O_SCALE },
	{ "proto", required_argument, NULL, O_PROTO },
	{ "keepalive", no_argument, NULL, O_KEEPALIVE },
	{ "path", required_argument, NULL, O_PATH },
	{ "no-preload", no_argument, NULL, O_NO_PRELOAD },
	{ "feed", required_argument, NULL, O_FEED },
	{ "summary", no_argument, NULL, O_SUMMARY },
	{ "json", no_argument, NULL, O_JSON },
	{ "verbose", no_argument, NULL, O_VERBOSE },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};
// clang-format on
#undef NUM_LOPT

/* What the options say beyond struct lg_config, checked once all are read. */
struct args {
	const char *schedule, *feed;
	double rate, duration, scale;
	bool summary, json;
};

/* The checks that need several options, and the schedule and feed file. */
static void finish_args(struct lg_config *cfg, const struct args *a)
{
	char err[160];

	if (!cfg->port)
		die_usage("--port is required (see --help)");
	if (a->schedule && (a->rate >= 0 || a->duration >= 0))
		die_usage("give --schedule or --rate with --duration, not both");
	if (a->schedule) {
		if (sched_parse(&cfg->sched, a->schedule, err, sizeof(err)))
			die_usage("--schedule '%s': %s", a->schedule, err);
	} else if (a->rate >= 0 && a->duration > 0) {
		sched_constant(&cfg->sched, a->rate, a->duration);
	} else {
		die_usage("need --schedule, or --rate and --duration (see --help)");
	}
	sched_scale(&cfg->sched, a->scale);
	if (cfg->path[0] != '/' || strpbrk(cfg->path, " \r\n") || strlen(cfg->path) > 512)
		die_usage("--path must start with / and contain no spaces");
	if (cfg->conns > cfg->max_conns)
		cfg->conns = cfg->max_conns;
	if (a->feed) {
		cfg->feed = fopen(a->feed, "a");
		if (!cfg->feed)
			die_usage("cannot open feed file %s: %s", a->feed, strerror(errno));
	}
}

static void parse_args(int argc, char **argv, struct lg_config *cfg, bool *summary, bool *json)
{
	struct args a = { .rate = -1, .duration = -1, .scale = 1 };
	int c;

	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (c) {
#define NUM_SET(name, field, lo, hi)                         \
	case O_##field:                                      \
		cfg->field = num("--" name, optarg, lo, hi); \
		break;
			NUM_OPTS(NUM_SET)
#undef NUM_SET
		case O_HOST:
			if (inet_pton(AF_INET, optarg, &cfg->addr) != 1)
				die_usage("--host must be an IPv4 address, not '%s'", optarg);
			cfg->host = optarg;
			break;
		case O_SCHEDULE:
			a.schedule = optarg;
			break;
		case O_RATE:
			a.rate = num("--rate", optarg, 0, 1e8);
			break;
		case O_DURATION:
			a.duration = num("--duration", optarg, 0.001, 1e7);
			break;
		case O_SCALE:
			a.scale = num("--scale", optarg, 0, 1e8);
			break;
		case O_PROTO:
			if (!strcmp(optarg, "http"))
				cfg->proto = LG_HTTP;
			else if (!strcmp(optarg, "memcached"))
				cfg->proto = LG_MEMCACHED;
			else
				die_usage("--proto is http or memcached, not '%s'", optarg);
			break;
		case O_KEEPALIVE:
			cfg->keepalive = true;
			break;
		case O_PATH:
			cfg->path = optarg;
			break;
		case O_NO_PRELOAD:
			cfg->preload = false;
			break;
		case O_FEED:
			a.feed = optarg;
			break;
		case O_SUMMARY:
			a.summary = true;
			break;
		case O_JSON:
			a.json = true;
			break;
		case O_VERBOSE:
			cfg->verbose = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			exit(0);
		default:
			fputs(usage_text, stderr);
			exit(2);
		}
	}
	if (optind < argc)
		die_usage("unexpected argument '%s' (see --help)", argv[optind]);
	finish_args(cfg, &a);
	*summary = a.summary;
	*json = a.json;
}

static void print_summary(const struct lg_config *cfg, const struct lg_result *r, bool json)
{
	double p50, p90, p99, p999, max = 0, mean = 0;
	double *v = r->lat_us.v;
	size_t n = r->lat_us.n;
	double rps = r->duration_s > 0 ? r->ok / r->duration_s : 0;
	double offered =
	    sched_duration(&cfg->sched) > 0 ? r->offered / sched_duration(&cfg->sched) : 0;

	/* lg_percentile sorts v, later calls can use the sorted array directly. */
	p50 = lg_percentile(v, n, 50);
	p90 = lg_percentile_sorted(v, n, 90);
	p99 = lg_percentile_sorted(v, n, 99);
	p999 = lg_percentile_sorted(v, n, 99.9);
	if (n)
		max = v[n - 1];
	for (size_t i = 0; i < n; i++)
		mean += v[i] / n;
	if (json) {
		struct jw j;

		jw_begin(&j, stdout);
		jw_str(&j, "proto", cfg->proto == LG_HTTP ? "http" : "memcached");
		jw_int(&j, "sent", r->sent);
		jw_int(&j, "ok", r->ok);
		jw_int(&j, "errors", r->errors);
		jw_int(&j, "late", r->late);
		jw_int(&j, "dropped", r->dropped);
		jw_int(&j, "timeouts", r->timeouts);
		jw_int(&j, "unsent", r->unsent);
		jw_int(&j, "abandoned", r->abandoned);
		jw_num(&j, "offered_rps", offered, 1);
		jw_num(&j, "achieved_rps", rps, 1);
		jw_num(&j, "duration_s", r->duration_s, 3);
		jw_num(&j, "p50_us", p50, 1);
		jw_num(&j, "p90_us", p90, 1);
		jw_num(&j, "p99_us", p99, 1);
		jw_num(&j, "p999_us", p999, 1);
		jw_num(&j, "max_us", max, 1);
		jw_num(&j, "mean_us", mean, 1);
		jw_int(&j, "conns_opened", r->conns_opened);
		jw_int(&j, "max_open", r->max_open);
		if (cfg->proto == LG_MEMCACHED) {
			jw_int(&j, "gets", r->gets);
			jw_int(&j, "hits", r->hits);
		}
		jw_end(&j);
		return;
	}
	printf("sent %lld ok %lld errors %lld late %lld\n", r->sent, r->ok, r->errors, r->late);
	printf("  dropped %lld timeouts %lld unsent %lld abandoned %lld conns_opened %lld "
	       "max_open %d\n",
	       r->dropped, r->timeouts, r->unsent, r->abandoned, r->conns_opened, r->max_open);
	printf("  offered %.1f rps, achieved %.1f rps over %.3f s\n", offered, rps, r->duration_s);
	printf("  latency us: p50 %.1f p90 %.1f p99 %.1f p99.9 %.1f max %.1f mean %.1f\n", p50, p90,
	       p99, p999, max, mean);
	if (cfg->proto == LG_MEMCACHED)
		printf("  gets %lld hits %lld\n", r->gets, r->hits);
	if (r->lat_us.dropped)
		printf("  (percentiles over the first %zu latencies; %zu more not kept)\n", n,
		       r->lat_us.dropped);
}

int main(int argc, char **argv)
{
	struct lg_config cfg = {
		.proto = LG_HTTP,
		.host = "127.0.0.1",
		.addr = { .s_addr = htonl(INADDR_LOOPBACK) },
		.conns = 16,
		.max_conns = 1000,
		.max_queue = 100000,
		.late_us = 1000,
		.req_timeout = 10,
		.drain_s = 5,
		.seed = 1,
		.path = "/",
		.keys = 10000,
		.zipf_alpha = 0.915,
		.get_ratio = 0.8,
		.value_size = 1024,
		.preload = true,
		.feed_ms = 100,
		.feed_window_s = 1,
		.feed_min_samples = 200,
	};
	struct lg_result res = { .lat_us.max = 50 * 1000 * 1000 };
	struct sigaction sa = { .sa_handler = on_signal };
	bool summary = false, json = false;
	int err;

	parse_args(argc, argv, &cfg, &summary, &json);
	/* No SA_RESTART: the loop's epoll wait returns EINTR and sees stop. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	err = lg_run(&cfg, &res, &stop);
	if (cfg.feed)
		fclose(cfg.feed);
	if (err) {
		lg_samples_free(&res.lat_us);
		return 2;
	}
	if (summary || !json)
		print_summary(&cfg, &res, false);
	if (json)
		print_summary(&cfg, &res, true);
	lg_samples_free(&res.lat_us);
	return res.errors ? 1 : 0;
}
