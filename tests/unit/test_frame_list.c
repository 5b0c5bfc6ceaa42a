// SPDX-License-Identifier: MIT
/*
 * The framers' one list (EBEE_FRAME_LIST, bpf/frame/frame.h) against everything
 * a framer must have: fails for a framer missing anywhere. Its id in order,
 * its user half in the registry, its name (unique, fitting ebee_stats.framing),
 * a step the kernel's dispatch reaches when parsed, none when recognised only
 * (kind ONLY), and its name in every text that lists the framers to users:
 * the CLI's help, the Prometheus HELP, ebee.h, the man page (made from the
 * list at build time). Run from the checkout's root (tests/run.sh).
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

#include "../../metrics/src/frame/frame_ops.h"
#include "ebee.h"

struct entry {
	int id;
	const char *stem, *name;
	int kind; /* EBEE_FRAME_KIND_* */
	const struct ebee_frame_ops *ops;
};

static const struct entry list[] = {
#define ENTRY_(ID, stem, name, kind) \
	{ EBEE_FRAME_##ID, #stem, name, EBEE_FRAME_FLAGS_##kind, &ebee_frame_##stem },
	EBEE_FRAME_LIST(ENTRY_)
#undef ENTRY_
};
#define NLIST (sizeof(list) / sizeof(list[0]))

static void test_ids_and_table(void **state)
{
	(void)state;
	assert_int_equal(EBEE_FRAME_MAX, NLIST + 1); /* EBEE_FRAME_NONE, then the list */
	assert_string_equal(ebee_frame_name(EBEE_FRAME_NONE), "");
	assert_null(ebee_frame_get(EBEE_FRAME_NONE));
	for (size_t i = 0; i < NLIST; i++) {
		const struct entry *e = &list[i];

		assert_int_equal(e->id, (int)i + 1);
		assert_ptr_equal(ebee_frame_get(e->id), e->ops);
		assert_string_equal(ebee_frame_name(e->id), e->name);
	}
}

static void test_names(void **state)
{
	struct ebee_stats st;

	(void)state;
	for (size_t i = 0; i < NLIST; i++) {
		const char *n = list[i].name;

		assert_true(n[0]);
		assert_true(strlen(n) < sizeof(st.framing));
		for (const char *p = n; *p; p++)
			assert_true(islower((unsigned char)*p) || isdigit((unsigned char)*p) ||
				    *p == '-');
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(n, list[j].name);
	}
}

/* Parsed: a step in the table, and the kernel's dispatch (ebee_frame_step, what
 * frame_step runs) reaches that very step: both agree byte for byte on a few
 * bytes of each direction. Recognised only: neither. */
static void test_steps(void **state)
{
	static const uint8_t bytes[] = "*GET PRI \x16\x03\x01get \x80\x81\r\nVALUE x\r\n";

	(void)state;
	for (size_t i = 0; i < NLIST; i++) {
		const struct entry *e = &list[i];

		assert_int_equal(ebee_frame_framed(e->id), (e->kind & EBEE_FRAME_KIND_PARSE) != 0);
		assert_int_equal(ebee_frame_verifiable(e->id),
				 (e->kind & EBEE_FRAME_KIND_VERIFY) != 0);
		if (!(e->kind & EBEE_FRAME_KIND_PARSE)) {
			assert_null(e->ops->step);
			continue;
		}
		assert_non_null(e->ops->step);
		for (int resp = 0; resp < 2; resp++) {
			struct ebee_fdir a = { .flags = EBEE_FD_SYNC }, b = a;
			uint32_t ha = 0, hb = 0;

			for (size_t k = 0; k < sizeof(bytes) - 1; k++) {
				int ea = e->ops->step(&a, bytes[k], resp, &ha);
				int eb = ebee_frame_step(&b, bytes[k], e->id, resp, &hb);

				assert_int_equal(ea, eb);
				if (ea == EBEE_FEV_ERR)
					break;
			}
			assert_memory_equal(&a, &b, sizeof(a));
		}
	}
	assert_int_equal(
	    ebee_frame_step(&(struct ebee_fdir){ 0 }, 'x', EBEE_FRAME_LENGTH, 0, &(uint32_t){ 0 }),
	    EBEE_FEV_ERR);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *s;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	s = calloc(1, n + 1);
	if (s && fread(s, 1, n, f) != (size_t)n) {
		free(s);
		s = NULL;
	}
	fclose(f);
	return s;
}

/* Whether the passage of text from `from` to the first `to` after it (""
 * to the end) names every framer, each as a word of its own. */
static void names_all(const char *what, const char *text, const char *from, const char *to)
{
	const char *a = text ? strstr(text, from) : NULL;
	const char *b = a ? (*to ? strstr(a, to) : a + strlen(a)) : NULL;

	if (!a || !b)
		fail_msg("%s: no passage from \"%s\" to \"%s\"", what, from, to);
	for (size_t i = 0; i < NLIST; i++) {
		const char *n = list[i].name, *p = a;
		size_t len = strlen(n);
		int found = 0;

		while (!found && (p = strstr(p, n)) && p < b) {
			char before = p > text ? p[-1] : ' ', after = p[len];

			found = !isalnum((unsigned char)before) && before != '-' &&
				!isalnum((unsigned char)after) && after != '-';
			p += len;
		}
		if (!found)
			fail_msg("%s does not name the framer %s (\"%s\")", what, list[i].stem, n);
	}
}

/* Every text that shows users the framers takes them from libebee's
 * ebee_framing_list(), made from the list: the list must name every framer,
 * `ebee --help` (run) must print it, and the Prometheus HELP and ebee.h's
 * ebee_stats.framing must point at it rather than list names by hand. */
static void test_help_texts(void **state)
{
	const char *build = getenv("TEST_BUILD") ? getenv("TEST_BUILD") : "build";
	char cmd[600], *out = calloc(1, 65536), *prom = slurp("metrics/cli/ebee_prom.c");
	char *hdr = slurp("metrics/include/ebee.h");
	size_t n = 0;
	FILE *p;

	(void)state;
	names_all("ebee_framing_list()", ebee_framing_list(), "", "");
	assert_non_null(strstr(ebee_framing_list(), "grpc, dgram"));
	snprintf(cmd, sizeof(cmd), "%s/ebee --help 2>&1", build);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (n < 65535 && fgets(out + n, 65536 - n, p))
		n += strlen(out + n);
	pclose(p);
	names_all("ebee --help (Framings:)", out, "Framings: ", "\n\n");
	assert_non_null(prom);
	assert_non_null(strstr(prom, "ebee_framing_list()"));
	assert_non_null(hdr);
	assert_non_null(strstr(hdr, "char framing[16];      /* how requests are delimited: one of "
				    "ebee_framing_list();"));
	free(out);
	free(prom);
	free(hdr);
}

/* The man page is made from the list (Makefile, @FRAMINGS@): its source
 * must keep the place, and the page built lists every framer. */
static void test_man_page(void **state)
{
	const char *build = getenv("TEST_BUILD") ? getenv("TEST_BUILD") : "build";
	char path[512], *in = slurp("man/ebee.8.in"), *man;

	(void)state;
	assert_non_null(in);
	assert_non_null(strstr(in, "framing (@FRAMINGS@"));
	free(in);
	snprintf(path, sizeof(path), "%s/man/ebee.8", build);
	man = slurp(path);
	if (!man)
		man = slurp("build/man/ebee.8");
	if (!man)
		skip();
	names_all("ebee(8)", man, "framing (", "null before");
	free(man);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ids_and_table), cmocka_unit_test(test_names),
		cmocka_unit_test(test_steps),	      cmocka_unit_test(test_help_texts),
		cmocka_unit_test(test_man_page),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
