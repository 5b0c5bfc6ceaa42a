#!/bin/bash
# A workload's cgroup removed from under parties (its task moved out, its directories
# removed) while the pooled quota moves: api (slack, the donor) loses its cgroup, web keeps
# violating and keeps asking for api's quota. api's decreases now fail; the increases they
# paid for must not go through: in every record the quota of the live workloads sums to at
# most quota_total, and later decisions are not refused for an over-committed pool.
. "$(dirname "$0")/test_parties_lib.sh"
pt_require build/parties
[ -d /sys/fs/cgroup/cpu ] || skip "needs the cgroup v1 cpu controller (this test moves a task out by hand)"

sleep 60 &
WEB=$!
sleep 60 &
API=$!
PT_PIDS+=($WEB $API)
: >"$PT_TMP/web.feed"
: >"$PT_TMP/api.feed"
(for i in $(seq 1 300); do
	echo "$((i * 100)) 5000 100" >>"$PT_TMP/web.feed"
	echo "$((i * 100)) 500 100" >>"$PT_TMP/api.feed"
	sleep 0.1
done) &
PT_PIDS+=($!)
{
	pt_ini_controller 200
	pt_ini_quota 1.2
	cat <<INI
[policy parties]
wheel = quota
[workload web]
pid = $WEB
target_ms = 1
quota = 0.3
source = client:$PT_TMP/web.feed
[workload api]
pid = $API
target_ms = 50
quota = 0.9
source = client:$PT_TMP/api.feed
INI
} >"$PT_TMP/parties.ini"
pt_parties -c "$PT_TMP/parties.ini" --duration 30
pt_wait_started
grp=/sys/fs/cgroup/cpu/$PT_PARENT/api
[ -d "$grp" ] || die "api has no cpu cgroup $grp"
pt_log_wait 'r["tick"] >= 2' 10 >/dev/null || die "no decisions"

# api's cgroup goes: its task back to the root, its directories removed
for h in /sys/fs/cgroup/*/; do
	d=$h$PT_PARENT/api
	[ -d "$d" ] || continue
	while read -r t; do echo "$t" >"$h/tasks" 2>/dev/null; done <"$d/tasks"
	rmdir "$d" || die "cannot remove $d"
done
t_gone=$(tail -1 "$PT_TMP/log.jsonl" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tick"])')
echo "api's cgroups removed after tick $t_gone"
# web keeps violating: PARTIES takes api's quota for it, again and again
pt_log_wait "r['tick'] >= $t_gone + 25" 30 >/dev/null || die "the daemon stopped deciding"
pt_stop_parties TERM
python3 - "$PT_TMP/log.jsonl" "$t_gone" <<'PY' || exit 1
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if '"wl"' in l]
gone = int(sys.argv[2])
after = [r for r in recs if r["tick"] > gone]
over = [(r["tick"], sum(w["quota"] for w in r["wl"] if w["alive"] and w["quota"] is not None))
        for r in recs]
over = [(t, q) for t, q in over if q > 1.2 + 1e-9]
refused = [r["tick"] for r in after if r["why"] and "asked for" in r["why"]]
tried = [r["tick"] for r in after if any(w["action"] not in ("hold",) for w in r["wl"])]
print(f"{len(after)} records after the removal, {len(tried)} with an action, "
      f"{len(refused)} refused for an over-committed pool, {len(over)} above quota_total")
if not tried:
    print("FAIL: no decision tried to move quota after the removal"); sys.exit(1)
if over:
    print(f"FAIL: quota above quota_total 1.2: {over[:5]}"); sys.exit(1)
if refused:
    print(f"FAIL: decisions refused for an over-committed pool at ticks {refused[:10]}"); sys.exit(1)
PY
echo "PASS"
