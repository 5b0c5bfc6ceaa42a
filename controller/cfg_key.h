/* SPDX-License-Identifier: MIT */
/*
 * Settings read from a table of keys.
 *
 * A section of the configuration ([controller], [resources], [workload NAME],
 * [simulation]) and a policy's [policy NAME] settings are each one array of
 * struct cfg_key: the key's name, how its value is read, the range it must
 * be in, its default, and where it goes (an offset into the struct the
 * section fills). cfg_key_set() parses one value, checks it, converts it to
 * the program's unit and stores it; cfg_key_defaults() stores every default.
 * Adding a key is one line in one table, and every key of every section is
 * read and reported the same way.
 *
 * Units: a value is stored in the program's unit, value * scale (target_ms
 * becomes ns with scale 1e6, MHz become kHz with 1000, cores become
 * milli-cores with 1000); ranges and messages speak the file's unit. A real
 * stored into an integer field is rounded, but one above 0 never becomes 0,
 * which the tables use for "not given, take the default".
 *
 * Errors are one line "what is wrong" without file or line (the caller
 * knows them): a key's own message when it has one, printf-formatted with
 * the key's name and the value as given (in that order; glibc's "%1$s"
 * picks them out of order), else the type's.
 */
#ifndef PARTIES_CFG_KEY_H
#define PARTIES_CFG_KEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A setting that may be left to what the machine offers. */
enum cfg_tristate { CFG_AUTO = 0, CFG_ON, CFG_OFF };

enum cfg_key_type {
	CFG_KEY_WHOLE,	  /* a whole number (base 10) in lo..hi */
	CFG_KEY_REAL,	  /* a finite number, checked against rule[] */
	CFG_KEY_BOOL,	  /* true, yes, on, 1 or false, no, off, 0 */
	CFG_KEY_TRISTATE, /* auto or a boolean: enum cfg_tristate */
	CFG_KEY_CHOICE,	  /* one of names[], stored as its index */
	CFG_KEY_STRING,	  /* copied; with msg, empty or too long for the field is wrong */
	CFG_KEY_CUSTOM,	  /* parse() reads it */
};

/* How the field is stored: picked from its C type by CFG_KEY_AT(). */
enum cfg_key_store {
	CFG_KEY_S_INT,
	CFG_KEY_S_UINT,
	CFG_KEY_S_LONG,
	CFG_KEY_S_U64,
	CFG_KEY_S_DOUBLE,
	CFG_KEY_S_BOOL,
	CFG_KEY_S_BYTES, /* a char array (strings) or anything else parse() fills */
};

#define CFG_KEY_STORE_OF(lv)                         \
	_Generic((lv), int                           \
		 : CFG_KEY_S_INT, unsigned int       \
		 : CFG_KEY_S_UINT, long              \
		 : CFG_KEY_S_LONG, unsigned long     \
		 : CFG_KEY_S_U64, unsigned long long \
		 : CFG_KEY_S_U64, double             \
		 : CFG_KEY_S_DOUBLE, bool            \
		 : CFG_KEY_S_BOOL, default           \
		 : CFG_KEY_S_BYTES)

/* Where a key's value goes: field f of struct type T. An enum field is
 * stored as the integer type the compiler gives it. */
#define CFG_KEY_AT(T, f) \
	.off = offsetof(T, f), .size = sizeof(((T *)0)->f), .store = CFG_KEY_STORE_OF(((T *)0)->f)

/* Flags of a rule */
#define CFG_KEY_LO_OPEN	 (1u << 0) /* lo itself is out of range */
#define CFG_KEY_HI_OPEN	 (1u << 1) /* hi itself is out of range */
#define CFG_KEY_INTEGRAL (1u << 2) /* must have no fraction */
#define CFG_KEY_ZERO_OK	 (1u << 3) /* 0 passes whatever the range */

/*
 * One check of a CFG_KEY_REAL value: lo..hi (closed unless a flag opens an
 * end; -INFINITY or INFINITY for none). msg NULL: "KEY: 'VAL' is not a
 * number in LO..HI", which then also stands for a value that is not a
 * number at all. A rule with neither range nor message is not used.
 */
struct cfg_key_rule {
	double lo, hi;
	unsigned int flags;
	const char *msg;
};

/* A rule of values above lo (open: lo itself is out), with msg. */
#define CFG_KEY_ABOVE(lo, open, msg)                                \
	{                                                           \
		(lo), INFINITY, (open) ? CFG_KEY_LO_OPEN : 0, (msg) \
	}

struct cfg_key;

/* A CFG_KEY_CUSTOM reader: store val into base (the section's struct). ctx
 * is what the table's user passed to cfg_key_set(). 0, or -EINVAL with err
 * set. */
typedef int (*cfg_key_parse_fn)(const struct cfg_key *k, void *base, const char *val, void *ctx,
				char *err, size_t len);

struct cfg_key {
	const char *name;
	enum cfg_key_type type;
	size_t off, size;
	enum cfg_key_store store;
	long lo, hi;		     /* CFG_KEY_WHOLE */
	struct cfg_key_rule rule[2]; /* CFG_KEY_REAL, checked in order */
	double scale;		     /* stored = value * scale; 0 means 1 */
	double def;		     /* default of a stored number (file's unit) */
	const char *def_str;	     /* default of a string */
	const char *const *names;    /* CFG_KEY_CHOICE, NULL-terminated */
	const char *msg;	     /* what is wrong, instead of the type's message */
	cfg_key_parse_fn parse;	     /* CFG_KEY_CUSTOM */
};

/* The key called name in tab[0..n-1], or NULL. */
const struct cfg_key *cfg_key_find(const struct cfg_key *tab, int n, const char *name);
/* Read val into base as k says. 0, or -EINVAL with err set. */
int cfg_key_set(const struct cfg_key *k, void *base, const char *val, void *ctx, char *err,
		size_t len);
/*
 * A key of an INI section whose struct records where each key was given
 * (line_of[i] for tab[i]; 0 = not yet): given twice is an error naming
 * section, else the line is recorded and the value read. 1 taken, 0 not a
 * key of tab, -EINVAL with err set.
 */
int cfg_key_take(const struct cfg_key *tab, int n, int *line_of, void *base, const char *key,
		 const char *val, int line, const char *section, void *ctx, char *err, size_t len);
/*
 * A policy's setting (policy.h's check_param and init): 0, -EINVAL with err
 * set, or -ENOENT (err untouched) when tab has no such key. A value that is
 * not a number is reported as such even then, as the policies always have.
 */
int cfg_key_setting(const struct cfg_key *tab, int n, void *base, const char *key, const char *val,
		    char *err, size_t len);
/* Store every key's default into base (a key without one is left alone). */
void cfg_key_defaults(const struct cfg_key *tab, int n, void *base);
/* "a, b, c": the names of tab[0..n-1], for messages. */
void cfg_key_list(const struct cfg_key *tab, int n, char *buf, size_t len);

/* k's own message about val (a parse() function's error). -EINVAL. */
int cfg_key_fail(const struct cfg_key *k, const char *val, char *err, size_t len);
/* printf into err. -EINVAL. */
int cfg_key_err(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A CFG_KEY_REAL value read and checked, not stored (for parse() functions
 * that store it their own way). 0, or -EINVAL with err set. */
int cfg_key_real(const struct cfg_key *k, const char *val, double *out, char *err, size_t len);

/* The project's one reading of numbers and booleans: the whole string,
 * finite, in range. */
bool cfg_parse_double(const char *s, double *out);
bool cfg_parse_long(const char *s, long lo, long hi, long *out);
bool cfg_parse_bool(const char *s, bool *out);

#endif /* PARTIES_CFG_KEY_H */
