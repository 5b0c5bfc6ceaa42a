// SPDX-License-Identifier: MIT
#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "source.h"

int src_read(struct src *s, uint64_t now_ms, struct src_sample *out)
{
	int err;

	out->state = POL_LAT_STALE;
	out->p99_ns = NAN;
	out->rps = NAN;
	out->p99_service_ns = out->p99_sojourn_ns = NAN;
	out->why[0] = '\0';
	err = s->ops->read(s, now_ms, out);
	if (err && !out->why[0])
		snprintf(out->why, sizeof(out->why), "%s: read failed (%d)", s->ops->name, err);
	if (err)
		out->state = POL_LAT_STALE;
	return err;
}

void src_close(struct src *s)
{
	if (s)
		s->ops->close(s);
}
