// SPDX-License-Identifier: MIT
/*
 * Benchmark of ebee's choice of hook: per-syscall tracepoints
 * (syscalls:sys_enter_read / sys_exit_read) against raw tracepoints
 * (sys_enter / sys_exit, one program for every syscall), both running the
 * same minimal work as ebee's hot path (tests/bench/bench_hooks.bpf.c).
 *
 * A hook's cost is paid not only by the traced server's traced syscalls but
 * by every other syscall and every other process on the machine, so four
 * loops are timed (in CPU time): this process (in the traced map) and a forked child (not
 * in it), each doing read() of one byte from /dev/zero (hooked) and getppid()
 * (not hooked). Phases (nothing attached, tracepoints, raw tracepoints) are
 * interleaved over rounds, in a rotating order, so drift on a noisy machine
 * hits all three alike; medians of the rounds are printed with ratios to the
 * nothing-attached phase. Correctness: in each attached phase the traced
 * process's read() loop must produce exactly one enter and one exit event
 * per call, and nothing in the idle phase.
 *
 * -v prints every round. Exit status: 0 ok, 1 failure or miscount, 77 skipped (not root).
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench_hooks.skel.h"

#define ROUNDS	     7
#define STR_(x)	     #x
#define STR(x)	     STR_(x)
#define N_CALLS	     1000000 /* syscalls per timed loop */
#define N_WARM	     50000
#define QUIET_WAIT_S 300 /* longest wait for another tracer to go */

/* Counter slots: must match enum bh_cnt in bench_hooks.bpf.c. */
enum { BH_TP_ENTER, BH_TP_EXIT, BH_RAW_ENTER, BH_RAW_EXIT, BH_CNT_MAX };

enum phase { PH_NONE, PH_TP, PH_RAW, PH_MAX };
static const char *const phase_name[PH_MAX] = { "none", "tracepoint", "raw_tp" };

/* What is timed; the child runs the untraced rows. */
enum row { ROW_T_READ, ROW_T_PPID, ROW_U_READ, ROW_U_PPID, ROW_MAX };
static const char *const row_name[ROW_MAX] = {
	"traced process, read()",
	"traced process, getppid() (not hooked)",
	"untraced process, read()",
	"untraced process, getppid() (not hooked)",
};

static double res[ROW_MAX][PH_MAX][ROUNDS];

/*
 * CPU time of the calling thread, not wall time: this box is shared, and a
 * loop preempted by someone else's work doubled its wall time in some rounds
 * (MONOTONIC gave a spread of 127% of the median). The hooks run in the
 * caller's context, so their cost is in this clock.
 */
static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Returns ns per call, or a negative number if a read() failed. */
static double loop_read(int fd, long n)
{
	char buf[1];
	double t0 = now_ns();

	for (long i = 0; i < n; i++)
		if (read(fd, buf, 1) != 1)
			return -1;
	return (now_ns() - t0) / n;
}

/* syscall() rather than getppid(): no libc may ever cache the answer. */
static double loop_ppid(long n)
{
	double t0 = now_ns();

	for (long i = 0; i < n; i++)
		syscall(SYS_getppid);
	return (now_ns() - t0) / n;
}

/* The untraced process: runs the loop it is told to, answers ns per call. */
static void child_main(int cmd_fd, int res_fd, int zero_fd)
{
	char c;

	while (read(cmd_fd, &c, 1) == 1 && c != 'q') {
		double ns = c == 'r' ? loop_read(zero_fd, N_CALLS) : loop_ppid(N_CALLS);

		if (write(res_fd, &ns, sizeof(ns)) != sizeof(ns))
			break;
	}
	_exit(0);
}

static int child_run(int cmd_fd, int res_fd, char what, double *ns)
{
	if (write(cmd_fd, &what, 1) != 1 || read(res_fd, ns, sizeof(*ns)) != sizeof(*ns)) {
		fprintf(stderr, "bench_hooks: lost the untraced child: %s\n", strerror(errno));
		return -EPIPE;
	}
	return *ns < 0 ? -EIO : 0;
}

/* Sum of one counter slot over all CPUs. */
static int read_counter(int map_fd, __u32 idx, __u64 *sum)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 vals[ncpu > 0 ? ncpu : 1];
	int err;

	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	err = bpf_map_lookup_elem(map_fd, &idx, vals);
	if (err)
		return -errno;
	*sum = 0;
	for (int i = 0; i < ncpu; i++)
		*sum += vals[i];
	return 0;
}

static int read_counters(int map_fd, __u64 c[BH_CNT_MAX])
{
	for (__u32 i = 0; i < BH_CNT_MAX; i++) {
		int err = read_counter(map_fd, i, &c[i]);

		if (err)
			return err;
	}
	return 0;
}

static int attach(struct bench_hooks_bpf *skel, enum phase ph, struct bpf_link *links[2])
{
	struct bpf_program *p[2] = { NULL, NULL };

	if (ph == PH_TP) {
		p[0] = skel->progs.tp_enter_read;
		p[1] = skel->progs.tp_exit_read;
	} else if (ph == PH_RAW) {
		p[0] = skel->progs.raw_enter;
		p[1] = skel->progs.raw_exit;
	}
	for (int i = 0; i < 2 && p[i]; i++) {
		links[i] = bpf_program__attach(p[i]);
		if (!links[i]) {
			int err = -errno;

			fprintf(stderr, "bench_hooks: attaching %s failed: %s\n",
				bpf_program__name(p[i]), strerror(-err));
			return err;
		}
	}
	return 0;
}

static void detach(struct bpf_link *links[2])
{
	for (int i = 0; i < 2; i++) {
		bpf_link__destroy(links[i]);
		links[i] = NULL;
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
	double s[ROUNDS];

	memcpy(s, v, n * sizeof(*v));
	qsort(s, n, sizeof(*s), cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* How far to trust the medians: the widest (max - min) / median of any cell. */
static double worst_spread(void)
{
	double worst = 0;

	for (int w = 0; w < ROW_MAX; w++) {
		for (int ph = 0; ph < PH_MAX; ph++) {
			const double *v = res[w][ph];
			double lo = v[0], hi = v[0], s;

			for (int r = 1; r < ROUNDS; r++) {
				lo = v[r] < lo ? v[r] : lo;
				hi = v[r] > hi ? v[r] : hi;
			}
			s = (hi - lo) / median(v, ROUNDS);
			worst = s > worst ? s : worst;
		}
	}
	return worst;
}

/*
 * Another tracer on a syscall tracepoint (ebee's own tests, bpftrace, perf
 * trace) would make every phase a hooked one: any syscall tracepoint user
 * puts every task on the slow syscall path, and its programs run on our
 * reads. Counts live BPF links of the kinds that can sit there (any
 * perf_event link, since the 6.1 uapi cannot name its tracepoint, and raw
 * tracepoints named sys_*) plus syscall events enabled in tracefs. Called only
 * while none of our links exist, so everything it finds is foreign. A hook
 * that comes and goes between two checks is missed: it can only add noise.
 */
static int foreign_hooks(void)
{
	char en[2] = "";
	__u32 id = 0;
	int n = 0, fd;

	while (!bpf_link_get_next_id(id, &id)) {
		struct bpf_link_info info;
		__u32 len = sizeof(info);
		char name[32] = "";

		fd = bpf_link_get_fd_by_id(id);
		if (fd < 0)
			continue; /* gone since the walk found it */
		memset(&info, 0, sizeof(info));
		info.raw_tracepoint.tp_name = (unsigned long)name;
		info.raw_tracepoint.tp_name_len = sizeof(name);
		if (!bpf_obj_get_info_by_fd(fd, &info, &len)) {
			if (info.type == BPF_LINK_TYPE_PERF_EVENT)
				n++;
			else if (info.type == BPF_LINK_TYPE_RAW_TRACEPOINT &&
				 !strncmp(name, "sys_", 4))
				n++;
		}
		close(fd);
	}
	fd = open("/sys/kernel/tracing/events/syscalls/enable", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (read(fd, en, 1) == 1 && en[0] != '0')
			n++;
		close(fd);
	}
	return n;
}

struct bench {
	struct bench_hooks_bpf *skel;
	struct bpf_link *links[2];
	int zero_fd, map_fd, cmd_fd, res_fd;
	/* This round's figures, kept only if the round stays clean. */
	__u64 seen[PH_MAX][BH_CNT_MAX];
	double ns[ROW_MAX][PH_MAX];
};

static int run_phase(struct bench *b, enum phase ph)
{
	__u64 c0[BH_CNT_MAX], c1[BH_CNT_MAX];
	double ns;
	int err;

	err = attach(b->skel, ph, b->links);
	if (err)
		return err;
	/* Snapshots right around the loop: attach itself reads tracefs, and
	 * the pipe reads below are reads too. */
	err = read_counters(b->map_fd, c0);
	ns = loop_read(b->zero_fd, N_CALLS);
	if (!err)
		err = read_counters(b->map_fd, c1);
	if (err) {
		fprintf(stderr, "bench_hooks: reading the counters map: %s\n", strerror(-err));
		goto out;
	}
	if (ns < 0) {
		err = -errno;
		fprintf(stderr, "bench_hooks: read /dev/zero: %s\n", strerror(errno));
		goto out;
	}
	b->ns[ROW_T_READ][ph] = ns;
	for (int i = 0; i < BH_CNT_MAX; i++)
		b->seen[ph][i] = c1[i] - c0[i];
	b->ns[ROW_T_PPID][ph] = loop_ppid(N_CALLS);
	err = child_run(b->cmd_fd, b->res_fd, 'r', &b->ns[ROW_U_READ][ph]);
	if (!err)
		err = child_run(b->cmd_fd, b->res_fd, 'p', &b->ns[ROW_U_PPID][ph]);
out:
	detach(b->links);
	return err;
}

/* Runs one round of every phase, in an order rotated by round. Returns 1 if
 * a foreign syscall hook was seen around any phase (the round is void). */
static int run_round(struct bench *b, int r)
{
	for (int k = 0; k < PH_MAX; k++) {
		int err;

		if (foreign_hooks())
			return 1;
		err = run_phase(b, (r + k) % PH_MAX);
		if (err)
			return err;
		if (foreign_hooks())
			return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int verbose = argc > 1 && !strcmp(argv[1], "-v");
	struct bench_hooks_bpf *skel = NULL;
	struct bench b = { 0 };
	int cmd[2] = { -1, -1 }, rsp[2] = { -1, -1 };
	__u64 seen[PH_MAX][BH_CNT_MAX] = { { 0 } };
	__u64 reads[PH_MAX] = { 0 };
	int zero_fd, err = 1;
	pid_t child = -1;
	__u32 tgid, one = 1;

	if (geteuid() != 0) {
		printf("SKIP: bench_hooks needs root to load and attach BPF programs\n");
		return 77;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	zero_fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	if (zero_fd < 0) {
		fprintf(stderr, "bench_hooks: open /dev/zero: %s\n", strerror(errno));
		return 1;
	}
	if (pipe(cmd) || pipe(rsp)) {
		fprintf(stderr, "bench_hooks: pipe: %s\n", strerror(errno));
		goto cleanup;
	}
	/* Forked before load: the child never runs BPF setup code, and no hook
	 * follows forks, so its tgid stays out of the traced map. */
	child = fork();
	if (child < 0) {
		fprintf(stderr, "bench_hooks: fork: %s\n", strerror(errno));
		goto cleanup;
	}
	if (child == 0) {
		close(cmd[1]);
		close(rsp[0]);
		child_main(cmd[0], rsp[1], zero_fd);
	}
	close(cmd[0]);
	close(rsp[1]);
	cmd[0] = rsp[1] = -1;

	skel = bench_hooks_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr,
			"bench_hooks: loading tests/bench/bench_hooks.bpf.c failed: %s (is tracefs "
			"mounted at /sys/kernel/tracing? `make deps` mounts it)\n",
			strerror(errno));
		goto cleanup;
	}
	tgid = getpid();
	if (bpf_map__update_elem(skel->maps.traced, &tgid, sizeof(tgid), &one, sizeof(one),
				 BPF_ANY)) {
		fprintf(stderr, "bench_hooks: adding tgid %u to the traced map: %s\n", tgid,
			strerror(errno));
		goto cleanup;
	}
	b.skel = skel;
	b.map_fd = bpf_map__fd(skel->maps.counters);
	b.zero_fd = zero_fd;
	b.cmd_fd = cmd[1];
	b.res_fd = rsp[0];

	/* Warm caches and the CPU frequency before the first timed loop. */
	loop_read(zero_fd, N_WARM);
	loop_ppid(N_WARM);

	printf("bench_hooks: %d rounds x %d phases, %d syscalls per loop, child pid %d\n", ROUNDS,
	       PH_MAX, N_CALLS, (int)child);
	for (int r = 0, waited = 0; r < ROUNDS;) {
		int ret = run_round(&b, r);

		if (ret < 0)
			goto cleanup;
		if (ret > 0) {
			/* Wait the other tracer out rather than print its cost
			 * as ours; give up after QUIET_WAIT_S. */
			if (waited++ == 0)
				printf("bench_hooks: another tracer has syscall hooks attached "
				       "(bpftool link list); waiting for it to finish\n");
			if (waited > QUIET_WAIT_S) {
				printf("SKIP: syscall tracepoints stayed in use by another tracer "
				       "for over %d s; rerun on a quiet machine\n",
				       QUIET_WAIT_S);
				err = 77;
				goto cleanup;
			}
			sleep(1);
			continue;
		}
		for (int w = 0; w < ROW_MAX; w++) {
			for (int ph = 0; ph < PH_MAX; ph++)
				res[w][ph][r] = b.ns[w][ph];
			if (verbose)
				printf("  round %d %-40s %8.1f %8.1f %8.1f\n", r, row_name[w],
				       b.ns[w][PH_NONE], b.ns[w][PH_TP], b.ns[w][PH_RAW]);
		}
		for (int ph = 0; ph < PH_MAX; ph++) {
			reads[ph] += N_CALLS;
			for (int i = 0; i < BH_CNT_MAX; i++)
				seen[ph][i] += b.seen[ph][i];
		}
		r++;
	}

	printf("\n%-44s %8s %11s %8s %8s %9s\n",
	       "syscall cost, ns (median of " STR(ROUNDS) " rounds)", "none", "tracepoint",
	       "raw_tp", "tp/none", "raw/none");
	for (int w = 0; w < ROW_MAX; w++) {
		double m[PH_MAX];

		for (int ph = 0; ph < PH_MAX; ph++)
			m[ph] = median(res[w][ph], ROUNDS);
		printf("%-44s %8.1f %11.1f %8.1f %8.2f %9.2f\n", row_name[w], m[PH_NONE], m[PH_TP],
		       m[PH_RAW], m[PH_TP] / m[PH_NONE], m[PH_RAW] / m[PH_NONE]);
	}

	printf("widest spread of any cell over the rounds: %.0f%% of its median\n",
	       100 * worst_spread());

	/* Every read() of the traced loop is one enter and one exit event of
	 * the attached variant, and nothing else may count. */
	err = 0;
	printf("\nevents counted in the traced read() loops (expected 2 x reads):\n");
	for (int ph = 0; ph < PH_MAX; ph++) {
		__u64 tp = seen[ph][BH_TP_ENTER] + seen[ph][BH_TP_EXIT];
		__u64 raw = seen[ph][BH_RAW_ENTER] + seen[ph][BH_RAW_EXIT];
		__u64 want_tp = ph == PH_TP ? 2 * reads[ph] : 0;
		__u64 want_raw = ph == PH_RAW ? 2 * reads[ph] : 0;
		int ok = tp == want_tp && raw == want_raw &&
			 seen[ph][BH_TP_ENTER] == seen[ph][BH_TP_EXIT] &&
			 seen[ph][BH_RAW_ENTER] == seen[ph][BH_RAW_EXIT];

		printf("  %-10s reads %llu: tracepoint events %llu, raw_tp events %llu: %s\n",
		       phase_name[ph], (unsigned long long)reads[ph], (unsigned long long)tp,
		       (unsigned long long)raw, ok ? "ok" : "MISMATCH");
		if (!ok)
			err = 1;
	}

cleanup:
	if (cmd[1] >= 0) {
		if (write(cmd[1], "q", 1) != 1 && child > 0)
			kill(child, SIGKILL);
		close(cmd[1]);
	}
	if (child > 0)
		waitpid(child, NULL, 0);
	if (rsp[0] >= 0)
		close(rsp[0]);
	bench_hooks_bpf__destroy(skel);
	close(zero_fd);
	return err;
}
