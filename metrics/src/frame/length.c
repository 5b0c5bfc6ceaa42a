// SPDX-License-Identifier: MIT
/*
 * No framer: the io pattern's read and write bursts (bpf/ebee.bpf.c). Exact
 * for one request at a time per connection. Lengths cannot tell a batch of
 * requests read at once from one request; what the socket path does see, a
 * client sending while a response is being written, is counted per
 * workload (ebee_fstat.overlap) and warned of whatever the framing
 * (metrics/src/trust.c, stats_overlap), so this table has no check of its own.
 */
#include "frame_ops.h"

const struct ebee_frame_ops ebee_frame_length = {
	.step = NULL, /* recognised only (kind ONLY) */
};
