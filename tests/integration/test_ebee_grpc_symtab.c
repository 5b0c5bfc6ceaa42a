// SPDX-License-Identifier: MIT
/*
 * ebee grpc pattern on a gRPC C-core that is not a libgrpc*.so (root): the
 * fake chttp2 C-core of tests/fixtures/chttp2/ linked into a program (PIE
 * and not: found in .symtab) and into a module of another name loaded by a
 * program (found in .dynsym). Each runs N streams through the hooked
 * functions when told to; the uprobes must count exactly N requests each
 * time, in mode grpc and in auto. A stripped program and a module whose
 * function has the wrong arguments are refused, saying why.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "ebee.h"
#include "../lib/testutil.h"

#define FIX "build/fixtures/"
#define N   200

static struct ebee *eb;
static char last_warn[1024];

static void log_cb(enum ebee_log_level lvl, const char *msg, void *ctx)
{
	if (lvl == EBEE_LOG_WARN)
		snprintf(last_warn, sizeof(last_warn), "%s", msg);
	if (getenv("EBEE_TEST_VERBOSE") || lvl == EBEE_LOG_WARN)
		fprintf(stderr, "  [ebee] %s\n", msg);
}

static int group_setup(void **state)
{
	struct ebee_opts o = { .sz = sizeof(o), .log = log_cb, .log_level = EBEE_LOG_DEBUG };
	char msg[512];

	tu_init();
	if (geteuid() != 0)
		return 0;
	if (access(FIX "fake_chttp2_pie", X_OK) || access(FIX "fake_chttp2_host", X_OK))
		return 0; /* each test says SKIP */
	eb = ebee_open(&o, msg, sizeof(msg));
	if (!eb) {
		fprintf(stderr, "ebee_open: %s\n", msg);
		return -1;
	}
	return 0;
}

static int group_teardown(void **state)
{
	ebee_close(eb);
	tu_cleanup();
	return 0;
}

#define NEED_ROOT_AND_FIXTURES()                                                             \
	do {                                                                                 \
		if (tu_need_root())                                                          \
			skip();                                                              \
		if (!eb) {                                                                   \
			printf("SKIP: build/fixtures/fake_chttp2_* not built (make all)\n"); \
			skip();                                                              \
		}                                                                            \
	} while (0)

struct fake {
	pid_t pid;
	char go[PATH_MAX], done[PATH_MAX];
};

/* Start a fake C-core: the program alone, or the host loading module; wait
 * until the file with the functions is mapped. */
static void fake_start(struct fake *f, const char *prog, const char *module)
{
	static int seq;
	char n[16], maps[64], line[PATH_MAX + 256];
	const char *want = module ? module : prog;

	snprintf(n, sizeof(n), "%d", N);
	snprintf(f->go, sizeof(f->go), "%s/go%d", tu_tmpdir(), seq);
	snprintf(f->done, sizeof(f->done), "%s/done%d", tu_tmpdir(), seq++);
	if (module)
		f->pid = tu_spawn(
		    (char *const[]){ (char *)prog, (char *)module, n, f->go, f->done, NULL }, NULL);
	else
		f->pid = tu_spawn((char *const[]){ (char *)prog, n, f->go, f->done, NULL }, NULL);
	assert_true(f->pid > 0);
	snprintf(maps, sizeof(maps), "/proc/%d/maps", f->pid);
	for (int i = 0; i < 500; i++) {
		FILE *m = fopen(maps, "r");
		bool seen = false;

		while (m && !seen && fgets(line, sizeof(line), m))
			seen = strstr(line, want + strlen(FIX)) != NULL;
		if (m)
			fclose(m);
		if (seen)
			return;
		tu_sleep_ms(10);
	}
	fail_msg("pid %d never mapped %s", f->pid, want);
}

/* N streams now; wait until they are done. */
static void fake_round(struct fake *f)
{
	FILE *g;

	unlink(f->done);
	g = fopen(f->go, "w");
	assert_non_null(g);
	fclose(g);
	assert_int_equal(tu_wait_file(f->done, 30), 0);
	assert_int_equal(tu_read_num(f->done), N);
}

static struct ebee_stats settle(pid_t pid)
{
	struct ebee_stats st = { .sz = sizeof(st) };

	assert_int_equal(ebee_flush(eb), 0);
	tu_sleep_ms(250);
	assert_int_equal(ebee_flush(eb), 0);
	assert_int_equal(ebee_get_stats(eb, pid, &st), 0);
	return st;
}

/* Traced in mode m: two rounds of N streams, N requests each. */
static void counts_exactly(const char *prog, const char *module, enum ebee_mode m)
{
	struct ebee_trace_opts to = { .sz = sizeof(to), .mode = m };
	struct ebee_stats st;
	struct fake f;

	fake_start(&f, prog, module);
	last_warn[0] = 0;
	assert_int_equal(ebee_start_tracing(eb, f.pid, &to), 0);
	for (int r = 1; r <= 2; r++) {
		fake_round(&f);
		st = settle(f.pid);
		printf("  %s%s%s, mode %s: round %d, requests %llu (want %d), mode now %s, "
		       "probes 0x%x\n",
		       prog, module ? " loading " : "", module ? module : "", ebee_mode_str(m), r,
		       (unsigned long long)st.requests, r * N, ebee_mode_str(st.mode), st.probes);
		assert_true(st.probes & EBEE_PROBE_GRPC);
		assert_int_equal(st.mode, EBEE_MODE_GRPC);
		assert_int_equal(st.requests, (uint64_t)r * N);
	}
	assert_int_equal(ebee_stop_tracing(eb, f.pid), 0);
	tu_stop(f.pid);
}

/* A C-core linked into a PIE program: .symtab alone. */
static void test_static_pie(void **state)
{
	NEED_ROOT_AND_FIXTURES();
	counts_exactly(FIX "fake_chttp2_pie", NULL, EBEE_MODE_GRPC);
}

/* The same in a non-PIE (ET_EXEC) program: symbol values are not offsets. */
static void test_static_exec(void **state)
{
	NEED_ROOT_AND_FIXTURES();
	counts_exactly(FIX "fake_chttp2_exec", NULL, EBEE_MODE_GRPC);
}

/* A module not named libgrpc (.dynsym), loaded by another program. */
static void test_module(void **state)
{
	NEED_ROOT_AND_FIXTURES();
	counts_exactly(FIX "fake_chttp2_host", FIX "fake_cygrpc.so", EBEE_MODE_GRPC);
}

/* Auto mode finds it too, and chooses grpc. */
static void test_auto(void **state)
{
	NEED_ROOT_AND_FIXTURES();
	counts_exactly(FIX "fake_chttp2_pie", NULL, EBEE_MODE_AUTO);
	counts_exactly(FIX "fake_chttp2_host", FIX "fake_cygrpc.so", EBEE_MODE_AUTO);
}

/* mode grpc on p is refused with a message that has want in it. */
static void refused(const char *prog, const char *module, const char *want)
{
	struct ebee_trace_opts to = { .sz = sizeof(to), .mode = EBEE_MODE_GRPC };
	struct ebee_stats st = { .sz = sizeof(st) };
	struct fake f;

	fake_start(&f, prog, module);
	last_warn[0] = 0;
	assert_int_equal(ebee_start_tracing(eb, f.pid, &to), -EOPNOTSUPP);
	printf("  refused: %s\n", last_warn);
	assert_non_null(strstr(last_warn, want));
	assert_int_equal(ebee_get_stats(eb, f.pid, &st), -ENOENT);
	tu_stop(f.pid);
}

static void test_stripped_refused(void **state)
{
	NEED_ROOT_AND_FIXTURES();
	refused(FIX "fake_chttp2_stripped", NULL, "maps no libgrpc");
}

static void test_wrong_signature_refused(void **state)
{
	NEED_ROOT_AND_FIXTURES();
	refused(
	    FIX "fake_chttp2_host", FIX "fake_cygrpc_badsig.so",
	    "fake_cygrpc_badsig.so lacks grpc_chttp2_mark_stream_closed(grpc_chttp2_transport*, "
	    "grpc_chttp2_stream*, int, int, ...) (found "
	    "grpc_chttp2_mark_stream_closed(grpc_chttp2_stream*, ");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_static_pie),
		cmocka_unit_test(test_static_exec),
		cmocka_unit_test(test_module),
		cmocka_unit_test(test_auto),
		cmocka_unit_test(test_stripped_refused),
		cmocka_unit_test(test_wrong_signature_refused),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
