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

/* The kernel's BTF names each tracepoint's prototype btf_trace_NAME (tp_btf
 * needs no tracefs) and has a FUNC for every function fentry/fexit can
 * attach to. */
static bool btf_has(const struct btf *btf, const char *name, int kind)
{
	return btf && btf__find_by_name_kind(btf, name, kind) >= 0;
}

static bool btf_has_tp(const struct btf *btf, const char *tp)
{
	char name[64];

	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	return btf_has(btf, name, BTF_KIND_TYPEDEF);
}

/* Whether the kernel loads a fentry program (a no-op on fn, never attached):
 * 0 or the kernel's -errno. Lockdown refuses BPF trampolines at load. */
static int fentry_loads(const struct btf *btf, const char *fn)
{
	const struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int id = btf__find_by_name_kind(btf, fn, BTF_KIND_FUNC);
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

static void sock_offer(struct ebee_sock_offer *k, enum ebee_attach want)
{
	struct btf *btf = btf__load_vmlinux_btf();

	memset(k, 0, sizeof(*k));
	if (!btf)
		return;
	k->tp_io = btf_has_tp(btf, "sock_recv_length") && btf_has_tp(btf, "sock_send_length");
	k->tp_arrive = btf_has_tp(btf, "sk_data_ready");
	k->tp_state = btf_has_tp(btf, "inet_sock_set_state");
	k->fn_io = btf_has(btf, "inet_recvmsg", BTF_KIND_FUNC) &&
		   btf_has(btf, "inet_sendmsg", BTF_KIND_FUNC);
	k->fn_arrive = btf_has(btf, "sock_def_readable", BTF_KIND_FUNC);
	k->fn_inet6 = btf_has(btf, "inet6_recvmsg", BTF_KIND_FUNC) &&
		      btf_has(btf, "inet6_sendmsg", BTF_KIND_FUNC);
	k->fn_sendpage = btf_has(btf, "inet_sendpage", BTF_KIND_FUNC);
	if (ebee_sock_attach_needs_probe(k, want)) {
		k->fentry_err = fentry_loads(btf, k->fn_io ? "inet_recvmsg" : "sock_def_readable");
		k->fentry_probed = true;
	}
	btf__free(btf);
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
