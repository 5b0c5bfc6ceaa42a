/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Framing in the kernel: mid-stream, a connection whose first bytes went by
 * unseen (opened before ebee's hooks, or before they reached its cgroup),
 * framed from the first client segment where its protocol is found again,
 * not counted by length for good: one that begins a message as the list's
 * detection knows it (a RESP array, an HTTP/1 request line, a memcached
 * command), or an HTTP/2 frame header confirmed by the next (frame_h2_mid).
 * Not TLS: its detection wants a ClientHello, and from an application-data
 * record on, whether the unseen handshake chose h2 (no request-response
 * turns) cannot be told; such a connection stays counted by length. The
 * server's side starts at its first segment that may begin a response
 * (frame_late_start). Until then the io pattern counts the connection, as
 * it counts one by length.
 */
#ifndef EBEE_FRAME_MID_BPF_H
#define EBEE_FRAME_MID_BPF_H

#include "frame/order.bpf.h"

/* Client segments looked at for a message start before the connection is
 * given up to the length pattern (then counted unseen): a protocol none of
 * the framers speaks costs a 16-byte load per segment this long only. */
#define EBEE_FMID_TRIES 64

/* Whether the plen >= 1 bytes at off begin an HTTP/2 frame header of that
 * side (ebee_h2_header_ok) confirmed by what follows: the segment ends
 * where the frame does, or the next frame's header is valid too. A frame
 * longer than the segment is not confirmable here: the next segment is
 * tried. Not at a CONTINUATION: a header block is not begun there. Global,
 * its bytes on a stack of its own (the program's and its calls' must fit
 * 512 bytes). */
__noinline int frame_h2_mid(struct __sk_buff *skb, __u32 off, __u32 plen, int resp)
{
	__u8 h[H2_HDR_LEN + 3] = {};
	__u32 next;

	if (!skb || plen < H2_HDR_LEN || bpf_skb_load_bytes(skb, off, h, H2_HDR_LEN) ||
	    h[3] == H2_CONTINUATION || !ebee_h2_header_ok(h, resp))
		return 0;
	next = H2_HDR_LEN + ((__u32)h[0] << 16 | (__u32)h[1] << 8 | h[2]);
	if (next == plen)
		return 1;
	if (next + H2_HDR_LEN > plen || bpf_skb_load_bytes(skb, off + next, h, H2_HDR_LEN))
		return 0;
	return ebee_h2_header_ok(h, resp);
}

/* A direction set up to parse from the segment at seq: the client's at a
 * message start found (HTTP/2's past the preface, which went by), the
 * server's at its first segment that may begin a response. */
static __always_inline void frame_mid_start(struct ebee_fdir *d, __u32 seq, int fr, int resp)
{
	frame_reset(d);
	d->next = seq;
	d->init = 1;
	if (fr == EBEE_FRAME_HTTP2 && !resp)
		d->st = H2_HDR;
}

#endif /* EBEE_FRAME_MID_BPF_H */
