// SPDX-License-Identifier: MIT
/* The JSONL record of one interval (logrec.h). */
#include <math.h>
#include <stdio.h>

#include "log.h"
#include "logrec.h"
#include "res/res.h"

static const char *state_str(enum pol_lat_state s)
{
	return s == POL_LAT_FRESH ? "fresh" : s == POL_LAT_IDLE ? "idle" : "stale";
}

/* One workload's record: its sources' latencies, rate, CPU, slack, every
 * resource's field, and the policy's action. */
static void log_wl(struct log_json *j, const struct loop *l, int i)
{
	const struct loop_wl *w = &l->wl[i];
	const struct pol_wl_obs *o = &l->obs.wl[i];
	const struct src_sample *se, *sc;

	src_by_kind(w->src, &w->last, w->aux, &w->last_aux, &se, &sc);
	log_json_obj(j, NULL);
	log_json_str(j, "name", w->name);
	log_json_int(j, "pid", w->pid);
	log_json_bool(j, "alive", w->alive);
	log_json_str(j, "source", w->src ? w->src->ops->name : NULL);
	log_json_str(j, "state", state_str(o->state));
	if (w->alive && o->state != POL_LAT_FRESH)
		log_json_str(j, "stale_why", w->last.why);
	/* the log speaks us (and MHz), as it always has */
	log_json_num(j, "target_us", w->target_ns / 1e3, 0);
	log_json_num(j, "p99_ebee_us", se && se->state == POL_LAT_FRESH ? se->p99_ns / 1e3 : NAN,
		     1);
	if (l->cfg->wl[i].feed[0] || sc)
		log_json_num(j, "p99_client_us",
			     sc && sc->state == POL_LAT_FRESH ? sc->p99_ns / 1e3 : NAN, 1);
	if (!isnan(o->p99_service_ns) || !isnan(o->p99_sojourn_ns)) {
		log_json_num(j, "p99_service_us", o->p99_service_ns / 1e3, 1);
		log_json_num(j, "p99_sojourn_us", o->p99_sojourn_ns / 1e3, 1);
	}
	log_json_num(j, "rps", w->alive ? w->last.rps : NAN, 1);
	if (l->mops->cpu_ns)
		log_json_num(j, "cpu_used", o->cpu_used, 3);
	log_json_num(j, "slack", o->slack, 4);
	log_json_num(j, "slack_avg", o->slack_avg, 4);
	for (int r = 0; r < POL_RES_COUNT; r++) {
		const struct res_ops *lr = res_table[r];

		if (lr->log.wl) {
			struct res_view v;

			res_view_const(l, (enum pol_res)r, &v);
			lr->log.wl(j, &v, i);
		} else if (lr->log.key) {
			log_json_num(j, lr->log.key,
				     l->res[r].avail ? (double)w->alloc[r] / lr->log.div : NAN,
				     lr->log.prec);
		}
	}
	log_json_str(j, "action", l->dec.wl[i].action);
	log_json_str(j, "reason", l->dec.wl[i].reason);
	log_json_close(j);
}

void loop_log_record(const struct loop *l, const char *event)
{
	struct log_json j;

	if (!l->log)
		return;
	log_json_begin(&j, l->log);
	log_json_num(&j, "t", (double)(l->obs.now_ms - l->t0_ms) / 1000.0, 3);
	log_json_int(&j, "tick", (long long)l->tick);
	log_json_str(&j, "policy", l->pol->name);
	log_json_bool(&j, "applied", l->out.applied);
	log_json_str(&j, "why", l->out.why[0] ? l->out.why : NULL);
	log_json_str(&j, "event", event[0] ? event : NULL);
	log_json_obj(&j, "free");
	for (int r = 0; r < POL_RES_COUNT; r++)
		if (l->res[r].avail && l->res[r].pooled && res_table[r]->log.key)
			log_json_num(&j, res_table[r]->log.key,
				     (double)(l->res[r].total - res_used(l, (enum pol_res)r)) /
					 res_table[r]->log.div,
				     res_table[r]->log.prec);
	log_json_close(&j);
	log_json_arr(&j, "wl");
	for (int i = 0; i < l->nwl; i++)
		log_wl(&j, l, i);
	log_json_close(&j);
	log_json_end(&j);
}
