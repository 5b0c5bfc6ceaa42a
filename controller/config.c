// SPDX-License-Identifier: MIT
/*
 * INI configuration through inih. The reader callback counts lines itself, so
 * the handler knows the line of every key (Debian's inih is built without
 * INI_HANDLER_LINENO) and the same code parses a file and a string.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "config.h"

/* read_pidfile(): not a regular file (an errno no open() of a pidfile returns) */
#define EFTYPE_NOTREG EMEDIUMTYPE

struct cfg_ctx {
	struct cfg *c;
	/* reader */
	FILE *fp;
	const char *text;
	int line;
	int long_line;	       /* first line longer than INI_MAX_LINE - 1 */
	int header_line;       /* line of the last [section] header read */
	int section_line;      /* header line of the section the handler is in */
	char header_name[128]; /* name in the last [section] header read */
	int freq_max_line, quota_total_line;
	/* handler */
	char err[256];
	int err_line;
	int wl; /* workload section being read, or -1 */
	char section[128];
	char pol_section[POL_NAME_LEN]; /* [policy NAME] being read */
	/* params of every [policy NAME], checked once the policy is known */
	int nall;
	struct {
		char policy[POL_NAME_LEN];
		struct cfg_param p;
	} all[CFG_MAX_PARAMS];
	unsigned int seen_controller, seen_resources, seen_wl; /* bit per key: duplicates */
};

void cfg_defaults(struct cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->interval_ms = 500; /* paper; the original code sampled every 100 ms */
	snprintf(c->policy, sizeof(c->policy), "parties");
	c->seed = 1;
	snprintf(c->cgroup_parent, sizeof(c->cgroup_parent), "parties");
	snprintf(c->state_dir, sizeof(c->state_dir), "/run/parties");
	c->ebee = CFG_AUTO;
	c->avg_window_ms = 1000;
	c->stale_intervals = 3;
	c->cores = true;
	c->freq = CFG_AUTO;
	c->freq_step_mhz = 100;
	c->quota_step = 0.1;
	sim_cfg_defaults(&c->sim);
}

static int fail(struct cfg_ctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Record the first error with the current line; returns 0 (inih: failure). */
static int fail(struct cfg_ctx *x, const char *fmt, ...)
{
	va_list ap;

	if (x->err[0])
		return 0;
	va_start(ap, fmt);
	vsnprintf(x->err, sizeof(x->err), fmt, ap);
	va_end(ap);
	x->err_line = x->line;
	return 0;
}

static int enter_section(struct cfg_ctx *x, const char *section);

/*
 * inih reports a section only through its keys, so a section without any
 * ([workload b] whose keys are all commented out, a misspelt empty section)
 * would pass unseen. The reader checks such a section itself when the next
 * header or the end of the file shows it had no key.
 */
static void end_of_section(struct cfg_ctx *x)
{
	if (x->header_line && x->header_line != x->section_line)
		enter_section(x, x->header_name);
}

/* A [header] line: remember its name as inih will read it (up to the first ']'). */
static void header(struct cfg_ctx *x, const char *p)
{
	const char *end = strchr(p + 1, ']');

	if (!end)
		return; /* inih: a syntax error, and the section goes on */
	end_of_section(x);
	x->header_line = x->line;
	snprintf(x->header_name, sizeof(x->header_name), "%.*s", (int)(end - p - 1), p + 1);
}

static char *reader(char *str, int num, void *stream)
{
	struct cfg_ctx *x = stream;
	int n = 0;

	if (x->fp) {
		if (!fgets(str, num, x->fp)) {
			end_of_section(x);
			return NULL;
		}
		n = (int)strlen(str);
		if (n == num - 1 && str[n - 1] != '\n') {
			int ch;

			while ((ch = fgetc(x->fp)) != EOF && ch != '\n')
				;
			if (!x->long_line)
				x->long_line = x->line + 1;
		}
	} else {
		const char *nl;
		size_t len;

		if (!*x->text) {
			end_of_section(x);
			return NULL;
		}
		nl = strchr(x->text, '\n');
		len = nl ? (size_t)(nl - x->text + 1) : strlen(x->text);
		if (len > (size_t)num - 1) {
			if (!x->long_line)
				x->long_line = x->line + 1;
			memcpy(str, x->text, (size_t)num - 1);
			str[num - 1] = '\0';
		} else {
			memcpy(str, x->text, len);
			str[len] = '\0';
		}
		x->text += len;
	}
	x->line++;
	{
		const char *p = str;

		while (isspace((unsigned char)*p))
			p++;
		if (*p == '[')
			header(x, p);
	}
	return str;
}

static bool parse_bool(const char *v, bool *out)
{
	static const char *const yes[] = { "true", "yes", "on", "1" };
	static const char *const no[] = { "false", "no", "off", "0" };

	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(v, yes[i])) {
			*out = true;
			return true;
		}
		if (!strcasecmp(v, no[i])) {
			*out = false;
			return true;
		}
	}
	return false;
}

static bool parse_double(const char *v, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(v, &end);
	return !errno && end != v && !*end && isfinite(*out);
}

static bool parse_long(const char *v, long lo, long hi, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(v, &end, 10);
	return !errno && end != v && !*end && *out >= lo && *out <= hi;
}

static bool parse_tristate(const char *v, enum cfg_tristate *t)
{
	bool b;

	if (!strcmp(v, "auto")) {
		*t = CFG_AUTO;
		return true;
	}
	if (!parse_bool(v, &b))
		return false;
	*t = b ? CFG_ON : CFG_OFF;
	return true;
}

/*
 * A workload name or cgroup_parent becomes a directory next to the cgroup's
 * control files. Those all contain a '.' (cgroup.procs, cpuset.cpus) except
 * the v1 files below, so a name without dots that is not one of them can
 * never be taken for a control file.
 */
#define NAME_RULE                                                                    \
	"[A-Za-z0-9_-], starting with a letter or digit, 1 to 63 bytes, not tasks, " \
	"notify_on_release or release_agent"
static bool valid_name(const char *s)
{
	static const char *const reserved[] = { "tasks", "notify_on_release", "release_agent",
						NULL };
	size_t n = strlen(s);

	if (!n || n >= CFG_NAME_LEN || !isalnum((unsigned char)s[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_-", s[i]))
			return false;
	for (int i = 0; reserved[i]; i++)
		if (!strcmp(s, reserved[i]))
			return false;
	return true;
}

#define NUM(key, lo, hi, dst)                                                                  \
	do {                                                                                   \
		long v_;                                                                       \
		if (!parse_long(val, lo, hi, &v_))                                             \
			return fail(x, "%s: '%s' is not a whole number in %ld..%ld", key, val, \
				    (long)(lo), (long)(hi));                                   \
		(dst) = v_;                                                                    \
	} while (0)

#define REAL(key, dst)                                                        \
	do {                                                                  \
		if (!parse_double(val, &(dst)))                               \
			return fail(x, "%s: '%s' is not a number", key, val); \
	} while (0)

#define BOOL(key, dst)                                                                         \
	do {                                                                                   \
		if (!parse_bool(val, &(dst)))                                                  \
			return fail(x, "%s: '%s' is not a boolean (true or false)", key, val); \
	} while (0)

/* Quotas are turned into integers (millicores, us): keep them far from overflow. */
static int cores_in_range(struct cfg_ctx *x, const char *key, const char *val, double v)
{
	if (v > ACT_CPUMASK_MAX)
		return fail(x, "%s must be at most %d cores, not %s", key, ACT_CPUMASK_MAX, val);
	return 1;
}

/* A key may appear once per section; bit i of *seen stands for keys[i]. */
static int once(struct cfg_ctx *x, unsigned int *seen, const char *const *keys, const char *key)
{
	for (int i = 0; keys[i]; i++) {
		if (strcmp(keys[i], key))
			continue;
		if (*seen & (1u << i))
			return fail(x, "%s given twice in [%s]", key, x->section);
		*seen |= 1u << i;
		return 1;
	}
	return 1;
}

static const char *const controller_keys[] = {
	"interval_ms",	 "policy",	    "seed", "log",
	"cgroup_parent", "state_dir",	    "ebee", "ebee_window_ms",
	"avg_window_ms", "stale_intervals", NULL,
};

static int controller_key(struct cfg_ctx *x, const char *key, const char *val)
{
	struct cfg *c = x->c;
	long v;

	if (!once(x, &x->seen_controller, controller_keys, key))
		return 0;
	if (!strcmp(key, "interval_ms")) {
		NUM(key, 10, 60000, c->interval_ms);
	} else if (!strcmp(key, "policy")) {
		if (!pol_find(val)) {
			char names[128] = "";

			for (int i = 0; pol_registry[i]; i++) {
				size_t n = strlen(names);
				snprintf(names + n, sizeof(names) - n, "%s%s", i ? ", " : "",
					 pol_registry[i]->name);
			}
			return fail(x, "policy: unknown policy '%s' (have: %s)", val, names);
		}
		snprintf(c->policy, sizeof(c->policy), "%s", val);
		c->policy_line = x->line;
	} else if (!strcmp(key, "seed")) {
		char *end;

		errno = 0;
		c->seed = strtoull(val, &end, 0);
		if (errno || end == val || *end || *val == '-')
			return fail(x, "seed: '%s' is not a whole number >= 0", val);
	} else if (!strcmp(key, "log")) {
		snprintf(c->log, sizeof(c->log), "%s", val);
		c->log_line = x->line;
	} else if (!strcmp(key, "cgroup_parent")) {
		if (!valid_name(val))
			return fail(x, "cgroup_parent: '%s' must be " NAME_RULE, val);
		snprintf(c->cgroup_parent, sizeof(c->cgroup_parent), "%s", val);
	} else if (!strcmp(key, "state_dir")) {
		snprintf(c->state_dir, sizeof(c->state_dir), "%s", val);
		c->state_dir_line = x->line;
	} else if (!strcmp(key, "ebee")) {
		if (!parse_tristate(val, &c->ebee))
			return fail(x, "ebee: '%s' must be auto, true or false", val);
	} else if (!strcmp(key, "ebee_window_ms")) {
		NUM(key, 0, 600000, c->ebee_window_ms);
	} else if (!strcmp(key, "avg_window_ms")) {
		NUM(key, 0, 600000, c->avg_window_ms);
	} else if (!strcmp(key, "stale_intervals")) {
		NUM(key, 1, 1000, v);
		c->stale_intervals = (unsigned int)v;
	} else {
		return fail(x, "unknown key '%s' in [controller]", key);
	}
	return 1;
}

static const char *const resources_keys[] = {
	"cpus",		 "cores", "freq",	"freq_min_mhz", "freq_max_mhz",
	"freq_step_mhz", "quota", "quota_step", "quota_total",	NULL,
};

static int resources_key(struct cfg_ctx *x, const char *key, const char *val)
{
	struct cfg *c = x->c;

	if (!once(x, &x->seen_resources, resources_keys, key))
		return 0;
	if (!strcmp(key, "cpus")) {
		int err = act_cpumask_parse(val, &c->cpus);

		if (err || act_cpumask_empty(&c->cpus))
			return fail(x, "cpus: '%s' is not a non-empty cpu list (e.g. 0-3,6)", val);
		c->cpus_line = x->line;
	} else if (!strcmp(key, "cores")) {
		BOOL(key, c->cores);
	} else if (!strcmp(key, "freq")) {
		if (!parse_tristate(val, &c->freq))
			return fail(x, "freq: '%s' must be auto, true or false", val);
	} else if (!strcmp(key, "freq_min_mhz")) {
		NUM(key, 0, 100000, c->freq_min_mhz);
	} else if (!strcmp(key, "freq_max_mhz")) {
		NUM(key, 0, 100000, c->freq_max_mhz);
		x->freq_max_line = x->line;
	} else if (!strcmp(key, "freq_step_mhz")) {
		NUM(key, 1, 10000, c->freq_step_mhz);
	} else if (!strcmp(key, "quota")) {
		BOOL(key, c->quota);
	} else if (!strcmp(key, "quota_step")) {
		REAL(key, c->quota_step);
		if (c->quota_step < 0.01)
			return fail(x, "quota_step must be at least 0.01 cores, not %s", val);
		return cores_in_range(x, key, val, c->quota_step);
	} else if (!strcmp(key, "quota_total")) {
		REAL(key, c->quota_total);
		if (c->quota_total < 0)
			return fail(x, "quota_total must be >= 0, not %s", val);
		x->quota_total_line = x->line;
		return cores_in_range(x, key, val, c->quota_total);
	} else {
		return fail(x, "unknown key '%s' in [resources]", key);
	}
	return 1;
}

/*
 * Non-blocking, regular files only: a FIFO here would stall start-up.
 * -EFTYPE_NOTREG when it is something else.
 */
static int read_pidfile(const char *path, pid_t *pid)
{
	char buf[32];
	struct stat st;
	ssize_t n;
	char *end;
	long v;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EFTYPE_NOTREG;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EINVAL;
	buf[n] = '\0';
	errno = 0;
	v = strtol(buf, &end, 10);
	if (errno || end == buf || (*end && !isspace((unsigned char)*end)) || v <= 0 ||
	    v > INT32_MAX)
		return -EINVAL;
	*pid = (pid_t)v;
	return 0;
}

int cfg_workload_pid(const struct cfg_workload *w, pid_t *pid)
{
	int err;

	if (w->find == CFG_FIND_PID) {
		*pid = w->pid;
	} else if (w->find == CFG_FIND_PIDFILE) {
		err = read_pidfile(w->pidfile, pid);
		if (err)
			return err;
	} else {
		return -EINVAL;
	}
	if (kill(*pid, 0) && errno == ESRCH)
		return -ESRCH;
	return 0;
}

/* Is the first word of a shell command something we can run? */
static bool runnable(const char *cmd)
{
	char word[CFG_PATH_LEN], path[2 * CFG_PATH_LEN];
	const char *p = cmd, *env;
	size_t n = 0;

	while (isspace((unsigned char)*p))
		p++;
	if (!strncmp(p, "exec ", 5))
		p += 5;
	while (isspace((unsigned char)*p))
		p++;
	while (*p && !isspace((unsigned char)*p) && n < sizeof(word) - 1)
		word[n++] = *p++;
	word[n] = '\0';
	if (!n)
		return false;
	if (strchr(word, '='))
		return true; /* VAR=value cmd: let the shell judge */
	if (strchr(word, '/'))
		return access(word, X_OK) == 0;
	env = getenv("PATH");
	if (!env)
		env = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";
	while (*env) {
		const char *e = strchr(env, ':');
		size_t len = e ? (size_t)(e - env) : strlen(env);

		snprintf(path, sizeof(path), "%.*s/%s", (int)len, env, word);
		if (access(path, X_OK) == 0)
			return true;
		env += len + (e ? 1 : 0);
	}
	return false;
}

static int set_find(struct cfg_ctx *x, struct cfg_workload *w, enum cfg_find f, const char *key)
{
	if (w->find != CFG_FIND_NONE)
		return fail(x,
			    "workload %s: give only one of pid, pidfile, command, cgroup and unit "
			    "(%s given "
			    "after line %d)",
			    w->name, key, w->find_line);
	w->find = f;
	w->find_line = x->line;
	return 1;
}

static int feed_exists(struct cfg_ctx *x, const struct cfg_workload *w, const char *path)
{
	struct stat st;

	if (!*path)
		return fail(x, "workload %s: empty feed file name", w->name);
	if (stat(path, &st))
		return fail(x,
			    "workload %s: feed file %s does not exist (start the load generator "
			    "with --feed %s first)",
			    w->name, path, path);
	if (!S_ISREG(st.st_mode))
		return fail(x, "workload %s: feed %s is not a regular file", w->name, path);
	return 1;
}

static const char *const workload_keys[] = {
	"pid",	  "pidfile", "command",	  "target_ms",	  "min_cores", "max_cores",
	"cores",  "cpus",    "quota",	  "min_quota",	  "max_quota", "freq_mhz",
	"source", "feed",    "ebee_mode", "ebee_latency", "user",	     "group",
	"cgroup", "unit",    NULL,
};

static int workload_key(struct cfg_ctx *x, const char *key, const char *val)
{
	struct cfg_workload *w = &x->c->wl[x->wl];
	long v;

	if (!once(x, &x->seen_wl, workload_keys, key))
		return 0;
	if (!strcmp(key, "pid")) {
		if (!parse_long(val, 1, INT32_MAX, &v))
			return fail(x, "pid: '%s' is not a process id", val);
		if (!set_find(x, w, CFG_FIND_PID, key))
			return 0;
		w->pid = (pid_t)v;
		if (kill(w->pid, 0) && errno == ESRCH)
			return fail(x, "workload %s: no process with pid %d", w->name, w->pid);
	} else if (!strcmp(key, "pidfile")) {
		int err;

		if (!set_find(x, w, CFG_FIND_PIDFILE, key))
			return 0;
		snprintf(w->pidfile, sizeof(w->pidfile), "%s", val);
		err = cfg_workload_pid(w, &w->pid);
		if (err == -ESRCH)
			return fail(x, "workload %s: pidfile %s names pid %d, which is not running",
				    w->name, val, w->pid);
		if (err == -EFTYPE_NOTREG)
			return fail(x, "workload %s: pidfile %s is not a regular file", w->name,
				    val);
		if (err)
			return fail(x, "workload %s: cannot read a pid from pidfile %s (%s)",
				    w->name, val, strerror(-err));
	} else if (!strcmp(key, "cgroup")) {
		const char *p = val;

		if (!set_find(x, w, CFG_FIND_CGROUP, key))
			return 0;
		while (*p == '/')
			p++;
		if (!*p || strstr(val, "..") || strstr(p, "//") || p[strlen(p) - 1] == '/' ||
		    strlen(val) >= sizeof(w->cgroup))
			return fail(x,
				    "workload %s: cgroup '%s' is not a cgroup path below the root "
				    "(e.g. /system.slice/web.service; no '..', not the root)",
				    w->name, val);
		snprintf(w->cgroup, sizeof(w->cgroup), "%s", val);
	} else if (!strcmp(key, "unit")) {
		size_t n = strlen(val);

		if (!set_find(x, w, CFG_FIND_UNIT, key))
			return 0;
		if (n <= 8 || n >= sizeof(w->cgroup) || strcmp(val + n - 8, ".service") ||
		    strspn(val, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:_.@-\\") != n)
			return fail(x, "workload %s: unit '%s' is not a systemd service name (NAME.service)",
				    w->name, val);
		snprintf(w->cgroup, sizeof(w->cgroup), "%s", val);
	} else if (!strcmp(key, "command")) {
		if (!set_find(x, w, CFG_FIND_COMMAND, key))
			return 0;
		if (strlen(val) >= sizeof(w->command))
			return fail(x, "command: longer than %zu bytes", sizeof(w->command) - 1);
		snprintf(w->command, sizeof(w->command), "%s", val);
		if (!runnable(val))
			return fail(x,
				    "workload %s: command '%s' cannot be run (not found or not "
				    "executable)",
				    w->name, val);
	} else if (!strcmp(key, "target_ms")) {
		double d;

		REAL(key, d);
		if (d <= 0)
			return fail(x, "target_ms must be > 0, not %s", val);
		if (d > 3600000)
			return fail(x, "target_ms must be at most 3600000 (an hour), not %s", val);
		w->target_us = d * 1000.0;
		w->target_line = x->line;
	} else if (!strcmp(key, "min_cores")) {
		NUM(key, 1, ACT_CPUMASK_MAX, w->min_cores);
		w->min_line = x->line;
	} else if (!strcmp(key, "max_cores")) {
		NUM(key, 0, ACT_CPUMASK_MAX, w->max_cores);
		w->max_line = x->line;
	} else if (!strcmp(key, "cores")) {
		NUM(key, 1, ACT_CPUMASK_MAX, w->cores);
		w->cores_line = x->line;
	} else if (!strcmp(key, "cpus")) {
		if (act_cpumask_parse(val, &w->cpus) || act_cpumask_empty(&w->cpus))
			return fail(x, "cpus: '%s' is not a non-empty cpu list (e.g. 0-1)", val);
		w->has_cpus = true;
		w->cpus_line = x->line;
	} else if (!strcmp(key, "quota")) {
		REAL(key, w->quota);
		if (w->quota <= 0)
			return fail(x, "quota must be > 0 cores, not %s", val);
		w->quota_line = x->line;
		return cores_in_range(x, key, val, w->quota);
	} else if (!strcmp(key, "min_quota")) {
		REAL(key, w->min_quota);
		if (w->min_quota <= 0)
			return fail(x, "min_quota must be > 0 cores, not %s", val);
		w->min_quota_line = x->line;
		return cores_in_range(x, key, val, w->min_quota);
	} else if (!strcmp(key, "max_quota")) {
		REAL(key, w->max_quota);
		if (w->max_quota < 0)
			return fail(x, "max_quota must be >= 0 cores, not %s", val);
		w->max_quota_line = x->line;
		return cores_in_range(x, key, val, w->max_quota);
	} else if (!strcmp(key, "freq_mhz")) {
		NUM(key, 0, 100000, w->freq_mhz);
	} else if (!strcmp(key, "source")) {
		w->source_line = x->line;
		if (!strcmp(val, "ebee")) {
			w->source = CFG_SRC_EBEE;
		} else if (!strcmp(val, "client")) {
			/* a simulation's modelled clients; a real run needs client:PATH */
			w->source = CFG_SRC_CLIENT;
		} else if (!strncmp(val, "client:", 7)) {
			w->source = CFG_SRC_CLIENT;
			if (!feed_exists(x, w, val + 7))
				return 0;
			snprintf(w->feed, sizeof(w->feed), "%s", val + 7);
			w->feed_line = x->line;
		} else {
			return fail(x, "source: '%s' must be ebee or client:PATH", val);
		}
	} else if (!strcmp(key, "feed")) {
		if (!feed_exists(x, w, val))
			return 0;
		snprintf(w->feed, sizeof(w->feed), "%s", val);
		w->feed_line = x->line;
	} else if (!strcmp(key, "ebee_mode")) {
		if (ebee_mode_parse(val, &w->ebee_mode))
			return fail(x, "ebee_mode: '%s' must be auto, conn, io or grpc", val);
		w->ebee_mode_line = x->line;
	} else if (!strcmp(key, "ebee_latency")) {
		if (!strcmp(val, "service"))
			w->ebee_latency = CFG_LAT_SERVICE;
		else if (!strcmp(val, "sojourn"))
			w->ebee_latency = CFG_LAT_SOJOURN;
		else
			return fail(x, "ebee_latency: '%s' must be service or sojourn", val);
		w->ebee_latency_line = x->line;
	} else if (!strcmp(key, "user") || !strcmp(key, "group")) {
		bool u = key[0] == 'u';

		/* whether it exists is a live check (config_live.c): parsing stays offline */
		if (!*val || strlen(val) >= sizeof(w->user))
			return fail(x, "%s: '%s' is not a %s name", key, val, key);
		snprintf(u ? w->user : w->group, sizeof(w->user), "%s", val);
		*(u ? &w->user_line : &w->group_line) = x->line;
	} else {
		char err[200];
		int r = sim_cfg_wl_key(&x->c->sim.wl[x->wl], key, val, x->line, err, sizeof(err));

		if (r < 0)
			return fail(x, "%s", err);
		if (!r)
			return fail(x, "unknown key '%s' in [workload %s]", key, w->name);
	}
	return 1;
}

/* An error about the section itself (enter_section reports it at the [header] line). */
static int fail_section(struct cfg_ctx *x, const char *what, const char *name, int first)
{
	if (first)
		return fail(x, "[%s] given twice (first at line %d)", x->section, first);
	return fail(x, "[%s]: %s '%s'%s", x->section, what, name,
		    !strcmp(what, "workload name") ? " must be " NAME_RULE : "");
}

/* A new section starts (at x->header_line): check its name, set up what its keys fill. */
static int start_section(struct cfg_ctx *x, const char *section)
{
	struct cfg *c = x->c;

	x->seen_wl = 0;
	snprintf(x->section, sizeof(x->section), "%s", section);
	x->wl = -1;
	x->pol_section[0] = '\0';
	if (!strncmp(section, "workload", 8) && isspace((unsigned char)section[8])) {
		const char *name = section + 9;

		while (isspace((unsigned char)*name))
			name++;
		if (!valid_name(name))
			return fail_section(x, "workload name", name, 0);
		for (int i = 0; i < c->nwl; i++)
			if (!strcmp(c->wl[i].name, name))
				return fail_section(x, "", "", c->wl[i].line);
		if (c->nwl == CFG_MAX_WL)
			return fail(x, "too many workloads (at most %d)", CFG_MAX_WL);
		x->wl = c->nwl++;
		snprintf(c->wl[x->wl].name, sizeof(c->wl[x->wl].name), "%s", name);
		c->wl[x->wl].line = x->section_line;
		c->wl[x->wl].min_cores = 1;
		c->wl[x->wl].ebee_latency = CFG_LAT_SOJOURN;
	} else if (!strncmp(section, "policy", 6) && isspace((unsigned char)section[6])) {
		const char *name = section + 7;

		while (isspace((unsigned char)*name))
			name++;
		if (!pol_find(name))
			return fail_section(x, "unknown policy", name, 0);
		snprintf(x->pol_section, sizeof(x->pol_section), "%s", name);
	}
	if (!strcmp(section, "simulation")) {
		c->sim.enabled = true;
		c->sim.line = x->section_line;
	}
	if (x->wl < 0 && !x->pol_section[0] && strcmp(section, "controller") &&
	    strcmp(section, "resources") && strcmp(section, "simulation"))
		return fail(
		    x, "unknown section [%s] (controller, resources, workload NAME, policy NAME)",
		    section);
	return 1;
}

/* Errors about a section are reported at its header; the reader's line count is kept. */
static int enter_section(struct cfg_ctx *x, const char *section)
{
	int line = x->line, ret;

	x->section_line = x->header_line;
	x->line = x->section_line;
	ret = start_section(x, section);
	x->line = line;
	return ret;
}

static int handler(void *user, const char *section, const char *key, const char *val)
{
	struct cfg_ctx *x = user;

	if (x->header_line != x->section_line && !enter_section(x, section))
		return 0;
	if (!strcmp(section, "controller"))
		return controller_key(x, key, val);
	if (!strcmp(section, "resources"))
		return resources_key(x, key, val);
	if (!strcmp(section, "simulation")) {
		char err[200];

		if (sim_cfg_key(&x->c->sim, key, val, x->line, err, sizeof(err)))
			return fail(x, "%s", err);
		return 1;
	}
	if (x->wl >= 0)
		return workload_key(x, key, val);
	if (x->pol_section[0]) {
		const struct pol_ops *ops = pol_find(x->pol_section);
		char err[200];

		if (!ops->check_param)
			return fail(x, "policy %s takes no settings (%s)", ops->name, key);
		if (ops->check_param(key, val, err, sizeof(err)))
			return fail(x, "[%s] %s", section, err);
		if (x->nall == CFG_MAX_PARAMS)
			return fail(x, "too many policy settings (at most %d)", CFG_MAX_PARAMS);
		snprintf(x->all[x->nall].policy, sizeof(x->all[x->nall].policy), "%s",
			 x->pol_section);
		snprintf(x->all[x->nall].p.key, sizeof(x->all[x->nall].p.key), "%s", key);
		snprintf(x->all[x->nall].p.val, sizeof(x->all[x->nall].p.val), "%s", val);
		x->all[x->nall].p.line = x->line;
		x->nall++;
		return 1;
	}
	return 0; /* a key of a section refused when it started */
}

static int online_cpus(struct act_cpumask *m)
{
	char buf[256] = "";
	FILE *f = fopen("/sys/devices/system/cpu/online", "r");

	if (!f)
		return -errno;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return act_cpumask_parse(buf, m);
}

/* Checks that need the whole file. Sets x->err/err_line. */
static int validate(struct cfg_ctx *x)
{
	struct cfg *c = x->c;
	struct act_cpumask used;
	int ncpus, summin = 0;
	char buf[64];

	x->line = x->line ? x->line : 1; /* the end of the file: where the section is missing */
	if (c->nwl == 0) {
		fail(x, "no [workload NAME] section: nothing to manage");
		return -EINVAL;
	}
	x->line = 0;
	if (c->sim.enabled && act_cpumask_empty(&c->cpus)) /* the modelled machine's */
		for (int i = 0; i < c->sim.cores && i < ACT_CPUMASK_MAX; i++)
			act_cpumask_set(&c->cpus, i);
	if (act_cpumask_empty(&c->cpus) && online_cpus(&c->cpus)) {
		fail(x, "cannot read /sys/devices/system/cpu/online; set [resources] cpus");
		return -EINVAL;
	}
	ncpus = act_cpumask_count(&c->cpus);
	if (c->quota_total == 0)
		c->quota_total = ncpus;
	if (c->freq_min_mhz && c->freq_max_mhz && c->freq_min_mhz > c->freq_max_mhz) {
		x->line = x->freq_max_line;
		fail(x, "[resources] freq_min_mhz %ld > freq_max_mhz %ld", c->freq_min_mhz,
		     c->freq_max_mhz);
		return -EINVAL;
	}
	act_cpumask_zero(&used);
	for (int i = 0; i < c->nwl; i++) {
		struct cfg_workload *w = &c->wl[i];
		int maxc = w->max_cores ? w->max_cores : ncpus;

		x->line = w->line;
		if (c->sim.enabled) {
			char err[200];
			int line;

			if (sim_cfg_validate_wl(&c->sim, i, w->name, w->line, err, sizeof(err),
						&line)) {
				x->line = line;
				fail(x, "%s", err);
				return -EINVAL;
			}
		} else if (w->source == CFG_SRC_CLIENT && !w->feed[0]) {
			x->line = w->source_line;
			fail(x,
			     "workload %s: source = client needs a feed (client:PATH) outside "
			     "a simulation",
			     w->name);
			return -EINVAL;
		}
		if (w->find == CFG_FIND_NONE && !c->sim.enabled) {
			fail(x, "workload %s: say how to find it (pid, pidfile, command, cgroup or unit)",
			     w->name);
			return -EINVAL;
		}
		if (w->target_us <= 0) {
			fail(x, "workload %s: target_ms is required", w->name);
			return -EINVAL;
		}
		if (w->min_cores > maxc) {
			x->line = w->max_line ? w->max_line : w->min_line;
			fail(x, "workload %s: min_cores %d > max_cores %d", w->name, w->min_cores,
			     maxc);
			return -EINVAL;
		}
		if (w->cores && (w->cores < w->min_cores || w->cores > maxc)) {
			x->line = w->cores_line;
			fail(x, "workload %s: cores %d outside min_cores..max_cores (%d..%d)",
			     w->name, w->cores, w->min_cores, maxc);
			return -EINVAL;
		}
		if (w->has_cpus) {
			int n = act_cpumask_count(&w->cpus);

			x->line = w->cpus_line;
			if (!act_cpumask_subset(&w->cpus, &c->cpus)) {
				act_cpumask_format(&c->cpus, buf, sizeof(buf));
				fail(x, "workload %s: cpus outside the managed cpus (%s)", w->name,
				     buf);
				return -EINVAL;
			}
			if (act_cpumask_intersects(&w->cpus, &used)) {
				fail(x, "workload %s: cpus overlap another workload's", w->name);
				return -EINVAL;
			}
			if (w->cores && w->cores != n) {
				fail(x, "workload %s: cpus has %d cpus but cores = %d", w->name, n,
				     w->cores);
				return -EINVAL;
			}
			if (n < w->min_cores || n > maxc) {
				fail(x,
				     "workload %s: %d cpus outside min_cores..max_cores (%d..%d)",
				     w->name, n, w->min_cores, maxc);
				return -EINVAL;
			}
			act_cpumask_or(&used, &used, &w->cpus);
		}
		summin += w->has_cpus ? act_cpumask_count(&w->cpus)
			  : w->cores  ? w->cores
				      : w->min_cores;
		if (summin > ncpus) {
			x->line = w->line;
			fail(x, "workload %s: the workloads need at least %d cpus, %d are managed",
			     w->name, summin, ncpus);
			return -EINVAL;
		}
		if (w->source == CFG_SRC_EBEE && c->ebee == CFG_OFF) {
			x->line = w->source_line ? w->source_line : w->line;
			fail(x, "workload %s: source ebee but [controller] ebee = false", w->name);
			return -EINVAL;
		}
		if (c->quota) {
			double mn = w->min_quota ? w->min_quota : c->quota_step;
			double mx = w->max_quota ? w->max_quota : c->quota_total;

			if (mn > mx) {
				x->line = w->max_quota_line ? w->max_quota_line : w->min_quota_line;
				fail(x, "workload %s: min_quota %g > max_quota %g", w->name, mn,
				     mx);
				return -EINVAL;
			}
			if (w->quota && (w->quota < mn || w->quota > mx)) {
				x->line = w->quota_line;
				fail(x,
				     "workload %s: quota %g outside min_quota..max_quota (%g..%g)",
				     w->name, w->quota, mn, mx);
				return -EINVAL;
			}
		}
	}
	if (c->quota) {
		double sum = 0;
		int line = 0; /* of the last initial quota given */

		for (int i = 0; i < c->nwl; i++) {
			sum += c->wl[i].quota
				   ? c->wl[i].quota
				   : (c->wl[i].min_quota ? c->wl[i].min_quota : c->quota_step);
			if (c->wl[i].quota_line)
				line = c->wl[i].quota_line;
		}
		if (sum > c->quota_total + 1e-9) {
			x->line = x->quota_total_line ? x->quota_total_line : line;
			fail(x,
			     "the workloads' initial quotas add up to %g cores, quota_total is %g",
			     sum, c->quota_total);
			return -EINVAL;
		}
	}
	for (int i = 0; i < x->nall; i++) {
		if (strcmp(x->all[i].policy, c->policy))
			continue; /* settings of another policy: checked, not used */
		c->params[c->nparams++] = x->all[i].p;
	}
	/* PARTIES' released controller samples every 100 ms: `flavour = code`
	 * brings that interval along unless interval_ms is set explicitly. */
	if (!strcmp(c->policy, "parties") && !(x->seen_controller & 1u)) {
		for (int i = 0; i < c->nparams; i++)
			if (!strcmp(c->params[i].key, "flavour"))
				c->interval_ms = strcmp(c->params[i].val, "code") ? 500 : 100;
	}
	return 0;
}

static int load(struct cfg *c, struct cfg_ctx *x, const char *name, char *err, size_t err_len)
{
	int ret;

	snprintf(c->file, sizeof(c->file), "%s", name);
	x->c = c;
	x->wl = -1;
	ret = ini_parse_stream(reader, x, handler, x);
	if (ret == 0 && x->long_line)
		ret = x->long_line;
	if (ret == 0 && x->err[0])
		ret = x->err_line; /* found by the reader: a section without keys */
	if (ret == -2) {
		snprintf(err, err_len, "%s: out of memory", name);
		return -ENOMEM;
	}
	if (ret > 0) {
		if (x->long_line && x->long_line <= ret &&
		    (!x->err[0] || x->long_line < x->err_line))
			snprintf(err, err_len, "%s:%d: line longer than %d characters", name,
				 x->long_line, INI_MAX_LINE - 1);
		else if (x->err[0] && x->err_line <= ret)
			snprintf(err, err_len, "%s:%d: %s", name, x->err_line, x->err);
		else
			snprintf(
			    err, err_len,
			    "%s:%d: syntax error (expected [section], key = value or a comment)",
			    name, ret);
		return -EINVAL;
	}
	if (validate(x)) {
		if (x->line > 0)
			snprintf(err, err_len, "%s:%d: %s", name, x->line, x->err);
		else
			snprintf(err, err_len, "%s: %s", name, x->err);
		return -EINVAL;
	}
	return 0;
}

/*
 * The configuration runs commands as root: like sudoers or sshd_config, a
 * file that someone other than root (or the user running us) may write is a
 * privilege escalation, and is refused. Checked on the open descriptor, and
 * opened non-blocking so that a FIFO is refused rather than waited on.
 */
static int open_config(const char *path, FILE **out, char *err, size_t err_len)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY), e;
	struct stat st;

	if (fd < 0) {
		e = -errno;
		snprintf(err, err_len, "%s: cannot open: %s", path, strerror(errno));
		return e;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(err, err_len, "%s: not a regular file", path);
		close(fd);
		return -EINVAL;
	}
	if ((st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & S_IWOTH) ||
	    ((st.st_mode & S_IWGRP) && st.st_gid != 0)) {
		snprintf(err, err_len,
			 "%s: writable by users other than root (owner uid %u, mode %04o): "
			 "its commands run as root; chown root and chmod go-w it",
			 path, (unsigned int)st.st_uid, (unsigned int)(st.st_mode & 07777));
		close(fd);
		return -EPERM;
	}
	/* a regular file: reads no longer need O_NONBLOCK */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	*out = fdopen(fd, "r");
	if (!*out) {
		e = -errno;
		snprintf(err, err_len, "%s: %s", path, strerror(errno));
		close(fd);
		return e;
	}
	return 0;
}

int cfg_load_file(struct cfg *c, const char *path, char *err, size_t err_len)
{
	struct cfg_ctx *x = calloc(1, sizeof(*x));
	int ret;

	if (!x)
		return -ENOMEM;
	cfg_defaults(c);
	ret = open_config(path, &x->fp, err, err_len);
	if (ret) {
		free(x);
		return ret;
	}
	ret = load(c, x, path, err, err_len);
	fclose(x->fp);
	free(x);
	return ret;
}

int cfg_load_string(struct cfg *c, const char *name, const char *text, char *err, size_t err_len)
{
	struct cfg_ctx *x = calloc(1, sizeof(*x));
	int ret;

	if (!x)
		return -ENOMEM;
	cfg_defaults(c);
	x->text = text;
	ret = load(c, x, name, err, err_len);
	free(x);
	return ret;
}
