// SPDX-License-Identifier: MIT
/* The framer registry, made from the list (EBEE_FRAMERS, bpf/frame/frame.h),
 * and the byte driver (framer.h). */
#include <errno.h>
#include "framer.h"

static const struct ebee_framer_ops *const framers[EBEE_FR_MAX] = {
#define EBEE_FRAMER_OPS_(ID, stem, name, kind) [EBEE_FR_##ID] = &ebee_framer_##stem,
	EBEE_FRAMERS(EBEE_FRAMER_OPS_)
#undef EBEE_FRAMER_OPS_
};

static const char *const names[EBEE_FR_MAX] = {
#define EBEE_FRAMER_NAME_(ID, stem, name, kind) [EBEE_FR_##ID] = name,
	EBEE_FRAMERS(EBEE_FRAMER_NAME_)
#undef EBEE_FRAMER_NAME_
};

const struct ebee_framer_ops *ebee_framer_get(int id)
{
	return id >= 0 && id < EBEE_FR_MAX ? framers[id] : NULL;
}

const char *ebee_framer_name(int id)
{
	return id >= 0 && id < EBEE_FR_MAX && names[id] ? names[id] : "";
}

const char *ebee_framer_warning(int id)
{
	const struct ebee_framer_ops *o = ebee_framer_get(id);

	return o ? o->warning : NULL;
}

int ebee_framer_check(int id, const struct ebee_fstat *f, char *buf, size_t len)
{
	const struct ebee_framer_ops *o = ebee_framer_get(id);

	if (len)
		buf[0] = 0;
	return o && o->check ? o->check(f, buf, len) : 0;
}

int ebee_framer_feed(const struct ebee_framer_ops *ops, struct ebee_fdir *d, const uint8_t *b,
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
