/* SPDX-License-Identifier: MIT */
/*
 * Types shared by the BPF programs (bpf/ebee.bpf.c) and user space
 * (metrics/src/). Fixed-width kernel types only, so both compilers agree on the
 * layout.
 */
#ifndef EBEE_COMMON_H
#define EBEE_COMMON_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif
#include "frame/frame.h"

/* What a traced process wants from the programs (struct ebee_proc.flags). */
#define EBEE_F_CONN    0x1u /* report accept..close of each accepted socket */
#define EBEE_F_IO      0x2u /* report read..last-write requests on accepted sockets */
#define EBEE_F_NOCHILD 0x4u /* do not add processes it forks */
/* gRPC: report server-side chttp2 streams (bpf/ebee_grpc.bpf.c).
 * A high bit, clear of the low ones the syscall/socket programs use. */
#define EBEE_F_GRPC 0x100u
/* dgram: report UDP datagram request/response pairs (bpf/ebee_dgram.bpf.c). */
#define EBEE_F_DGRAM 0x200u

/* Record kinds (struct ebee_rec.kind). */
#define EBEE_REC_CONN	      1 /* lat = close - accept; nreq = io requests it carried */
#define EBEE_REC_IO	      2 /* lat = last write - first read of one request */
#define EBEE_REC_GRPC	      3 /* lat = stream closed - server stream constructed */
#define EBEE_REC_CONN_ADOPTED 4 /* close of an adopted connection: evidence only */
#define EBEE_REC_DGRAM	      5 /* lat = response sent - request datagram received */
/* nreq requests framed by their protocol (bpf/frame/) that ended together:
 * lat = end - the server's read of the first, soj = end - its arrival */
#define EBEE_REC_FRAMED 6

/* struct ebee_conn.flags */
#define EBEE_CF_ADOPTED 0x1 /* open before tracing began: its accept time is unknown */
#define EBEE_CF_ARRIVED 0x2 /* socket path: arrive_ns holds the next request's arrival */
/* socket path, io: a write of the response in progress returned after the
 * client's next bytes had arrived (maybe during that write: the client may
 * have had the whole response by then); a further write of the same
 * response began after them for certain (EBEE_CF_OVERLAP). */
#define EBEE_CF_ARRW 0x4
/* ... counted in struct ebee_fstat.overlap, once per connection */
#define EBEE_CF_OVERLAP 0x8

/* Per-connection state for the io pattern (struct ebee_conn.state). */
#define EBEE_CS_IDLE	   0 /* no request in progress */
#define EBEE_CS_READING	   1 /* request started (read seen), no response yet */
#define EBEE_CS_RESPONDING 2 /* response written; ends at the next read or close */

/* Value of the traced-process map, keyed by tgid. Every process of a workload
 * (its root pid and descendants) has an entry pointing at the root, with a
 * copy of the workload's flags so that the hot path needs one lookup. */
struct ebee_proc {
	__u32 wid;   /* workload id: the pid that was asked for */
	__u32 flags; /* EBEE_F_*, the workload's (user space keeps them in step) */
};

/* Value of the workload map, keyed by workload id. */
struct ebee_wl {
	__u32 flags;   /* EBEE_F_* */
	__u32 epoch;   /* distinct per workload added: tells a reused wid apart */
	__u64 dropped; /* records lost for this workload (ring buffer full) */
};

/* Requests counted by the programs, per workload (map kcounts, per CPU,
 * keyed by workload id), by the pattern that counts them: incremented where
 * each request record is made (ebee_submit()), whether or not the ring takes
 * it, so user space knows a workload's requests exactly when records are lost,
 * and how many of them the records it read cover. Indexes match libebee's
 * K_* (metrics/src/core.h). */
#define EBEE_KC_CONN  0 /* EBEE_REC_CONN */
#define EBEE_KC_IO    1 /* EBEE_REC_IO, and EBEE_REC_FRAMED's nreq */
#define EBEE_KC_GRPC  2 /* EBEE_REC_GRPC */
#define EBEE_KC_DGRAM 3 /* EBEE_REC_DGRAM */
#define EBEE_KC_MAX   4
struct ebee_kcount {
	__u64 req[EBEE_KC_MAX];	 /* requests completed */
	__u64 lost[EBEE_KC_MAX]; /* ... of them, whose record the ring could not take */
	/* Socket I/O the programs saw on the workload's connections (reads and
	 * writes that moved bytes; ebee_kc_io()), requests or not: I/O with no
	 * request counted is a zero that must say why (user space's
	 * "no_requests" warning). */
	__u64 io_bytes;
	__u64 io_calls;
};

/* In-flight connection, keyed by (tgid, fd). */
struct ebee_conn_key {
	__u32 tgid;
	__u32 fd;
};

struct ebee_conn {
	__u64 accept_ns;     /* conn pattern start */
	__u64 io_start_ns;   /* io pattern: start of the request in progress */
	__u64 last_write_ns; /* io pattern: end of the last write seen */
	__u64 end_ns;	     /* conn pattern: its end, fixed at the server's shutdown; 0 before */
	__u32 nreq;	     /* io requests completed on this connection */
	__u16 state;	     /* EBEE_CS_* */
	__u16 flags;	     /* EBEE_CF_* */
};

/* Socket path: per-socket state in socket-local storage, so any process of
 * the workload (a forked child, an io_uring worker) that reads or writes the
 * socket continues the same request. Created at the handshake of every
 * passive open (wid 0: not claimed yet) or at the first I/O of an adopted
 * connection. */
struct ebee_sconn {
	__u64 hs_ns;	     /* handshake completed (entered the accept queue); 0: adopted */
	__u64 first_ns;	     /* first read or write by the workload: conn service start */
	__u64 arrive_ns;     /* first data arrival since the last request started (or,
			      * unclaimed, since the handshake) */
	__u64 io_start_ns;   /* io: first read of the request in progress */
	__u64 soj_start_ns;  /* io: arrival of the request in progress */
	__u64 last_write_ns; /* io: end of the last write seen */
	__u32 wid;	     /* workload the socket belongs to; 0: passive, not claimed */
	__u32 wl_epoch;	     /* struct ebee_wl.epoch of that workload at the claim */
	__u32 wflags;	     /* copy of the workload's EBEE_F_* ... */
	__u32 gen;	     /* ... valid while the programs' wl_gen equals this */
	__u32 nreq;	     /* io requests completed on this connection */
	__u16 state;	     /* EBEE_CS_* */
	__u16 flags;	     /* EBEE_CF_* */
	__u32 rcv_isn;	     /* framing: sequence number of the client's first byte */
	__u32 snd_isn;	     /* ... and of the server's (EBEE_FF_SEQ) */
	__u8 fr;	     /* framing: enum ebee_frame in force */
	__u8 fflags;	     /* EBEE_FF_* */
	__u8 fverify;	     /* framing: EBEE_FV_*, how a verifiable framer's requests count */
	__u8 fsample;	     /* EBEE_FV_LENGTH: ingress segments since the last sample;
			      * no framer yet, the start unseen: client segments looked
			      * at for a message start (EBEE_FMID_TRIES, frame/mid.bpf.h) */
	__u8 fnote;	     /* EBEE_FN_*: for struct ebee_fstat once the workload is known */
	__u8 pad[3];
};

/* struct ebee_sconn.fnote: how the connection's first bytes were seen,
 * counted in struct ebee_fstat when the connection is noted (frame_note). */
#define EBEE_FN_HSDATA 0x1 /* they completed the handshake: framed from the listener's copy */
#define EBEE_FN_UNSEEN 0x2 /* they went by unseen: counted by length */
#define EBEE_FN_MID    0x4 /* they went by unseen: framed from mid-stream */

/* struct ebee_sconn.fverify. A framer whose protocol is one response per
 * request (memcached's: frame/state.bpf.h, frame_verifiable) parses a
 * connection's bytes until it has seen EBEE_FV_SOLO requests in a row each
 * arrive alone (nothing pipelined behind it, nothing unanswered); from
 * then the io pattern counts them by length, as exact there and at the cost
 * of the gate only, and one ingress segment in EBEE_FV_SAMPLE (starting
 * between requests) is still parsed, to see whether that still holds. */
#define EBEE_FV_FRAMING 0 /* parsed: the framer counts */
#define EBEE_FV_LENGTH	1 /* verified alone: the io pattern counts, sampled */
#define EBEE_FV_NEVER	2 /* a sample found requests together: parsed from then on */
#define EBEE_FV_SOLO	32
#define EBEE_FV_SAMPLE	16

/* struct ebee_sconn.fflags */
#define EBEE_FF_SEQ    0x1 /* rcv_isn/snd_isn known (seen at the handshake) */
#define EBEE_FF_NOTED  0x2 /* counted in its workload's struct ebee_fstat.conns */
#define EBEE_FF_DESYNC 0x4 /* counted in struct ebee_fstat.desync_conns */
#define EBEE_FF_TLSMUX 0x08 /* TLS: judged for struct ebee_fstat.tls_mux */
#define EBEE_FF_TLSAGN 0x10 /* TLS: counted in struct ebee_fstat.tls_again */
/* The server's first bytes were an HTTP/2 SETTINGS frame, parsed as HTTP/2
 * (fr still EBEE_FRAME_NONE) until the client's first bytes decide. */
#define EBEE_FF_H2SRV 0x20
#define EBEE_FF_MCQ   0x40 /* memcached: counted in struct ebee_fstat.mc_quiet */
/* The server read bytes the framing hook never saw: the socket's cgroup is
 * outside those the hook is attached to (reported once, frame_missed). */
#define EBEE_FF_MISS  0x80

/* Framing: requests read but not yet answered on one connection, oldest
 * first. Requests that start in one segment share an entry (they arrived
 * together); when the queue is full, newer ones join the newest entry. */
#define EBEE_FQ_LEN 16
struct ebee_freq {
	__u64 arr_ns; /* arrival of the segment holding the first request's first byte */
	__u64 svc_ns; /* the server's read of that byte; 0 before */
	__u32 seq;    /* sequence number of that byte */
	__u32 n;      /* requests of this entry not yet answered */
};

/* Framing state of a framed connection: its own socket-local storage,
 * created at the first bytes of a connection a framer recognises. */
struct ebee_sframe {
	struct ebee_fdir in;  /* client -> server */
	struct ebee_fdir out; /* server -> client */
	struct ebee_freq q[EBEE_FQ_LEN];
	__u32 head, rd, tail; /* free-running: oldest, first not yet read, next free */
	__u32 head_bits;      /* HTTP: which of the last 32 requests were HEAD */
	/* The server's last writes (ring, EBEE_FW_LEN): a response ends when
	 * the write holding its last byte returned, as the io pattern's does,
	 * not when TCP sends it (Nagle, a full window or send buffer). */
	struct {
		__u64 ns;
		__u32 end; /* write_seq after the write */
		__u32 pad;
	} wr[4];
	__u32 nwr;
	__u32 pend_seq; /* TLS: last byte of the server's last response record ... */
	__u64 pend_ns;	/* ... and when it was written (its response may end there) */
	/* memcached: requests no response answers (noreply, quiet), not yet
	 * counted in the workload's unanswered (the walk may run before the
	 * connection is claimed: sock_recv counts them then). */
	__u32 unans;
	__u32 solo;    /* requests in a row that arrived alone (EBEE_FV_SOLO) */
	__u32 stashed; /* a client segment that came early is held (sstash) */
	/* HTTP/2 framed from mid-stream (EBEE_FN_MID): the first stream the
	 * client opened since (EBEE_H2MID_NONE: none yet; 0: not mid-stream).
	 * Ends of streams below it were opened unseen: not unmatched. */
	__u32 h2mid;
	/* HTTP/2: the client's next stream id when its direction lost sync
	 * (0: none pending). The first stream seen opened after the resync
	 * says how many were opened in the gap: client ids rise by 2. */
	__u32 h2gap;
	/* Requests still to be answered in sync before a connection that lost
	 * sync is trusted again (0: trusted; EBEE_FRAME_REGAIN at the loss). */
	__u32 regain;
	__u32 pad2;
};

#define EBEE_H2MID_NONE 0xffffffffu

/* A connection that lost sync is trusted again once this many requests
 * were answered with both directions in sync after it. Why 16: a resync at
 * bytes that only looked like a message start (payload beginning like a
 * request line, HTTP/2 payload shaped like two frame headers) parses
 * garbage and loses sync again within a few messages, well before 16; and
 * responses to requests of the gap can pair wrongly only with requests
 * queued behind them (HTTP/2 pairs by stream id, never so), at most the
 * queue's EBEE_FQ_LEN entries: 16 answered in sync have passed them. */
#define EBEE_FRAME_REGAIN EBEE_FQ_LEN

/* Framing, per workload (map fstats, keyed by workload id). */
struct ebee_fstat {
	__u64 conns[EBEE_FRAME_MAX]; /* connections by framer in force */
	__u64 desync;		  /* sequence gaps or bytes that did not parse */
	__u64 desync_conns;	  /* connections that lost sync at least once */
	__u64 resync;		  /* resynchronised at a message start */
	__u64 unmatched;	  /* responses with no request to pair with */
	__u64 merged;		  /* requests timed with an older one (queue full) */
	__u64 tls_mux;		  /* TLS connections that may multiplex (h2 offered) */
	__u64 tls_again;	  /* TLS connections whose client wrote again before a reply */
	__u64 aborted;		  /* HTTP/2: requests ended by a reset (RST_STREAM), counted */
	__u64 untimed;		  /* HTTP/2: streams beyond EBEE_H2_SLOTS in flight: not counted */
	__u64 unanswered;	  /* memcached: requests that get no response (noreply, quiet) */
	__u64 mc_quiet;		  /* memcached: connections with meta commands in quiet mode */
	__u64 verified;		  /* connections counted by length once verified (EBEE_FV_LENGTH) */
	__u64 late;		  /* ... of them, found by a sample to send requests together */
	__u64 desync_gap;	  /* of desync: at a sequence gap (the rest: bytes that did */
	__u64 desync_cut;	  /* not parse, or a walk cut short at FRAME_STEPS: these) */
	__u64 hsdata;		  /* connections whose first bytes came with the handshake */
	__u64 unseen;		  /* connections whose first bytes ebee did not see (length) */
	__u64 overlap;		  /* connections counted by length whose client sent more
				   * while a response was being written (EBEE_CF_OVERLAP) */
	__u64 reordered;	  /* client segments that reached ingress before the bytes
				   * just before them: held, then parsed in order (sstash) */
	__u64 midstream;	  /* connections whose first bytes went by unseen, framed
				   * from where their protocol was found again (EBEE_FN_MID) */
	__u64 lapses;		  /* times a trusted framed connection lost sync */
	__u64 regained;		  /* ... of them, trusted again (EBEE_FRAME_REGAIN) */
	__u64 gap_lost;		  /* HTTP/2: streams the client opened inside a gap
				   * (ids skipped before the first after the resync) */
};

/* Socket path: a connection accepted before tracing began, found in /proc by
 * user space and claimed by the first read or write of a traced process. */
struct ebee_adopt_key {
	__u16 lport; /* host byte order */
	__u16 rport; /* host byte order */
	__u32 raddr; /* IPv4 peer address as in the socket (network order); 0 for IPv6 */
};

/* Syscall arguments handed from sys_enter to sys_exit in task-local storage
 * (per thread, never per process: two threads of one process race otherwise). */
struct ebee_args {
	__u32 fd;
	__u32 wid;
	__u32 valid; /* set at enter, cleared at exit */
	__u32 pad;
};

/* One completed request: 32 bytes into the ring buffer. */
struct ebee_rec {
	__u64 end_ns;
	__u64 lat_ns; /* service latency */
	__u64 soj_ns; /* sojourn latency; 0 when not observable (syscall path) */
	__u32 wid;
	__u16 kind;
	__u16 nreq; /* EBEE_REC_CONN: io requests seen on it (saturating) */
};

/* gRPC: an in-flight server-side chttp2 stream, keyed by
 * (tgid, stream pointer); bpf/ebee_grpc.bpf.c. */
struct ebee_grpc_key {
	__u32 tgid;
	__u32 pad;
	__u64 stream; /* grpc_chttp2_stream * in the traced process */
};

struct ebee_grpc_stream {
	__u64 start_ns;
	__u64 transport; /* grpc_chttp2_transport *: must match at close */
	__u32 wid;
	__u32 closed; /* EBEE_GS_* seen so far */
};

#define EBEE_GS_READS  0x1 /* the client half-closed (END_STREAM received) */
#define EBEE_GS_WRITES 0x2 /* the server's trailers went out, or the stream was reset */

/* Per-CPU counters of the grpc object (its own array). */
enum ebee_grpc_counter {
	EBEE_GCNT_DROPPED, /* ring buffer full: record lost */
	EBEE_GCNT_MAX,
};

/* Per-CPU counters (array indexed by these). */
enum ebee_counter {
	EBEE_CNT_DROPPED, /* ring buffer full: record lost */
	EBEE_CNT_FORKS,	  /* descendants added by the fork hook */
	EBEE_CNT_MAX,
};

#endif
