// SPDX-License-Identifier: MIT
/* parties' command line: getopt, --help and --version. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "policy.h"

#ifndef PARTIES_VERSION
#define PARTIES_VERSION "unknown"
#endif

static void usage(FILE *f)
{
	fprintf(f,
		"usage: parties -c FILE.ini [--dry-run] [--duration S] [--log FILE.jsonl] [-v]\n"
		"       parties -c FILE.ini --cleanup\n"
		"       parties -c FILE.ini --simulate [--seed N] [--log FILE.jsonl]\n"
		"       parties --check-config FILE.ini\n"
		"       parties --show-topology\n"
		"       parties --list-policies\n"
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
		"                       is then truncated, --duration is virtual seconds;\n"
		"                       refused (exit 2) above 100000 intervals, 1e9 offered\n"
		"                       requests, or 12e6 requests in the ebee windows\n"
		"      --seed N         override [controller] seed (policy and model)\n"
		"      --list-policies  print every policy and published variant, one a line\n"
		"                       (NAME, or NAME KEY=VALUE), and exit\n"
		"      --show-topology  print this machine's cpus as sysfs has them: SMT\n"
		"                       sibling groups per NUMA node, then exit\n"
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

/* --list-policies: a line per policy, or per variant of one (NAME KEY=VALUE),
 * for scripts such as the policy bench (experiments/policy-bench). */
static void list_policies(FILE *f)
{
	for (int i = 0; pol_registry[i]; i++) {
		const struct pol_ops *p = pol_registry[i];

		if (!p->variants || !p->variants[0])
			fprintf(f, "%s\n", p->name);
		for (int k = 0; p->variants && p->variants[k]; k++)
			fprintf(f, "%s %s\n", p->name, p->variants[k]);
	}
}

/* --duration S: 0, or -EINVAL said on stderr. */
static int parse_duration(const char *s, double *out)
{
	char *e;

	*out = strtod(s, &e);
	/* bounded: it becomes a uint64_t of ms ("inf" would not fit) */
	if (*e || e == s || !(*out > 0) || !(*out <= 1e9)) {
		fprintf(stderr,
			"parties: --duration: '%s' is not a number of seconds > 0 (at most 1e9)\n",
			s);
		return -EINVAL;
	}
	return 0;
}

/* After the options: no operands, and a config unless only the topology is
 * asked for. 0 or -EINVAL, said on stderr. */
static int args_check(int argc, char **argv, const struct args *a)
{
	if (optind < argc) {
		fprintf(stderr, "parties: unexpected argument '%s' (see --help)\n", argv[optind]);
		return -EINVAL;
	}
	if (!a->cfg_path && !a->show_topology) {
		fprintf(stderr, "parties: no configuration: give -c FILE.ini (see --help)\n");
		return -EINVAL;
	}
	return 0;
}

/* A flat switch of one case per option: longer than the rest but read one
 * case at a time, so it is kept whole. */
int args_parse(int argc, char **argv, struct args *a)
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
		{ "list-policies", no_argument, NULL, 'L' },
		{ "show-topology", no_argument, NULL, 'T' },
		{ 0 },
	};
	int opt;

	memset(a, 0, sizeof(*a));
	while ((opt = getopt_long(argc, argv, "c:nd:l:vhm:V", lopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			a->cfg_path = optarg;
			break;
		case 'n':
			a->dry_run = true;
			break;
		case 'd':
			if (parse_duration(optarg, &a->duration))
				return -EINVAL;
			break;
		case 'l':
			a->log_path = optarg;
			break;
		case 'C':
			a->cleanup = true;
			break;
		case 'K':
			a->cfg_path = optarg;
			a->check_only = true;
			break;
		case 'm':
			a->metrics_addr = optarg;
			break;
		case 'V':
			printf("parties %s\n", PARTIES_VERSION);
			return ARGS_DONE;
		case 'v':
			a->verbose = true;
			break;
		case 'S':
			a->simulate = true;
			break;
		case 'T':
			a->show_topology = true;
			break;
		case 's':
			a->seed_arg = optarg;
			break;
		case 'h':
			usage(stdout);
			return ARGS_DONE;
		case 'L':
			list_policies(stdout);
			return ARGS_DONE;
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	return args_check(argc, argv, a);
}
