#!/bin/bash
# The observation's cpu_used on the real machine path: a workload that burns CPU in a child
# of its main process (both in the workload's cpuset cgroup) is logged at the CPU its
# processes really got, as this test reads it from /proc over the same intervals (the main
# process alone would read ~0: this is the cgroup's processes), and an idle one at about
# none. What the burner gets depends on what else runs here, so the log is compared with
# what the same run measured, not with one CPU.
. "$(dirname "$0")/test_parties_lib.sh"
pt_require build/parties

: >"$PT_TMP/feed"
{
	pt_ini_controller 300
	echo "policy = static" # nothing moves while we measure
	cat <<INI
[resources]
smt = shared
cpus = 0-1
[workload burn]
command = sh -c 'sh -c "while :; do :; done; : burn$$" & wait'
target_ms = 1
cores = 1
source = client:$PT_TMP/feed
[workload idle]
command = sleep 30
target_ms = 1
cores = 1
source = client:$PT_TMP/feed
INI
} >"$PT_TMP/parties.ini"
pt_parties -c "$PT_TMP/parties.ini" --duration 30
pt_wait_started
# CPU time of the burner's processes, in ticks (the token is in both shells' command lines)
ticks() { for p in $(pgrep -f "burn$$"); do cat "/proc/$p/stat"; done 2>/dev/null | awk '{ s += $14 + $15 } END { print s + 0 }'; }
records() { grep -c '"wl"' "$PT_TMP/log.jsonl"; }
pt_log_wait 'r["tick"] >= 2' 20 >/dev/null || die "no decisions"
n0=$(records)
a=$(ticks)
ta=$(date +%s.%N)
more() { [ "$(records)" -ge $((n0 + 6)) ]; }
pt_until 30 more || die "fewer than 6 more decisions in 30 s"
b=$(ticks)
tb=$(date +%s.%N)
n1=$(records)
pt_stop_restored TERM
python3 - "$PT_TMP/log.jsonl" "$n0" "$n1" "$a" "$b" "$ta" "$tb" "$(getconf CLK_TCK)" <<'PY'
import json, sys
path = sys.argv[1]
n0, n1, a, b, ta, tb, hz = map(float, sys.argv[2:])
recs = [json.loads(l) for l in open(path) if '"wl"' in l][int(n0):int(n1)]
assert len(recs) >= 5, len(recs)
got = (b - a) / hz / (tb - ta)
burn = sum(r["wl"][0]["cpu_used"] for r in recs) / len(recs)
idle = max(r["wl"][1]["cpu_used"] for r in recs)
print("the burner's processes got %.3f CPU (/proc, over %.1f s); logged cpu_used %.3f (mean of %d intervals); idle at most %.3f"
      % (got, tb - ta, burn, len(recs), idle))
if got < 0.05:
    print("SKIP: the machine gave the burner %.3f CPU: too busy to tell the cgroup from its main process" % got)
    sys.exit(77)
assert abs(burn - got) <= 0.25 * got + 0.05, "logged %.3f against %.3f from /proc" % (burn, got)
assert burn <= 1.1, burn
assert idle < 0.1, idle
PY
rc=$?
[ $rc = 77 ] && exit 77
[ $rc = 0 ] || die "cpu_used"
[ -z "$(pt_cgroups_left)" ] || die "cgroups left: $(pt_cgroups_left)"
echo "PASS: cpu_used from the workload's cgroup processes"
