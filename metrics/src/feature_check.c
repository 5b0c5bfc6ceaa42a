// SPDX-License-Identifier: MIT
/*
 * Each check names what is missing and how to fix it, because the failure a
 * user would otherwise see is libbpf's "-ENOENT" from deep inside an attach.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "feature_check.h"
#include "kbtf.h"

#define CAP_PERFMON_BIT	  38
#define CAP_BPF_BIT	  39
#define CAP_SYS_ADMIN_BIT 21

static unsigned long long cap_eff(void)
{
	unsigned long long caps = 0;
	char line[128];
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &caps) == 1)
			break;
	fclose(f);
	return caps;
}

static const char *tracefs_dir(void)
{
	if (!access("/sys/kernel/tracing/events", F_OK))
		return "/sys/kernel/tracing";
	if (!access("/sys/kernel/debug/tracing/events", F_OK))
		return "/sys/kernel/debug/tracing";
	return NULL;
}

/* Whether the kernel loads a fentry program (a no-op on the function of BTF
 * id id, never attached): 0 or the kernel's -errno. Lockdown refuses BPF
 * trampolines at load. */
static int fentry_loads(int id)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, o, .expected_attach_type = BPF_TRACE_FENTRY,
		    .attach_btf_id = id);
	int fd;

	if (id < 0)
		return -ENOENT;
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, "ebee_probe", "GPL", insns, 2, &o);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* What the socket hooks could attach to. The kernel's BTF names each
 * tracepoint's prototype btf_trace_NAME (tp_btf needs no tracefs) and has a
 * FUNC for every function fentry/fexit can attach to. Looked up in one pass
 * over its raw bytes (kbtf.c); libbpf's parse only if that walker declines. */
enum {
	SW_TP_RECV,
	SW_TP_SEND,
	SW_TP_READY,
	SW_TP_STATE,
	SW_RECVMSG,
	SW_SENDMSG,
	SW_READABLE,
	SW_RECVMSG6,
	SW_SENDMSG6,
	SW_SENDPAGE,
	SW_N
};

static void sock_offer(struct ebee_sock_offer *k, enum ebee_attach want)
{
	struct ebee_kbtf_want w[SW_N] = {
		[SW_TP_RECV] = { "btf_trace_sock_recv_length", BTF_KIND_TYPEDEF },
		[SW_TP_SEND] = { "btf_trace_sock_send_length", BTF_KIND_TYPEDEF },
		[SW_TP_READY] = { "btf_trace_sk_data_ready", BTF_KIND_TYPEDEF },
		[SW_TP_STATE] = { "btf_trace_inet_sock_set_state", BTF_KIND_TYPEDEF },
		[SW_RECVMSG] = { "inet_recvmsg", BTF_KIND_FUNC },
		[SW_SENDMSG] = { "inet_sendmsg", BTF_KIND_FUNC },
		[SW_READABLE] = { "sock_def_readable", BTF_KIND_FUNC },
		[SW_RECVMSG6] = { "inet6_recvmsg", BTF_KIND_FUNC },
		[SW_SENDMSG6] = { "inet6_sendmsg", BTF_KIND_FUNC },
		[SW_SENDPAGE] = { "inet_sendpage", BTF_KIND_FUNC },
	};
	struct btf *btf;

	memset(k, 0, sizeof(*k));
	if (ebee_kbtf_find(w, SW_N)) {
		btf = btf__load_vmlinux_btf();
		if (!btf)
			return;
		for (int i = 0; i < SW_N; i++)
			w[i].id = btf__find_by_name_kind(btf, w[i].name, w[i].kind);
		btf__free(btf);
	}
#define HAS(i) (w[i].id > 0)
	k->tp_io = HAS(SW_TP_RECV) && HAS(SW_TP_SEND);
	k->tp_arrive = HAS(SW_TP_READY);
	k->tp_state = HAS(SW_TP_STATE);
	k->fn_io = HAS(SW_RECVMSG) && HAS(SW_SENDMSG);
	k->fn_arrive = HAS(SW_READABLE);
	k->fn_inet6 = HAS(SW_RECVMSG6) && HAS(SW_SENDMSG6);
	k->fn_sendpage = HAS(SW_SENDPAGE);
#undef HAS
	if (ebee_sock_attach_needs_probe(k, want)) {
		k->fentry_err = fentry_loads(k->fn_io ? w[SW_RECVMSG].id : w[SW_READABLE].id);
		k->fentry_probed = true;
	}
}

int ebee_check_sock_attach(struct ebee_sock_attach *att, char *msg, size_t msg_len)
{
	struct ebee_sock_offer offer;

	sock_offer(&offer, EBEE_ATTACH_AUTO);
	return ebee_sock_attach_choose(&offer, EBEE_ATTACH_AUTO, att, msg, msg_len);
}

int ebee_check_features(enum ebee_path *which, enum ebee_attach want, struct ebee_sock_attach *att,
			char *msg, size_t msg_len)
{
	struct ebee_sock_offer offer;
	unsigned long long caps = cap_eff();
	bool bpf_caps = (caps >> CAP_BPF_BIT & 1) && (caps >> CAP_PERFMON_BIT & 1);
	char path[256];
	const char *tfs;
	int r;

	if (!bpf_caps && !(caps >> CAP_SYS_ADMIN_BIT & 1)) {
		snprintf(msg, msg_len,
			 "ebee: not root: loading BPF programs needs root (or CAP_BPF and "
			 "CAP_PERFMON); run with sudo");
		return -EPERM;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		snprintf(
		    msg, msg_len,
		    "ebee: the kernel has no BTF (/sys/kernel/btf/vmlinux missing); use a kernel "
		    "built with CONFIG_DEBUG_INFO_BTF=y");
		return -ENOENT;
	}
	r = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL);
	if (r != 1) {
		snprintf(
		    msg, msg_len,
		    "ebee: the kernel has no BPF ring buffer (BPF_MAP_TYPE_RINGBUF needs Linux "
		    ">= 5.8)%s",
		    r < 0 ? ": probing it failed" : "");
		return -EOPNOTSUPP;
	}
	if (*which != EBEE_PATH_SYSCALL) {
		sock_offer(&offer, want);
		r = ebee_sock_attach_choose(&offer, want, att, msg, msg_len);
		/* A forced attach method means the socket path. */
		if (!r || *which == EBEE_PATH_SOCKET || want != EBEE_ATTACH_AUTO) {
			if (!r)
				*which = EBEE_PATH_SOCKET;
			return r;
		}
		/* auto: no socket path here; the syscall path's checks decide */
		*which = EBEE_PATH_SYSCALL;
		msg[0] = 0;
	}
	tfs = tracefs_dir();
	if (!tfs) {
		snprintf(msg, msg_len,
			 "ebee: tracefs is not mounted at /sys/kernel/tracing (mount -t tracefs "
			 "nodev /sys/kernel/tracing)");
		return -ENOENT;
	}
	snprintf(path, sizeof(path), "%s/events/syscalls/sys_enter_close/id", tfs);
	if (access(path, R_OK)) {
		snprintf(msg, msg_len,
			 "ebee: the kernel has no syscall tracepoints (%s missing); it needs "
			 "CONFIG_FTRACE_SYSCALLS=y",
			 path);
		return -ENOENT;
	}
	r = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL);
	if (r != 1) {
		snprintf(msg, msg_len,
			 "ebee: the kernel has no BPF task storage (BPF_MAP_TYPE_TASK_STORAGE "
			 "for tracepoint programs needs Linux >= 5.12)");
		return -EOPNOTSUPP;
	}
	return 0;
}
