/* SPDX-License-Identifier: MIT */
/*
 * HTTP/2 (RFC 9113, cleartext with prior knowledge: h2c, gRPC): the client's
 * 24-byte connection preface, then frames of a 9-byte header (length, 24
 * bits; type; flags; stream id, 31 bits) and a payload, which is always
 * skipped, never read: the cost is per header byte.
 *
 * A request is a stream the client opens: its first HEADERS frame on a new
 * odd stream id (a START event, on the frame header's last byte). It ends
 * when the server sends END_STREAM on it (an END event on the last byte of
 * the DATA or HEADERS frame carrying the flag, or of the CONTINUATION that
 * completes such a HEADERS' header block: trailers and gRPC's trailers-only
 * responses included), or when either side resets it (RST_STREAM: an ABORT
 * event on its last byte). The event's stream id is ebee_h2_event_id(d).
 * Not requests: the client's trailers, 1xx responses, SETTINGS, PING,
 * WINDOW_UPDATE, GOAWAY, PRIORITY, unknown (extension) frames, and pushed
 * streams (PUSH_PROMISE; even ids, whose frames give no event).
 *
 * Streams end out of order, so their requests are paired with their ends by
 * stream id, in a table of the streams in flight (struct ebee_h2tab), not by
 * the FIFO the other framers use. The table is here, plain C like the parser,
 * so that user space tests the very code the kernel runs; its loops are
 * bounded by EBEE_H2_SLOTS.
 *
 * What a conforming peer never sends is taken as lost sync (EBEE_FEV_ERR): a
 * wrong preface, a stream frame on stream 0 or a connection frame on another,
 * SETTINGS, PING, RST_STREAM, WINDOW_UPDATE or PRIORITY of a wrong length, a
 * header block interrupted by another frame, a CONTINUATION outside one, a
 * stream the client opens with an even id. See frame.h for the step contract.
 */
#ifndef EBEE_FRAME_HTTP2_H
#define EBEE_FRAME_HTTP2_H

#include "frame.h"

enum { H2_START, H2_PREFACE, H2_HDR, H2_LAST };

/* Frame types and flags. */
#define H2_DATA		 0x0
#define H2_HEADERS	 0x1
#define H2_PRIORITY	 0x2
#define H2_RST_STREAM	 0x3
#define H2_SETTINGS	 0x4
#define H2_PUSH_PROMISE	 0x5
#define H2_PING		 0x6
#define H2_GOAWAY	 0x7
#define H2_WINDOW_UPDATE 0x8
#define H2_CONTINUATION	 0x9
#define H2_END_STREAM	 0x1
#define H2_END_HEADERS	 0x4

#define H2_PREFACE_LEN 24
#define H2_HDR_LEN     9
/* struct ebee_fdir.stack[3]: the header block in progress, its stream id in
 * the low 31 bits, and whether its end ends the stream (server side). */
#define H2_BLOCK_END 0x80000000u

/*
 * The state in struct ebee_fdir: st (H2_*), pos (byte of the preface or
 * frame header), num (the frame's payload length), left (its stream id: the
 * id of the last event), stack[0] its type, stack[1] its flags, stack[2]
 * (client side) the highest stream id the client opened, stack[3] the header
 * block in progress (0: none), depth the event the frame's last byte gives.
 */

/* Byte i of the client connection preface "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
 * from constants (a static array would be a BTF variable the kernel
 * refuses by its name). */
static __always_inline __u8 ebee_h2_preface_char(__u32 i)
{
	if (i < 8)
		return 0x5448202a20495250ull >> (8 * i); /* "PRI * HT" */
	if (i < 16)
		return 0x0a0d302e322f5054ull >> (8 * (i - 8)); /* "TP/2.0\r\n" */
	if (i < 24)
		return 0x0a0d0a0d4d530a0dull >> (8 * (i - 16)); /* "\r\nSM\r\n\r\n" */
	return 0;
}

/* Whether the n >= 1 bytes at b begin a server's first SETTINGS frame (not
 * an ACK, on stream 0, its length a multiple of 6): an HTTP/2 server may
 * send it before the client's preface has arrived. */
static __always_inline int ebee_h2_is_settings(const __u8 *b, __u32 n)
{
	__u32 len;

	if (n < H2_HDR_LEN || b[3] != H2_SETTINGS || b[4] || b[5] || b[6] || b[7] || b[8])
		return 0;
	len = (__u32)b[0] << 16 | (__u32)b[1] << 8 | b[2];
	return len % 6 == 0 && len <= 6 * 64;
}

/*
 * Whether the 9 bytes at h can be a frame header that side sends (resp: the
 * server's), where a connection is framed from mid-stream (frame/mid.bpf.h):
 * a known type with only its own flags, the reserved bit clear, a length
 * within the default maximum frame size (16 384: frames a peer allowed
 * longer are passed over, not found), a stream id where the type needs one
 * and none where it must not, a client's HEADERS on an odd stream, the fixed
 * lengths of PRIORITY, RST_STREAM, PING and WINDOW_UPDATE. Payload read as a
 * header rarely passes them all; the caller confirms by the next one.
 */
static __always_inline int ebee_h2_header_ok(const __u8 *h, int resp)
{
	__u32 len = (__u32)h[0] << 16 | (__u32)h[1] << 8 | h[2];
	__u32 type = h[3], fl = h[4];
	__u32 sid = (__u32)h[5] << 24 | (__u32)h[6] << 16 | (__u32)h[7] << 8 | h[8];

	if (len > 16384 || (sid & 0x80000000u))
		return 0;
	switch (type) {
	case H2_DATA: /* END_STREAM, PADDED */
		return sid && !(fl & ~0x09u);
	case H2_HEADERS: /* END_STREAM, END_HEADERS, PADDED, PRIORITY */
		return sid && !(fl & ~0x2du) && (resp || (sid & 1));
	case H2_PRIORITY:
		return sid && len == 5 && !fl;
	case H2_RST_STREAM:
		return sid && len == 4 && !fl;
	case H2_SETTINGS: /* ACK, which has no payload */
		return !sid && !(fl & ~0x1u) && len % 6 == 0 && (!fl || !len);
	case H2_PUSH_PROMISE: /* END_HEADERS, PADDED; servers only */
		return resp && sid && !(fl & ~0x0cu);
	case H2_PING: /* ACK */
		return !sid && len == 8 && !(fl & ~0x1u);
	case H2_GOAWAY:
		return !sid && len >= 8 && !fl;
	case H2_WINDOW_UPDATE:
		return len == 4 && !fl;
	case H2_CONTINUATION: /* END_HEADERS */
		return sid && !(fl & ~0x4u);
	}
	return 0;
}

/* The stream id of the event a step just returned. */
static __always_inline __u32 ebee_h2_event_id(const struct ebee_fdir *d)
{
	return d->left;
}

/* The frame's last byte is at hand: its event, if it has one. */
static __always_inline int ebee_h2_frame_end(struct ebee_fdir *d)
{
	int ev = d->depth;

	d->depth = EBEE_FEV_NONE;
	d->st = H2_HDR;
	d->pos = 0;
	return ev;
}

/* The frame header is complete (c was its last byte): what the frame is.
 * One case per frame type (RFC 9113 section 6), each with its rules: longer
 * than a screen as a whole, read one case at a time. */
static __always_inline int ebee_h2_header(struct ebee_fdir *d, int resp)
{
	__u32 len = d->num, type = d->stack[0], fl = d->stack[1], sid = d->left;
	__u32 block = d->stack[3];
	int ev = EBEE_FEV_NONE;

	/* A header block, once begun, is followed by its CONTINUATIONs only. */
	if (block && (type != H2_CONTINUATION || sid != (block & ~H2_BLOCK_END)))
		return EBEE_FEV_ERR;
	switch (type) {
	case H2_DATA:
		if (!sid)
			return EBEE_FEV_ERR;
		if (resp && (fl & H2_END_STREAM) && (sid & 1))
			ev = EBEE_FEV_END;
		break;
	case H2_HEADERS:
		if (!sid)
			return EBEE_FEV_ERR;
		if (!(fl & H2_END_HEADERS))
			d->stack[3] = sid | (resp && (fl & H2_END_STREAM) ? H2_BLOCK_END : 0);
		if (resp) {
			if ((fl & H2_END_STREAM) && (fl & H2_END_HEADERS) && (sid & 1))
				ev = EBEE_FEV_END;
			break;
		}
		if (!(sid & 1))
			return EBEE_FEV_ERR; /* clients open odd streams only */
		if (sid > d->stack[2]) {
			/* A new stream: a request, known at this byte. */
			d->stack[2] = sid;
			d->msgs++;
			d->skip = len;
			d->st = H2_HDR;
			d->pos = 0;
			return EBEE_FEV_START;
		}
		break; /* trailers of an open stream */
	case H2_CONTINUATION:
		if (!block)
			return EBEE_FEV_ERR;
		if (fl & H2_END_HEADERS) {
			d->stack[3] = 0;
			if ((block & H2_BLOCK_END) && (sid & 1))
				ev = EBEE_FEV_END;
		}
		break;
	case H2_RST_STREAM:
		if (!sid || len != 4)
			return EBEE_FEV_ERR;
		if (sid & 1)
			ev = EBEE_FEV_ABORT;
		break;
	case H2_PRIORITY:
		if (!sid || len != 5)
			return EBEE_FEV_ERR;
		break;
	case H2_PUSH_PROMISE:
		if (!sid)
			return EBEE_FEV_ERR;
		if (!(fl & H2_END_HEADERS))
			d->stack[3] = sid;
		break;
	case H2_SETTINGS:
		if (sid || len % 6)
			return EBEE_FEV_ERR;
		break;
	case H2_PING:
		if (sid || len != 8)
			return EBEE_FEV_ERR;
		break;
	case H2_GOAWAY:
		if (sid || len < 8)
			return EBEE_FEV_ERR;
		break;
	case H2_WINDOW_UPDATE:
		if (len != 4)
			return EBEE_FEV_ERR;
		break;
	}
	/* Anything else (an extension frame) is passed over, as RFC 9113
	 * tells a receiver. The event, if any, is the frame's last byte's. */
	d->depth = ev;
	if (!len)
		return ebee_h2_frame_end(d);
	d->skip = len - 1;
	d->st = H2_LAST;
	return EBEE_FEV_NONE;
}

/* Whether the next byte begins a frame header: then ebee_h2_header9 may
 * take the header's 9 bytes at once. */
static __always_inline int ebee_h2_at_header(const struct ebee_fdir *d)
{
	return d->st == H2_HDR && d->pos == 0;
}

/* A whole frame header (p: its 9 bytes) in one call, exactly as its 9
 * steps, the event (if any) the last byte's: a frame costs one call, not
 * nine, where the caller has the bytes together (the kernel's walk, from
 * its buffer). */
static __always_inline int ebee_h2_header9(struct ebee_fdir *d, const __u8 *p, int resp)
{
	d->num = (__u32)p[0] << 16 | (__u32)p[1] << 8 | p[2];
	d->stack[0] = p[3];
	d->stack[1] = p[4];
	d->left = (__u32)(p[5] & 0x7f) << 24 | (__u32)p[6] << 16 | (__u32)p[7] << 8 | p[8];
	d->pos = H2_HDR_LEN;
	return ebee_h2_header(d, resp);
}

static __always_inline int ebee_h2_step(struct ebee_fdir *d, __u8 c, int resp)
{
	switch (d->st) {
	case H2_START:
		d->pos = 0;
		if (resp) {
			d->st = H2_HDR;
			break; /* the server's frames begin at once */
		}
		d->st = H2_PREFACE;
		/* fallthrough */
	case H2_PREFACE:
		if (c != ebee_h2_preface_char(d->pos))
			return EBEE_FEV_ERR;
		if (++d->pos == H2_PREFACE_LEN) {
			d->st = H2_HDR;
			d->pos = 0;
		}
		return EBEE_FEV_NONE;
	case H2_LAST:
		return ebee_h2_frame_end(d);
	}
	if (d->st != H2_HDR)
		return EBEE_FEV_ERR;
	switch (d->pos++) {
	case 0:
		d->num = c;
		return EBEE_FEV_NONE;
	case 1:
	case 2:
		d->num = d->num << 8 | c;
		return EBEE_FEV_NONE;
	case 3:
		d->stack[0] = c;
		return EBEE_FEV_NONE;
	case 4:
		d->stack[1] = c;
		return EBEE_FEV_NONE;
	case 5:
		d->left = c & 0x7f; /* the reserved bit is ignored */
		return EBEE_FEV_NONE;
	case 6:
	case 7:
		d->left = d->left << 8 | c;
		return EBEE_FEV_NONE;
	case 8:
		d->left = d->left << 8 | c;
		return ebee_h2_header(d, resp);
	}
	return EBEE_FEV_ERR;
}

/*
 * Streams in flight on one connection, matched by id. A stream's home slot
 * is (id >> 1) % EBEE_H2_SLOTS, so the consecutive odd ids a client uses
 * take distinct slots; a taken home slot moves it to the next free one. A
 * slot is free when its id is 0 (no stream has id 0); a lookup that misses
 * its home looks at every slot (no tombstones to keep).
 *
 * Ingress adds streams while egress ends them and the server's reads mark
 * them, on other CPUs at the same time: a slot is written by whoever owns it
 * (its adder until its id is set, then whoever takes it: ebee_h2_take), and
 * the counters change by atomic adds only. Two updates of one slot's
 * unread state racing can leave unread off by one: it only gates the read
 * marking's scan, so that costs a scan, never a stream.
 */
#define EBEE_H2_SLOTS 64

struct ebee_h2s {
	__u64 arr_ns; /* arrival of the segment holding its HEADERS' frame header */
	__u64 svc_ns; /* the server's read of it; 0 before */
	union {
		struct {
			__u32 id;  /* stream id; 0: a free slot */
			__u32 seq; /* sequence number of the frame header's last byte */
		};
		__u64 key; /* both: what ebee_h2_take swaps to 0 in one step */
	};
};

struct ebee_h2tab {
	struct ebee_h2s s[EBEE_H2_SLOTS];
	__u32 live;   /* slots in use */
	__u32 unread; /* ... of which svc_ns is 0 (a hint: see above) */
	/* Streams that did not fit (ingress adds), and how many of them the
	 * workload's counters have (egress, which knows the workload: the
	 * streams of a connection may all arrive before its server claims it). */
	__u32 untimed, untimed_noted;
};

/* The slot holding stream id, or -1. */
static __always_inline int ebee_h2_find(const struct ebee_h2tab *t, __u32 id)
{
	__u32 home = id >> 1;

	if (!id)
		return -1;
	for (__u32 i = 0; i < EBEE_H2_SLOTS; i++) {
		__u32 j = (home + i) & (EBEE_H2_SLOTS - 1);

		if (t->s[j].id == id)
			return (int)j;
	}
	return -1;
}

/* Stream id begins (its HEADERS arrived at arr_ns, seq its byte): its slot,
 * or -1 when EBEE_H2_SLOTS streams are in flight already. */
static __always_inline int ebee_h2_add(struct ebee_h2tab *t, __u32 id, __u64 arr_ns, __u32 seq)
{
	__u32 home = id >> 1;

	if (!id || t->live >= EBEE_H2_SLOTS)
		return -1;
	for (__u32 i = 0; i < EBEE_H2_SLOTS; i++) {
		__u32 j = (home + i) & (EBEE_H2_SLOTS - 1);
		struct ebee_h2s *s = &t->s[j];

		if (s->id)
			continue;
		s->arr_ns = arr_ns;
		s->svc_ns = 0;
		s->seq = seq;
		/* The slot's fields before the id that publishes it (a
		 * compiler barrier: as frame_skb.bpf.h's queue, enough on x86). */
		asm volatile("" ::: "memory");
		s->id = id;
		__sync_fetch_and_add(&t->live, 1);
		__sync_fetch_and_add(&t->unread, 1);
		return (int)j;
	}
	return -1;
}

/*
 * Stream id, found in slot j by ebee_h2_find, ended: 1 for the caller that
 * frees its slot, 0 for any other. Both sides can end one stream at the same
 * moment, on two CPUs: a client's RST_STREAM on ingress (a gRPC deadline
 * past) as the server's END_STREAM leaves on egress (the server's own
 * DEADLINE_EXCEEDED trailers, its timer run out too). Both found the slot;
 * only the one whose swap of the slot's key (id and seq) to 0 succeeds
 * counts the stream, so a stream is one request whoever ends it. A caller
 * reads the slot's times before: once the slot is taken, ingress may give
 * it to a new stream. Stream ids are never reused, so a key still holding
 * id at the swap held it since the find, and the times read were its own.
 */
static __always_inline int ebee_h2_take(struct ebee_h2tab *t, __u32 j, __u32 id)
{
	struct ebee_h2s *s = &t->s[j & (EBEE_H2_SLOTS - 1)];
	__u64 svc = s->svc_ns, key = s->key;

	if (!id || (__u32)key != id || __sync_val_compare_and_swap(&s->key, key, 0) != key)
		return 0;
	if (!svc)
		__sync_fetch_and_add(&t->unread, -1);
	__sync_fetch_and_add(&t->live, -1);
	return 1;
}

/* The server's reads reached copied (tcp_sock.copied_seq) at now: the
 * streams whose frame header they passed start their service time. */
static __always_inline void ebee_h2_mark_read(struct ebee_h2tab *t, __u32 copied, __u64 now)
{
	if (!t->unread)
		return;
	for (__u32 j = 0; j < EBEE_H2_SLOTS; j++) {
		struct ebee_h2s *s = &t->s[j];

		if (!s->id || s->svc_ns || (__s32)(s->seq - copied) >= 0)
			continue;
		s->svc_ns = now;
		__sync_fetch_and_add(&t->unread, -1);
	}
}

/* The list's interface (frame.h): the client preface ("PRI * HTTP/2.0");
 * one byte cannot tell a frame header from payload, so may_start says no: a
 * direction that lost sync, as a connection whose start went unseen, is
 * found again by a whole header, confirmed by the next (ebee_h2_header_ok,
 * frame_h2_mid in frame/mid.bpf.h; frame_h2_resync in frame_skb.bpf.h). */
static __always_inline int ebee_http2_detect(const __u8 *b, __u32 n)
{
	return n >= 4 && ebee_frame_word(b) == 0x50524920; /* "PRI " */
}

static __always_inline int ebee_http2_may_start(int resp, __u8 c)
{
	(void)resp;
	(void)c;
	return 0;
}

static __always_inline int ebee_http2_frame_step(struct ebee_fdir *d, __u8 c, int resp,
						 __u32 *head_bits)
{
	(void)head_bits;
	return ebee_h2_step(d, c, resp);
}

#endif /* EBEE_FRAME_HTTP2_H */
