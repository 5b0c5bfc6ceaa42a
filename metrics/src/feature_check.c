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
#include <bpf/btf.h>
#include <bpf/libbpf.h>

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

/* The socket path attaches tp_btf programs: the kernel's BTF names each
 * tracepoint's prototype btf_trace_NAME (no tracefs needed). */
static const char *const sock_tps[] = { "sock_recv_length", "sock_send_length",
					"inet_sock_set_state", "sk_data_ready" };

static const char *missing_sock_tp(void)
{
	struct btf *btf = btf__load_vmlinux_btf();
	const char *miss = NULL;
	char name[64];

	if (!btf)
		return sock_tps[0];
	for (size_t i = 0; i < sizeof(sock_tps) / sizeof(sock_tps[0]) && !miss; i++) {
		snprintf(name, sizeof(name), "btf_trace_%s", sock_tps[i]);
		if (btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF) < 0)
			miss = sock_tps[i];
	}
	btf__free(btf);
	return miss;
}

bool ebee_have_sock_tracepoints(void)
{
	return !access("/sys/kernel/btf/vmlinux", R_OK) && !missing_sock_tp();
}

int ebee_check_features(enum ebee_path *which, char *msg, size_t msg_len)
{
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
	if (*which == EBEE_PATH_AUTO)
		*which = missing_sock_tp() ? EBEE_PATH_SYSCALL : EBEE_PATH_SOCKET;
	if (*which == EBEE_PATH_SOCKET) {
		const char *miss = missing_sock_tp();

		if (miss) {
			snprintf(
			    msg, msg_len,
			    "ebee: the kernel has no sock:%s tracepoint (the socket path needs "
			    "a kernel newer than 6.1); use the syscall path",
			    miss);
			return -ENOENT;
		}
		return 0;
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
