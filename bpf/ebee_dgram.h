/* SPDX-License-Identifier: MIT */
/*
 * dgram: types shared by bpf/ebee_dgram.bpf.c and metrics/src/dgram.c.
 * Fixed-width kernel types only, so both compilers agree on the layout.
 */
#ifndef EBEE_DGRAM_H
#define EBEE_DGRAM_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#include <linux/bpf.h> /* struct bpf_spin_lock */
#endif

/* Requests waiting for their response, per (socket port, peer): a ring. A
 * peer with more unanswered datagrams than this loses the oldest (counted
 * as expired). Power of two. */
#define EBEE_DG_PEND_N 32
/* Arrival times kept per socket (sk_data_ready) for the sojourn latency:
 * datagrams queued beyond this get their receive time instead. Power of two. */
#define EBEE_DG_ARR_N 64

/* Pending-table key: the workload, the local port the request came in on and
 * the peer it came from (IPv4 as ::ffff:a.b.c.d), so the reply matches
 * whichever of the workload's sockets on that port sends it. */
struct ebee_dg_key {
	__u32 wid;
	__u16 lport; /* host order */
	__u16 rport; /* host order */
	__u32 raddr[4];
};

struct ebee_dg_req {
	__u64 rx_ns;  /* the server received it (service start) */
	__u64 arr_ns; /* it arrived at the socket (sojourn start) */
};

struct ebee_dg_pend {
	struct bpf_spin_lock lock;
	__u32 head, tail; /* free-running: tail - head requests pending */
	__u64 last_ns;	  /* newest request pushed: the user-space sweep's age */
	struct ebee_dg_req q[EBEE_DG_PEND_N];
};

/* Per-workload counters (map dg_stats, keyed by workload id), so that what
 * the pattern cannot count is reported, never silent. */
struct ebee_dg_stats {
	__u32 epoch;	    /* struct ebee_wl.epoch: a reused wid starts afresh */
	__u32 socks;	    /* UDP sockets claimed (server and client) */
	__u32 client_socks; /* ... of which client sockets (first I/O a send) */
	__u32 pad;
	__u64 rx;	   /* datagrams received on server sockets */
	__u64 tx;	   /* datagrams sent on server sockets */
	__u64 matched;	   /* responses matched to a request: records emitted */
	__u64 expired;	   /* requests never answered (timed out or pushed out) */
	__u64 unsolicited; /* sends to a peer with no request pending */
	__u64 nopeer;	   /* datagrams whose peer was not known */
	__u64 full;	   /* requests not tracked: pending table full */
	__u64 dropped;	   /* records lost: ring buffer full */
};

/* Per-socket state (socket-local storage of the workload's UDP sockets). */
struct ebee_dg_sock {
	__u32 wid;
	__u32 wl_epoch;
	__u32 flags; /* EBEE_DGS_* */
	__u32 skip;  /* datagrams queued at the claim: no arrival recorded */
	__u64 rx_seq;
	__u64 arr_seq;
	struct {
		__u64 seq; /* arr_seq + 1 of the datagram; 0: never written */
		__u64 ts;
	} arr[EBEE_DG_ARR_N];
	/* Peer of the datagram being received / sent, left by the cgroup
	 * recvmsg/sendmsg hooks for the length tracepoint that follows. */
	__u32 rx_addr[4];
	__u32 tx_addr[4];
	__u16 rx_port;
	__u16 tx_port;
	__u32 pad;
};

#define EBEE_DGS_CLIENT 0x1 /* a client socket: its receives are replies, not requests */
#define EBEE_DGS_RXPEER 0x2 /* rx_addr/rx_port valid */
#define EBEE_DGS_TXPEER 0x4 /* tx_addr/tx_port valid */

#endif
