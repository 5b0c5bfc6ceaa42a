// SPDX-License-Identifier: MIT
/*
 * configs/example.ini documents every key (and man/parties.ini.5 is made
 * from it): each key the configuration reads (cfg_keys_each(): [controller],
 * [resources] with every resource's own keys, [workload NAME] with the
 * resources' and the sim_* keys, [simulation], and every policy's [policy
 * NAME] settings) appears in its section of the example, set or commented
 * out (";key = value", or indented in a comment's list: ";   pid = 1234").
 * A key added to any table, a new resource's included, fails here until the
 * example says what it does. Run from the top of the tree (tests/run.sh).
 */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"

#define EXAMPLE	 "configs/example.ini"
#define MAX_DOC	 1024
#define NAME_LEN 96

/* What the example documents: (section, key) pairs. */
static struct {
	char section[NAME_LEN];
	char key[NAME_LEN];
} doc[MAX_DOC];
static int ndoc;

/* "[workload web]" is "workload"; "[policy parties]" stays whole. */
static void section_of(const char *hdr, size_t n, char *out, size_t len)
{
	if (n >= 9 && !strncmp(hdr, "workload ", 9))
		n = 8;
	snprintf(out, len, "%.*s", (int)n, hdr);
}

static void read_example(void)
{
	FILE *f = fopen(EXAMPLE, "r");
	char line[512], section[NAME_LEN] = "";

	assert_non_null(f);
	ndoc = 0;
	while (fgets(line, sizeof(line), f)) {
		const char *p = line, *end;
		size_t n;

		if (*p == ';' || *p == '#')
			p++;
		if (*p == '[' && (end = strchr(p, ']'))) {
			section_of(p + 1, (size_t)(end - p - 1), section, sizeof(section));
			continue;
		}
		while (*p == ' ')
			p++;
		n = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789_");
		if (!n || !islower((unsigned char)*p))
			continue;
		end = p + n;
		while (*end == ' ')
			end++;
		if (*end != '=' || !section[0] || ndoc == MAX_DOC)
			continue;
		snprintf(doc[ndoc].section, sizeof(doc[ndoc].section), "%s", section);
		snprintf(doc[ndoc].key, sizeof(doc[ndoc].key), "%.*s", (int)n, p);
		ndoc++;
	}
	fclose(f);
}

static bool documented(const char *section, const char *key)
{
	for (int i = 0; i < ndoc; i++)
		if (!strcmp(doc[i].section, section) && !strcmp(doc[i].key, key))
			return true;
	return false;
}

struct seen {
	int nkeys, missing;
	int sections; /* bit: controller, resources, workload, simulation, a policy */
};

static void check_key(void *ctx, const char *section, const char *key)
{
	static const char *const kinds[] = { "controller", "resources", "workload", "simulation" };
	struct seen *s = ctx;

	s->nkeys++;
	for (int i = 0; i < 4; i++)
		if (!strcmp(section, kinds[i]))
			s->sections |= 1 << i;
	if (!strncmp(section, "policy ", 7))
		s->sections |= 1 << 4;
	if (documented(section, key))
		return;
	fprintf(stderr, "%s: [%s%s] %s is not documented\n", EXAMPLE, section,
		!strcmp(section, "workload") ? " NAME" : "", key);
	s->missing++;
}

static void test_every_key_documented(void **state)
{
	struct seen s = { 0 };

	read_example();
	assert_true(ndoc > 50);
	cfg_keys_each(check_key, &s);
	assert_int_equal(s.sections, 0x1f); /* every kind of section was listed */
	assert_true(s.nkeys > 60);
	assert_int_equal(s.missing, 0);
}

/* The reader itself: a key counts only in its own section. */
static void test_sections_apart(void **state)
{
	read_example();
	assert_true(documented("resources", "cpus"));
	assert_true(documented("workload", "cpus"));
	assert_true(documented("workload", "pid")); /* ";   pid = 1234" */
	assert_true(documented("simulation", "cores"));
	assert_true(documented("policy parties", "flavour"));
	assert_false(documented("controller", "cpus"));
	assert_false(documented("resources", "target_ms"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_key_documented),
		cmocka_unit_test(test_sections_apart),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
