// SPDX-License-Identifier: MIT
/* The framer registry, made from the list (EBEE_FRAME_LIST, bpf/frame/frame.h),
 * and the byte driver (frame_ops.h). */
#include <errno.h>
#include "ebee.h"
#include "frame_ops.h"

static const struct ebee_frame_ops *const framers[EBEE_FRAME_MAX] = {
#define EBEE_FRAME_OPS_(ID, stem, name, kind) [EBEE_FRAME_##ID] = &ebee_frame_##stem,
	EBEE_FRAME_LIST(EBEE_FRAME_OPS_)
#undef EBEE_FRAME_OPS_
};

static const char *const names[EBEE_FRAME_MAX] = {
#define EBEE_FRAME_NAME_(ID, stem, name, kind) [EBEE_FRAME_##ID] = name,
	EBEE_FRAME_LIST(EBEE_FRAME_NAME_)
#undef EBEE_FRAME_NAME_
};

const struct ebee_frame_ops *ebee_frame_get(int id)
{
	return id >= 0 && id < EBEE_FRAME_MAX ? framers[id] : NULL;
}

const char *ebee_frame_name(int id)
{
	return id >= 0 && id < EBEE_FRAME_MAX && names[id] ? names[id] : "";
}

int ebee_frame_feed(const struct ebee_frame_ops *ops, struct ebee_fdir *d, const uint8_t *b,
		    size_t n, int resp, uint32_t *head_bits, struct ebee_frame_counts *out)
{
	size_t pos = 0;
	int ev;

	if (!ops || !ops->step)
		return -EINVAL;
	while (pos < n && !out->err) {
		if (d->skip) {
			size_t k = n - pos < d->skip ? n - pos : d->skip;

			d->skip -= k;
			pos += k;
			continue;
		}
		ev = ops->step(d, b[pos], resp, head_bits);
		switch (ev) {
		case EBEE_FEV_START:
			out->starts++;
			break;
		case EBEE_FEV_END:
			out->ends++;
			break;
		case EBEE_FEV_ABORT:
			out->aborts++;
			break;
		case EBEE_FEV_UNANSWERED:
			out->unanswered++;
			break;
		case EBEE_FEV_ERR:
			out->err = true;
			break;
		}
		if (out->on_event &&
		    (ev == EBEE_FEV_START || ev == EBEE_FEV_END || ev == EBEE_FEV_ABORT))
			out->on_event(out->arg, ev, ops->event_id ? ops->event_id(d) : 0, pos);
		pos++;
	}
	return 0;
}

/* The list's names, then the patterns that set framing themselves (trust.c:
 * "grpc", "dgram"), as one literal made at compile time. */
const char *ebee_framing_list(void)
{
	return
#define EBEE_FRAME_LISTED_(ID, stem, name, kind) name ", "
	    EBEE_FRAME_LIST(EBEE_FRAME_LISTED_)
#undef EBEE_FRAME_LISTED_
		"grpc, dgram";
}
