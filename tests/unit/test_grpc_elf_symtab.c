// SPDX-License-Identifier: MIT
/*
 * A gRPC C-core found by its symbols wherever it is linked (no root): the
 * fake C-core of tests/fixtures/chttp2/ in a PIE and a non-PIE program
 * (.symtab alone), a program exporting them too (both tables: each function
 * once), a stripped program (not found, the usual message), a module not
 * named libgrpc (.dynsym) and one with a wrong signature (named in the
 * message). The offsets are checked against a second reading of the file:
 * the symbol values nm prints, turned into file offsets here from the
 * program headers read by hand. Then maps: only executable mappings of
 * regular files, found once, through the per-file cache (each file read
 * once, again when it changes; libc and the stripped program never decoded),
 * on files and on live processes, and ebee_grpc_maps_core().
 */
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <cmocka.h>

#include "ebee.h"
#include "../../metrics/src/grpc_elf.h"
#include "../lib/testutil.h"

#define FIX "build/fixtures/"

/* The mangled names of the three functions (gRPC 1.51's, as the fixture
 * defines them): C1 and D1 (C2/D2 are aliases). */
static const char *const mangled[EBEE_GRPC_NSYMS] = {
	[EBEE_GRPC_SYM_NEW] = "_ZN18grpc_chttp2_streamC1EP21grpc_chttp2_transportP20grpc_stream_"
			      "refcountPKvPN9grpc_core5ArenaE",
	[EBEE_GRPC_SYM_CLOSED] =
	    "_Z30grpc_chttp2_mark_stream_closedP21grpc_chttp2_transportP18grpc_"
	    "chttp2_streamiiP10grpc_error",
	[EBEE_GRPC_SYM_FREE] = "_ZN18grpc_chttp2_streamD1Ev",
};

static int setup(void **state)
{
	tu_init();
	if (access(FIX "fake_chttp2_pie", R_OK) || access(FIX "fake_cygrpc.so", R_OK) ||
	    access(FIX "fake_chttp2_host", X_OK)) {
		fprintf(stderr, "build/fixtures/fake_chttp2* missing: run make all\n");
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	tu_cleanup();
	return 0;
}

/* The value nm prints for sym in file (dyn: nm -D), or 0 when absent. */
static uint64_t nm_value(const char *file, const char *sym, bool dyn)
{
	char cmd[PATH_MAX + 64], line[1024];
	uint64_t v = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm %s--defined-only %s 2>/dev/null", dyn ? "-D " : "", file);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		unsigned long long a;
		char t, name[900];

		if (sscanf(line, "%llx %c %899s", &a, &t, name) == 3 && !strcmp(name, sym))
			v = a;
	}
	pclose(p);
	return v;
}

/* A virtual address to a file offset through the executable PT_LOAD
 * holding it, from the program headers read by hand (not libelf). */
static uint64_t off_by_hand(const char *file, uint64_t vaddr)
{
	Elf64_Ehdr eh;
	uint64_t off = 0;
	FILE *f = fopen(file, "rb");

	assert_non_null(f);
	assert_int_equal(fread(&eh, sizeof(eh), 1, f), 1);
	assert_memory_equal(eh.e_ident, ELFMAG, SELFMAG);
	assert_int_equal(eh.e_ident[EI_CLASS], ELFCLASS64);
	for (int i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		assert_int_equal(fseek(f, eh.e_phoff + (long)i * eh.e_phentsize, SEEK_SET), 0);
		assert_int_equal(fread(&ph, sizeof(ph), 1, f), 1);
		if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) && vaddr >= ph.p_vaddr &&
		    vaddr < ph.p_vaddr + ph.p_filesz)
			off = vaddr - ph.p_vaddr + ph.p_offset;
	}
	fclose(f);
	return off;
}

/* file resolves to one address per function, each at the offset nm's
 * value (from .symtab, or .dynsym with dyn) implies. */
static void check_resolves(const char *file, bool dyn)
{
	struct ebee_grpc_syms s, c;
	char msg[1024];

	assert_int_equal(ebee_grpc_resolve(file, &s, msg, sizeof(msg)), 0);
	for (int i = 0; i < EBEE_GRPC_NSYMS; i++) {
		uint64_t v = nm_value(file, mangled[i], dyn);

		assert_true(v != 0);
		printf("  %s: %s at 0x%llx = file offset 0x%llx (ebee: %u address, 0x%llx)\n", file,
		       ebee_grpc_sym_str(i), (unsigned long long)v,
		       (unsigned long long)off_by_hand(file, v), s.n[i],
		       (unsigned long long)s.off[i][0]);
		assert_int_equal(s.n[i], 1);
		assert_int_equal(s.off[i][0], off_by_hand(file, v));
	}
	/* The cached path gives the same. */
	assert_int_equal(ebee_grpc_resolve_cached(file, &c, msg, sizeof(msg)), 0);
	assert_memory_equal(&s, &c, sizeof(s));
}

/* (a) Programs whose .dynsym lacks the functions and .symtab has them: a PIE
 * (ET_DYN) and a non-PIE (ET_EXEC, where a value is not an offset). */
static void test_symtab_only_programs(void **state)
{
	for (int i = 0; i < EBEE_GRPC_NSYMS; i++) {
		assert_int_equal(nm_value(FIX "fake_chttp2_pie", mangled[i], true), 0);
		assert_int_equal(nm_value(FIX "fake_chttp2_exec", mangled[i], true), 0);
	}
	check_resolves(FIX "fake_chttp2_pie", false);
	check_resolves(FIX "fake_chttp2_exec", false);
	/* Not a value: the non-PIE's text is mapped above its file offset. */
	assert_true(nm_value(FIX "fake_chttp2_exec", mangled[0], false) !=
		    off_by_hand(FIX "fake_chttp2_exec",
				nm_value(FIX "fake_chttp2_exec", mangled[0], false)));
}

/* In both tables (-rdynamic): one address each, not two. */
static void test_both_tables_once(void **state)
{
	for (int i = 0; i < EBEE_GRPC_NSYMS; i++)
		assert_true(nm_value(FIX "fake_chttp2_rdynamic", mangled[i], true) != 0);
	check_resolves(FIX "fake_chttp2_rdynamic", true);
}

/* (b) A module not named libgrpc, with the functions in .dynsym. */
static void test_module_of_another_name(void **state)
{
	assert_false(ebee_grpc_is_lib(FIX "fake_cygrpc.so"));
	check_resolves(FIX "fake_cygrpc.so", true);
}

/* (c) Stripped: nowhere, and the usual message naming each function. */
static void test_stripped_is_not_found(void **state)
{
	struct ebee_grpc_syms s;
	char msg[1024];

	assert_int_equal(nm_value(FIX "fake_chttp2_stripped", mangled[0], false), 0);
	assert_int_equal(ebee_grpc_resolve(FIX "fake_chttp2_stripped", &s, msg, sizeof(msg)),
			 -ENOENT);
	printf("  %s\n", msg);
	assert_non_null(strstr(msg, "ebee: " FIX "fake_chttp2_stripped lacks"));
	for (int i = 0; i < EBEE_GRPC_NSYMS; i++) {
		assert_int_equal(s.n[i], 0);
		assert_non_null(strstr(msg, ebee_grpc_sym_str(i)));
	}
	assert_int_equal(ebee_grpc_resolve_cached(FIX "fake_chttp2_stripped", &s, msg, sizeof(msg)),
			 -ENOENT);
	assert_non_null(strstr(msg, "ebee: " FIX "fake_chttp2_stripped lacks"));
}

/* A right name with the wrong arguments: refused, and said what was found. */
static void test_wrong_signature_named(void **state)
{
	struct ebee_grpc_syms s;
	char msg[1024];

	assert_int_equal(ebee_grpc_resolve(FIX "fake_cygrpc_badsig.so", &s, msg, sizeof(msg)),
			 -ENOENT);
	printf("  %s\n", msg);
	assert_non_null(strstr(msg, "lacks grpc_chttp2_mark_stream_closed(grpc_chttp2_transport*, "
				    "grpc_chttp2_stream*, int, int, ...) (found "
				    "grpc_chttp2_mark_stream_closed(grpc_chttp2_stream*, "
				    "grpc_chttp2_transport*, int, int, grpc_error*) instead)"));
	assert_null(strstr(msg, "~grpc_chttp2_stream()"));
	assert_int_equal(s.n[EBEE_GRPC_SYM_NEW], 1);
	assert_int_equal(s.n[EBEE_GRPC_SYM_CLOSED], 0);
}

static char cwd[PATH_MAX];

/* A maps file of lines "PERMS PATH", a PATH starting with @/ under the
 * working directory. */
static void write_maps(const char *maps, const char *const lines[])
{
	FILE *f = fopen(maps, "w");

	assert_non_null(f);
	for (int i = 0; lines[i]; i++) {
		const char *path = lines[i] + 5;

		fprintf(f, "7f%02x0000-7f%02x1000 %.4s 00000000 fd:01 %d %s%s\n", i, i, lines[i],
			100 + i, *path == '@' ? cwd : "", *path == '@' ? path + 1 : path);
	}
	fclose(f);
}

/* Which files a maps file names, through the cache: executable mappings
 * of files with the functions, once each; libgrpc by name as before. */
static void test_maps_and_cache(void **state)
{
	char maps[PATH_MAX], copy[PATH_MAX], line[PATH_MAX + 32], want[PATH_MAX * 2 + 64];
	struct ebee_grpc_cache_stats st;
	struct ebee_grpc_lib *libs;
	struct timeval tv[2];
	bool replaced;
	size_t n;

	assert_non_null(getcwd(cwd, sizeof(cwd)));
	snprintf(maps, sizeof(maps), "%s/maps", tu_tmpdir());
	/* A copy of the module to change under the cache. */
	snprintf(copy, sizeof(copy), "%s/_cygrpc.cpython-311-x86_64-linux-gnu.so", tu_tmpdir());
	snprintf(want, sizeof(want), "cp %s/" FIX "fake_cygrpc.so %s", cwd, copy);
	assert_int_equal(system(want), 0);

	ebee_grpc_cache_clear();
	/* Only data mappings of the module, and text of libc and the stripped
	 * program: nothing. */
	write_maps(maps, (const char *const[]){ "r--p @/" FIX "fake_cygrpc.so",
						"rw-p @/" FIX "fake_cygrpc.so",
						"r-xp /lib/x86_64-linux-gnu/libc.so.6",
						"r-xp @/" FIX "fake_chttp2_stripped",
						"r-xp /dev/zero", "r-xp @/" FIX "nonexistent",
						"r-xp @/" FIX "fake_cygrpc.so (deleted)", NULL });
	assert_int_equal(ebee_grpc_libs_in_maps(maps, "", &libs, &n, &replaced), 0);
	assert_int_equal(n, 0);
	assert_false(replaced); /* not libgrpc by name */
	free(libs);
	ebee_grpc_cache_stats(&st);
	printf("  nothing: %zu files known, %zu read, %zu dropped by the prefilter, %zu decoded\n",
	       st.files, st.reads, st.prefilter, st.decoded);
	/* libc and the stripped program, prefiltered (never decoded); /dev/zero
	 * is no regular file; the module's data mappings are not looked at. */
	assert_int_equal(st.reads, 2);
	assert_int_equal(st.prefilter, 2);
	assert_int_equal(st.decoded, 0);

	/* The module's text, twice, and the PIE's: each once; again: no read. */
	snprintf(line, sizeof(line), "r-xp %s", copy);
	for (int round = 0; round < 2; round++) {
		write_maps(maps,
			   (const char *const[]){
			       "r--p @/" FIX "fake_chttp2_pie", "r-xp @/" FIX "fake_chttp2_pie",
			       "r-xp /lib/x86_64-linux-gnu/libc.so.6",
			       "r-xp @/" FIX "fake_cygrpc.so", "r-xp @/" FIX "fake_cygrpc.so",
			       "r-xp @/" FIX "fake_chttp2_stripped", NULL });
		assert_int_equal(ebee_grpc_libs_in_maps(maps, "", &libs, &n, &replaced), 0);
		assert_int_equal(n, 2);
		snprintf(want, sizeof(want), "%s/" FIX "fake_chttp2_pie", cwd);
		assert_string_equal(libs[0].mapped, want);
		assert_string_equal(libs[0].path, want);
		assert_false(libs[0].named);
		snprintf(want, sizeof(want), "%s/" FIX "fake_cygrpc.so", cwd);
		assert_string_equal(libs[1].mapped, want);
		assert_false(libs[1].named);
		free(libs);
		ebee_grpc_cache_stats(&st);
		printf("  round %d: %zu files known, %zu read, %zu prefiltered, %zu decoded\n",
		       round, st.files, st.reads, st.prefilter, st.decoded);
		assert_int_equal(st.reads, 4);
		assert_int_equal(st.decoded, 2);
	}

	/* The copy: read once; changed (mtime), read again. */
	write_maps(maps, (const char *const[]){ line, NULL });
	for (int round = 0; round < 3; round++) {
		if (round == 2) {
			gettimeofday(&tv[0], NULL);
			tv[1] = tv[0];
			tv[1].tv_sec -= 3600;
			assert_int_equal(utimes(copy, tv), 0);
		}
		assert_int_equal(ebee_grpc_libs_in_maps(maps, "", &libs, &n, &replaced), 0);
		assert_int_equal(n, 1);
		assert_string_equal(libs[0].path, copy);
		free(libs);
		ebee_grpc_cache_stats(&st);
		assert_int_equal(st.reads, round < 2 ? 5 : 6);
	}
	/* Emptied under it (same size would not do: truncate): not found now. */
	assert_int_equal(truncate(copy, 0), 0);
	assert_int_equal(ebee_grpc_libs_in_maps(maps, "", &libs, &n, &replaced), 0);
	assert_int_equal(n, 0);
	free(libs);
	ebee_grpc_cache_stats(&st);
	assert_int_equal(st.reads, 7);
}

/* Spawn argv, wait until its maps show want (the module is dlopen'd after
 * exec). */
static pid_t spawn_mapping(char *const argv[], const char *want)
{
	char maps[64], line[PATH_MAX + 256];
	pid_t pid = tu_spawn(argv, NULL);

	assert_true(pid > 0);
	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	for (int i = 0; i < 500; i++) {
		FILE *f = fopen(maps, "r");
		bool seen = false;

		while (f && !seen && fgets(line, sizeof(line), f))
			seen = strstr(line, want) != NULL;
		if (f)
			fclose(f);
		if (seen)
			return pid;
		tu_sleep_ms(10);
	}
	fail_msg("pid %d never mapped %s", pid, want);
	return -1;
}

/* Live processes: ebee_grpc_maps_core() as parties' config check asks. */
static void test_live_processes(void **state)
{
	char go[PATH_MAX], done[PATH_MAX];
	pid_t pie, host, stripped, bad, plain;

	snprintf(go, sizeof(go), "%s/go", tu_tmpdir());
	snprintf(done, sizeof(done), "%s/done", tu_tmpdir());
	pie = spawn_mapping((char *const[]){ FIX "fake_chttp2_pie", "1", go, done, NULL },
			    "fake_chttp2_pie");
	host = spawn_mapping(
	    (char *const[]){ FIX "fake_chttp2_host", FIX "fake_cygrpc.so", "1", go, done, NULL },
	    "fake_cygrpc.so");
	bad = spawn_mapping((char *const[]){ FIX "fake_chttp2_host", FIX "fake_cygrpc_badsig.so",
					     "1", go, done, NULL },
			    "fake_cygrpc_badsig.so");
	stripped = spawn_mapping((char *const[]){ FIX "fake_chttp2_stripped", "1", go, done, NULL },
				 "fake_chttp2_stripped");
	plain = spawn_mapping((char *const[]){ "sleep", "30", NULL }, "/sleep");
	assert_int_equal(ebee_grpc_maps_core(pie), 1);
	assert_int_equal(ebee_grpc_maps_core(host), 1);
	/* A C-core of another shape is still a C-core: ebee says what is wrong
	 * when it resolves it. */
	assert_int_equal(ebee_grpc_maps_core(bad), 1);
	assert_int_equal(ebee_grpc_maps_core(stripped), 0);
	assert_int_equal(ebee_grpc_maps_core(plain), 0);
	tu_stop(plain);
	assert_int_equal(ebee_grpc_maps_core(plain), -ESRCH);
	assert_int_equal(ebee_grpc_maps_core(0), -EINVAL);
	tu_stop(pie);
	tu_stop(host);
	tu_stop(bad);
	tu_stop(stripped);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_symtab_only_programs),
		cmocka_unit_test(test_both_tables_once),
		cmocka_unit_test(test_module_of_another_name),
		cmocka_unit_test(test_stripped_is_not_found),
		cmocka_unit_test(test_wrong_signature_named),
		cmocka_unit_test(test_maps_and_cache),
		cmocka_unit_test(test_live_processes),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
