// SPDX-License-Identifier: MIT
/* gRPC fixtures for tests. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpcutil.h"
#include "testutil.h"

pid_t tu_start_grpc_server(int *port, long delay_us, const char *const extra[])
{
	char pf[PATH_MAX], log[PATH_MAX], d[24], *argv[40];
	static int seq;
	int n = 0;
	pid_t pid;

	snprintf(pf, sizeof(pf), "%s/grpc-%d.port", tu_tmpdir(), ++seq);
	snprintf(log, sizeof(log), "%s/grpc-%d.log", tu_tmpdir(), seq);
	snprintf(d, sizeof(d), "%ld", delay_us);
	argv[n++] = "build/fixtures/grpc_server";
	argv[n++] = "--port-file";
	argv[n++] = pf;
	argv[n++] = "--delay-us";
	argv[n++] = d;
	for (int i = 0; extra && extra[i] && n < 38; i++)
		argv[n++] = (char *)extra[i];
	argv[n] = NULL;
	pid = tu_spawn(argv, log);
	if (pid < 0 || tu_wait_file(pf, 10)) {
		fprintf(stderr, "grpc_server did not become ready (log %s)\n", log);
		tu_stop(pid);
		return -1;
	}
	*port = (int)tu_read_num(pf);
	return pid;
}

double tu_grpc_client_wall_s;
long long tu_grpc_client_max_us;

int tu_grpc_client(int port, int n, int k, const char *const extra[], long long *ok,
		   long long *deadline)
{
	double t0 = tu_now();
	char p[16], ns[16], ks[16], out[512], *argv[40];
	int i = 0, rc;

	snprintf(p, sizeof(p), "%d", port);
	snprintf(ns, sizeof(ns), "%d", n);
	snprintf(ks, sizeof(ks), "%d", k);
	argv[i++] = "build/fixtures/grpc_client";
	argv[i++] = "--port";
	argv[i++] = p;
	argv[i++] = "-n";
	argv[i++] = ns;
	argv[i++] = "-c";
	argv[i++] = ks;
	for (int j = 0; extra && extra[j] && i < 38; j++)
		argv[i++] = (char *)extra[j];
	argv[i] = NULL;
	out[0] = 0;
	rc = tu_run(argv, out, sizeof(out), 600); /* a hang guard */
	tu_grpc_client_wall_s = tu_now() - t0;
	tu_grpc_client_max_us = tu_field(out, "max_us");
	if (ok)
		*ok = tu_field(out, "ok");
	if (deadline)
		*deadline = tu_field(out, "deadline");
	if (rc != 0)
		fprintf(stderr, "grpc_client exit %d: %s\n", rc, out);
	return rc;
}

char *const *tu_h2load_grpc_argv(int port, int n, int k, const char **lat_log)
{
	static char body[PATH_MAX], log[PATH_MAX], url[64], ns[16], ks[16], lf[PATH_MAX + 16];
	static char *argv[] = { "h2load",
				"-n",
				ns,
				"-c",
				"1",
				"-m",
				ks,
				"-H",
				"content-type: application/grpc",
				"-H",
				"te: trailers",
				"-d",
				body,
				lf,
				url,
				NULL };
	static int seq;
	FILE *f;

	snprintf(body, sizeof(body), "%s/empty.grpc", tu_tmpdir());
	snprintf(log, sizeof(log), "%s/h2load-%d.log", tu_tmpdir(), ++seq);
	snprintf(lf, sizeof(lf), "--log-file=%s", log);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/ebeetest.Work/Do", port);
	snprintf(ns, sizeof(ns), "%d", n);
	snprintf(ks, sizeof(ks), "%d", k);
	f = fopen(body, "w"); /* the gRPC frame: uncompressed, 0 bytes */
	if (!f || fwrite("\0\0\0\0\0", 1, 5, f) != 5 || fclose(f))
		return NULL;
	*lat_log = log;
	return argv;
}

long long tu_h2load_grpc_check(const char *out, const char *lat_log, int n, long long min_us)
{
	long long total, done, ok, failed, lat, min = -1, lines = 0;
	const char *p = strstr(out, "requests: ");
	char line[256];
	FILE *f;

	if (!p ||
	    sscanf(p, "requests: %lld total, %*d started, %lld done, %lld succeeded, %lld failed",
		   &total, &done, &ok, &failed) != 4) {
		fprintf(stderr, "h2load: %s\n", out);
		return -1;
	}
	f = fopen(lat_log, "r"); /* start (us since the epoch), status, duration (us) a line */
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*s %*s %lld", &lat) != 1)
			continue;
		lines++;
		if (min < 0 || lat < min)
			min = lat;
	}
	if (f)
		fclose(f);
	printf("  h2load: %lld of %lld calls succeeded, %lld failed, shortest %lld us\n", ok, total,
	       failed, min);
	if (total != n || done != n || ok != n || failed || lines != ok || min < min_us)
		return -1;
	return ok;
}

long long tu_h2load_grpc(int port, int n, int k, long long min_us)
{
	const char *lat_log;
	char *const *argv = tu_h2load_grpc_argv(port, n, k, &lat_log);
	char out[8192] = "";
	double t0 = tu_now();
	int rc;

	if (!argv)
		return -1;
	rc = tu_run(argv, out, sizeof(out), 600); /* a hang guard */
	tu_grpc_client_wall_s = tu_now() - t0;
	if (rc != 0) {
		fprintf(stderr, "h2load exit %d: %s\n", rc, out);
		return -1;
	}
	return tu_h2load_grpc_check(out, lat_log, n, min_us);
}
