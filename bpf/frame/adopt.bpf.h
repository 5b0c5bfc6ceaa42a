/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Framing in the kernel: adoption, bytes that complete a handshake. They
 * reach the ingress hook in the listener's context: parsed into an entry
 * of their own (sfirsts, frame_listen), which the connection takes over at
 * its next segment (frame_adopt).
 */
#ifndef EBEE_FRAME_ADOPT_BPF_H
#define EBEE_FRAME_ADOPT_BPF_H

#include "frame/segment.bpf.h"
#include "frame/packet.bpf.h"

/*
 * A connection's first bytes may complete its handshake: a server listening
 * with TCP_DEFER_ACCEPT (nginx's `deferred`, HAProxy's defer-accept) drops
 * the client's bare ACK and makes the connection at its first data, and a
 * client's data can overtake that ACK (a multi-CPU or emulated host: lane
 * run 12's Go gRPC connection). That segment reaches the ingress hook in
 * the listener's context (tcp_v4_rcv's TCP_NEW_SYN_RECV branch filters it
 * with the listener, before the connection exists), where no connection
 * storage can hold what it says: it was never parsed, and the connection
 * was counted by length without a word (nginx `deferred`, HTTP/1.1
 * pipelined 8 deep: 141 of 1000 requests, trusted). So the listener's
 * segments with payload are parsed into an entry of their own, keyed by
 * the connection's addresses, and the connection takes that state over as
 * its own at its next segment either way (frame_adopt). A TCP Fast Open
 * SYN's data makes an entry too, never taken: the child exists, and may be
 * read and answered, before the handshake ends, where its ISN is recorded
 * past that data (not handled; docs/design.md 4.9).
 */
struct ebee_fkey {
	__u32 cli[4], srv[4]; /* addresses, IPv4 as ::ffff:a.b.c.d */
	__u16 cport, sport;   /* ports, network order */
};

struct ebee_sfirst {
	__u32 seq, plen; /* the segment's first byte and length */
	__u32 ok;	 /* parsed whole, in sync: its state may be taken over */
	__u32 pad;
	__u8 b[16];	     /* its first bytes, which chose the framer */
	struct ebee_sconn c; /* what the walk keeps of the connection (fr) */
	struct ebee_sframe f;
	struct ebee_h2tab h2;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 512); /* handshakes in flight, taken at the next segment */
	__type(key, struct ebee_fkey);
	__type(value, struct ebee_sfirst);
} sfirsts SEC(".maps");

static const struct ebee_sfirst sfirst_zero;

/* The key of a connection's entry in sfirsts, from one of its packets
 * (egress: the server's, so source and destination swap). */
static __always_inline int frame_fkey(struct __sk_buff *skb, const struct tcphdr *th,
				      struct ebee_fkey *k, int egress)
{
	__u32 ip[2];

	if (skb->protocol == bpf_htons(ETH_P_IP_)) {
		if (bpf_skb_load_bytes(skb, 12, ip, 8))
			return -1;
		k->cli[2] = k->srv[2] = bpf_htonl(0xffff);
		k->cli[3] = egress ? ip[1] : ip[0];
		k->srv[3] = egress ? ip[0] : ip[1];
	} else if (bpf_skb_load_bytes(skb, 8, egress ? k->srv : k->cli, 16) ||
		   bpf_skb_load_bytes(skb, 24, egress ? k->cli : k->srv, 16)) {
		return -1;
	}
	k->cport = egress ? th->dest : th->source;
	k->sport = egress ? th->source : th->dest;
	return 0;
}

/* The connection's first bytes went by in its listener's context (sfirsts):
 * 1 when its framing takes over the state they left (c->fr set), -1 when
 * they call for the length pattern or could not be parsed (unseen, said),
 * 0 when there is no entry for them. Egress asks too, the server's first
 * bytes may leave before the client's next ones come (HTTP/2's SETTINGS, a
 * response to a lone request). Global, its key on a stack of its own: the
 * program's stack and its calls' must fit 512 bytes (6.1 counted 544). */
__noinline int frame_adopt(struct __sk_buff *skb, const struct tcphdr *th, struct ebee_sconn *c,
			   __u32 seq, int egress)
{
	struct ebee_fkey k = {};
	struct bpf_sock *bsk;
	struct ebee_sfirst *v;
	struct ebee_sframe *f;
	int fr;

	if (!skb || !th || !c || !(bsk = skb->sk) || frame_fkey(skb, th, &k, egress))
		return 0;
	v = bpf_map_lookup_elem(&sfirsts, &k);
	/* Another connection's of the same addresses, long gone, or bytes
	 * not contiguous with these: no evidence of this one's. */
	if (!v || v->seq != c->rcv_isn || (!egress && v->seq + v->plen != seq))
		return 0;
	fr = v->c.fr;
	if (fr == EBEE_FRAME_LENGTH) {
		bpf_map_delete_elem(&sfirsts, &k);
		return -1;
	}
	/* The state is copied into storage made for it: one that exists
	 * already is the other direction's, on another CPU, which took the
	 * entry over a moment ago (its framer set, or about to be: then
	 * this segment is lost to it, and said). */
	if (bpf_sk_storage_get(&sframes, bsk, 0, 0))
		goto taken;
	if (!v->ok)
		goto unseen;
	f = bpf_sk_storage_get(&sframes, bsk, &v->f, BPF_SK_STORAGE_GET_F_CREATE);
	/* NULL too when the other direction made it between the look above
	 * and this (the kernel makes it with BPF_NOEXIST). */
	if (!f && bpf_sk_storage_get(&sframes, bsk, 0, 0))
		goto taken;
	if (!f || (fr == EBEE_FRAME_HTTP2 &&
		   !bpf_sk_storage_get(&sh2s, bsk, &v->h2, BPF_SK_STORAGE_GET_F_CREATE)))
		goto unseen;
	c->fnote |= EBEE_FN_HSDATA;
	bpf_map_delete_elem(&sfirsts, &k);
	asm volatile("" ::: "memory"); /* state before framer, as in frame_detect */
	c->fr = fr;
	return 1;
taken:
	if (c->fr != EBEE_FRAME_NONE)
		return 1;
unseen:
	c->fnote |= EBEE_FN_UNSEEN;
	bpf_map_delete_elem(&sfirsts, &k);
	return -1;
}

/* A segment with payload in a listener's context: bytes that complete a
 * handshake, parsed into their own entry for the connection TCP is about to
 * make of them (sfirsts, frame_adopt). */
static __always_inline void frame_listen(struct __sk_buff *skb, struct tcphdr *th, __u32 off,
					 __u32 plen, __u32 seq)
{
	struct ebee_fkey k = {};
	struct ebee_sfirst *v;
	__u32 n = plen < sizeof(v->b) ? plen : sizeof(v->b);
	int fr;

	/* The first bytes go to the entry, not the stack: the program's
	 * stack and its calls' must fit 512 bytes (6.1 counts 544 else). */
	if (frame_fkey(skb, th, &k, 0) || !n ||
	    bpf_map_update_elem(&sfirsts, &k, &sfirst_zero, BPF_ANY))
		return;
	v = bpf_map_lookup_elem(&sfirsts, &k);
	if (!v || bpf_skb_load_bytes(skb, off, v->b, ((n - 1) & 15) + 1))
		return;
	v->seq = seq;
	v->plen = plen;
	fr = ebee_frame_detect(v->b, n);
	v->c.fr = fr;
	if (fr == EBEE_FRAME_LENGTH)
		return;
	frame_reset(&v->f.in);
	v->f.in.next = seq;
	v->f.in.init = 1;
	frame_walk(skb, &v->c, &v->f, &v->f.in, fr == EBEE_FRAME_HTTP2 ? &v->h2 : NULL, off, plen,
		   seq, fr, 0, th->fin, 0, 0, 0);
	/* Parsed to its end and in sync: the connection may go on from here. */
	v->ok = !(v->f.in.flags & EBEE_FD_HUNT) && v->c.fr == fr;
}

#endif /* EBEE_FRAME_ADOPT_BPF_H */
