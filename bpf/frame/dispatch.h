/* SPDX-License-Identifier: MIT */
/*
 * Every framer's parser, and what goes to it by id: detection of a client's
 * first bytes, resynchronisation, the step, the framed and verifiable sets,
 * all made from the one list (EBEE_FRAME_LIST, frame.h). Shared by the kernel
 * (bpf/frame/frame_skb.bpf.h) and user space (metrics/src/frame/), like
 * the parsers. Every function is __always_inline and compiles to the chain
 * of compares on the id it was written as by hand.
 */
#ifndef EBEE_FRAME_DISPATCH_H
#define EBEE_FRAME_DISPATCH_H

#include "frame.h"

/*
 * The parsers' headers, bpf/frame/<stem>.h, included by their place in the
 * list: a framer adds no #include. The preprocessor cannot loop, so there is
 * one slot per place, up to EBEE_FRAME_SLOTS; a framer recognised only has no
 * header and its slot includes frame.h again (guarded, nothing).
 */
/* clang-format off */
#define EBEE_FRAME_SLOTS 16
#define EBEE_FRAME_ONE_(ID, stem, name, kind) +1
#define EBEE_FRAME_COUNT (0 EBEE_FRAME_LIST(EBEE_FRAME_ONE_))
#if EBEE_FRAME_COUNT > EBEE_FRAME_SLOTS
#error "more framers than include slots: add slots below"
#endif
#define EBEE_FRAME_HDR_ONLY(stem) frame.h
#define EBEE_FRAME_HDR_PARSE(stem) stem.h
#define EBEE_FRAME_HDR_VERIFY(stem) stem.h
#define EBEE_FRAME_HDR_(ID, stem, name, kind) EBEE_FRAME_HDR_##kind(stem),
/* The k-th of the list's headers (EBEE_FRAME_P<k>: the k-th argument). */
#define EBEE_FRAME_STR_(x) #x
#define EBEE_FRAME_STR(x) EBEE_FRAME_STR_(x)
#define EBEE_FRAME_PICK_(k, ...) EBEE_FRAME_P##k(__VA_ARGS__)
#define EBEE_FRAME_HDR(k) EBEE_FRAME_STR(EBEE_FRAME_PICK_(k, EBEE_FRAME_LIST(EBEE_FRAME_HDR_)))
#define EBEE_FRAME_P0(a0, ...) a0
#define EBEE_FRAME_P1(a0, a1, ...) a1
#define EBEE_FRAME_P2(a0, a1, a2, ...) a2
#define EBEE_FRAME_P3(a0, a1, a2, a3, ...) a3
#define EBEE_FRAME_P4(a0, a1, a2, a3, a4, ...) a4
#define EBEE_FRAME_P5(a0, a1, a2, a3, a4, a5, ...) a5
#define EBEE_FRAME_P6(a0, a1, a2, a3, a4, a5, a6, ...) a6
#define EBEE_FRAME_P7(a0, a1, a2, a3, a4, a5, a6, a7, ...) a7
#define EBEE_FRAME_P8(a0, a1, a2, a3, a4, a5, a6, a7, a8, ...) a8
#define EBEE_FRAME_P9(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, ...) a9
#define EBEE_FRAME_P10(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, ...) a10
#define EBEE_FRAME_P11(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, ...) a11
#define EBEE_FRAME_P12(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, ...) a12
#define EBEE_FRAME_P13(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, ...) a13
#define EBEE_FRAME_P14(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, ...) a14
#define EBEE_FRAME_P15(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, ...) a15
/* clang-format on */

#if EBEE_FRAME_COUNT > 0
#include EBEE_FRAME_HDR(0)
#endif
#if EBEE_FRAME_COUNT > 1
#include EBEE_FRAME_HDR(1)
#endif
#if EBEE_FRAME_COUNT > 2
#include EBEE_FRAME_HDR(2)
#endif
#if EBEE_FRAME_COUNT > 3
#include EBEE_FRAME_HDR(3)
#endif
#if EBEE_FRAME_COUNT > 4
#include EBEE_FRAME_HDR(4)
#endif
#if EBEE_FRAME_COUNT > 5
#include EBEE_FRAME_HDR(5)
#endif
#if EBEE_FRAME_COUNT > 6
#include EBEE_FRAME_HDR(6)
#endif
#if EBEE_FRAME_COUNT > 7
#include EBEE_FRAME_HDR(7)
#endif
#if EBEE_FRAME_COUNT > 8
#include EBEE_FRAME_HDR(8)
#endif
#if EBEE_FRAME_COUNT > 9
#include EBEE_FRAME_HDR(9)
#endif
#if EBEE_FRAME_COUNT > 10
#include EBEE_FRAME_HDR(10)
#endif
#if EBEE_FRAME_COUNT > 11
#include EBEE_FRAME_HDR(11)
#endif
#if EBEE_FRAME_COUNT > 12
#include EBEE_FRAME_HDR(12)
#endif
#if EBEE_FRAME_COUNT > 13
#include EBEE_FRAME_HDR(13)
#endif
#if EBEE_FRAME_COUNT > 14
#include EBEE_FRAME_HDR(14)
#endif
#if EBEE_FRAME_COUNT > 15
#include EBEE_FRAME_HDR(15)
#endif

/* Which framer a client's first bytes call for (b: up to n bytes, n >= 1):
 * the first whose detect says so, by length when none does. */
static __always_inline int ebee_frame_detect(const __u8 *b, __u32 n)
{
#define EBEE_FRAME_DETECT_(ID, stem, name, kind) \
	EBEE_FRAME_IF_PARSED_##kind(if (ebee_##stem##_detect(b, n)) return EBEE_FRAME_##ID;)
	EBEE_FRAME_LIST(EBEE_FRAME_DETECT_)
#undef EBEE_FRAME_DETECT_
	return EBEE_FRAME_LENGTH;
}

/* Whether a segment starting with byte c may start a message of framer fr,
 * client (resp 0) or server (resp 1) side: where a lost direction tries to
 * resynchronise. */
static __always_inline int ebee_frame_may_start(int fr, int resp, __u8 c)
{
#define EBEE_FRAME_MAY_START_(ID, stem, name, kind) \
	EBEE_FRAME_IF_PARSED_##kind(                \
	    if (fr == EBEE_FRAME_##ID) return ebee_##stem##_may_start(resp, c);)
	EBEE_FRAME_LIST(EBEE_FRAME_MAY_START_)
#undef EBEE_FRAME_MAY_START_
	return 0;
}

/* One byte c of one direction (resp: server -> client) through framer fr's
 * step: EBEE_FEV_*, EBEE_FEV_ERR for a framer without one. */
static __always_inline int ebee_frame_step(struct ebee_fdir *d, __u8 c, int fr, int resp,
					   __u32 *head_bits)
{
#define EBEE_FRAME_STEP_(ID, stem, name, kind) \
	EBEE_FRAME_IF_PARSED_##kind(           \
	    if (fr == EBEE_FRAME_##ID) return ebee_##stem##_frame_step(d, c, resp, head_bits);)
	EBEE_FRAME_LIST(EBEE_FRAME_STEP_)
#undef EBEE_FRAME_STEP_
	return EBEE_FEV_ERR;
}

/* Framer fr's kind, EBEE_FRAME_KIND_* (0: recognised only, or no framer). */
static __always_inline int ebee_frame_kind(int fr)
{
#define EBEE_FRAME_KIND_(ID, stem, name, kind) \
	| (fr == EBEE_FRAME_##ID ? EBEE_FRAME_FLAGS_##kind : 0)
	return 0 EBEE_FRAME_LIST(EBEE_FRAME_KIND_);
#undef EBEE_FRAME_KIND_
}

/* Whether framer fr parses the bytes (its step), not only recognises them. */
static __always_inline int ebee_frame_framed(int fr)
{
	return (ebee_frame_kind(fr) & EBEE_FRAME_KIND_PARSE) != 0;
}

/* Whether framer fr's requests may be counted by length once verified to
 * arrive one at a time (EBEE_FV_*). */
static __always_inline int ebee_frame_verifiable(int fr)
{
	return (ebee_frame_kind(fr) & EBEE_FRAME_KIND_VERIFY) != 0;
}

#endif /* EBEE_FRAME_DISPATCH_H */
