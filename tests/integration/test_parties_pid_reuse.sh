#!/bin/bash
# A `pid =` workload whose process exits and whose pid then goes to an unrelated process is
# gone, not alive for ever: the liveness check compares the start time recorded when the
# workload was found. The pid is really recycled (ns_last_pid, parties stopped meanwhile
# so it cannot see the gap).
. "$(dirname "$0")/test_parties_lib.sh"
pt_require build/parties
[ -w /proc/sys/kernel/ns_last_pid ] || skip "needs /proc/sys/kernel/ns_last_pid to recycle a pid"

sleep 300 &
A=$!
PT_PIDS+=($A)
: >"$PT_TMP/feed"
(for i in $(seq 1 600); do echo "$((i * 100)) 500 100" >>"$PT_TMP/feed"; sleep 0.1; done) &
PT_PIDS+=($!)
printf '[controller]\ninterval_ms = 200\ncgroup_parent = %s\nstate_dir = %s\n[resources]\nsmt = shared\ncpus = 0-1\nquota = true\n[workload web]\npid = %s\ntarget_ms = 1\ncores = 1\nsource = client:%s\n' \
	"$PT_PARENT" "$PT_TMP/state" "$A" "$PT_TMP/feed" >"$PT_TMP/parties.ini"
pt_parties -c "$PT_TMP/parties.ini" --dry-run --log "$PT_TMP/log.jsonl" --duration 60
pt_wait_started
pt_log_wait 'r["tick"] >= 2 and w["web"]["alive"]' 10 >/dev/null || die "web not alive at first"

# parties stopped: A exits, its pid goes to B
kill -STOP "$PT_PARTIES"
kill -KILL "$A"
wait "$A" 2>/dev/null
B=
for _ in $(seq 200); do
	echo $((A - 1)) >/proc/sys/kernel/ns_last_pid
	sleep 300 &
	b=$!
	PT_PIDS+=($b)
	[ "$b" = "$A" ] && { B=$b; break; }
	kill -KILL "$b"; wait "$b" 2>/dev/null
done
# the last interval before the reuse, read while the daemon is stopped: once it runs again
# it may see web gone, stop, and end the log with its summary (no tick) before a read
# after SIGCONT (so in the 6.12 guest, where the search for the pid took long enough)
tick=$(python3 -c '
import json, sys
print([json.loads(l) for l in open(sys.argv[1]) if l.endswith("}\n") and "\"tick\"" in l][-1]["tick"])' \
	"$PT_TMP/log.jsonl")
kill -CONT "$PT_PARTIES"
[ -n "$tick" ] || die "no interval logged before the reuse"
[ -n "$B" ] || skip "could not get pid $A back for another process (200 tries; a busy machine)"
echo "ok: pid $A now belongs to another process (started $(cut -d' ' -f22 /proc/$B/stat) ticks after boot)"

# within 10 intervals of this run: gone, and the daemon stops (its only workload exited).
# Waited for until the daemon has stopped or logged 10 more intervals (30 s at most), then
# judged on the log once, rather than polling for 30 s a record that should never come.
n_cont=$(grep -c '' "$PT_TMP/log.jsonl")
for _ in $(seq 300); do
	kill -0 "$PT_PARTIES" 2>/dev/null || break
	[ "$(grep -c '' "$PT_TMP/log.jsonl")" -gt $((n_cont + 10)) ] && break
	sleep 0.1
done
python3 - "$PT_TMP/log.jsonl" "$tick" <<'PY' && die "pid $A reused by an unrelated process: web still alive 10 intervals later"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.endswith('}\n') and '"tick"' in l]
sys.exit(0 if any(r['tick'] >= int(sys.argv[2]) + 10 and r['wl'][0]['alive'] for r in recs) else 1)
PY
for _ in $(seq 100); do kill -0 "$PT_PARTIES" 2>/dev/null || break; sleep 0.1; done
grep -q "every workload has exited" "$PT_TMP/parties.err" || { cat "$PT_TMP/parties.err"; die "the daemon did not see web exit"; }
pt_stop_parties 2>/dev/null
echo "ok: web seen gone, the daemon stopped: $(grep -m1 'every workload' "$PT_TMP/parties.err")"
echo "PASS"
