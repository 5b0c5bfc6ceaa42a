#!/bin/bash
# parties --metrics: while a dry run manages a client-fed workload, /metrics serves a page
# promtool accepts, with the target, slack, cores and the upsize action counted; a taken
# port stops start-up with exit 2 and the reason. The daemon runs until the checks are done
# and is then stopped by SIGTERM (not for a fixed time, which emulation can outlast).
. "$(dirname "$0")/test_parties_lib.sh"
pt_require build/parties curl promtool

# the feed lasts as long as the test may (a sample every 100 ms): the slack is NaN in an
# interval without a fresh one
pt_feed_workload 1200 5000
pt_ini_feed_dry
build/parties -c "$PT_TMP/dry.ini" --dry-run --duration 120 --metrics 127.0.0.1:0 2>"$PT_TMP/err" &
PT_PARTIES=$!
port=
for _ in $(seq 50); do
	port=$(sed -n 's/.*metrics at .*(port \([0-9]*\)).*/\1/p' "$PT_TMP/err")
	[ -n "$port" ] && break
	sleep 0.1
done
[ -n "$port" ] || { cat "$PT_TMP/err"; die "no 'metrics at' line"; }
# until a page counts the upsize (the feed's 5 ms p99 violates the 1 ms target at once) and
# shows a fresh slack (an emulated guest's feed writer can miss an interval); 60 s at most
page_ready() {
	curl -fsS "http://127.0.0.1:$port/metrics" >"$PT_TMP/page" 2>/dev/null || return 1
	grep -qF 'parties_actions_total{workload="web",kind="up cores"} ' "$PT_TMP/page" &&
		grep -qF 'parties_slack_ratio{workload="web"} -4' "$PT_TMP/page"
}
pt_until 60 page_ready || { cat "$PT_TMP/page"; die "no page with the upsize and a fresh slack within 60 s"; }
promtool check metrics <"$PT_TMP/page" || { cat "$PT_TMP/page"; die "promtool rejects the page"; }
for want in 'parties_target_seconds{workload="web"} 0.001' \
	'parties_slack_ratio{workload="web"} -4' \
	'parties_actions_total{workload="web",kind="up cores"} ' \
	'parties_cores{workload="web"} ' \
	'parties_intervals_total ' 'process_cpu_seconds_total '; do
	grep -qF "$want" "$PT_TMP/page" || { cat "$PT_TMP/page"; die "page lacks '$want'"; }
done
ct=$(curl -fsS -o /dev/null -w '%{content_type}' "http://127.0.0.1:$port/metrics")
[ "$ct" = "text/plain; version=0.0.4; charset=utf-8" ] || die "content type '$ct'"
code=$(curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/nope")
[ "$code" = 404 ] || die "/nope: HTTP $code, want 404"

# the port is taken now: a second daemon refuses to start, changing nothing
build/parties -c "$PT_TMP/dry.ini" --dry-run --duration 1 --metrics "127.0.0.1:$port" \
	2>"$PT_TMP/err2"
rc=$?
[ $rc = 2 ] || { cat "$PT_TMP/err2"; die "taken port: exit $rc, want 2"; }
grep -q "Address already in use" "$PT_TMP/err2" || { cat "$PT_TMP/err2"; die "no reason given"; }
kill -0 $PT_PARTIES 2>/dev/null || die "parties exited before SIGTERM"
pt_stop_parties TERM
[ "$PT_RC" = 0 ] || { cat "$PT_TMP/err"; die "parties exited $PT_RC after SIGTERM"; }
echo "PASS"
