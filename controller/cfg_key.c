// SPDX-License-Identifier: MIT
/*
 * Settings read from a table of keys (cfg_key.h).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cfg_key.h"

bool cfg_parse_double(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return !errno && end != s && !*end && isfinite(*out);
}

bool cfg_parse_long(const char *s, long lo, long hi, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(s, &end, 10);
	return !errno && end != s && !*end && *out >= lo && *out <= hi;
}

bool cfg_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "true", "yes", "on", "1" };
	static const char *const no[] = { "false", "no", "off", "0" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = true;
			return true;
		}
		if (!strcasecmp(s, no[i])) {
			*out = false;
			return true;
		}
	}
	return false;
}

const struct cfg_key *cfg_key_find(const struct cfg_key *tab, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (tab[i].name && !strcmp(tab[i].name, name))
			return &tab[i];
	return NULL;
}

void cfg_key_list(const struct cfg_key *tab, int n, char *buf, size_t len)
{
	size_t at = 0;

	if (len)
		buf[0] = '\0';
	for (int i = 0; i < n && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? ", " : "", tab[i].name);
}

int cfg_key_err(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* The key's own message (a table string: printf with name and value). */
static int bad_key(const struct cfg_key *k, const char *msg, const char *val, char *err, size_t len)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	snprintf(err, len, msg, k->name, val);
#pragma GCC diagnostic pop
	return -EINVAL;
}

int cfg_key_fail(const struct cfg_key *k, const char *val, char *err, size_t len)
{
	return bad_key(k, k->msg, val, err, len);
}

static bool rule_used(const struct cfg_key_rule *r)
{
	return r->msg || r->lo != 0 || r->hi != 0 || r->flags;
}

static bool rule_ok(const struct cfg_key_rule *r, double v)
{
	if ((r->flags & CFG_KEY_ZERO_OK) && v == 0)
		return true;
	if ((r->flags & CFG_KEY_LO_OPEN) ? !(v > r->lo) : !(v >= r->lo))
		return false;
	if ((r->flags & CFG_KEY_HI_OPEN) ? !(v < r->hi) : !(v <= r->hi))
		return false;
	return !(r->flags & CFG_KEY_INTEGRAL) || v == floor(v);
}

static int rule_bad(const struct cfg_key *k, const struct cfg_key_rule *r, const char *val,
		    char *err, size_t len)
{
	if (r->msg)
		return bad_key(k, r->msg, val, err, len);
	return cfg_key_err(err, len, "%s: '%s' is not a number in %g..%g", k->name, val, r->lo,
			   r->hi);
}

int cfg_key_real(const struct cfg_key *k, const char *val, double *out, char *err, size_t len)
{
	if (!cfg_parse_double(val, out)) {
		/* a range without words of its own says "not a number in lo..hi" for both */
		if (rule_used(&k->rule[0]) && !k->rule[0].msg)
			return rule_bad(k, &k->rule[0], val, err, len);
		return cfg_key_err(err, len, "%s: '%s' is not a number", k->name, val);
	}
	for (size_t i = 0; i < sizeof(k->rule) / sizeof(k->rule[0]); i++)
		if (rule_used(&k->rule[i]) && !rule_ok(&k->rule[i], *out))
			return rule_bad(k, &k->rule[i], val, err, len);
	return 0;
}

static double scale_of(const struct cfg_key *k)
{
	return k->scale ? k->scale : 1;
}

/* A number in the file's unit into the field, in the program's unit. Whole
 * numbers stay exact; a real into an integer field is rounded (cores to
 * milli-cores), an integral one is exact. */
static void store_num(const struct cfg_key *k, void *base, double v)
{
	char *p = (char *)base + k->off;
	double s = v * scale_of(k);

	switch (k->store) {
	case CFG_KEY_S_INT:
		*(int *)p = (int)lround(s);
		break;
	case CFG_KEY_S_UINT:
		*(unsigned int *)p = (unsigned int)lround(s);
		break;
	case CFG_KEY_S_LONG:
		/* 0 means "the default" (quota_total, max_quota): a value given
		 * as more than 0 never rounds to it */
		*(long *)p = s > 0 && s < 0.5 ? 1 : lround(s);
		break;
	case CFG_KEY_S_U64:
		*(uint64_t *)p = (uint64_t)llround(s);
		break;
	case CFG_KEY_S_DOUBLE:
		*(double *)p = s;
		break;
	case CFG_KEY_S_BOOL:
		*(bool *)p = s != 0;
		break;
	case CFG_KEY_S_BYTES:
		break;
	}
}

static int set_whole(const struct cfg_key *k, void *base, const char *val, char *err, size_t len)
{
	long v;

	if (!cfg_parse_long(val, k->lo, k->hi, &v)) {
		if (k->msg)
			return bad_key(k, k->msg, val, err, len);
		return cfg_key_err(err, len, "%s: '%s' is not a whole number in %ld..%ld", k->name,
				   val, k->lo, k->hi);
	}
	if (k->store == CFG_KEY_S_LONG) /* exact, also past 2^53 */
		*(long *)((char *)base + k->off) = v * (long)scale_of(k);
	else
		store_num(k, base, (double)v);
	return 0;
}

static int set_choice(const struct cfg_key *k, void *base, const char *val, char *err, size_t len)
{
	for (int i = 0; k->names[i]; i++) {
		if (!strcmp(val, k->names[i])) {
			store_num(k, base, i);
			return 0;
		}
	}
	if (!k->msg)
		return cfg_key_err(err, len, "%s: '%s' is not one of its values", k->name, val);
	return bad_key(k, k->msg, val, err, len);
}

static int set_string(const struct cfg_key *k, void *base, const char *val, char *err, size_t len)
{
	if (k->msg && (!*val || strlen(val) >= k->size))
		return bad_key(k, k->msg, val, err, len);
	snprintf((char *)base + k->off, k->size, "%s", val);
	return 0;
}

int cfg_key_set(const struct cfg_key *k, void *base, const char *val, void *ctx, char *err,
		size_t len)
{
	double d;
	bool b;

	switch (k->type) {
	case CFG_KEY_WHOLE:
		return set_whole(k, base, val, err, len);
	case CFG_KEY_REAL:
		if (cfg_key_real(k, val, &d, err, len))
			return -EINVAL;
		store_num(k, base, d);
		return 0;
	case CFG_KEY_BOOL:
		if (!cfg_parse_bool(val, &b))
			return k->msg ? bad_key(k, k->msg, val, err, len)
				      : cfg_key_err(err, len,
						    "%s: '%s' is not a boolean (true or false)",
						    k->name, val);
		store_num(k, base, b);
		return 0;
	case CFG_KEY_TRISTATE:
		if (!strcmp(val, "auto"))
			store_num(k, base, CFG_AUTO);
		else if (cfg_parse_bool(val, &b))
			store_num(k, base, b ? CFG_ON : CFG_OFF);
		else
			return cfg_key_err(err, len, "%s: '%s' must be auto, true or false",
					   k->name, val);
		return 0;
	case CFG_KEY_CHOICE:
		return set_choice(k, base, val, err, len);
	case CFG_KEY_STRING:
		return set_string(k, base, val, err, len);
	case CFG_KEY_CUSTOM:
		return k->parse(k, base, val, ctx, err, len);
	}
	return cfg_key_err(err, len, "%s: not a key type this build knows", k->name);
}

int cfg_key_take(const struct cfg_key *tab, int n, int *line_of, void *base, const char *key,
		 const char *val, int line, const char *section, void *ctx, char *err, size_t len)
{
	const struct cfg_key *k = cfg_key_find(tab, n, key);

	if (!k)
		return 0;
	if (line_of[k - tab])
		return cfg_key_err(err, len, "%s given twice in [%s]", key, section);
	line_of[k - tab] = line;
	return cfg_key_set(k, base, val, ctx, err, len) ? -EINVAL : 1;
}

int cfg_key_setting(const struct cfg_key *tab, int n, void *base, const char *key, const char *val,
		    char *err, size_t len)
{
	const struct cfg_key *k = cfg_key_find(tab, n, key);
	double d;

	if (k)
		return cfg_key_set(k, base, val, NULL, err, len);
	if (!cfg_parse_double(val, &d))
		return cfg_key_err(err, len, "%s: '%s' is not a number", key, val);
	return -ENOENT;
}

void cfg_key_defaults(const struct cfg_key *tab, int n, void *base)
{
	for (int i = 0; i < n; i++) {
		const struct cfg_key *k = &tab[i];

		if (!k->name)
			continue;
		if (k->def_str)
			snprintf((char *)base + k->off, k->size, "%s", k->def_str);
		else if (k->def)
			store_num(k, base, k->def);
	}
}
