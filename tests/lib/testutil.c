// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "testutil.h"

#define MAX_CHILDREN 64

static pid_t children[MAX_CHILDREN];
static int nchildren;
static char tmpdir[PATH_MAX];
static pid_t owner; /* the test program's own pid: a forked helper inherits the handler */

double tu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void tu_sleep_ms(double ms)
{
	struct timespec ts = { (time_t)(ms / 1000),
			       (long)((ms - (time_t)(ms / 1000) * 1000) * 1e6) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

bool tu_need_root(void)
{
	if (geteuid() == 0)
		return false;
	printf("SKIP: needs root (loads BPF programs, starts servers)\n");
	return true;
}

static void on_exit_cleanup(void)
{
	tu_cleanup();
}

/* tests/run.sh bounds each program with timeout(1), which signals its own
 * process group, and every child started here leads a group of its own (so
 * that tu_stop reaches a server's workers): on that signal, or a Ctrl-C, the
 * children's groups go first, then this program dies of the signal as it
 * would have. A timed-out program once left a gRPC server running in a guest
 * for the rest of the suite. Only async-signal-safe calls here. */
static void on_fatal_signal(int sig)
{
	for (int i = 0; getpid() == owner && i < nchildren; i++) {
		kill(-children[i], SIGKILL);
		kill(children[i], SIGKILL);
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

void tu_init(void)
{
	static bool done;
	char exe[PATH_MAX], *p;
	ssize_t n;

	if (done)
		return;
	done = true;
	/* Tests live in build/tests/<kind>/ (or another build tree's, such as
	 * make asan's build/asan/tests/<kind>/): the repo root is the nearest
	 * directory above that holds this file's sources. */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		char probe[PATH_MAX + 32];

		exe[n] = 0;
		for (int i = 0; i < 8 && (p = strrchr(exe, '/')); i++) {
			*p = 0;
			snprintf(probe, sizeof(probe), "%s/tests/lib/testutil.c", exe);
			if (!access(probe, R_OK))
				break;
		}
		if (chdir(exe[0] ? exe : "/"))
			perror("chdir");
	}
	atexit(on_exit_cleanup);
	signal(SIGPIPE, SIG_IGN);
	owner = getpid();
	signal(SIGTERM, on_fatal_signal);
	signal(SIGINT, on_fatal_signal);
	signal(SIGHUP, on_fatal_signal);
}

const char *tu_tmpdir(void)
{
	if (!tmpdir[0]) {
		snprintf(tmpdir, sizeof(tmpdir), "/tmp/ebee-test.XXXXXX");
		if (!mkdtemp(tmpdir)) {
			perror("mkdtemp");
			tmpdir[0] = 0;
			return "/tmp";
		}
		chmod(tmpdir, 0755);
	}
	return tmpdir;
}

pid_t tu_spawn(char *const argv[], const char *log)
{
	pid_t parent = getpid(), pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd =
		    open(log ? log : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		setpgid(0, 0);
		/* A test killed by SIGKILL (timeout's -k) runs no handler: the
		 * kernel then kills the child itself (its own children stay;
		 * the signal handler above covers the usual SIGTERM). */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127); /* the test died before the prctl */
		execvp(argv[0], argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (nchildren < MAX_CHILDREN)
		children[nchildren++] = pid;
	return pid;
}

static void forget(pid_t pid)
{
	for (int i = 0; i < nchildren; i++)
		if (children[i] == pid) {
			children[i] = children[--nchildren];
			return;
		}
}

int tu_stop(pid_t pid)
{
	int status;
	double end;

	if (pid <= 0)
		return -1;
	if (waitpid(pid, &status, WNOHANG) == pid) {
		forget(pid);
		return 0;
	}
	kill(pid, SIGTERM);
	end = tu_now() + 5;
	while (tu_now() < end) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			forget(pid);
			kill(-pid, SIGKILL); /* anything left in its process group */
			return 1;
		}
		tu_sleep_ms(10);
	}
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	forget(pid);
	return 2;
}

void tu_cleanup(void)
{
	while (nchildren > 0)
		tu_stop(children[nchildren - 1]);
	if (tmpdir[0]) {
		char cmd[PATH_MAX + 16];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd))
			fprintf(stderr, "could not remove %s\n", tmpdir);
		tmpdir[0] = 0;
	}
}

int tu_run(char *const argv[], char *out, size_t out_len, double timeout_s)
{
	int pfd[2], status = -1;
	size_t off = 0;
	double end = tu_now() + timeout_s;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(pfd[1], 1);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(pfd[1]);
	fcntl(pfd[0], F_SETFL, O_NONBLOCK);
	for (;;) {
		ssize_t n = out && off + 1 < out_len ? read(pfd[0], out + off, out_len - off - 1)
						     : read(pfd[0], (char[256]){ 0 }, 256);

		if (n > 0 && out && off + 1 < out_len)
			off += n;
		if (n == 0)
			break;
		if (n < 0 && errno != EAGAIN)
			break;
		if (tu_now() > end) {
			kill(pid, SIGKILL);
			break;
		}
		if (n < 0)
			tu_sleep_ms(5);
	}
	if (out)
		out[off] = 0;
	close(pfd[0]);
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int tu_free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd < 0)
		return -1;
	if (!bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(fd, (struct sockaddr *)&a, &l))
		port = ntohs(a.sin_port);
	close(fd);
	return port;
}

int tu_wait_file(const char *path, double timeout_s)
{
	double end = tu_now() + timeout_s;
	struct stat st;

	while (tu_now() < end) {
		if (!stat(path, &st) && st.st_size > 0)
			return 0;
		tu_sleep_ms(10);
	}
	return -ETIMEDOUT;
}

int tu_wait_port(int port, double timeout_s)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	double end = tu_now() + timeout_s;

	while (tu_now() < end) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		int ok = fd >= 0 && !connect(fd, (struct sockaddr *)&a, sizeof(a));

		if (fd >= 0)
			close(fd);
		if (ok)
			return 0;
		tu_sleep_ms(20);
	}
	return -ETIMEDOUT;
}

long long tu_read_num(const char *path)
{
	long long v = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

long tu_count_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	long n = 0;
	int c;

	if (!f)
		return -1;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

long long tu_field(const char *text, const char *key)
{
	size_t kl = strlen(key);
	const char *p = text;

	while ((p = strstr(p, key))) {
		if ((p == text || p[-1] == ' ' || p[-1] == '\n') && p[kl] == ' ')
			return strtoll(p + kl + 1, NULL, 10);
		p += kl;
	}
	return -1;
}

long long tu_server_svc_us(const char *stats_file, long long want, const char *key,
			   double timeout_s)
{
	double end = tu_now() + timeout_s;

	do {
		char text[256] = "";
		FILE *f = fopen(stats_file, "r");

		if (f) {
			size_t n = fread(text, 1, sizeof(text) - 1, f);

			text[n] = '\0';
			fclose(f);
			if (tu_field(text, "count") >= want)
				return tu_field(text, key);
		}
		tu_sleep_ms(20);
	} while (tu_now() < end);
	fprintf(stderr, "%s: no count >= %lld within %.0f s\n", stats_file, want, timeout_s);
	return -1;
}

bool tu_svc_near(const char *what, double ebee_ns, long long server_us)
{
	double e = ebee_ns / 1e3, tol = server_us * TU_SVC_REL + TU_SVC_ABS_US;

	printf("  %s: ebee %.0f us, server's own %lld us (want within %.0f us)\n", what, e,
	       server_us, tol);
	return server_us > 0 && e >= server_us - tol && e <= server_us + tol;
}

pid_t tu_start_cpr(int *port, const char *const extra[])
{
	return tu_start_server("cpr_server", port, extra);
}

pid_t tu_start_server(const char *name, int *port, const char *const extra[])
{
	char ready[PATH_MAX], log[PATH_MAX], prog[PATH_MAX], *argv[40];
	static int seq;
	int n = 0;
	pid_t pid;

	snprintf(ready, sizeof(ready), "%s/%s-%d.ready", tu_tmpdir(), name, ++seq);
	snprintf(log, sizeof(log), "%s/%s-%d.log", tu_tmpdir(), name, seq);
	snprintf(prog, sizeof(prog), "build/fixtures/%s", name);
	argv[n++] = prog;
	argv[n++] = "--ready-file";
	argv[n++] = ready;
	argv[n++] = "--timeout";
	argv[n++] = "300";
	for (int i = 0; extra && extra[i] && n < 38; i++)
		argv[n++] = (char *)extra[i];
	argv[n] = NULL;
	pid = tu_spawn(argv, log);
	if (pid < 0 || tu_wait_file(ready, 10)) {
		fprintf(stderr, "%s did not become ready (log %s)\n", name, log);
		tu_stop(pid);
		return -1;
	}
	*port = (int)tu_read_num(ready);
	return pid;
}

pid_t tu_start_memcached(int *port)
{
	char p[16], log[PATH_MAX];
	pid_t pid;

	*port = tu_free_port();
	snprintf(p, sizeof(p), "%d", *port);
	snprintf(log, sizeof(log), "%s/memcached-%d.log", tu_tmpdir(), *port);
	pid = tu_spawn((char *const[]){ "memcached", "-u", "root", "-l", "127.0.0.1", "-p", p, "-U",
					"0", "-t", "2", "-m", "64", NULL },
		       log);
	if (pid < 0 || tu_wait_port(*port, 10)) {
		fprintf(stderr, "memcached did not start (log %s)\n", log);
		tu_stop(pid);
		return -1;
	}
	return pid;
}

long long tu_memcached_stat(int port, const char *name)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	char buf[8192], key[128];
	size_t off = 0;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	long long v = -1;
	char *p;

	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    write(fd, "stats\r\n", 7) != 7)
		goto out;
	while (off + 1 < sizeof(buf)) {
		ssize_t n = read(fd, buf + off, sizeof(buf) - off - 1);

		if (n <= 0)
			break;
		off += n;
		buf[off] = 0;
		if (strstr(buf, "END\r\n"))
			break;
	}
	buf[off] = 0;
	snprintf(key, sizeof(key), "STAT %s ", name);
	p = strstr(buf, key);
	if (p)
		v = strtoll(p + strlen(key), NULL, 10);
out:
	if (fd >= 0)
		close(fd);
	return v;
}

pid_t tu_start_nginx(const char *name, int *port, bool keepalive, int workers, char *access_log,
		     size_t len)
{
	char dir[PATH_MAX], conf[PATH_MAX + 16], log[PATH_MAX + 16];
	FILE *f;
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/%s", tu_tmpdir(), name);
	if (mkdir(dir, 0755))
		return -1;
	snprintf(access_log, len, "%s/access.log", dir);
	*port = tu_free_port();
	snprintf(conf, sizeof(conf), "%s/nginx.conf", dir);
	snprintf(log, sizeof(log), "%s/nginx.out", dir);
	f = fopen(conf, "w");
	if (!f)
		return -1;
	fprintf(
	    f,
	    "master_process on;\nworker_processes %d;\ndaemon off;\nuser root;\n"
	    "error_log %s/error.log;\npid %s/nginx.pid;\n"
	    "events { worker_connections 1024; }\n"
	    "http {\n access_log %s/access.log;\n keepalive_timeout %s;\n"
	    " client_body_temp_path %s/tmp;\n proxy_temp_path %s/tmp;\n"
	    " fastcgi_temp_path %s/tmp;\n uwsgi_temp_path %s/tmp;\n scgi_temp_path %s/tmp;\n"
	    " server {\n  listen 127.0.0.1:%d;\n  location / { return 200 \"ok\\n\"; }\n }\n}\n",
	    workers, dir, dir, dir, keepalive ? "65" : "0", dir, dir, dir, dir, dir, *port);
	fclose(f);
	pid = tu_spawn((char *const[]){ "nginx", "-p", dir, "-c", conf, NULL }, log);
	if (pid < 0 || tu_wait_port(*port, 10)) {
		fprintf(stderr, "nginx did not start (see %s and %s/error.log)\n", log, dir);
		tu_stop(pid);
		return -1;
	}
	tu_sleep_ms(200); /* every worker up */
	return pid;
}

long long tu_http_client(int port, int requests, int concurrency, int keepalive)
{
	return tu_http_client_lat(port, requests, concurrency, keepalive, NULL);
}

long long tu_curl_get(int port, int requests, int parallel)
{
	char url[64], par[16], *out, *p;
	/* one URL a request through curl's globbing (/[1-N]); -s alone still
	 * shows -Z's progress meter (curl 7.88) */
	char *argv[] = {
		"curl", "-s", "--no-progress-meter", "-o", "/dev/null", "-w", "%{http_code}\n",
		url,	"-Z", "--parallel-max",	     par,  NULL
	};
	size_t len = 4 * (size_t)requests + 64;
	long long ok = 0;
	int rc;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/[1-%d]", port, requests);
	snprintf(par, sizeof(par), "%d", parallel);
	if (parallel <= 1)
		argv[8] = NULL; /* no -Z: one after another */
	out = malloc(len);
	if (!out)
		return -1;
	rc = tu_run(argv, out, len, 120);
	for (p = out; (p = strstr(p, "200\n")); p += 4)
		ok++;
	free(out);
	if (rc != 0) {
		printf("  curl %s: exit %d\n", url, rc);
		return -1;
	}
	return ok;
}

long long tu_http_client_lat(int port, int requests, int concurrency, int keepalive,
			     long long *p50_us)
{
	char p[16], n[16], c[16], k[16], out[512];
	char *argv[16] = { "build/fixtures/http_client",
			   "--port",
			   p,
			   "--requests",
			   n,
			   "--concurrency",
			   c,
			   "--timeout",
			   p50_us ? "120" : "60" };
	int rc, i = 9;

	snprintf(p, sizeof(p), "%d", port);
	snprintf(n, sizeof(n), "%d", requests);
	snprintf(c, sizeof(c), "%d", concurrency);
	if (keepalive) {
		snprintf(k, sizeof(k), "%d", keepalive);
		argv[i++] = "--keepalive";
		argv[i++] = k;
	}
	if (p50_us)
		argv[i++] = "--latency";
	argv[i] = NULL;
	rc = tu_run(argv, out, sizeof(out), p50_us ? 150 : 90);
	if (rc != 0 || tu_field(out, "errors") != 0) {
		fprintf(stderr, "http_client exit %d: %s\n", rc, out);
		return -1;
	}
	if (p50_us) {
		printf("  client: %s", out);
		*p50_us = tu_field(out, "p50_us");
	}
	return tu_field(out, "ok");
}

long long tu_mc_client(int port, int conns, int requests)
{
	char p[16], n[16], c[16], out[512];
	char *argv[] = { "build/fixtures/mc_client",
			 "--port",
			 p,
			 "--conns",
			 c,
			 "--requests",
			 n,
			 "--timeout",
			 "120",
			 NULL };
	int rc;

	snprintf(p, sizeof(p), "%d", port);
	snprintf(n, sizeof(n), "%d", requests);
	snprintf(c, sizeof(c), "%d", conns);
	/* Hang guards, not time bounds: the 6.1 guest sent 39 873 of
	 * test_drops_are_counted's 40 000 commands in 60 s. */
	rc = tu_run(argv, out, sizeof(out), 150);
	if (rc != 0 || tu_field(out, "errors") != 0) {
		fprintf(stderr, "mc_client exit %d: %s\n", rc, out);
		return -1;
	}
	return tu_field(out, "ok");
}

int tu_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

double tu_np_lerp(uint64_t a, uint64_t b, double g)
{
	/* volatile: no FMA, which would round differently from numpy */
	volatile double prod;

	if (g >= 0.5) {
		prod = (double)(b - a) * (1.0 - g);
		return (double)b - prod;
	}
	prod = (double)(b - a) * g;
	return (double)a + prod;
}

double tu_np_linear(const uint64_t *x, size_t n, double p)
{
	double h = (double)(n - 1) * (p / 100.0);
	size_t lo;

	if (h >= (double)(n - 1))
		return (double)x[n - 1];
	lo = (size_t)h;
	return tu_np_lerp(x[lo], x[lo + 1], h - (double)lo);
}
