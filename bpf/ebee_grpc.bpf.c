// SPDX-License-Identifier: GPL-2.0
/*
 * ebee, grpc pattern: one request per server-side HTTP/2 stream of gRPC
 * C-core's chttp2 transport, from uprobes on libgrpc or wherever the C-core is
 * linked (docs/design.md 4.1).
 *
 * What it measures. A request starts when the server-side stream object is
 * constructed (grpc_chttp2_stream::grpc_chttp2_stream, i.e. when the HEADERS
 * frame of a new call is parsed) and ends when the stream is closed in both
 * directions, as recorded by grpc_chttp2_mark_stream_closed(t, s, close_reads,
 * close_writes, error). The request id is the stream pointer within its
 * process, checked against its transport pointer at the end. Latencies are
 * computed here; one struct ebee_rec (kind EBEE_REC_GRPC) per request goes to
 * this object's ring buffer, which user space polls with the syscall
 * object's (one ring_buffer manager).
 *
 * Why this completion point. mark_stream_closed is where chttp2 moves a
 * stream to the HTTP/2 "closed" state; on a server it is called once when the
 * client's END_STREAM arrives (close_reads) and once when the trailers are
 * written (close_reads and close_writes), or once with both when the stream
 * is reset or the transport dies. Accumulating the two directions per stream
 * and ending the request when both are closed depends only on that meaning,
 * not on how many times any function runs: the authors' prototype counted
 * the third call of grpc_chttp2_maybe_complete_recv_trailing_metadata, which
 * is three per stream only for a unary call that completes normally (a reset
 * stream, a streaming call or a large message calls it a different number of
 * times, and it does not say which side closed). The destructor is not the
 * end either: it runs when the last reference to the call goes, which the
 * application controls (an async server may hold a finished call), so it
 * only frees state of streams that never closed (no record).
 *
 * Server or client. The constructor's third argument (server_data) is the
 * stream id on a server-side stream and NULL on a client-side one, so a
 * process that is both (a gRPC front end calling backends) reports only the
 * calls it serves. Only function arguments are read: no libgrpc struct
 * offsets, so no dependence on a build's layout.
 *
 * Assumptions. The System V x86-64/arm64 calling conventions and the
 * argument order of the symbols, which user space checks against their
 * demangled signatures before attaching. Uprobes are attached to the library
 * file for every process (pid -1); the procs map (the syscall object's, shared
 * by fd) gates them to traced processes and their descendants.
 *
 * Where it is known to be wrong. The latency starts when the headers were
 * parsed, not when the bytes arrived (sojourn in the socket is not seen). A
 * stream whose state was not seen constructed (open before tracing began) is
 * not reported. gRPC built statically into a binary or module is found only
 * where its symbols were kept (metrics/src/grpc_elf.c).
 */
/* No CO-RE: the only kernel type here is struct pt_regs, whose x86-64 layout
 * is user ABI. Without relocations libbpf does not read and parse the
 * kernel's BTF (5 MB) for this object, a third of ebee's start on a host
 * with slow page faults, more under emulation. */
#define BPF_NO_PRESERVE_ACCESS_INDEX
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "ebee_common.h"

/* BPF_KPROBE reads arguments from pt_regs, which is also what a uprobe gets
 * (libbpf 1.1 has no BPF_UPROBE alias yet). */

char LICENSE[] SEC("license") = "GPL";

/* procs and workloads: user space makes them bpf/ebee.bpf.c's maps
 * (bpf_map__reuse_fd) before load, so one table of traced processes, kept by
 * the fork hook there, gates both objects. */
#include "ebee_maps.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536); /* resized by user space before load */
	__type(key, struct ebee_grpc_key);
	__type(value, struct ebee_grpc_stream);
} grpc_streams SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 128 * 1024); /* resized by user space before load */
} grpc_rb SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EBEE_GCNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} grpc_counters SEC(".maps");

static __always_inline void count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&grpc_counters, &idx);

	if (v)
		(*v)++;
}

/* Sojourn = service: a stream is born when its HEADERS frame is parsed, so
 * time its bytes waited in the socket buffer belongs to no stream. */
static __always_inline void emit(__u32 wid, __u64 end, __u64 lat)
{
	if (!ebee_submit(&grpc_rb, wid, EBEE_REC_GRPC, end, lat, lat, 0))
		count(EBEE_GCNT_DROPPED);
}

/* grpc_chttp2_stream::grpc_chttp2_stream(grpc_chttp2_transport *t,
 *     grpc_stream_refcount *refcount, const void *server_data, Arena *arena) */
SEC("uprobe")
int BPF_KPROBE(grpc_stream_new, void *self, void *t, void *refcount, const void *server_data)
{
	struct ebee_grpc_key k = { .tgid = bpf_get_current_pid_tgid() >> 32 };
	struct ebee_grpc_stream s = {};
	struct ebee_proc *p;

	p = bpf_map_lookup_elem(&procs, &k.tgid);
	if (!p || !(p->flags & EBEE_F_GRPC))
		return 0;
	if (!server_data)
		return 0; /* a client-side stream */
	k.stream = (__u64)self;
	s.start_ns = bpf_ktime_get_ns();
	s.transport = (__u64)t;
	s.wid = p->wid;
	/* Streams live in the call's arena: an address is reused after the
	 * destructor, and a stale entry under it (missed close) is replaced. */
	bpf_map_update_elem(&grpc_streams, &k, &s, BPF_ANY);
	return 0;
}

/* void grpc_chttp2_mark_stream_closed(grpc_chttp2_transport *t,
 *     grpc_chttp2_stream *s, int close_reads, int close_writes, Status error) */
SEC("uprobe")
int BPF_KPROBE(grpc_stream_closed, void *t, void *stream, int close_reads, int close_writes)
{
	struct ebee_grpc_key k = { .tgid = bpf_get_current_pid_tgid() >> 32,
				   .stream = (__u64)stream };
	struct ebee_grpc_stream *s;
	__u64 now;

	s = bpf_map_lookup_elem(&grpc_streams, &k);
	if (!s)
		return 0; /* untraced process, client stream, or already complete */
	if (s->transport != (__u64)t) {
		bpf_map_delete_elem(&grpc_streams, &k); /* stale: not this stream */
		return 0;
	}
	if (close_reads)
		s->closed |= EBEE_GS_READS;
	if (close_writes)
		s->closed |= EBEE_GS_WRITES;
	if (s->closed != (EBEE_GS_READS | EBEE_GS_WRITES))
		return 0;
	now = bpf_ktime_get_ns();
	emit(s->wid, now, now - s->start_ns);
	bpf_map_delete_elem(&grpc_streams, &k);
	return 0;
}

/* grpc_chttp2_stream::~grpc_chttp2_stream(): a stream still here never
 * closed in both directions; forget it without a record. */
SEC("uprobe")
int BPF_KPROBE(grpc_stream_free, void *self)
{
	struct ebee_grpc_key k = { .tgid = bpf_get_current_pid_tgid() >> 32,
				   .stream = (__u64)self };

	bpf_map_delete_elem(&grpc_streams, &k);
	return 0;
}
