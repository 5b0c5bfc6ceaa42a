#!/bin/bash
# SIGHUP with a new `log =` runs the same check start-up runs: a log file that belongs to
# another user (nobody) in a directory anyone may write (1777) is refused at start, and a
# reload that names it is refused too; the daemon keeps writing its old log and never
# writes a byte to the other user's file.
. "$(dirname "$0")/test_parties_lib.sh"
pt_require build/parties
nobody=$(id -u nobody 2>/dev/null) || skip "no user nobody"

pt_feed_workload 100 500
mkdir -m 1777 "$PT_TMP/pub"
chmod 1777 "$PT_TMP/pub"
: >"$PT_TMP/pub/log.jsonl"
chown nobody "$PT_TMP/pub/log.jsonl"
# ini LOG: a quota-managed workload of the test's own, decisions every 100 ms
ini()
{
	printf '[controller]\ninterval_ms = 100\ncgroup_parent = %s\nstate_dir = %s\nlog = %s\n[resources]\nsmt = shared\ncpus = 0-1\nquota = true\n[workload web]\npid = %s\ntarget_ms = 1\ncores = 1\nsource = client:%s\n' \
		"$PT_PARENT" "$PT_TMP/state" "$1" "$WEB" "$PT_TMP/feed" >"$PT_TMP/parties.ini"
}

# --- start-up refuses it
ini "$PT_TMP/pub/log.jsonl"
build/parties -c "$PT_TMP/parties.ini" --duration 2 2>"$PT_TMP/start.err"
rc=$?
[ "$rc" != 0 ] || die "start-up accepted a log owned by nobody in a 1777 directory"
grep -q "log" "$PT_TMP/start.err" || { cat "$PT_TMP/start.err"; die "no reason given"; }
echo "ok: start-up refuses it (exit $rc): $(head -1 "$PT_TMP/start.err")"

# --- a reload that names it is refused the same way
ini "$PT_TMP/log.jsonl"
pt_parties -c "$PT_TMP/parties.ini" --duration 30
pt_wait_started
pt_log_wait 'r["tick"] >= 2' 10 >/dev/null || die "no decisions in the first log"
ini "$PT_TMP/pub/log.jsonl"
kill -HUP "$PT_PARTIES"
for _ in $(seq 50); do grep -q "reload" "$PT_TMP/parties.err" && break; sleep 0.1; done
n0=$(grep -c '' "$PT_TMP/log.jsonl")
# the daemon writes every 100 ms: wait until the old log has grown by 5 records, or the
# other user's file got one
for _ in $(seq 100); do
	[ -s "$PT_TMP/pub/log.jsonl" ] && break
	[ "$(grep -c '' "$PT_TMP/log.jsonl")" -ge $((n0 + 5)) ] && break
	sleep 0.1
done
[ ! -s "$PT_TMP/pub/log.jsonl" ] && [ "$(stat -c %u "$PT_TMP/pub/log.jsonl")" = "$nobody" ] ||
	die "after SIGHUP the daemon wrote $(stat -c %s "$PT_TMP/pub/log.jsonl") bytes to a file owned by nobody in a 1777 directory"
[ "$(grep -c '' "$PT_TMP/log.jsonl")" -ge $((n0 + 5)) ] || die "the old log stopped growing after the reload"
grep -q "reload: .*still writing the old log" "$PT_TMP/parties.err" ||
	{ cat "$PT_TMP/parties.err"; die "the refusal is not reported"; }
echo "ok: reload refuses it: $(grep -m1 "still writing" "$PT_TMP/parties.err")"
pt_stop_restored
echo "PASS"
