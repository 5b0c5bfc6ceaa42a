// SPDX-License-Identifier: GPL-2.0
/*
 * ebee: per-request server-side latency, from socket-layer tracepoints or,
 * where the kernel lacks them, from syscall tracepoints. User space loads the
 * programs of one path only (metrics/src/loader.c) and says which.
 *
 * What it measures. For every accepted TCP connection of a traced workload,
 * two request patterns are tracked at once, each enabled per workload by user
 * space:
 *   conn: the request is the connection.
 *   io:   on a persistent connection, a request starts at the first successful
 *         read after the previous response and ends at the last write before
 *         the next read attempt or close (the "direction flip").
 * Each record carries two latencies: service (from the server's first read,
 * or for conn its accept / first I/O, to the end of the response) and, on the
 * socket path, sojourn (from the request's arrival at the server: the first
 * data after the previous response, or for conn the handshake, to the same
 * end), which includes the time the request queued before the server read it.
 * The latency is computed here and one 32-byte record per completed request
 * goes to the ring buffer of the CPU it completed on, submitted without a
 * wakeup unless that ring is filling up: a wakeup per request costs a
 * context switch per request, which on a 2-core machine took a third of
 * memcached's throughput (docs/design.md 4.6).
 *
 * The socket path (default when present). Programs are tp_btf (BTF raw
 * tracepoints: typed arguments, no tracefs, no perf buffer record per event)
 * on Linux 6.3 and later; before that (Debian 12's 6.1) fexit/fentry
 * programs on the functions those tracepoints sit in call the same handlers
 * ("Attach method fentry" below; user space picks per hook group):
 *   Per-socket state lives in socket-local storage (BPF_MAP_TYPE_SK_STORAGE)
 *   of the struct sock, so a request is the same whichever process of the
 *   workload (a forked child, an io_uring worker) touches the socket.
 *   inet_sock_set_state: SYN_RECV -> ESTABLISHED is a passive open whose
 *     handshake completed (it entered the accept queue). That runs in softirq
 *     with no process to gate on, so every passive open of the host gets a
 *     storage (wid 0, unclaimed) until a process reads or writes the socket:
 *     a traced one claims it for its workload, any other drops the storage.
 *     The server's close (-> FIN_WAIT1 or LAST_ACK) or a reset (-> CLOSE)
 *     ends the connection and drops the storage.
 *   sock_recv_length / sock_send_length fire after every sock_recvmsg /
 *     sock_sendmsg in the caller's context (read, recv*, readv, write, send*,
 *     writev, sendfile, io_uring socket I/O) and drive the io state machine.
 *     The storage is the gate: a socket without one is not ours (one helper
 *     call that finds nothing); a claimed one is the workload's, whose flags
 *     it caches, re-read only when user space bumps wl_gen (a mode change or
 *     a workload removed). The process map is looked up only at the claim.
 *   sk_data_ready: data arrived; the first arrival after a response is the
 *     next request's sojourn start. Only io needs it, so conn prunes it, and
 *     only without framing (--no-framing): the framing hook's ingress sees
 *     the same bytes first and stamps the arrival itself (frame_arrive in
 *     frame/frame_skb.bpf.h), a program run fewer per received segment.
 * Choices, and why. No syscall tracepoint is attached on this path, in either
 * mode: an attached syscall tracepoint puts every task of the host on the
 * syscall slow path (a 1-byte pipe reader/writer ran at 0.48-0.8 of its speed
 * with the syscall path's io probes; 0.98-1.04 with these, see `make bench`).
 * Which sockets are the workload's is learnt from the handshake hook instead
 * of accept: learning listening ports from /proc would need polling and miss
 * servers that listen later. conn's service start is the workload's first
 * read or write on the socket (no accept hook); a connection the server
 * closes without any I/O is not a request. Connections open before tracing
 * began are adopted by user space from /proc by their ports and claimed by
 * their first I/O. Costs per memcached request (memcaslap -T 2 -c 32),
 * measured with kernel.bpf_stats_enabled on a shared, noisy 2-core machine:
 * 6 events, 0.76-0.83 us of BPF in all, against 1.12-1.24 us with the
 * address-keyed LRU hashes and process-map gate this replaced (same runs):
 * sock_recv 177-202 ns (it emits the record: ring buffer reserve/submit;
 * 148 ns since each CPU has its own ring), sock_send 99-106 ns,
 * sk_data_ready 100-108 ns (was 262-291, 143-157, 154-172). Half the events
 * are the load generator's or on its sockets and end at the sk_bpf_storage
 * load; what remains of them is the tracepoint's own entry (bpf_trace_run,
 * RCU, the stats clock). perf puts the BPF work in memcached's threads at ~5%
 * of their CPU, ~40% of that the fixed entry.
 *
 * The syscall path (fallback). A request id is (tgid, fd) of a socket
 * returned by accept/accept4 while traced; syscall arguments travel from
 * enter to exit in task-local storage, i.e. per thread, never per process,
 * so concurrent threads cannot mix them up, and the storage dies with the
 * thread. Task storage in tracepoint programs needs Linux >= 5.12.
 * A conn request ends at the server's shutdown of its sending side or its
 * close, whichever comes first (a lingering close waits for the client's FIN
 * between the two), or at the last write when the io hooks saw the server
 * wait for the client after it (conn_end()). The shutdown hook is in the
 * close group: shutdowns are rare, where keeping the write hooks for conn
 * would run a program at every write of the host.
 * Connections accepted before tracing started are adopted by user space
 * (from /proc) into the connection map, flagged as such. It cannot see
 * sockets served by another process than the one that accepted them,
 * io_uring I/O, or any queueing before the server reads (no sojourn).
 *
 * In-flight state of the syscall path lives in LRU maps, so connections that
 * vanish without a close (a crashed process, close_range, exit) are evicted,
 * never leaked; the socket path's storage dies with its socket, and at most
 * max_socks storages live at once (passive opens beyond that, e.g. under a
 * server that accepts and never reads thousands of connections, are not
 * tracked until some close).
 *
 * Framing. Where a connection's first bytes name a protocol a framer reads
 * (RESP, HTTP/1.x, HTTP/2, TLS records), cgroup_skb programs follow its bytes
 * and pair each request with its response, pipelined or multiplexed ones
 * included (not TLS's: its records are opaque, frame/tls.h), and the io state
 * machine below leaves the connection alone: bpf/frame/frame_skb.bpf.h,
 * docs/design.md 4.9.
 *
 * Where it is known to be wrong. Without a framer, pipelined requests read by
 * one read() are one request (latency to the last byte of the last response):
 * said where seen, a client whose next bytes arrive before a write of the
 * response in progress begins (sock_overlap, ebee_fstat.overlap); not seen,
 * a client that sends a batch and waits for all its answers. A request's end is
 * only known at the next read attempt or close on its connection, so the
 * record arrives late on idle connections (the latency is still right). A
 * server that reads more of a request after it started writing the response
 * splits it in two. Reads or writes of one socket from two threads at the same
 * time (rare in servers) can interleave state updates. On the socket path,
 * data that arrives while a request is being read counts as more of it, so a
 * pipelined next request's sojourn starts at its read. A socket of the
 * workload passed to a process outside it is still the workload's.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "ebee_common.h"

char LICENSE[] SEC("license") = "GPL";

/* procs (tgid -> workload), workloads (id -> flags, drops), wakeup_bytes and
 * ebee_submit(): shared with the gRPC object. */
#include "ebee_maps.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536); /* resized by user space before load */
	__type(key, struct ebee_conn_key);
	__type(value, struct ebee_conn);
} conns SEC(".maps");

/* sys_enter -> sys_exit hand-off, one slot per thread. */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ebee_args);
} args SEC(".maps");

/* One ring buffer per possible CPU, each created by user space after load
 * (metrics/src/loader.c) at the size asked for: a producer then takes only its
 * own CPU's ring lock and writes its own ring's lines. With one shared ring,
 * memcached's two threads on two CPUs pulled the ring's lock and producer
 * position back and forth at every record. */
struct rb_cpu {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096); /* a template: the real rings' size may differ */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1); /* the number of possible CPUs, set before load */
	__type(key, __u32);
	__array(values, struct rb_cpu);
} rbs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EBEE_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static __always_inline void count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v)
		(*v)++;
}

/* One lookup answers both "is this process traced" and "what does its
 * workload want": the flags are copied into every process entry. */
static __always_inline struct ebee_proc *traced(__u32 tgid)
{
	return bpf_map_lookup_elem(&procs, &tgid);
}

static __always_inline void emit(__u32 wid, __u16 kind, __u64 end, __u64 lat, __u64 soj, __u32 nreq)
{
	__u32 cpu = bpf_get_smp_processor_id();
	void *ring = bpf_map_lookup_elem(&rbs, &cpu);

	if (!ebee_submit(ring, wid, kind, end, lat, soj, nreq))
		count(EBEE_CNT_DROPPED);
}

/* ---------------------------------------------------------------- accept */

static __always_inline int on_accept_exit(long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct ebee_conn_key k = { .tgid = id >> 32 };
	struct ebee_conn c = {};

	if (ret < 0 || !traced(k.tgid))
		return 0;
	k.fd = ret;
	c.accept_ns = bpf_ktime_get_ns();
	/* An old entry under this key means we missed its close: replace it. */
	bpf_map_update_elem(&conns, &k, &c, BPF_ANY);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_accept4")
int exit_accept4(struct trace_event_raw_sys_exit *ctx)
{
	return on_accept_exit(ctx->ret);
}

SEC("tracepoint/syscalls/sys_exit_accept")
int exit_accept(struct trace_event_raw_sys_exit *ctx)
{
	return on_accept_exit(ctx->ret);
}

/* ---------------------------------------------------------------- close */

#define SHUT_WR_   1
#define SHUT_RDWR_ 2

/* The end of a conn request, taken at the server's shutdown of its sending
 * side or at its close, whichever comes first: a lingering close
 * (shutdown(SHUT_WR), read until the client's FIN, close) spends the time
 * after its shutdown waiting for the client. Where the io hooks are attached
 * (auto before its choice, io, a conn recheck) they tell more: a connection
 * whose last response was followed only by reads that brought nothing (state
 * back to IDLE: a read that returned 0 at the client's FIN, or EAGAIN) was
 * waiting for the client since that response's last write, which is then
 * the end. Data read after the last write (READING) is work of the server's,
 * and a close right after writing (RESPONDING) is that write's end anyway. */
static __always_inline __u64 conn_end(const struct ebee_conn *c, __u64 now)
{
	if (c->end_ns)
		return c->end_ns;
	if (c->state == EBEE_CS_IDLE && c->last_write_ns)
		return c->last_write_ns;
	return now;
}

/* The record is still emitted at the close, with the end fixed here: the
 * connection's request count (nreq) is only complete then. SHUT_RD alone
 * ends nothing: the server may still respond. */
SEC("tracepoint/syscalls/sys_enter_shutdown")
int enter_shutdown(struct trace_event_raw_sys_enter *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct ebee_conn_key k = { .tgid = id >> 32, .fd = (__u32)ctx->args[0] };
	struct ebee_conn *c;
	struct ebee_proc *p;

	if (ctx->args[1] != SHUT_WR_ && ctx->args[1] != SHUT_RDWR_)
		return 0;
	p = traced(k.tgid);
	if (!p || !(p->flags & EBEE_F_CONN))
		return 0;
	c = bpf_map_lookup_elem(&conns, &k);
	if (c && !c->end_ns)
		c->end_ns = conn_end(c, bpf_ktime_get_ns());
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_close")
int enter_close(struct trace_event_raw_sys_enter *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct ebee_conn_key k = { .tgid = id >> 32, .fd = (__u32)ctx->args[0] };
	struct ebee_conn *c;
	struct ebee_proc *p;
	__u64 now;

	p = traced(k.tgid);
	if (!p)
		return 0;
	c = bpf_map_lookup_elem(&conns, &k);
	if (!c)
		return 0;
	now = conn_end(c, bpf_ktime_get_ns());
	if (c->state == EBEE_CS_RESPONDING) {
		c->nreq++;
		if (p->flags & EBEE_F_IO)
			emit(p->wid, EBEE_REC_IO, c->last_write_ns,
			     c->last_write_ns - c->io_start_ns, 0, 0);
	}
	/* An adopted connection's accept time is unknown: its close only tells
	 * user space how many requests it carried. */
	if (p->flags & EBEE_F_CONN)
		emit(p->wid, c->flags & EBEE_CF_ADOPTED ? EBEE_REC_CONN_ADOPTED : EBEE_REC_CONN,
		     now, now - c->accept_ns, 0, c->nreq);
	bpf_map_delete_elem(&conns, &k);
	return 0;
}

/* ---------------------------------------------------------------- io */

/* Remember the fd for the exit probe, only for accepted sockets of io
 * workloads: everything else returns before touching the args map. */
static __always_inline int io_enter(__u64 fd)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct ebee_conn_key k = { .tgid = id >> 32, .fd = (__u32)fd };
	struct ebee_proc *p;

	p = traced(k.tgid);
	if (!p || !(p->flags & EBEE_F_IO))
		return 0;
	if (!bpf_map_lookup_elem(&conns, &k))
		return 0;
	{
		struct ebee_args *t = bpf_task_storage_get(&args, bpf_get_current_task_btf(), 0,
							   BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!t)
			return 0;
		t->fd = k.fd;
		t->wid = p->wid;
		t->valid = 1;
	}
	return 0;
}

static __always_inline struct ebee_conn *io_exit(struct ebee_args *out)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct ebee_conn_key k = { .tgid = id >> 32 };
	struct ebee_args *a;

	a = bpf_task_storage_get(&args, bpf_get_current_task_btf(), 0, 0);
	if (!a || !a->valid)
		return NULL;
	*out = *a;
	a->valid = 0;
	k.fd = out->fd;
	return bpf_map_lookup_elem(&conns, &k);
}

static __always_inline int on_read_exit(long ret)
{
	struct ebee_args a;
	struct ebee_conn *c;

	c = io_exit(&a);
	if (!c)
		return 0;
	ebee_kc_io(a.wid, ret);
	/* Any read attempt after a response ends that response, even one that
	 * returns EAGAIN or 0: the server has turned back to reading. */
	if (c->state == EBEE_CS_RESPONDING) {
		c->nreq++;
		c->state = EBEE_CS_IDLE;
		emit(a.wid, EBEE_REC_IO, c->last_write_ns, c->last_write_ns - c->io_start_ns, 0, 0);
	}
	/* Only a read that returned data starts a request (and needs the clock:
	 * the EAGAIN read that follows most responses does not). */
	if (ret > 0 && c->state == EBEE_CS_IDLE) {
		c->state = EBEE_CS_READING;
		c->io_start_ns = bpf_ktime_get_ns();
	}
	return 0;
}

static __always_inline int on_write_exit(long ret)
{
	struct ebee_args a;
	struct ebee_conn *c;

	c = io_exit(&a);
	if (c)
		ebee_kc_io(a.wid, ret);
	if (!c || ret <= 0 || c->state == EBEE_CS_IDLE)
		return 0; /* a write with no request in progress (a greeting) is not one */
	c->state = EBEE_CS_RESPONDING;
	c->last_write_ns = bpf_ktime_get_ns();
	return 0;
}

#define IO_PROBES(name, kind)                                   \
	SEC("tracepoint/syscalls/sys_enter_" #name)             \
	int enter_##name(struct trace_event_raw_sys_enter *ctx) \
	{                                                       \
		return io_enter(ctx->args[0]);                  \
	}                                                       \
	SEC("tracepoint/syscalls/sys_exit_" #name)              \
	int exit_##name(struct trace_event_raw_sys_exit *ctx)   \
	{                                                       \
		return on_##kind##_exit(ctx->ret);              \
	}

IO_PROBES(read, read)
IO_PROBES(readv, read)
IO_PROBES(recvfrom, read)
IO_PROBES(recvmsg, read)
IO_PROBES(write, write)
IO_PROBES(writev, write)
IO_PROBES(sendto, write)
IO_PROBES(sendmsg, write)
IO_PROBES(sendfile64, write)

/* ---------------------------------------------------------------- socket path */

#define AF_INET_      2
#define IPPROTO_TCP_  6
#define MSG_PEEK_     0x2
#define MSG_ERRQUEUE_ 0x2000

/* Per-socket state lives in the socket itself (socket-local storage): one
 * pointer chase instead of a hash lookup, and freed with the socket, so a
 * socket whose close was never seen cannot leak or be confused with the next
 * socket at the same address. Its presence is also the gate: a socket with
 * storage is a passive open (wid 0) or the workload's connection, so the hot
 * paths need no process lookup; the tgid is checked only when a socket is
 * claimed. */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ebee_sconn);
} sconns SEC(".maps");

/* Framing from the bytes (cgroup_skb programs, gated by sconns). */
#include "frame/frame_skb.bpf.h"

/* Connections open before tracing began, by their ports, until their first
 * read or write claims them (user space adds, the claim removes, a
 * workload's removal deletes what it left). Not an LRU: an LRU hash is
 * preallocated, max_conns elements made at every start (11 ms of a 0.2 s
 * start here, more under emulation) for a map that is empty unless a
 * workload had connections when added; and it evicted entries without the
 * programs knowing (adopt_live drifted). Full, an adoption fails and says so. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384); /* resized by user space before load */
	__type(key, struct ebee_adopt_key);
	__type(value, __u32); /* workload id */
} adopt SEC(".maps");

/* Socket storages alive (created minus deleted): at most max_socks, so
 * passive opens that nobody reads (a hoarding server) stay bounded. Read by
 * user space as the connection-entry count, and zeroed by it when the state
 * hook is attached (closes missed while it was off), hence signed. */
__s64 live_socks;
const volatile __u64 max_socks = 65536;
/* Entries in the adopt map (user space adds, the claim here removes): while
 * zero, a socket without storage costs no lookup at all. */
__s64 adopt_live;
/* Bumped by user space after every change of a workload's flags or its
 * removal: a socket's cached copy of its workload's flags is re-read when
 * its generation differs. */
__u32 wl_gen;

/* Framing attached below the cgroup v2 root (user space sets it): frame_io
 * runs only for sockets of the cgroups it is attached to, so a connection of
 * the workload in another cgroup (its listener made before the process moved,
 * or handed over by systemd) goes unseen. The server's read of bytes the hook
 * never saw tells: the socket's cgroup id is left here, with its workload,
 * for user space to attach there too (metrics/src/cgv2.c). One slot; a
 * cgroup overwritten by another in the same housekeeping round is reported
 * again by its next connection. */
__u32 frame_scoped;
__u64 frame_miss_seq;
__u64 frame_miss_cg;
__u32 frame_miss_wid;

/* Most sockets of the host carry no local storage at all: one load tells,
 * where the helper call that would find nothing costs several times that. */
static __always_inline bool has_storage(const struct sock *sk)
{
	return sk->sk_bpf_storage != NULL;
}

static __always_inline void sconn_del(struct sock *sk)
{
	bpf_sk_storage_delete(&sframes, sk); /* framed or not */
	bpf_sk_storage_delete(&sh2s, sk);
	bpf_sk_storage_delete(&sstash, sk);
	if (!bpf_sk_storage_delete(&sconns, sk))
		__sync_fetch_and_add(&live_socks, -1);
}

static __always_inline struct ebee_sconn *sconn_new(struct sock *sk, struct ebee_sconn *init)
{
	struct ebee_sconn *c;

	if (live_socks >= (__s64)max_socks)
		return NULL;
	c = bpf_sk_storage_get(&sconns, sk, init, BPF_SK_STORAGE_GET_F_CREATE);
	if (c)
		__sync_fetch_and_add(&live_socks, 1);
	return c;
}

/* A socket with storage that is not (or no longer) known to be the
 * workload's: a passive open read or written for the first time (claim it
 * if the caller is a traced process, forget it otherwise), or a connection
 * whose workload changed its flags or went away. */
static __always_inline struct ebee_sconn *sconn_check(struct sock *sk, struct ebee_sconn *c,
						      __u64 *now)
{
	__u32 gen = wl_gen, tgid;
	struct ebee_proc *p;
	struct ebee_wl *w;

	if (c->wid) {
		w = bpf_map_lookup_elem(&workloads, &c->wid);
		if (!w || w->epoch != c->wl_epoch) {
			sconn_del(sk);
			return NULL;
		}
		c->wflags = w->flags;
		c->gen = gen;
		return c;
	}
	tgid = bpf_get_current_pid_tgid() >> 32;
	p = traced(tgid);
	if (!p || !(p->flags & (EBEE_F_CONN | EBEE_F_IO))) {
		sconn_del(sk); /* another server's connection */
		return NULL;
	}
	w = bpf_map_lookup_elem(&workloads, &p->wid);
	if (!w)
		return NULL;
	*now = bpf_ktime_get_ns();
	c->wid = p->wid;
	c->wl_epoch = w->epoch;
	c->wflags = w->flags;
	c->gen = gen;
	c->first_ns = *now;
	return c;
}

/* A socket without storage read or written by a traced process: a
 * connection user space adopted from /proc (open before tracing began), or
 * nothing of ours (an outgoing connection, a listener). */
static __always_inline struct ebee_sconn *sconn_adopt(struct sock *sk, __u64 *now)
{
	struct ebee_sconn init = { .flags = EBEE_CF_ADOPTED };
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct ebee_adopt_key ak = {};
	struct ebee_sconn *c;
	struct ebee_proc *p;
	struct ebee_wl *w;
	__u32 *awid;

	p = traced(tgid);
	if (!p || !(p->flags & (EBEE_F_CONN | EBEE_F_IO)))
		return NULL;
	if (sk->sk_protocol != IPPROTO_TCP_)
		return NULL;
	ak.lport = sk->__sk_common.skc_num;
	ak.rport = bpf_ntohs(sk->__sk_common.skc_dport);
	if (sk->__sk_common.skc_family == AF_INET_)
		ak.raddr = sk->__sk_common.skc_daddr;
	awid = bpf_map_lookup_elem(&adopt, &ak);
	if (!awid || *awid != p->wid)
		return NULL;
	w = bpf_map_lookup_elem(&workloads, &p->wid);
	if (!w)
		return NULL;
	if (!bpf_map_delete_elem(&adopt, &ak))
		__sync_fetch_and_add(&adopt_live, -1);
	*now = bpf_ktime_get_ns();
	init.wid = p->wid;
	init.wl_epoch = w->epoch;
	init.wflags = w->flags;
	init.gen = wl_gen;
	init.first_ns = *now;
	c = sconn_new(sk, &init);
	return c;
}

/* A client segment of a socket without storage, at the framing hook, while
 * user space has adoptions pending: a connection open before tracing began
 * (its adopt entry) whose client sent before the server's first read or
 * write claimed it. Its storage is made here, for the entry's workload, as
 * sconn_adopt would at that read: else the framers miss this segment, the
 * next one is the first they see, and a burst the client sent since tracing
 * began (16 pipelined commands) counted as one request by length. Only TCP
 * with payload: a connected UDP socket is ESTABLISHED too. */
static __always_inline struct ebee_sconn *sconn_adopt_seg(struct __sk_buff *skb,
							  struct bpf_sock *bsk)
{
	struct ebee_sconn init = { .flags = EBEE_CF_ADOPTED };
	struct ebee_adopt_key ak = {};
	struct ebee_sconn *c;
	struct tcphdr th;
	struct ebee_wl *w;
	__u32 *awid, off;

	/* At the bound the entry stays for the server's read (sconn_adopt). */
	if (adopt_live <= 0 || live_socks >= (__s64)max_socks || frame_tcp(skb, &th, &off) ||
	    skb->len <= off)
		return NULL;
	ak.lport = bsk->src_port;
	ak.rport = bpf_ntohs(bsk->dst_port);
	if (bsk->family == AF_INET_)
		ak.raddr = bsk->dst_ip4;
	awid = bpf_map_lookup_elem(&adopt, &ak);
	if (!awid)
		return NULL;
	init.wid = *awid;
	w = bpf_map_lookup_elem(&workloads, &init.wid);
	if (!w)
		return NULL;
	if (!bpf_map_delete_elem(&adopt, &ak))
		__sync_fetch_and_add(&adopt_live, -1);
	init.wl_epoch = w->epoch;
	init.wflags = w->flags;
	init.gen = wl_gen;
	init.first_ns = bpf_ktime_get_ns();
	c = bpf_sk_storage_get(&sconns, bsk, &init, BPF_SK_STORAGE_GET_F_CREATE);
	if (c) {
		__sync_fetch_and_add(&live_socks, 1);
		return c;
	}
	/* The server's read made it a moment ago, on another CPU (made with
	 * BPF_NOEXIST, the loser gets NULL): that one. */
	return bpf_sk_storage_get(&sconns, bsk, 0, 0);
}

/* The workload's connection, or NULL. Hot path for a known connection: one
 * storage lookup and a generation compare. */
static __always_inline struct ebee_sconn *sock_lookup(struct sock *sk, __u64 *now)
{
	struct ebee_sconn *c;

	if (!sk)
		return NULL;
	c = has_storage(sk) ? bpf_sk_storage_get(&sconns, sk, 0, 0) : NULL;
	if (!c)
		return adopt_live > 0 ? sconn_adopt(sk, now) : NULL;
	if (!c->wid || c->gen != wl_gen)
		return sconn_check(sk, c, now);
	return c;
}

static __always_inline void sock_emit_io(struct ebee_sconn *c)
{
	c->nreq++;
	c->state = EBEE_CS_IDLE;
	emit(c->wid, EBEE_REC_IO, c->last_write_ns, c->last_write_ns - c->io_start_ns,
	     c->last_write_ns - c->soj_start_ns, 0);
}

/* A read of bytes, on a connection no framer has decided yet: the ingress
 * hook chooses one at the first bytes it sees, so where it runs for this
 * socket they have passed it, unless they came before the storage did (an
 * adopted connection's first read; the connection's first request made at
 * the listener, TCP_DEFER_ACCEPT's, taken over at its next segment) or the
 * hook was attached after them. A connection past its first request, or one
 * whose handshake was seen, that still has none was not seen: its cgroup is
 * reported. User space ignores a cgroup already covered (the cases above). */
static __always_inline void frame_missed(struct sock *sk, struct ebee_sconn *c)
{
	if ((c->fflags & EBEE_FF_MISS) || !c->wid || (!(c->fflags & EBEE_FF_SEQ) && !c->nreq))
		return;
	c->fflags |= EBEE_FF_MISS;
	frame_miss_cg = BPF_CORE_READ(sk, sk_cgrp_data.cgroup, kn, id);
	frame_miss_wid = c->wid;
	__sync_fetch_and_add(&frame_miss_seq, 1);
}

/* A connection counted by length whose client sends before its responses are
 * written (pipelining, streaming): counted against its workload once. */
static __always_inline void sock_overlap(struct ebee_sconn *c)
{
	struct ebee_fstat *s;

	c->flags |= EBEE_CF_OVERLAP;
	if ((s = fstat_get(c->wid)))
		__sync_fetch_and_add(&s->overlap, 1);
}

/* The request logic of the socket path's I/O and arrival hooks, one copy for
 * every attach method: the tp_btf programs and the fentry/fexit ones below
 * are thin wrappers that only find sk, the result and the flags. */
static __always_inline int on_sock_recv(struct sock *sk, int ret, int flags)
{
	struct ebee_sconn *c;
	__u64 now = 0;

	if (flags & (MSG_PEEK_ | MSG_ERRQUEUE_))
		return 0; /* looking is not reading */
	c = sock_lookup(sk, &now);
	if (!c)
		return 0;
	ebee_kc_io(c->wid, ret);
	if (c->fr == EBEE_FRAME_NONE && ret > 0 && frame_scoped)
		frame_missed(sk, c);
	if (c->fr != EBEE_FRAME_NONE) {
		if (!(c->fflags & EBEE_FF_NOTED))
			frame_note(c);
		/* Its framer pairs its requests (frame/pair.bpf.h). */
		if (frame_parsed(c)) {
			/* Counted by length until a sample found requests
			 * together (EBEE_FV_NEVER): the response written by
			 * then ends here, as the io pattern's would. */
			if (c->state != EBEE_CS_IDLE) {
				if (c->state == EBEE_CS_RESPONDING && (c->wflags & EBEE_F_IO))
					sock_emit_io(c);
				c->state = EBEE_CS_IDLE;
			}
			if (ret > 0)
				frame_mark_read(sk, c);
			return 0;
		}
	}
	if (!(c->wflags & EBEE_F_IO))
		return 0;
	/* Any read attempt after a response ends it (direction flip). */
	if (c->state == EBEE_CS_RESPONDING)
		sock_emit_io(c);
	if (ret > 0 && c->state == EBEE_CS_IDLE) {
		if (!now)
			now = bpf_ktime_get_ns();
		c->state = EBEE_CS_READING;
		c->io_start_ns = now;
		/* Arrival recorded by sk_data_ready; none (data already queued
		 * when the socket was adopted): the read. */
		c->soj_start_ns = c->flags & EBEE_CF_ARRIVED ? c->arrive_ns : now;
		c->flags &= ~(EBEE_CF_ARRIVED | EBEE_CF_ARRW);
	}
	return 0;
}

static __always_inline int on_sock_send(struct sock *sk, long ret)
{
	struct ebee_sconn *c;
	__u64 now = 0;

	c = sock_lookup(sk, &now);
	if (c)
		ebee_kc_io(c->wid, ret);
	if (c && frame_parsed(c)) {
		if (ret > 0)
			frame_mark_write(sk); /* where its responses end (frame/pair.bpf.h) */
		return 0;
	}
	if (!c || !(c->wflags & EBEE_F_IO) || ret <= 0 || c->state == EBEE_CS_IDLE)
		return 0; /* a write with no request in progress (a greeting) is not one */
	/* The client did not wait for this response: its next bytes arrived
	 * before this write of it began (they were there when the previous
	 * write returned; that one alone proves nothing, since on loopback a
	 * client can get a response's last byte and answer it before the write
	 * that sent it returns). Requests the server then reads together count
	 * as one: said once per connection (sock_overlap). */
	if (c->state == EBEE_CS_RESPONDING && (c->flags & EBEE_CF_ARRIVED)) {
		if ((c->flags & (EBEE_CF_ARRW | EBEE_CF_OVERLAP)) == EBEE_CF_ARRW)
			sock_overlap(c);
		c->flags |= EBEE_CF_ARRW;
	}
	c->state = EBEE_CS_RESPONDING;
	c->last_write_ns = bpf_ktime_get_ns();
	return 0;
}

/* Data arrived (attached only where the framing hooks are not: frame_arrive
 * does this there). Runs for every socket of the host (mostly in softirq, on
 * loopback in the sender's context), so sockets without storage cost one
 * load that finds nothing. Data arriving while a request is being
 * read is more of that request; otherwise the first arrival starts the next
 * request's sojourn (for a passive open not yet claimed, its first request). */
static __always_inline int on_sock_data_ready(const struct sock *sk)
{
	struct ebee_sconn *c;

	if (!sk || !has_storage(sk))
		return 0;
	c = bpf_sk_storage_get(&sconns, (struct sock *)sk, 0, 0);
	if (c && c->state != EBEE_CS_READING && !(c->flags & EBEE_CF_ARRIVED)) {
		c->arrive_ns = bpf_ktime_get_ns();
		c->flags |= EBEE_CF_ARRIVED;
	}
	return 0;
}

/* Attach method tp_btf (Linux 6.3 and later): the socket tracepoints. */
SEC("tp_btf/sock_recv_length")
int BPF_PROG(sock_recv, struct sock *sk, int ret, int flags)
{
	return on_sock_recv(sk, ret, flags);
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(sock_send, struct sock *sk, int ret, int flags)
{
	return on_sock_send(sk, ret);
}

SEC("tp_btf/sk_data_ready")
int BPF_PROG(sock_data_ready, const struct sock *sk)
{
	return on_sock_data_ready(sk);
}

/* Attach method fentry (kernels without those tracepoints, e.g. 6.1, where
 * BPF trampolines are allowed: no lockdown). The tracepoints sit after the
 * protocol's recvmsg/sendmsg returns inside sock_recvmsg/sock_sendmsg and in
 * sock_def_readable; these hook the same places one level down:
 *   inet_recvmsg, inet6_recvmsg, inet_sendmsg, inet6_sendmsg: what
 *     sock_recvmsg_nosec/sock_sendmsg_nosec call for every TCP socket
 *     (sock->ops), always a real call from another file, so no call site can
 *     be inlined away. sock_recvmsg/sock_sendmsg would miss the second and
 *     later messages of recvmmsg/sendmmsg (their loops call the static _nosec
 *     variants). Like the tracepoints, these do not fire when the LSM refuses
 *     the call.
 *   inet_sendpage (until 6.4): sendfile and splice to a TCP socket, which
 *     before 6.5 bypassed sendmsg (since 6.5 they go through sock_sendmsg and
 *     its tracepoint).
 *   sock_def_readable: the sk_data_ready callback of every ordinary socket,
 *     where 6.3+ has the tracepoint.
 * kprobes are no alternative: kprobe programs cannot use socket-local
 * storage (bpf_sk_storage_get is only offered to BTF-typed tracing
 * programs), so a kernel with neither keeps the syscall path. */
SEC("fexit/inet_recvmsg")
int BPF_PROG(fx_inet_recvmsg, struct socket *sock, struct msghdr *msg, size_t size, int flags,
	     int ret)
{
	return on_sock_recv(sock->sk, ret, flags);
}

SEC("fexit/inet6_recvmsg")
int BPF_PROG(fx_inet6_recvmsg, struct socket *sock, struct msghdr *msg, size_t size, int flags,
	     int ret)
{
	return on_sock_recv(sock->sk, ret, flags);
}

SEC("fexit/inet_sendmsg")
int BPF_PROG(fx_inet_sendmsg, struct socket *sock, struct msghdr *msg, size_t size, int ret)
{
	return on_sock_send(sock->sk, ret);
}

SEC("fexit/inet6_sendmsg")
int BPF_PROG(fx_inet6_sendmsg, struct socket *sock, struct msghdr *msg, size_t size, int ret)
{
	return on_sock_send(sock->sk, ret);
}

SEC("fexit/inet_sendpage")
int BPF_PROG(fx_inet_sendpage, struct socket *sock, struct page *page, int offset, size_t size,
	     int flags, long ret)
{
	return on_sock_send(sock->sk, ret);
}

SEC("fentry/sock_def_readable")
int BPF_PROG(fe_sock_def_readable, struct sock *sk)
{
	return on_sock_data_ready(sk);
}

/* Handshake completion (the connection enters the accept queue) and the end
 * of a connection: the server's close moves it to FIN_WAIT1 (server closed
 * first) or LAST_ACK (client closed first), a reset to CLOSE. Runs for every
 * TCP state change on the host, a few per connection. */
SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(sock_state, struct sock *sk, int oldstate, int newstate)
{
	struct ebee_sconn *c;
	struct ebee_wl *w;
	__u64 now;

	if (sk->sk_protocol != IPPROTO_TCP_)
		return 0;
	if (newstate == TCP_ESTABLISHED) {
		if (oldstate == TCP_SYN_RECV) {
			struct ebee_sconn init = { .hs_ns = bpf_ktime_get_ns() };
			struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);

			/* Where each direction's bytes begin, for the framers. */
			if (tp) {
				init.rcv_isn = tp->rcv_nxt;
				init.snd_isn = tp->snd_nxt;
				init.fflags = EBEE_FF_SEQ;
			}
			sconn_new(sk, &init);
		}
		return 0;
	}
	if (newstate != TCP_FIN_WAIT1 && newstate != TCP_LAST_ACK && newstate != TCP_CLOSE)
		return 0;
	c = bpf_sk_storage_get(&sconns, sk, 0, 0);
	if (!c)
		return 0;
	w = c->wid ? bpf_map_lookup_elem(&workloads, &c->wid) : NULL;
	if (w && w->epoch == c->wl_epoch) {
		now = bpf_ktime_get_ns();
		if (c->state == EBEE_CS_RESPONDING && (w->flags & EBEE_F_IO))
			sock_emit_io(c);
		/* An adopted connection's start is unknown: evidence only. */
		if (w->flags & EBEE_F_CONN)
			emit(c->wid,
			     c->flags & EBEE_CF_ADOPTED ? EBEE_REC_CONN_ADOPTED : EBEE_REC_CONN,
			     now, now - c->first_ns, c->hs_ns ? now - c->hs_ns : 0, c->nreq);
	}
	sconn_del(sk);
	return 0;
}

/* ---------------------------------------------------------------- processes */

/* A new process forked by a traced one joins its workload. Threads share the
 * tgid and need nothing. The raw tracepoint hands us both task_structs, so the
 * child's tgid is read directly (the syscall-level tracepoint gives only tids). */
SEC("raw_tp/sched_process_fork")
int on_proc_fork(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *parent = (struct task_struct *)ctx->args[0];
	struct task_struct *child = (struct task_struct *)ctx->args[1];
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 ctgid = BPF_CORE_READ(child, tgid);
	struct ebee_proc *p;

	if (ptgid == ctgid)
		return 0;
	p = bpf_map_lookup_elem(&procs, &ptgid);
	if (!p || (p->flags & EBEE_F_NOCHILD))
		return 0;
	bpf_map_update_elem(&procs, &ctgid, p, BPF_NOEXIST);
	count(EBEE_CNT_FORKS);
	return 0;
}

/* A process leaving: forget it so a recycled pid is not traced by mistake.
 * Fires per thread; only the group leader's exit removes the entry. */
SEC("raw_tp/sched_process_exit")
int on_proc_exit(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;

	if ((__u32)id == tgid)
		bpf_map_delete_elem(&procs, &tgid);
	return 0;
}
