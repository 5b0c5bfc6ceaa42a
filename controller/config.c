// SPDX-License-Identifier: MIT
/*
 * INI configuration through inih: parse from the key tables, resolve the
 * defaults, check the file as a whole (config.h). The reader callback
 * counts lines itself, so the handler knows the line of every key (Debian's
 * inih is built without INI_HANDLER_LINENO) and the same code parses a file
 * and a string. Nothing here looks at the running system beyond the list of
 * online cpus: processes, files and users are config_live.c's.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "config.h"
#include "res/res.h"
#include "topology.h"

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
};

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

static int bad_at(struct cfg_ctx *x, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* An error of the file as a whole, about line (0: none). -EINVAL. */
static int bad_at(struct cfg_ctx *x, int line, const char *fmt, ...)
{
	va_list ap;

	x->line = line;
	if (!x->err[0]) {
		va_start(ap, fmt);
		vsnprintf(x->err, sizeof(x->err), fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
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

/* ------------------------------------------------------------ key readers */

static char *field(const struct cfg_key *k, void *base)
{
	return (char *)base + k->off;
}

static int key_policy(const struct cfg_key *k, void *base, const char *val, void *ctx, char *err,
		      size_t len)
{
	char names[128] = "";

	if (pol_find(val)) {
		snprintf(field(k, base), k->size, "%s", val);
		return 0;
	}
	for (int i = 0; pol_registry[i]; i++) {
		size_t n = strlen(names);

		snprintf(names + n, sizeof(names) - n, "%s%s", i ? ", " : "",
			 pol_registry[i]->name);
	}
	return cfg_key_err(err, len, "policy: unknown policy '%s' (have: %s)", val, names);
}

static int key_seed(const struct cfg_key *k, void *base, const char *val, void *ctx, char *err,
		    size_t len)
{
	char *end;

	errno = 0;
	*(uint64_t *)field(k, base) = strtoull(val, &end, 0);
	if (errno || end == val || *end || *val == '-')
		return cfg_key_err(err, len, "seed: '%s' is not a whole number >= 0", val);
	return 0;
}

static int key_name(const struct cfg_key *k, void *base, const char *val, void *ctx, char *err,
		    size_t len)
{
	if (!valid_name(val))
		return cfg_key_fail(k, val, err, len);
	snprintf(field(k, base), k->size, "%s", val);
	return 0;
}

static int key_cpus(const struct cfg_key *k, void *base, const char *val, void *ctx, char *err,
		    size_t len)
{
	struct act_cpumask *m = (struct act_cpumask *)field(k, base);

	if (act_cpumask_parse(val, m) || act_cpumask_empty(m))
		return cfg_key_fail(k, val, err, len);
	return 0;
}

/* pid, pidfile, command, cgroup or unit: only one of them says how a workload is found. */
static int set_find(struct cfg_workload *w, const struct cfg_key *k, enum cfg_find f, char *err,
		    size_t len)
{
	if (w->find != CFG_FIND_NONE)
		return cfg_key_err(
		    err, len,
		    "workload %s: give only one of pid, pidfile, command, cgroup and unit "
		    "(%s given after line %d)",
		    w->name, k->name, cfg_find_line(w));
	w->find = f;
	return 0;
}

static int wl_pid(const struct cfg_key *k, void *base, const char *val, void *ctx, char *err,
		  size_t len)
{
	struct cfg_workload *w = base;
	long v;

	if (!cfg_parse_long(val, 1, INT32_MAX, &v))
		return cfg_key_err(err, len, "pid: '%s' is not a process id", val);
	if (set_find(w, k, CFG_FIND_PID, err, len))
		return -EINVAL;
	w->pid = (pid_t)v;
	return 0;
}

static int wl_pidfile(const struct cfg_key *k, void *base, const char *val, void *ctx, char *err,
		      size_t len)
{
	struct cfg_workload *w = base;

	if (set_find(w, k, CFG_FIND_PIDFILE, err, len))
		return -EINVAL;
	snprintf(w->pidfile, sizeof(w->pidfile), "%s", val);
	return 0;
}

static int wl_command(const struct cfg_key *k, void *base, const char *val, void *ctx, char *err,
		      size_t len)
{
	struct cfg_workload *w = base;

	if (set_find(w, k, CFG_FIND_COMMAND, err, len))
		return -EINVAL;
	if (strlen(val) >= sizeof(w->command))
		return cfg_key_err(err, len, "command: longer than %zu bytes",
				   sizeof(w->command) - 1);
	snprintf(w->command, sizeof(w->command), "%s", val);
	return 0;
}

static int wl_cgroup(const struct cfg_key *k, void *base, const char *val, void *ctx, char *err,
		     size_t len)
{
	struct cfg_workload *w = base;
	const char *p = val;

	if (set_find(w, k, CFG_FIND_CGROUP, err, len))
		return -EINVAL;
	while (*p == '/')
		p++;
	if (!*p || strstr(val, "..") || strstr(p, "//") || p[strlen(p) - 1] == '/' ||
	    strlen(val) >= sizeof(w->cgroup))
		return cfg_key_err(err, len,
				   "workload %s: cgroup '%s' is not a cgroup path below the root "
				   "(e.g. /system.slice/web.service; no '..', not the root)",
				   w->name, val);
	snprintf(w->cgroup, sizeof(w->cgroup), "%s", val);
	return 0;
}

static int wl_unit(const struct cfg_key *k, void *base, const char *val, void *ctx, char *err,
		   size_t len)
{
	static const char unit_chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
					 "0123456789:_.@-\\";
	struct cfg_workload *w = base;
	size_t n = strlen(val);

	if (set_find(w, k, CFG_FIND_UNIT, err, len))
		return -EINVAL;
	if (n <= 8 || n >= sizeof(w->cgroup) || strcmp(val + n - 8, ".service") ||
	    strspn(val, unit_chars) != n)
		return cfg_key_err(
		    err, len, "workload %s: unit '%s' is not a systemd service name (NAME.service)",
		    w->name, val);
	snprintf(w->cgroup, sizeof(w->cgroup), "%s", val);
	return 0;
}

/* Whether the feed file exists is a live check (config_live.c). */
static int set_feed(struct cfg_workload *w, const char *path, struct cfg_ctx *x, char *err,
		    size_t len)
{
	if (!*path)
		return cfg_key_err(err, len, "workload %s: empty feed file name", w->name);
	snprintf(w->feed, sizeof(w->feed), "%s", path);
	w->feed_line = x->line;
	return 0;
}

static int wl_source(const struct cfg_key *k, void *base, const char *val, void *ctx, char *err,
		     size_t len)
{
	struct cfg_workload *w = base;

	if (!strcmp(val, "ebee")) {
		w->source = CFG_SRC_EBEE;
	} else if (!strcmp(val, "client")) {
		/* a simulation's modelled clients; a real run needs client:PATH */
		w->source = CFG_SRC_CLIENT;
	} else if (!strncmp(val, "client:", 7)) {
		w->source = CFG_SRC_CLIENT;
		return set_feed(w, val + 7, ctx, err, len);
	} else {
		return cfg_key_err(err, len, "source: '%s' must be ebee or client:PATH", val);
	}
	return 0;
}

static int wl_feed(const struct cfg_key *k, void *base, const char *val, void *ctx, char *err,
		   size_t len)
{
	return set_feed(base, val, ctx, err, len);
}

static int wl_ebee_mode(const struct cfg_key *k, void *base, const char *val, void *ctx, char *err,
			size_t len)
{
	struct cfg_workload *w = base;

	if (ebee_mode_parse(val, &w->ebee_mode))
		return cfg_key_err(err, len, "ebee_mode: '%s' must be auto, conn, io or grpc", val);
	return 0;
}

/* ------------------------------------------------------------ key tables */

#define C(f) CFG_KEY_AT(struct cfg, f)
#define W(f) CFG_KEY_AT(struct cfg_workload, f)

/* [controller] is cfg_keys[0 .. CFG_CPUS - 1], [resources] the rest; each
 * resource's own keys are its file's (res_ops cfg.keys, cfg.wl_keys). */
static const struct cfg_key cfg_keys[CFG_NKEYS] = {
	/* the paper's; the original code sampled every 100 ms */
	[CFG_INTERVAL_MS] = { "interval_ms", CFG_KEY_WHOLE, C(interval_ms), .lo = 10, .hi = 60000,
			      .def = 500 },
	[CFG_POLICY] = { "policy", CFG_KEY_CUSTOM, C(policy), .def_str = "parties",
			 .parse = key_policy },
	[CFG_SEED] = { "seed", CFG_KEY_CUSTOM, C(seed), .def = 1, .parse = key_seed },
	[CFG_LOG] = { "log", CFG_KEY_STRING, C(log) },
	[CFG_CGROUP_PARENT] = { "cgroup_parent", CFG_KEY_CUSTOM, C(cgroup_parent),
				.def_str = "parties", .msg = "%s: '%s' must be " NAME_RULE,
				.parse = key_name },
	[CFG_STATE_DIR] = { "state_dir", CFG_KEY_STRING, C(state_dir), .def_str = "/run/parties" },
	[CFG_EBEE] = { "ebee", CFG_KEY_TRISTATE, C(ebee), .def = CFG_AUTO },
	/* 0: twice the interval (resolve()) */
	[CFG_EBEE_WINDOW_MS] = { "ebee_window_ms", CFG_KEY_WHOLE, C(ebee_window_ms), .lo = 0,
				 .hi = 600000 },
	[CFG_AVG_WINDOW_MS] = { "avg_window_ms", CFG_KEY_WHOLE, C(avg_window_ms), .lo = 0,
				.hi = 600000, .def = 1000 },
	[CFG_STALE_INTERVALS] = { "stale_intervals", CFG_KEY_WHOLE, C(stale_intervals), .lo = 1,
				  .hi = 1000, .def = 3 },

	/* no cpus: every online cpu (resolve()) */
	[CFG_CPUS] = { "cpus", CFG_KEY_CUSTOM, C(cpus),
		       .msg = "%s: '%s' is not a non-empty cpu list (e.g. 0-3,6)",
		       .parse = key_cpus },
};

static const struct cfg_key wl_keys[CFG_WL_NKEYS] = {
	[CFG_WL_PID] = { "pid", CFG_KEY_CUSTOM, W(pid), .parse = wl_pid },
	[CFG_WL_PIDFILE] = { "pidfile", CFG_KEY_CUSTOM, W(pidfile), .parse = wl_pidfile },
	[CFG_WL_COMMAND] = { "command", CFG_KEY_CUSTOM, W(command), .parse = wl_command },
	[CFG_WL_CGROUP] = { "cgroup", CFG_KEY_CUSTOM, W(cgroup), .parse = wl_cgroup },
	[CFG_WL_UNIT] = { "unit", CFG_KEY_CUSTOM, W(cgroup), .parse = wl_unit },
	[CFG_WL_TARGET_MS] = { "target_ms", CFG_KEY_REAL, W(target_ns),
			       .rule = { CFG_KEY_ABOVE(0, true, "%s must be > 0, not %s"),
					 { -INFINITY, 3600000, 0,
					   "%s must be at most 3600000 (an hour), not %s" } },
			       .scale = 1e6 },
	[CFG_WL_CPUS] = { "cpus", CFG_KEY_CUSTOM, W(cpus),
			  .msg = "%s: '%s' is not a non-empty cpu list (e.g. 0-1)",
			  .parse = key_cpus },
	[CFG_WL_SOURCE] = { "source", CFG_KEY_CUSTOM, W(source), .parse = wl_source },
	[CFG_WL_FEED] = { "feed", CFG_KEY_CUSTOM, W(feed), .parse = wl_feed },
	[CFG_WL_EBEE_MODE] = { "ebee_mode", CFG_KEY_CUSTOM, W(ebee_mode), .parse = wl_ebee_mode },
	[CFG_WL_EBEE_LATENCY] = { "ebee_latency", CFG_KEY_CHOICE, W(ebee_latency),
				  .names = (const char *const[]){ "service", "sojourn", NULL },
				  .msg = "%s: '%s' must be service or sojourn",
				  .def = CFG_LAT_SOJOURN },
	[CFG_WL_TRUST_UNFRAMED] = { "trust_unframed", CFG_KEY_BOOL, W(trust_unframed) },
	/* whether they exist is a live check (config_live.c) */
	[CFG_WL_USER] = { "user", CFG_KEY_STRING, W(user),
			  .msg = "%1$s: '%2$s' is not a %1$s name" },
	[CFG_WL_GROUP] = { "group", CFG_KEY_STRING, W(group),
			   .msg = "%1$s: '%2$s' is not a %1$s name" },
};

void cfg_defaults(struct cfg *c)
{
	memset(c, 0, sizeof(*c));
	cfg_key_defaults(cfg_keys, CFG_NKEYS, c);
	for (int r = 0; r < POL_RES_COUNT; r++)
		cfg_key_defaults(res_table[r]->cfg.keys, res_table[r]->cfg.nkeys, c->res[r].conf);
	sim_cfg_defaults(&c->sim);
}

static void keys_each(const struct cfg_key *tab, int n, const char *section,
		      void (*fn)(void *ctx, const char *section, const char *key), void *ctx)
{
	for (int k = 0; k < n; k++)
		fn(ctx, section, tab[k].name);
}

void cfg_keys_each(void (*fn)(void *ctx, const char *section, const char *key), void *ctx)
{
	const struct cfg_key *tab;
	char name[8 + POL_NAME_LEN];
	int n;

	keys_each(cfg_keys, CFG_CPUS, "controller", fn, ctx);
	keys_each(cfg_keys + CFG_CPUS, CFG_NKEYS - CFG_CPUS, "resources", fn, ctx);
	keys_each(wl_keys, CFG_WL_NKEYS, "workload", fn, ctx);
	for (int r = 0; r < POL_RES_COUNT; r++) {
		keys_each(res_table[r]->cfg.keys, res_table[r]->cfg.nkeys, "resources", fn, ctx);
		keys_each(res_table[r]->cfg.wl_keys, res_table[r]->cfg.nwl_keys, "workload", fn,
			  ctx);
	}
	tab = sim_cfg_keys(false, &n);
	keys_each(tab, n, "simulation", fn, ctx);
	tab = sim_cfg_keys(true, &n);
	keys_each(tab, n, "workload", fn, ctx);
	for (int i = 0; pol_registry[i]; i++) {
		snprintf(name, sizeof(name), "policy %s", pol_registry[i]->name);
		keys_each(pol_registry[i]->keys, pol_registry[i]->nkeys, name, fn, ctx);
	}
}

/* A key of a section's table (cfg_key_take()). 1 taken, 0 wrong (inih:
 * failure), -1 not a key of this table. */
static int table_key(struct cfg_ctx *x, const struct cfg_key *tab, int n, int *line_of, void *base,
		     const char *key, const char *val)
{
	char err[256];
	int r =
	    cfg_key_take(tab, n, line_of, base, key, val, x->line, x->section, x, err, sizeof(err));

	if (r < 0)
		return fail(x, "%s", err);
	return r ? 1 : -1;
}

/* A resource's key of [resources] (wl < 0) or of workload wl, into its
 * settings (struct cfg_res). 1 taken, 0 wrong, -1 no resource's. */
static int res_key(struct cfg_ctx *x, int wl, const char *key, const char *val)
{
	for (int r = 0; r < POL_RES_COUNT; r++) {
		const struct res_ops *o = res_table[r];
		struct cfg_res *cr = wl < 0 ? &x->c->res[r] : &x->c->wl[wl].res[r];
		int ret = wl < 0 ? table_key(x, o->cfg.keys, o->cfg.nkeys, cr->line_of, cr->conf,
					     key, val)
				 : table_key(x, o->cfg.wl_keys, o->cfg.nwl_keys, cr->line_of,
					     cr->conf, key, val);

		if (ret >= 0)
			return ret;
	}
	return -1;
}

static int workload_key(struct cfg_ctx *x, const char *key, const char *val)
{
	struct cfg_workload *w = &x->c->wl[x->wl];
	int r = table_key(x, wl_keys, CFG_WL_NKEYS, w->line_of, w, key, val);
	char err[256];

	if (r < 0)
		r = res_key(x, x->wl, key, val);
	if (r >= 0)
		return r;
	r = sim_cfg_wl_key(&x->c->sim.wl[x->wl], key, val, x->line, err, sizeof(err));
	if (r < 0)
		return fail(x, "%s", err);
	if (!r)
		return fail(x, "unknown key '%s' in [workload %s]", key, w->name);
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
		cfg_key_defaults(wl_keys, CFG_WL_NKEYS, &c->wl[x->wl]);
		for (int r = 0; r < POL_RES_COUNT; r++)
			cfg_key_defaults(res_table[r]->cfg.wl_keys, res_table[r]->cfg.nwl_keys,
					 c->wl[x->wl].res[r].conf);
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
	struct cfg *c = x->c;
	int r;

	if (x->header_line != x->section_line && !enter_section(x, section))
		return 0;
	if (!strcmp(section, "controller")) {
		r = table_key(x, cfg_keys, CFG_CPUS, c->line_of, c, key, val);
		return r >= 0 ? r : fail(x, "unknown key '%s' in [controller]", key);
	}
	if (!strcmp(section, "resources")) {
		r = table_key(x, cfg_keys + CFG_CPUS, CFG_NKEYS - CFG_CPUS, c->line_of + CFG_CPUS,
			      c, key, val);
		if (r < 0)
			r = res_key(x, -1, key, val);
		return r >= 0 ? r : fail(x, "unknown key '%s' in [resources]", key);
	}
	if (!strcmp(section, "simulation")) {
		char err[256];

		if (sim_cfg_key(&c->sim, key, val, x->line, err, sizeof(err)))
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

/* ------------------------------------------------------------ resolve */

/*
 * A policy's settings may ask for another decision interval than [controller]
 * interval_ms (its ops' interval()): the policy knows its keys, the config
 * only hands them over.
 */
static void resolve_policy_interval(struct cfg *c)
{
	const struct pol_ops *ops = pol_find(c->policy);
	struct pol_param params[CFG_MAX_PARAMS];

	if (!ops || !ops->interval)
		return;
	for (int i = 0; i < c->nparams; i++)
		params[i] = (struct pol_param){ c->params[i].key, c->params[i].val };
	ops->interval(params, c->nparams, c->line_of[CFG_INTERVAL_MS] > 0, &c->interval_ms, c->note,
		      sizeof(c->note));
}

/*
 * Every default that depends on other keys, resolved once: what the rest of
 * the daemon reads is the value in force. (Defaults that depend on the
 * machine's hardware, such as the frequency range, are the loop's, against
 * what the actuators report.)
 */
static int resolve(struct cfg_ctx *x)
{
	struct cfg *c = x->c;

	/* the chosen policy's settings; another policy's were checked, not kept */
	for (int i = 0; i < x->nall; i++)
		if (!strcmp(x->all[i].policy, c->policy))
			c->params[c->nparams++] = x->all[i].p;
	resolve_policy_interval(c);
	if (!c->ebee_window_ms)
		c->ebee_window_ms = 2 * c->interval_ms;
	if (c->sim.enabled && act_cpumask_empty(&c->cpus)) /* the modelled machine's */
		for (int i = 0; i < sim_cfg_ncpus(&c->sim) && i < ACT_CPUMASK_MAX; i++)
			act_cpumask_set(&c->cpus, i);
	if (act_cpumask_empty(&c->cpus) && act_topo_online(NULL, &c->cpus))
		return bad_at(x, 0,
			      "cannot read /sys/devices/system/cpu/online; set [resources] cpus");
	for (int i = 0; i < c->nwl; i++)
		c->wl[i].has_cpus = c->wl[i].line_of[CFG_WL_CPUS] > 0;
	for (int r = 0; r < POL_RES_COUNT; r++)
		if (res_table[r]->cfg.resolve)
			res_table[r]->cfg.resolve(c);
	return 0;
}

/* ------------------------------------------------------------ the whole file */

/* The resources' checks at one stage (res_ops cfg: check, check_wl of
 * workload i, check_all), in table order; the first failure is the file's
 * error. */
enum check_stage { CHECK_KEYS, CHECK_WL, CHECK_ALL };

static int check_res(struct cfg_ctx *x, enum check_stage stage, int i)
{
	const struct cfg *c = x->c;
	char err[sizeof(x->err)];
	int line = 0;

	for (int r = 0; r < POL_RES_COUNT; r++) {
		const struct res_ops *o = res_table[r];
		int e = 0;

		if (stage == CHECK_KEYS && o->cfg.check)
			e = o->cfg.check(c, err, sizeof(err), &line);
		else if (stage == CHECK_WL && o->cfg.check_wl)
			e = o->cfg.check_wl(c, i, err, sizeof(err), &line);
		else if (stage == CHECK_ALL && o->cfg.check_all)
			e = o->cfg.check_all(c, err, sizeof(err), &line);
		if (e)
			return bad_at(x, line, "%s", err);
	}
	return 0;
}

/* Workload i against itself and the ones before it: what is no resource's,
 * then each resource's (its cores, cpus and quota: res/). */
static int check_wl(struct cfg_ctx *x, int i)
{
	const struct cfg *c = x->c;
	const struct cfg_workload *w = &c->wl[i];
	const int *at = w->line_of;

	if (c->sim.enabled) {
		char err[200];
		int line;

		if (sim_cfg_validate_wl(&c->sim, i, w->name, w->line, err, sizeof(err), &line))
			return bad_at(x, line, "%s", err);
	} else if (w->source == CFG_SRC_CLIENT && !w->feed[0]) {
		return bad_at(x, at[CFG_WL_SOURCE],
			      "workload %s: source = client needs a feed (client:PATH) outside a "
			      "simulation",
			      w->name);
	}
	if (w->find == CFG_FIND_NONE && !c->sim.enabled)
		return bad_at(
		    x, w->line,
		    "workload %s: say how to find it (pid, pidfile, command, cgroup or unit)",
		    w->name);
	if (w->target_ns <= 0)
		return bad_at(x, w->line, "workload %s: target_ms is required", w->name);
	if (w->source == CFG_SRC_EBEE && c->ebee == CFG_OFF)
		return bad_at(x, at[CFG_WL_SOURCE] ? at[CFG_WL_SOURCE] : w->line,
			      "workload %s: source ebee but [controller] ebee = false", w->name);
	return check_res(x, CHECK_WL, i);
}

/* Checks that need the whole file, on resolved values. Sets x->err and x->line. */
static int validate(struct cfg_ctx *x)
{
	int e = check_res(x, CHECK_KEYS, -1);

	for (int i = 0; !e && i < x->c->nwl; i++)
		e = check_wl(x, i);
	return e ? e : check_res(x, CHECK_ALL, -1);
}

/* After the last key: resolve the defaults, then check the whole. */
static int finish(struct cfg_ctx *x)
{
	int e;

	/* the end of the file: where the missing section would be */
	if (x->c->nwl == 0)
		return bad_at(x, x->line ? x->line : 1,
			      "no [workload NAME] section: nothing to manage");
	e = resolve(x);
	return e ? e : validate(x);
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
	if (finish(x)) {
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
