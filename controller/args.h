/* SPDX-License-Identifier: MIT */
/*
 * parties' command line: what each option asks for, nothing resolved yet
 * (the config's log, the policy and the live checks come after loading the
 * file, in main.c).
 */
#ifndef PARTIES_ARGS_H
#define PARTIES_ARGS_H

#include <stdbool.h>

struct args {
	const char *cfg_path;	  /* -c FILE, or --check-config FILE */
	const char *log_path;	  /* --log FILE, or NULL */
	const char *metrics_addr; /* --metrics ADDR, or NULL */
	const char *seed_arg;	  /* --seed N as given (read once the file is loaded) */
	double duration;	  /* --duration S; 0: until a signal */
	bool dry_run;		  /* --dry-run */
	bool cleanup;		  /* --cleanup */
	bool check_only;	  /* --check-config */
	bool simulate;		  /* --simulate */
	bool verbose;		  /* --verbose */
	bool show_topology;	  /* --show-topology */
};

/* args_parse()'s answer when it printed --help, --version or --list-policies:
 * exit 0. */
#define ARGS_DONE 1

/*
 * Parse argv into a. 0: run; ARGS_DONE: --help or --version was printed;
 * -EINVAL: bad arguments, said on stderr (usage or one line), exit 2.
 */
int args_parse(int argc, char **argv, struct args *a);

#endif /* PARTIES_ARGS_H */
