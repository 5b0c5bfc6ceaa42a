// SPDX-License-Identifier: MIT
/*
 * What finding a gRPC C-core in a process costs (metrics/src/grpc_elf.c):
 * one scan of /proc/PID/maps as auto mode repeats it, cold (the per-file
 * cache empty: each executable mapping's string tables read, symbols decoded
 * only where they mention grpc_chttp2) and warm (a stat() per executable
 * mapping), against the naive way: every symbol of every executable mapping
 * decoded, every time (ebee_grpc_resolve on each file, no prefilter, no
 * cache), and the rule before it (libgrpc*.so by name alone).
 *
 *   bench_grpc_scan [-r ROUNDS] [PID...]
 *
 * Without a PID (as tests/bench/run.sh runs it): this process, and the grpc++
 * fixture server (build/fixtures/grpc_server) started for the purpose.
 *
 * Cold figures include the page cache's state: run twice to see them with
 * the files in memory. The files found are listed (what ebee would probe).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "../../metrics/src/grpc_elf.h"

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* One scan: microseconds; the files found in *n. */
static double scan(const char *maps, const char *root, size_t *n, bool print)
{
	struct ebee_grpc_lib *libs;
	bool replaced;
	double t = now_us();
	int err = ebee_grpc_libs_in_maps(maps, root, &libs, n, &replaced);

	t = now_us() - t;
	if (err) {
		fprintf(stderr, "%s: %s\n", maps, strerror(-err));
		exit(1);
	}
	for (size_t i = 0; print && i < *n; i++)
		printf("    found %s (%s)\n", libs[i].mapped,
		       libs[i].named ? "by name" : "by symbols");
	free(libs);
	return t;
}

/* The rule before symbols: libgrpc*.so by name alone (a maps read and a
 * stat() per libgrpc mapping), the floor a warm scan is compared with. */
static double by_name(const char *maps, const char *root)
{
	char line[PATH_MAX + 256], path[PATH_MAX + 64];
	double t = now_us();
	FILE *f = fopen(maps, "re");
	struct stat st;

	if (!f)
		exit(1);
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/'), *nl;

		if (!p)
			continue;
		nl = strchr(p, '\n');
		if (nl)
			*nl = 0;
		if (!ebee_grpc_is_lib(p))
			continue;
		snprintf(path, sizeof(path), "%s%s", root, p);
		stat(path, &st);
	}
	fclose(f);
	return now_us() - t;
}

/* The naive scan: every distinct executable mapping resolved in full. */
static double naive(const char *maps, const char *root, size_t *files)
{
	char line[PATH_MAX + 256], path[PATH_MAX + 64], msg[1024], perms[5];
	struct ebee_grpc_syms s;
	ino_t seen[4096];
	size_t nseen = 0;
	double t = now_us();
	FILE *f = fopen(maps, "re");

	if (!f)
		exit(1);
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/'), *nl;
		struct stat st;
		size_t i;

		if (!p || sscanf(line, "%*s %4s", perms) != 1 || perms[2] != 'x')
			continue;
		nl = strchr(p, '\n');
		if (nl)
			*nl = 0;
		snprintf(path, sizeof(path), "%s%s", root, p);
		if (stat(path, &st) || !S_ISREG(st.st_mode))
			continue;
		for (i = 0; i < nseen && seen[i] != st.st_ino; i++)
			;
		if (i < nseen)
			continue;
		if (nseen < 4096)
			seen[nseen++] = st.st_ino;
		ebee_grpc_resolve(path, &s, msg, sizeof(msg));
	}
	fclose(f);
	*files = nseen;
	return now_us() - t;
}

static void bench(pid_t pid, int rounds)
{
	char maps[64], root[64];
	struct ebee_grpc_cache_stats cs;
	double cold, warm = 0, names = 0, nv;
	size_t n, files;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	snprintf(root, sizeof(root), "/proc/%d/root", pid);
	printf("pid %d:\n", pid);
	ebee_grpc_cache_clear();
	cold = scan(maps, root, &n, true);
	ebee_grpc_cache_stats(&cs);
	for (int r = 0; r < rounds; r++)
		warm += scan(maps, root, &n, false);
	warm /= rounds;
	for (int r = 0; r < rounds; r++)
		names += by_name(maps, root);
	names /= rounds;
	nv = naive(maps, root, &files);
	printf("  %zu executable files: %zu read, %zu dropped by the prefilter, %zu decoded\n",
	       files, cs.reads, cs.prefilter, cs.decoded);
	printf("  scan cold %.0f us, warm %.1f us (mean of %d; by name alone %.1f us); every "
	       "symbol decoded every time %.0f us\n",
	       cold, warm, rounds, names, nv);
}

/* The grpc++ fixture server, until it maps libgrpc; 0 if not built. */
static pid_t start_server(void)
{
	const char *srv = "build/fixtures/grpc_server";
	char maps[64], line[PATH_MAX + 256];
	pid_t pid;

	if (access(srv, X_OK))
		return 0;
	pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		dup2(fd, 1);
		dup2(fd, 2);
		execl(srv, srv, "--port-file", "/dev/null", (char *)NULL);
		_exit(127);
	}
	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	for (int i = 0; pid > 0 && i < 500; i++) {
		FILE *f = fopen(maps, "re");
		bool seen = false;

		while (f && !seen && fgets(line, sizeof(line), f))
			seen = strstr(line, "libgrpc.so") != NULL;
		if (f)
			fclose(f);
		if (seen)
			return pid;
		usleep(10000);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int rounds = 100, npids = 0;
	pid_t srv;

	for (int a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "-r") && a + 1 < argc) {
			rounds = atoi(argv[++a]);
			continue;
		}
		bench(atoi(argv[a]), rounds);
		npids++;
	}
	if (npids)
		return 0;
	bench(getpid(), rounds);
	srv = start_server();
	if (srv) {
		bench(srv, rounds);
		kill(srv, SIGKILL);
		waitpid(srv, NULL, 0);
	} else {
		printf("(build/fixtures/grpc_server not built or not started: make all)\n");
	}
	return 0;
}
