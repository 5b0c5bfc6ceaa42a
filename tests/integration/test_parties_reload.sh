#!/bin/bash
# SIGHUP on a running parties: a good file applies its live settings (target, interval,
# [policy]) without a restart; a bad file and a file that changes what needs a restart both
# leave the running configuration in force, with file:line; logrotate's rename + SIGHUP
# moves the decision log to the new file. Under the journal (JOURNAL_STREAM names stderr)
# every stderr line carries a syslog priority prefix. Dry run: nothing on the machine changes.
. "$(dirname "$0")/test_parties_lib.sh"
pt_require build/parties

# the workload: a process of the test's own
pt_feed_workload 100 500
ini()
{
	# ini INTERVAL TARGET_MS SLACK_UP [EXTRA WORKLOAD KEY]
	printf '[controller]\ninterval_ms = %s\ncgroup_parent = %s\nstate_dir = %s\nlog = %s\n[resources]\nsmt = shared\ncpus = 0-1\nquota = true\n[policy parties]\nslack_up = %s\n[workload web]\npid = %s\ntarget_ms = %s\ncores = 1\nsource = client:%s\n%s' \
		"$1" "$PT_TMP" "$PT_TMP/state" "$PT_TMP/log.jsonl" "$3" "$WEB" "$2" "$PT_TMP/feed" "${4:-}" |
		sed "s|cgroup_parent = $PT_TMP|cgroup_parent = $PT_PARENT|" >"$PT_TMP/p.ini"
}
ini 100 1 0.05
touch "$PT_TMP/err"
dev_ino=$(stat -c '%d:%i' "$PT_TMP/err")
JOURNAL_STREAM=$dev_ino build/parties -c "$PT_TMP/p.ini" --dry-run --log "$PT_TMP/log.jsonl" --duration 20 2>>"$PT_TMP/err" &
PT_PARTIES=$!
for _ in $(seq 50); do grep -q "managing 1 workload" "$PT_TMP/err" && break; sleep 0.1; done
grep -q "managing 1 workload" "$PT_TMP/err" || { cat "$PT_TMP/err"; die "parties did not start"; }
for _ in $(seq 100); do [ -s "$PT_TMP/log.jsonl" ] && break; sleep 0.1; done
last_target() { tail -1 "$1" | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["wl"][0]["target_us"]))'; }
[ "$(last_target "$PT_TMP/log.jsonl")" = 1000 ] || die "initial target"

# hup WAIT_FOR WANT WHY: SIGHUP, wait (3 s) for a line with WAIT_FOR, FAIL without WANT
hup()
{
	kill -HUP $PT_PARTIES
	for _ in $(seq 30); do grep -q "$1" "$PT_TMP/err" && break; sleep 0.1; done
	grep -q "$2" "$PT_TMP/err" || { cat "$PT_TMP/err"; die "$3"; }
	sleep 0.6
	kill -0 $PT_PARTIES || die "SIGHUP stopped the daemon"
}

# --- good file
ini 200 10 0.1
hup "reloaded" "reloaded $PT_TMP/p.ini: \[policy parties\] settings (policy state restarted), interval_ms 100 -> 200, web target 1 -> 10 ms" \
	"good reload not reported"
[ "$(last_target "$PT_TMP/log.jsonl")" = 10000 ] || die "the new target is not in force"
n0=$(grep -c '' "$PT_TMP/log.jsonl"); sleep 1; n1=$(grep -c '' "$PT_TMP/log.jsonl")
[ $((n1 - n0)) -le 6 ] || die "interval_ms 200 not in force: $((n1 - n0)) lines in 1 s"
echo "ok: good file applied (target 10 ms, interval 200 ms, policy settings)"

# --- bad file: file:line, the running configuration stays
ini 200 0 0.1
hup "reload failed" "reload failed, keeping the running configuration: $PT_TMP/p.ini:14: target_ms must be > 0" \
	"bad file not reported with file:line"
[ "$(last_target "$PT_TMP/log.jsonl")" = 10000 ] || die "a bad file changed the target"
echo "ok: bad file refused with file:line, target still 10 ms"

# --- a change only a restart can make
ini 200 10 0.1 "max_cores = 1"
hup "needs a restart" "the limits of workload web changed: that needs a restart" \
	"restart-only change not refused"
echo "ok: restart-only change refused"

# --- logrotate: rename, SIGHUP, the daemon writes the new file
mv "$PT_TMP/log.jsonl" "$PT_TMP/log.jsonl.1"
kill -HUP $PT_PARTIES
for _ in $(seq 100); do [ -s "$PT_TMP/log.jsonl" ] && break; sleep 0.1; done
[ -s "$PT_TMP/log.jsonl" ] || die "no new log 10 s after rename + SIGHUP"
n0=$(grep -c '' "$PT_TMP/log.jsonl.1"); sleep 0.6; n1=$(grep -c '' "$PT_TMP/log.jsonl.1")
[ "$n0" = "$n1" ] || die "still writing the rotated file"
echo "ok: rename + SIGHUP: logging to the new file"

kill -TERM $PT_PARTIES
wait $PT_PARTIES
PT_PARTIES=
bad=$(grep -v '^<[0-7]>' "$PT_TMP/err" | head -3)
[ -z "$bad" ] || die "lines without a priority prefix under the journal: $bad"
grep -q '^<3>parties: reload failed' "$PT_TMP/err" || die "reload failure not at priority err"
grep -q '^<6>parties: managing 1 workload' "$PT_TMP/err" || die "start-up line not info"
grep -q '^<7>parties: act: dry-run: would' "$PT_TMP/err" || die "actuator lines not debug"
echo "ok: every stderr line has a priority prefix under the journal"
echo "PASS"
