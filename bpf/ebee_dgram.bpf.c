// SPDX-License-Identifier: GPL-2.0
/*
 * dgram: request/response servers over UDP (DNS, memcached's UDP port). A
 * request is a datagram the workload receives on a UDP socket; its response
 * the next datagram the workload sends to that same peer (the peer of the
 * datagram, not of a connection) from that local port. Each record carries
 * the service latency (the server's receive of the request to the send of
 * its response) and the sojourn latency (the request's arrival at the
 * socket to the same send).
 *
 * Hooks (docs/design.md 4.8 says what else was tried and what it cost):
 *   sock:sock_recv_length / sock_send_length (tp_btf): fire after every
 *     sock_recvmsg/sock_sendmsg in the caller's context, once per datagram
 *     even inside recvmmsg/sendmmsg (their loops call the _nosec variants
 *     the tracepoints sit in). They give the socket and the length, not
 *     the peer.
 *   cgroup/recvmsg4, recvmsg6, sendmsg4, sendmsg6 (sock_addr programs on the
 *     cgroup v2 root): run inside udp_recvmsg / udp_sendmsg, per datagram,
 *     with the peer's address (the source the kernel is about to hand the
 *     reader, the destination of an unconnected send), just before the
 *     length tracepoint of the same call. They leave the peer in the
 *     socket's storage for it. A connected socket's peer is its own
 *     destination (no address passes through the call, so no hook runs).
 *     Only UDP sendmsg/recvmsg with an address run them, so TCP traffic of
 *     the host pays nothing.
 *   sock:sk_data_ready (tp_btf): once per datagram queued; its time is the
 *     arrival, kept in a per-socket ring that the receives consume in the
 *     order UDP dequeues (FIFO).
 *   On kernels without the socket tracepoints (before 6.3), the fexit and
 *   fentry programs at the end of this file stand in for them, chosen as the
 *   main object's socket path chose (metrics/src/dgram.c).
 * The workload's UDP sockets carry socket-local storage, claimed at the
 * first hook of a traced process on them; a socket without one is not ours
 * and costs the programs one storage lookup (the tracepoints first compare
 * sk_protocol, so TCP sockets cost a load). A socket whose first I/O is a
 * send and that is connected or was bound by its owner to neither a port
 * nor an address is a client socket (the workload's own lookups): its
 * receives are replies, not requests.
 *
 * Pending requests wait in a hash keyed by (workload, local port, peer),
 * each a small ring, since one peer may have several requests in flight
 * (dnsperf keeps up to 100 on one socket; a recvmmsg server reads a batch
 * before it answers any). Responses match the peer's oldest request (FIFO).
 * One-way traffic (syslog) never gets a response: its requests expire after
 * dg_timeout_ns, at the next datagram of that peer or in the user-space
 * sweep (metrics/src/dgram.c), and are counted as expired, as are requests
 * pushed out by a peer that has more than EBEE_DG_PEND_N unanswered; a full
 * table, sends nobody asked for and datagrams of unknown peer are counted
 * too (struct ebee_dg_stats): nothing is dropped silently.
 *
 * Where it is known to be wrong. A server that answers one peer's requests
 * out of order (multithreaded, several in flight from one client socket)
 * gets the right count but latencies paired FIFO. A response split into two
 * datagrams is one response and a request the second one answers nothing
 * (unsolicited). A server socket that sends first to a peer which then
 * answers (a forwarder's upstream query on a bound socket) takes the answer
 * for a request, which expires unless another query to that peer follows.
 * Two threads receiving on one socket at once can swap the peers the hooks
 * left (SO_REUSEPORT servers have a socket per thread). UDP GSO sends of
 * several datagrams in one call are one response.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "ebee_common.h"
#include "ebee_dgram.h"

char LICENSE[] SEC("license") = "GPL";

/* procs, workloads: the main object's maps (bpf_map__reuse_fd). */
#include "ebee_maps.bpf.h"

#define IPPROTO_UDP_	    17
#define AF_INET_	    2
#define AF_INET6_	    10
#define MSG_PEEK_	    0x2
#define MSG_ERRQUEUE_	    0x2000
#define SOCK_BINDADDR_LOCK_ 4
#define SOCK_BINDPORT_LOCK_ 8

#define DGS_SYNC_RX 0x8	 /* claimed by a receive hook: skip not computed yet */
#define DGS_SYNC_TX 0x10 /* claimed by a send hook: role not decided yet */

const volatile __u64 dg_timeout_ns = 1000000000ull;

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct ebee_dg_sock);
} dg_socks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 8192); /* resized by user space before load */
	__type(key, struct ebee_dg_key);
	__type(value, struct ebee_dg_pend);
} dg_pend SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* workload id */
	__type(value, struct ebee_dg_stats);
} dg_stats SEC(".maps");

/* A zeroed pending entry to insert from: too big for the stack, and typed
 * as bytes, since a value holding a spin lock cannot be a helper's input. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct ebee_dg_pend));
} dg_zero SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 128 * 1024); /* resized by user space before load */
} dgram_rb SEC(".maps");

#define ADD(st, field, n) __sync_fetch_and_add(&(st)->field, (n))

static __always_inline struct ebee_dg_stats *stats_of(__u32 wid, __u32 epoch)
{
	struct ebee_dg_stats *st = bpf_map_lookup_elem(&dg_stats, &wid);
	struct ebee_dg_stats init = { .epoch = epoch };

	if (st && st->epoch == epoch)
		return st;
	/* New, or left by an earlier workload of the same id. */
	bpf_map_update_elem(&dg_stats, &wid, &init, BPF_ANY);
	return bpf_map_lookup_elem(&dg_stats, &wid);
}

/* The socket's state if it is a live dgram workload's, else NULL; *st its
 * workload's counters. */
static __always_inline struct ebee_dg_sock *dg_live(struct ebee_dg_sock *s,
						    struct ebee_dg_stats **st)
{
	struct ebee_wl *w = bpf_map_lookup_elem(&workloads, &s->wid);

	if (!w || w->epoch != s->wl_epoch || !(w->flags & EBEE_F_DGRAM))
		return NULL;
	*st = stats_of(s->wid, s->wl_epoch);
	return *st ? s : NULL;
}

/* Claim a UDP socket for the caller's workload, if the caller is traced in
 * dgram (or auto) mode. The datagrams already queued were not seen arriving. */
static __always_inline struct ebee_dg_sock *dg_claim(void *sk, __u32 skip, __u32 flags,
						     struct ebee_dg_stats **st)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct ebee_dg_sock *s;
	struct ebee_proc *p;
	struct ebee_wl *w;

	p = bpf_map_lookup_elem(&procs, &tgid);
	if (!p || !(p->flags & EBEE_F_DGRAM))
		return NULL;
	w = bpf_map_lookup_elem(&workloads, &p->wid);
	if (!w)
		return NULL;
	/* Created zeroed (the value is too big for the stack), then filled:
	 * until wid is set the other hooks take it for no workload's. */
	s = bpf_sk_storage_get(&dg_socks, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!s) {
		/* Made a moment ago by another thread's datagram (the kernel
		 * makes it with BPF_NOEXIST: the loser gets NULL): that
		 * thread's claim, once filled (wid last). */
		s = bpf_sk_storage_get(&dg_socks, sk, 0, 0);
		return s && s->wid ? dg_live(s, st) : NULL;
	}
	s->skip = skip;
	s->flags = flags;
	s->wl_epoch = w->epoch;
	asm volatile("" ::: "memory"); /* the rest before wid, read above */
	s->wid = p->wid;
	*st = stats_of(p->wid, w->epoch);
	if (!*st)
		return NULL;
	ADD(*st, socks, 1);
	if (s->flags & EBEE_DGS_CLIENT)
		ADD(*st, client_socks, 1);
	return s;
}

static __always_inline __u32 queued(const struct sock *sk)
{
	const struct udp_sock *up = (const struct udp_sock *)sk;

	/* The verifier types sk as a struct sock only: read the rest. */
	return sk->sk_receive_queue.qlen + BPF_CORE_READ(up, reader_queue.qlen);
}

/* ---------------------------------------------------------------- peers */

static __always_inline void addr4(__u32 a[4], __u32 ip4)
{
	a[0] = 0;
	a[1] = 0;
	a[2] = bpf_htonl(0xffff);
	a[3] = ip4;
}

/* The storage of a socket seen by a sock_addr hook; claims it (skip fixed
 * by the tracepoint that follows) when the caller is traced. */
static __always_inline struct ebee_dg_sock *hook_sock(struct bpf_sock_addr *ctx, bool rx)
{
	struct ebee_dg_stats *st;
	struct ebee_dg_sock *s;

	if (ctx->protocol != IPPROTO_UDP_ || !ctx->sk)
		return NULL;
	s = bpf_sk_storage_get(&dg_socks, ctx->sk, 0, 0);
	if (s)
		return s;
	/* Claimed here, the socket's queue and role are settled by the length
	 * tracepoint of the same call, which sees the whole struct sock. */
	return dg_claim(ctx->sk, 0, rx ? DGS_SYNC_RX : DGS_SYNC_TX, &st);
}

SEC("cgroup/recvmsg4")
int dg_recvmsg4(struct bpf_sock_addr *ctx)
{
	struct ebee_dg_sock *s = hook_sock(ctx, true);

	if (s) {
		addr4(s->rx_addr, ctx->user_ip4);
		s->rx_port = bpf_ntohs((__u16)ctx->user_port);
		s->flags |= EBEE_DGS_RXPEER;
	}
	return 1;
}

SEC("cgroup/recvmsg6")
int dg_recvmsg6(struct bpf_sock_addr *ctx)
{
	struct ebee_dg_sock *s = hook_sock(ctx, true);

	if (s) {
		s->rx_addr[0] = ctx->user_ip6[0];
		s->rx_addr[1] = ctx->user_ip6[1];
		s->rx_addr[2] = ctx->user_ip6[2];
		s->rx_addr[3] = ctx->user_ip6[3];
		s->rx_port = bpf_ntohs((__u16)ctx->user_port);
		s->flags |= EBEE_DGS_RXPEER;
	}
	return 1;
}

SEC("cgroup/sendmsg4")
int dg_sendmsg4(struct bpf_sock_addr *ctx)
{
	struct ebee_dg_sock *s = hook_sock(ctx, false);

	if (s) {
		addr4(s->tx_addr, ctx->user_ip4);
		s->tx_port = bpf_ntohs((__u16)ctx->user_port);
		s->flags |= EBEE_DGS_TXPEER;
	}
	return 1;
}

SEC("cgroup/sendmsg6")
int dg_sendmsg6(struct bpf_sock_addr *ctx)
{
	struct ebee_dg_sock *s = hook_sock(ctx, false);

	if (s) {
		s->tx_addr[0] = ctx->user_ip6[0];
		s->tx_addr[1] = ctx->user_ip6[1];
		s->tx_addr[2] = ctx->user_ip6[2];
		s->tx_addr[3] = ctx->user_ip6[3];
		s->tx_port = bpf_ntohs((__u16)ctx->user_port);
		s->flags |= EBEE_DGS_TXPEER;
	}
	return 1;
}

/* The peer of this receive (rx) or send: what the hook left, or the
 * connected socket's own peer. false: unknown (an unconnected socket read
 * without asking for the source). */
static __always_inline bool peer_of(const struct sock *sk, struct ebee_dg_sock *s, bool rx,
				    struct ebee_dg_key *k)
{
	__u32 f = rx ? EBEE_DGS_RXPEER : EBEE_DGS_TXPEER;

	k->lport = sk->__sk_common.skc_num;
	if (s->flags & f) {
		s->flags &= ~f;
		if (rx) {
			__builtin_memcpy(k->raddr, s->rx_addr, sizeof(k->raddr));
			k->rport = s->rx_port;
		} else {
			__builtin_memcpy(k->raddr, s->tx_addr, sizeof(k->raddr));
			k->rport = s->tx_port;
		}
		return true;
	}
	if (sk->__sk_common.skc_state != TCP_ESTABLISHED)
		return false;
	k->rport = bpf_ntohs(sk->__sk_common.skc_dport);
	if (sk->__sk_common.skc_family == AF_INET_) {
		addr4(k->raddr, sk->__sk_common.skc_daddr);
	} else {
		k->raddr[0] = sk->__sk_common.skc_v6_daddr.in6_u.u6_addr32[0];
		k->raddr[1] = sk->__sk_common.skc_v6_daddr.in6_u.u6_addr32[1];
		k->raddr[2] = sk->__sk_common.skc_v6_daddr.in6_u.u6_addr32[2];
		k->raddr[3] = sk->__sk_common.skc_v6_daddr.in6_u.u6_addr32[3];
	}
	return true;
}

/* The workload's storage of a UDP socket seen by a length tracepoint
 * (claimed here on a traced process's first I/O, with the role decided),
 * or NULL. */
static __always_inline struct ebee_dg_sock *tp_sock(struct sock *sk, bool rx,
						    struct ebee_dg_stats **st)
{
	struct ebee_dg_sock *s;
	__u32 role;

	if (!sk || sk->sk_protocol != IPPROTO_UDP_)
		return NULL;
	s = sk->sk_bpf_storage ? bpf_sk_storage_get(&dg_socks, sk, 0, 0) : NULL;
	/* A client socket: its first I/O is a send, and it is connected or
	 * its owner bound it to neither a port nor an address (autobind on
	 * the first send). A server bound to a chosen address with port 0
	 * stays a server when the first I/O seen is a response (tracing began
	 * between a request and its answer). sk_userlocks is a 4-bit field
	 * before 6.4 (a byte since), hence the bitfield read. */
	role = !rx && (sk->__sk_common.skc_state == TCP_ESTABLISHED ||
		       !(BPF_CORE_READ_BITFIELD(sk, sk_userlocks) &
			 (SOCK_BINDPORT_LOCK_ | SOCK_BINDADDR_LOCK_)))
		   ? EBEE_DGS_CLIENT
		   : 0;
	if (!s)
		return dg_claim(sk, queued(sk), role, st);
	if (!dg_live(s, st))
		return NULL;
	if (s->flags & DGS_SYNC_RX) {
		/* Claimed by the receive hook of this very datagram: what is
		 * queued behind it was not seen arriving either. */
		s->flags &= ~DGS_SYNC_RX;
		s->skip += queued(sk) + (rx ? 1 : 0);
	} else if (s->flags & DGS_SYNC_TX) {
		s->flags &= ~DGS_SYNC_TX;
		s->skip += queued(sk);
		if (role) {
			s->flags |= role;
			ADD(*st, client_socks, 1);
		}
	}
	return s;
}

/* ---------------------------------------------------------------- requests */

static __always_inline int on_dg_recv(struct sock *sk, int ret, int flags)
{
	struct ebee_dg_key k = {};
	struct ebee_dg_stats *st;
	struct ebee_dg_pend *pd;
	struct ebee_dg_sock *s;
	__u64 now, arr = 0, expired = 0;

	/* A UDP read returns the datagram's length: 0 is an empty datagram. */
	if (ret < 0 || (flags & (MSG_PEEK_ | MSG_ERRQUEUE_)))
		return 0;
	s = tp_sock(sk, true, &st);
	if (!s)
		return 0;
	now = bpf_ktime_get_ns();
	if (s->skip) {
		s->skip--;
	} else {
		__u64 i = s->rx_seq++;
		__u32 slot = i & (EBEE_DG_ARR_N - 1);

		if (s->arr[slot].seq == i + 1)
			arr = s->arr[slot].ts;
	}
	if (!arr || arr > now)
		arr = now; /* not seen arriving (queued at the claim, or overrun) */
	if (!peer_of(sk, s, true, &k)) {
		if (!(s->flags & EBEE_DGS_CLIENT))
			ADD(st, nopeer, 1);
		return 0;
	}
	if (s->flags & EBEE_DGS_CLIENT)
		return 0;
	ADD(st, rx, 1);
	k.wid = s->wid;
	pd = bpf_map_lookup_elem(&dg_pend, &k);
	if (!pd) {
		__u32 zero = 0;
		void *init = bpf_map_lookup_elem(&dg_zero, &zero);

		if (init)
			bpf_map_update_elem(&dg_pend, &k, init, BPF_NOEXIST);
		pd = bpf_map_lookup_elem(&dg_pend, &k);
		if (!pd) {
			ADD(st, full, 1);
			return 0;
		}
	}
	bpf_spin_lock(&pd->lock);
	/* The peer's oldest requests that were never answered. */
	for (int j = 0; j < EBEE_DG_PEND_N && pd->head != pd->tail; j++) {
		if (now - pd->q[pd->head & (EBEE_DG_PEND_N - 1)].rx_ns <= dg_timeout_ns &&
		    pd->tail - pd->head < EBEE_DG_PEND_N)
			break;
		pd->head++;
		expired++;
	}
	pd->q[pd->tail & (EBEE_DG_PEND_N - 1)].rx_ns = now;
	pd->q[pd->tail & (EBEE_DG_PEND_N - 1)].arr_ns = arr;
	pd->tail++;
	pd->last_ns = now;
	bpf_spin_unlock(&pd->lock);
	if (expired)
		ADD(st, expired, expired);
	return 0;
}

static __always_inline int on_dg_send(struct sock *sk, int ret)
{
	struct ebee_dg_key k = {};
	struct ebee_dg_stats *st;
	struct ebee_dg_pend *pd;
	struct ebee_dg_sock *s;
	struct ebee_dg_req r = {};
	__u64 now, expired = 0;
	bool hit = false;

	s = tp_sock(sk, false, &st);
	if (!s)
		return 0;
	if (ret < 0 || !peer_of(sk, s, false, &k) || (s->flags & EBEE_DGS_CLIENT)) {
		s->flags &= ~EBEE_DGS_TXPEER;
		return 0;
	}
	ADD(st, tx, 1);
	k.wid = s->wid;
	pd = bpf_map_lookup_elem(&dg_pend, &k);
	if (!pd) {
		ADD(st, unsolicited, 1);
		return 0;
	}
	now = bpf_ktime_get_ns();
	bpf_spin_lock(&pd->lock);
	for (int j = 0; j < EBEE_DG_PEND_N && pd->head != pd->tail; j++) {
		__u32 h = pd->head & (EBEE_DG_PEND_N - 1);

		pd->head++;
		if (now - pd->q[h].rx_ns > dg_timeout_ns) {
			expired++;
			continue;
		}
		r = pd->q[h];
		hit = true;
		break;
	}
	bpf_spin_unlock(&pd->lock);
	if (expired)
		ADD(st, expired, expired);
	if (!hit) {
		ADD(st, unsolicited, 1);
		return 0;
	}
	ADD(st, matched, 1);
	if (!ebee_submit(&dgram_rb, s->wid, EBEE_REC_DGRAM, now, now - r.rx_ns, now - r.arr_ns, 0))
		ADD(st, dropped, 1);
	return 0;
}

/* A datagram was queued on a socket: its arrival, for the receive that will
 * dequeue it (UDP dequeues in arrival order). Runs for every socket of the
 * host: others end at the protocol compare or the storage lookup. */
static __always_inline int on_dg_arrive(const struct sock *sk)
{
	struct ebee_dg_sock *s;
	__u64 i;
	__u32 slot;

	if (!sk || sk->sk_protocol != IPPROTO_UDP_ || !sk->sk_bpf_storage)
		return 0;
	s = bpf_sk_storage_get(&dg_socks, (struct sock *)sk, 0, 0);
	if (!s)
		return 0;
	i = __sync_fetch_and_add(&s->arr_seq, 1);
	slot = i & (EBEE_DG_ARR_N - 1);
	s->arr[slot].ts = bpf_ktime_get_ns();
	s->arr[slot].seq = i + 1;
	return 0;
}

/* Attach method tp_btf (Linux 6.3 and later): the socket tracepoints. */
SEC("tp_btf/sock_recv_length")
int BPF_PROG(dg_recv, struct sock *sk, int ret, int flags)
{
	return on_dg_recv(sk, ret, flags);
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(dg_send, struct sock *sk, int ret, int flags)
{
	return on_dg_send(sk, ret);
}

SEC("tp_btf/sk_data_ready")
int BPF_PROG(dg_arrive, const struct sock *sk)
{
	return on_dg_arrive(sk);
}

/* Attach method fentry (kernels without those tracepoints, e.g. 6.1): the
 * functions one level down that the main object hooks for the same reason
 * (bpf/ebee.bpf.c says why these): a UDP socket's ops are inet_dgram_ops /
 * inet6_dgram_ops, whose recvmsg and sendmsg are inet_recvmsg /
 * inet6_recvmsg and inet_sendmsg / inet6_sendmsg, called once per datagram
 * by recvmmsg/sendmmsg too; the cgroup recvmsg/sendmsg hooks run inside
 * them (in udp_recvmsg / udp_sendmsg), so the peer is left before these
 * return, as before the tracepoints. A UDP socket's sk_data_ready is
 * sock_def_readable. */
SEC("fexit/inet_recvmsg")
int BPF_PROG(dgx_inet_recvmsg, struct socket *sock, struct msghdr *msg, size_t size, int flags,
	     int ret)
{
	return on_dg_recv(sock->sk, ret, flags);
}

SEC("fexit/inet6_recvmsg")
int BPF_PROG(dgx_inet6_recvmsg, struct socket *sock, struct msghdr *msg, size_t size, int flags,
	     int ret)
{
	return on_dg_recv(sock->sk, ret, flags);
}

SEC("fexit/inet_sendmsg")
int BPF_PROG(dgx_inet_sendmsg, struct socket *sock, struct msghdr *msg, size_t size, int ret)
{
	return on_dg_send(sock->sk, ret);
}

SEC("fexit/inet6_sendmsg")
int BPF_PROG(dgx_inet6_sendmsg, struct socket *sock, struct msghdr *msg, size_t size, int ret)
{
	return on_dg_send(sock->sk, ret);
}

SEC("fentry/sock_def_readable")
int BPF_PROG(dgx_sock_def_readable, struct sock *sk)
{
	return on_dg_arrive(sk);
}
