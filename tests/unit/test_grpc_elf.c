// SPDX-License-Identifier: MIT
/*
 * Finding libgrpc and its chttp2 functions (no root): library names, maps
 * files (several mappings of one file, a file replaced on disk, a container
 * root), and symbol resolution by demangled name on the real Debian library
 * and on a library that is not gRPC.
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "../../metrics/src/grpc_elf.h"

/* The library the tests resolve: Debian 12's, or EBEE_TEST_LIBGRPC. */
static const char *libgrpc(void)
{
	const char *p = getenv("EBEE_TEST_LIBGRPC");

	return p ? p : "/usr/lib/x86_64-linux-gnu/libgrpc.so.29";
}

static void test_is_lib(void **state)
{
	assert_true(ebee_grpc_is_lib("/usr/lib/x86_64-linux-gnu/libgrpc.so.29.0.0"));
	assert_true(ebee_grpc_is_lib("/opt/grpc/lib/libgrpc.so"));
	assert_true(ebee_grpc_is_lib("libgrpc_unsecure.so.29"));
	assert_false(ebee_grpc_is_lib("/usr/lib/x86_64-linux-gnu/libgrpc++.so.1.51"));
	assert_false(ebee_grpc_is_lib("/usr/lib/x86_64-linux-gnu/libgrpc++_reflection.so.1.51"));
	assert_false(ebee_grpc_is_lib("/usr/lib/libgrpcfoo.so"));
	assert_false(ebee_grpc_is_lib("/usr/lib/libgrpc.sox"));
	assert_false(ebee_grpc_is_lib("/usr/lib/libgpr.so.29"));
}

/* A maps file whose libgrpc lines point at files under a fake root: the
 * library is found once (four mappings), a deleted one is reported as
 * replaced, other libraries are ignored. */
static void test_maps_through_root(void **state)
{
	char dir[] = "/tmp/ebee-unit-XXXXXX", maps[PATH_MAX], lib[256], cmd[PATH_MAX * 2];
	struct ebee_grpc_lib *libs;
	bool replaced;
	size_t n;
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(lib, sizeof(lib), "%s/usr/lib", dir);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s && : > %s/libgrpc.so.29 && : > %s/libgrpc++.so.1",
		 lib, lib, lib);
	assert_int_equal(system(cmd), 0);
	snprintf(maps, sizeof(maps), "%s/maps", dir);
	f = fopen(maps, "w");
	assert_non_null(f);
	fprintf(f, "55d0-55e0 r--p 00000000 fd:01 11 /usr/bin/server\n"
		   "7f00-7f10 r--p 00000000 fd:01 12 /usr/lib/libgrpc.so.29\n"
		   "7f10-7f20 r-xp 00010000 fd:01 12 /usr/lib/libgrpc.so.29\n"
		   "7f20-7f30 r--p 00020000 fd:01 12 /usr/lib/libgrpc.so.29\n"
		   "7f30-7f40 rw-p 00030000 fd:01 12 /usr/lib/libgrpc.so.29\n"
		   "7f40-7f50 r-xp 00000000 fd:01 13 /usr/lib/libgrpc++.so.1\n"
		   "7f50-7f60 rw-p 00000000 00:00 0 \n"
		   "7ffc-7ffd rw-p 00000000 00:00 0 [stack]\n");
	fclose(f);
	assert_int_equal(ebee_grpc_libs_in_maps(maps, dir, &libs, &n, &replaced), 0);
	assert_int_equal(n, 1);
	assert_false(replaced);
	assert_string_equal(libs[0].mapped, "/usr/lib/libgrpc.so.29");
	snprintf(cmd, sizeof(cmd), "%s/usr/lib/libgrpc.so.29", dir);
	assert_string_equal(libs[0].path, cmd);
	free(libs);

	f = fopen(maps, "w");
	assert_non_null(f);
	fprintf(f, "7f10-7f20 r-xp 00010000 fd:01 14 /usr/lib/libgrpc.so.28 (deleted)\n");
	fclose(f);
	assert_int_equal(ebee_grpc_libs_in_maps(maps, dir, &libs, &n, &replaced), 0);
	assert_int_equal(n, 0);
	assert_true(replaced);
	free(libs);

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(ebee_grpc_libs_in_maps("/nonexistent/maps", NULL, &libs, &n, &replaced),
			 -ENOENT);
}

/* The real library: all three functions, by demangled name, at offsets
 * inside the file (the C1/C2 and D1/D2 aliases are one address each). */
static void test_resolve_debian_libgrpc(void **state)
{
	struct ebee_grpc_syms s;
	char msg[1024];
	struct stat st;

	if (stat(libgrpc(), &st)) {
		printf("SKIP: %s not installed (libgrpc-dev / libgrpc29)\n", libgrpc());
		skip();
	}
	assert_int_equal(ebee_grpc_resolve(libgrpc(), &s, msg, sizeof(msg)), 0);
	for (int i = 0; i < EBEE_GRPC_NSYMS; i++) {
		printf("  %s: %u address(es), first at file offset 0x%llx\n", ebee_grpc_sym_str(i),
		       s.n[i], (unsigned long long)s.off[i][0]);
		assert_true(s.n[i] >= 1);
		for (unsigned int a = 0; a < s.n[i]; a++)
			assert_true(s.off[i][a] > 0 && s.off[i][a] < (uint64_t)st.st_size);
	}
	assert_int_equal(s.n[EBEE_GRPC_SYM_NEW], 1);
	assert_int_equal(s.n[EBEE_GRPC_SYM_FREE], 1);
}

/* A library without the functions: the message names each one. */
static void test_resolve_not_grpc(void **state)
{
	const char *libc = "/lib/x86_64-linux-gnu/libc.so.6";
	struct ebee_grpc_syms s;
	char msg[1024];

	if (access(libc, R_OK)) {
		printf("SKIP: no %s\n", libc);
		skip();
	}
	assert_int_equal(ebee_grpc_resolve(libc, &s, msg, sizeof(msg)), -ENOENT);
	printf("  %s\n", msg);
	assert_non_null(strstr(msg, "grpc_chttp2_stream::grpc_chttp2_stream("));
	assert_non_null(strstr(msg, "grpc_chttp2_mark_stream_closed("));
	assert_non_null(strstr(msg, "grpc_chttp2_stream::~grpc_chttp2_stream()"));
	assert_int_equal(ebee_grpc_resolve("/nonexistent.so", &s, msg, sizeof(msg)), -ENOENT);
	assert_non_null(strstr(msg, "cannot open"));
	assert_int_equal(ebee_grpc_resolve("/etc/hostname", &s, msg, sizeof(msg)), -ENOEXEC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_is_lib),
		cmocka_unit_test(test_maps_through_root),
		cmocka_unit_test(test_resolve_debian_libgrpc),
		cmocka_unit_test(test_resolve_not_grpc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
