/* SPDX-License-Identifier: MIT */
/*
 * TLS: the record layer. Every record is a 5-byte header (content type,
 * version 0x03xx, 16-bit length) and a payload that is skipped unread, so the
 * cost is per header byte. Application data is encrypted: what a request is
 * cannot be read, only when each side writes. So, as the length pattern does
 * with read and write bursts, but on records and after the handshake:
 *
 *   a request is the client's application-data records from the first one
 *   after the server's reply (or after the handshake) on; its response is
 *   the server's application-data records until the client sends a record
 *   again (any record: its next request, an alert such as close_notify, a
 *   renegotiation) or a side closes (frame_skb.bpf.h ends it at the FIN).
 *
 * Exact for a client with one request at a time on its connection (HTTP/1.1
 * keep-alive without pipelining, most RPC over TLS); wrong where requests
 * overlap on one connection, which the records do not show. What is seen of
 * that is reported (struct ebee_fstat, metrics/src/frame/tls.c):
 *   - multiplexing possible: the ClientHello's ALPN offers h2, and the server's
 *     choice cannot be read (TLS 1.3 sends it encrypted; TLS 1.2's ServerHello
 *     has it in the clear and is believed), or the ClientHello could not be
 *     read (split across records, malformed: nothing excludes h2);
 *   - the client wrote again before any reply: a client application-data
 *     record after a client record shorter than a full one (16 KiB of
 *     plaintext; a full one is continued by the next), with no server record
 *     between: pipelining, or a request written in several writes (both are
 *     one request here).
 * Requests pipelined inside one record are not seen at all. An exchange
 * where the server answers before the client has sent all of its request
 * (HTTP's Expect: 100-continue: headers, "100 Continue", body, response)
 * counts as two requests, silently.
 *
 * The handshake is no request. TLS 1.2 and earlier send it in handshake and
 * change_cipher_spec records only: every application-data record is data
 * (renegotiation: handshake records, ignored). TLS 1.3 (ServerHello's
 * supported_versions says 0x0304; it is in the clear) encrypts the rest of
 * the handshake as application-data records:
 *   - the server's flight after its ServerHello (EncryptedExtensions ..
 *     Finished) and what it sends before the client's first request
 *     (NewSessionTicket): server records while no request is open are no
 *     response (a server's greeting, IMAPS-style, is not either). Known
 *     wrong: tickets that leave after the first request began are taken for
 *     its response, so a first request of several records (a POST's body
 *     after its headers) whose next record follows them counts twice
 *     (test_ebee_frame_tls.sh saw 41-42 of 40 POSTs in TLS 1.3);
 *   - the client's flight (Finished, after its Certificate and
 *     CertificateVerify when the server asked for them): its application-data
 *     records up to the first of a Finished's length (45, 53 or 69 bytes:
 *     a 32- or 48-byte MAC, a 16- or 8-byte tag, the inner type; TLS 1.3
 *     records are not padded by the implementations seen here), at most 3.
 *     Known wrong: a padded Finished, or a client certificate flight written
 *     as fewer records without a Finished-sized one, takes requests for the
 *     handshake; 0-RTT early data (off by default in OpenSSL and nginx) and
 *     client KeyUpdates count as handshake and as requests respectively.
 *   - alerts (close_notify) are application-data records too: one of 19
 *     bytes (2 of plaintext) is taken for one, on both sides, so a 2-byte
 *     request or response is not seen as one.
 *
 * State: each direction's struct ebee_fdir, and one word both read (bits,
 * struct ebee_sframe.head_bits), each byte written by one side only (byte 0
 * the client's parser, bytes 1-3 the server's), so that the two directions,
 * which may run on two CPUs at once, never lose each other's stores.
 * See frame.h for the step contract; the step's events here:
 *   client side: EBEE_FEV_END at a record's 4th byte when it ends the
 *   response in progress, EBEE_FEV_START at its 5th when it begins a request;
 *   server side: EBEE_FEV_END at the last byte of each response record: the
 *   response may end there, it is known to have ended only at the client's
 *   next record (frame_skb.bpf.h keeps where and when the last one ended).
 */
#ifndef EBEE_FRAME_TLS_H
#define EBEE_FRAME_TLS_H

#include "frame.h"

/* Byte 0 of bits: written by the client side. */
#define EBEE_TLS_C_OPEN	 0x01 /* a request is open: server records answer it */
#define EBEE_TLS_C_APP	 0x02 /* the client's handshake is over */
#define EBEE_TLS_C_MUX	 0x04 /* the ClientHello offered h2 or could not be read */
#define EBEE_TLS_C_H2	 0x08 /* the ClientHello offered h2 */
#define EBEE_TLS_C_HELLO 0x10 /* the client's first handshake record begun */
#define EBEE_TLS_C_SHORT 0x20 /* the client's last record was not a full one */
#define EBEE_TLS_C_AGAIN 0x40 /* the client wrote again before any reply */
/* Byte 1: written by the server side. */
#define EBEE_TLS_S_HELLO 0x01 /* the server's first handshake record begun */
#define EBEE_TLS_S_13	 0x02 /* ServerHello: TLS 1.3 */
#define EBEE_TLS_S_ALPN	 0x04 /* ServerHello (TLS 1.2) names its ALPN choice ... */
#define EBEE_TLS_S_H2	 0x08 /* ... and it is h2 */
/* Bytes 2-3: response records the server sent (free-running). */

#define EBEE_TLS_MAX_REC  (16384 + 2048) /* TLSCiphertext.length's limit */
#define EBEE_TLS_FULL_REC 16400		 /* 16 KiB of plaintext and the least overhead */
/* TLS 1.3 encrypts alerts as application data: 2 bytes, the inner type and
 * a 16-byte tag (every suite but CCM_8). */
#define EBEE_TLS13_ALERT 19

enum {
	T_TYPE, /* record header: content type */
	T_V1,
	T_V2,
	T_L1,
	T_L2,
	T_LAST, /* the last byte of a response record */
	/* ClientHello / ServerHello, in the first handshake record of a side */
	T_HTYPE,
	T_SIDLEN,
	T_CSL1,
	T_CSL2,
	T_COMPLEN,
	T_EXTL1,
	T_EXTL2,
	T_ET1,
	T_ET2,
	T_EL1,
	T_EL2,
	T_AL1, /* ALPN: the list's length */
	T_AL2,
	T_AN_LEN, /* ALPN: a protocol name's length */
	T_AN_H,
	T_AN_2,
	T_SV1, /* ServerHello supported_versions: the selected version */
	T_SV2,
};

static __always_inline __u8 *ebee_tls_b(__u32 *bits, int resp)
{
	return (__u8 *)bits + (resp ? 1 : 0);
}

static __always_inline __u16 ebee_tls_nresp(const __u32 *bits)
{
	return ((const __u16 *)bits)[1];
}

/* Whether the connection may carry overlapping requests, as far as its
 * hellos tell: read once the client's first request began. */
static __always_inline int ebee_tls_mux(const __u32 *bits)
{
	__u8 c = ((const __u8 *)bits)[0], s = ((const __u8 *)bits)[1];

	if (s & EBEE_TLS_S_ALPN)
		return !!(s & EBEE_TLS_S_H2);
	return !!(c & EBEE_TLS_C_MUX);
}

/* The hello parsed to its end: what it did not offer is known. */
static __always_inline int ebee_tls_hello_done(struct ebee_fdir *d, int resp, __u32 *bits)
{
	__u8 *b = ebee_tls_b(bits, 0);

	if (!resp && !(*b & EBEE_TLS_C_H2))
		*b &= ~EBEE_TLS_C_MUX;
	d->skip = d->left;
	d->left = 0;
	d->st = T_TYPE;
	return EBEE_FEV_NONE;
}

/* Pass over n bytes of the record, then parse at state next; past the
 * record's end: the hello is given up (what it would have said stays
 * unknown), the rest of the record skipped. */
static __always_inline int ebee_tls_skip(struct ebee_fdir *d, __u32 n, __u8 next)
{
	if (n >= d->left) {
		d->skip = d->left;
		d->left = 0;
		d->st = T_TYPE;
		return EBEE_FEV_NONE;
	}
	d->skip = n;
	d->left -= n;
	d->st = next;
	return EBEE_FEV_NONE;
}

/* An extension ends after n more bytes: the next one, or the hello's end. */
static __always_inline int ebee_tls_ext_end(struct ebee_fdir *d, __u32 n, int resp, __u32 *bits)
{
	if (!d->stack[0])
		return ebee_tls_hello_done(d, resp, bits);
	return ebee_tls_skip(d, n, T_ET1);
}

/* A byte of a hello (the first handshake record of a side; d->left counts
 * the record's bytes after this one). One case per field of the hello, in
 * their order: longer than a screen as a whole, read one case at a time. */
static __always_inline int ebee_tls_hello_step(struct ebee_fdir *d, __u8 c, int resp, __u32 *bits)
{
	__u32 n;

	switch (d->st) {
	case T_HTYPE: /* ClientHello 1, ServerHello 2 (HelloRetryRequest too) */
		if (c != (resp ? 2 : 1))
			return ebee_tls_skip(d, d->left, T_TYPE);
		return ebee_tls_skip(d, 3 + 2 + 32, T_SIDLEN); /* length, version, random */
	case T_SIDLEN:
		if (!resp)
			return ebee_tls_skip(d, c, T_CSL1);
		n = c + 2 + 1; /* session id, cipher suite, compression */
		if (n == d->left)
			return ebee_tls_hello_done(d, resp, bits); /* no extensions */
		return ebee_tls_skip(d, n, T_EXTL1);
	case T_CSL1:
		d->num = (__u32)c << 8;
		d->st = T_CSL2;
		return EBEE_FEV_NONE;
	case T_CSL2:
		return ebee_tls_skip(d, d->num | c, T_COMPLEN);
	case T_COMPLEN:
		if (c == d->left)
			return ebee_tls_hello_done(d, resp, bits); /* no extensions */
		return ebee_tls_skip(d, c, T_EXTL1);
	case T_EXTL1:
	case T_ET1:
	case T_EL1:
	case T_AL1:
	case T_SV1:
		d->num = (__u32)c << 8;
		d->st++;
		return EBEE_FEV_NONE;
	case T_EXTL2:
		d->stack[0] = d->num | c;
		if (!d->stack[0])
			return ebee_tls_hello_done(d, resp, bits);
		d->st = T_ET1;
		return EBEE_FEV_NONE;
	case T_ET2:
		d->stack[1] = d->num | c;
		d->st = T_EL1;
		return EBEE_FEV_NONE;
	case T_EL2:
		n = d->num | c;
		if (d->stack[0] < 4 + n)
			return ebee_tls_skip(d, d->left, T_TYPE); /* malformed */
		d->stack[0] -= 4 + n;
		d->stack[2] = n;
		if (d->stack[1] == 16 && n > 2) { /* application_layer_protocol_negotiation */
			d->st = T_AL1;
			return EBEE_FEV_NONE;
		}
		if (resp && d->stack[1] == 43 && n == 2) { /* supported_versions */
			d->st = T_SV1;
			return EBEE_FEV_NONE;
		}
		return ebee_tls_ext_end(d, n, resp, bits);
	case T_AL2: /* the list's length: the extension's says the same */
		d->stack[2] -= 2;
		d->st = T_AN_LEN;
		return EBEE_FEV_NONE;
	case T_AN_LEN:
		d->stack[2]--;
		if (c > d->stack[2])
			return ebee_tls_skip(d, d->left, T_TYPE); /* malformed */
		d->stack[2] -= c;
		if (resp)
			*ebee_tls_b(bits, 1) |= EBEE_TLS_S_ALPN;
		if (c == 2) {
			d->st = T_AN_H;
			return EBEE_FEV_NONE;
		}
		if (d->stack[2])
			return ebee_tls_skip(d, c, T_AN_LEN);
		return ebee_tls_ext_end(d, c, resp, bits);
	case T_AN_H:
		d->num = c == 'h';
		d->st = T_AN_2;
		return EBEE_FEV_NONE;
	case T_AN_2:
		if (d->num && c == '2')
			*ebee_tls_b(bits, resp) |= resp ? EBEE_TLS_S_H2 : EBEE_TLS_C_H2;
		if (d->stack[2]) {
			d->st = T_AN_LEN;
			return EBEE_FEV_NONE;
		}
		return ebee_tls_ext_end(d, 0, resp, bits);
	case T_SV2:
		if ((d->num | c) == 0x0304)
			*ebee_tls_b(bits, 1) |= EBEE_TLS_S_13;
		return ebee_tls_ext_end(d, 0, resp, bits);
	}
	return ebee_tls_skip(d, d->left, T_TYPE);
}

/* A client record's header is complete (type d->depth, length len): is it
 * a request's first record? */
static __always_inline int ebee_tls_client_rec(struct ebee_fdir *d, __u32 len, __u32 *bits)
{
	__u8 *b = ebee_tls_b(bits, 0);
	__u8 s = *ebee_tls_b(bits, 1);
	int short_rec = len < EBEE_TLS_FULL_REC;

	if (d->depth != 23)
		return EBEE_FEV_NONE;
	if (!(*b & EBEE_TLS_C_APP)) {
		if (!(s & EBEE_TLS_S_HELLO))
			return EBEE_FEV_NONE; /* before the ServerHello: 0-RTT data */
		if (s & EBEE_TLS_S_13) {
			/* TLS 1.3: the client's handshake flight */
			d->msgs++;
			if (len == 45 || len == 53 || len == 69 || d->msgs >= 3)
				*b |= EBEE_TLS_C_APP;
			return EBEE_FEV_NONE;
		}
		*b |= EBEE_TLS_C_APP;
	}
	if ((s & EBEE_TLS_S_13) && len == EBEE_TLS13_ALERT)
		return EBEE_FEV_NONE; /* an alert (close_notify): no request */
	if (!(*b & EBEE_TLS_C_OPEN)) {
		*b = (*b | EBEE_TLS_C_OPEN) & ~EBEE_TLS_C_SHORT;
		if (short_rec)
			*b |= EBEE_TLS_C_SHORT;
		d->stack[3] = ebee_tls_nresp(bits);
		return EBEE_FEV_START;
	}
	/* No reply since this request began: the same request, continued
	 * after a full record, or another one. */
	if (*b & EBEE_TLS_C_SHORT)
		*b |= EBEE_TLS_C_AGAIN;
	*b &= ~EBEE_TLS_C_SHORT;
	if (short_rec)
		*b |= EBEE_TLS_C_SHORT;
	return EBEE_FEV_NONE;
}

/* One byte of one direction (resp: server -> client). One case per state
 * of a record header, then the record's body: longer than a screen as a
 * whole, read one case at a time. */
static __always_inline int ebee_tls_step(struct ebee_fdir *d, __u8 c, int resp, __u32 *bits)
{
	__u8 *b = ebee_tls_b(bits, resp);
	__u32 len;
	int ev;

	switch (d->st) {
	case T_TYPE: /* change_cipher_spec 20, alert 21, handshake 22, data 23, heartbeat 24 */
		if (c < 20 || c > 24)
			return EBEE_FEV_ERR;
		d->depth = c;
		d->st = T_V1;
		return EBEE_FEV_NONE;
	case T_V1:
		if (c != 3)
			return EBEE_FEV_ERR;
		d->st = T_V2;
		return EBEE_FEV_NONE;
	case T_V2:
		if (c > 4)
			return EBEE_FEV_ERR;
		d->st = T_L1;
		return EBEE_FEV_NONE;
	case T_L1:
		d->num = (__u32)c << 8;
		d->st = T_L2;
		/* Any client record after the server's reply ends the response. */
		if (!resp && (*b & EBEE_TLS_C_OPEN) && (__u16)d->stack[3] != ebee_tls_nresp(bits)) {
			*b &= ~EBEE_TLS_C_OPEN;
			d->stack[3] = ebee_tls_nresp(bits);
			return EBEE_FEV_END;
		}
		return EBEE_FEV_NONE;
	case T_L2:
		len = d->num | c;
		if (len > EBEE_TLS_MAX_REC)
			return EBEE_FEV_ERR;
		ev = resp ? EBEE_FEV_NONE : ebee_tls_client_rec(d, len, bits);
		d->st = T_TYPE;
		if (d->depth == 22 && !(*b & (resp ? EBEE_TLS_S_HELLO : EBEE_TLS_C_HELLO))) {
			/* A side's first handshake record: its hello. The client's
			 * may offer h2 until read to its end. */
			*b |= resp ? EBEE_TLS_S_HELLO : EBEE_TLS_C_HELLO | EBEE_TLS_C_MUX;
			if (len) {
				d->left = len;
				d->st = T_HTYPE;
			}
			return ev;
		}
		if (resp && d->depth == 23 && (*ebee_tls_b(bits, 0) & EBEE_TLS_C_OPEN) &&
		    !((*b & EBEE_TLS_S_13) && len == EBEE_TLS13_ALERT)) {
			/* A response record: the response may end at its last byte. */
			if (!len) {
				((__u16 *)bits)[1]++;
				return EBEE_FEV_END;
			}
			d->skip = len - 1;
			d->st = T_LAST;
			return EBEE_FEV_NONE;
		}
		d->skip = len;
		return ev;
	case T_LAST:
		d->st = T_TYPE;
		((__u16 *)bits)[1]++;
		return EBEE_FEV_END;
	}
	/* A byte of a hello. */
	if (!d->left)
		return EBEE_FEV_ERR; /* not reached: the record's end leaves T_TYPE */
	d->left--;
	ev = ebee_tls_hello_step(d, c, resp, bits);
	if (!d->left && d->st != T_TYPE && !d->skip)
		d->st = T_TYPE; /* the record ended inside the hello: the rest unknown */
	return ev;
}

/* The list's interface (frame.h): a handshake record, SSL 3.0 .. TLS 1.3;
 * a record starts with its content type (20 .. 24). */
static __always_inline int ebee_tls_detect(const __u8 *b, __u32 n)
{
	return n >= 3 && b[0] == 0x16 && b[1] == 0x03 && b[2] <= 0x04;
}

static __always_inline int ebee_tls_may_start(int resp, __u8 c)
{
	(void)resp;
	return c >= 20 && c <= 24;
}

static __always_inline int ebee_tls_frame_step(struct ebee_fdir *d, __u8 c, int resp,
					       __u32 *head_bits)
{
	return ebee_tls_step(d, c, resp, head_bits);
}

#endif /* EBEE_FRAME_TLS_H */
