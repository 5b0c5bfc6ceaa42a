#!/bin/bash
# The observation's cpu_used on the real machine path: a workload that burns one CPU in
# two processes (a shell and its child, both in the workload's cpuset cgroup) is logged
# at about one core of CPU per interval (the main process alone would read ~0: this is
# the cgroup's processes), and an idle one at about none.
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
command = sh -c 'sh -c "while :; do :; done" & wait'
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
build/parties -c "$PT_TMP/parties.ini" --duration 2.5 2>"$PT_TMP/parties.err" ||
	{ cat "$PT_TMP/parties.err"; die "parties failed"; }
python3 - "$PT_TMP/log.jsonl" <<'PY' || die "cpu_used"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if '"wl"' in l]
assert len(recs) >= 6, len(recs)
for r in recs[2:]:
    burn, idle = r["wl"]
    # >= 0.3: the CPU is shared with whatever else runs here; the main process alone ~0
    assert 0.3 <= burn["cpu_used"] <= 1.1, burn
    assert idle["cpu_used"] < 0.1, idle
print("cpu_used burn %.3f, idle %.3f" % (recs[-1]["wl"][0]["cpu_used"], recs[-1]["wl"][1]["cpu_used"]))
PY
[ -z "$(pt_cgroups_left)" ] || die "cgroups left: $(pt_cgroups_left)"
echo "PASS: cpu_used from the workload's cgroup processes"
