#!/bin/bash
# parties (b): two workloads with CPU quota as the moving resource (0.1-core steps) on
# 2 CPUs. "web" is driven past its target: it gains quota from the free pool, then from
# "api" (which has slack), and gives it back when its load stops. At exit every cgroup is
# restored. Bounded: about 25 s.
#
# web sleeps 5 ms per request against a 4 ms target, so it violates while loaded whatever
# it gets (PARTIES keeps upsizing it; upsizes that did not help are not undone). api gets
# a trickle of requests with a lax target, so it has plenty of slack and is a donor.
. "$(dirname "$0")/test_parties_lib.sh"
pt_require build/parties build/fixtures/cpr_server build/loadgen

pweb=$(free_port)
papi=$(free_port)
[ "$pweb" != "$papi" ] || papi=$((pweb + 1))
{
	pt_ini_controller
	pt_ini_quota 1.2
	cat <<INI
[policy parties]
wheel = quota
idle = release
; the paper cools a workload down for 30 s after a harmful downsize; keep the test short
cooldown_s = 3
INI
	pt_ini_server web "$pweb" 4 5 4 "quota = 0.3"
	pt_ini_server api "$papi" 2 1 50 "quota = 0.6"
} >"$PT_TMP/parties.ini"

pt_parties -c "$PT_TMP/parties.ini" --duration 60
pt_wait_started
pt_wait_port "$pweb" || die "web does not accept on $pweb"
pt_wait_port "$papi" || die "api does not accept on $papi"
build/loadgen --port "$papi" --rate 40 --duration 30 >"$PT_TMP/lg-api.out" 2>&1 &
PT_PIDS+=($!)
build/loadgen --port "$pweb" --rate 150 --duration 8 >"$PT_TMP/lg-web.out" 2>&1 &
lg_web=$!
PT_PIDS+=($lg_web)

cgq()
{
	local d
	for d in /sys/fs/cgroup/cpu/$PT_PARENT/$1 /sys/fs/cgroup/$PT_PARENT/$1; do
		[ -f "$d/cpu.cfs_quota_us" ] && { cat "$d/cpu.cfs_quota_us"; return; }
		[ -f "$d/cpu.max" ] && { cut -d' ' -f1 "$d/cpu.max"; return; }
	done
	echo none
}

t_pool=$(pt_log_wait 'w["web"]["action"] == "up quota" and "free pool" in w["web"]["reason"]' 5) ||
	{ tail -3 "$PT_TMP/log.jsonl"; die "web did not gain quota from the free pool"; }
echo "web took quota from the free pool at t=$t_pool s"
t_don=$(pt_log_wait 'w["web"]["action"] == "up quota" and "from api" in w["web"]["reason"] and w["api"]["action"] == "donate"' 8) ||
	{ tail -3 "$PT_TMP/log.jsonl"; die "web did not gain quota from api"; }
echo "web took quota from api at t=$t_don s"
t_max=$(pt_log_wait 'w["web"]["quota"] >= 0.9' 6) || die "web's quota never reached 0.9"
# The group holds what the log says. Decisions go on between two reads (in the 6.12 guest
# web was back at 0.8 and 0.7 by the time its group was read), so the log's last quota and
# the group's are read again until they agree within one 0.1-core step (10 s).
log_quota() {
	python3 -c "
import json
r = [json.loads(l) for l in open('$PT_TMP/log.jsonl') if l.endswith('}\n') and '\"wl\"' in l][-1]
print(round([w for w in r['wl'] if w['name'] == 'web'][0]['quota'] * 100000))"
}
agree() {
	want=$(log_quota)
	q=$(cgq web)
	[ "$q" -ge $((want - 10000)) ] 2>/dev/null && [ "$q" -le $((want + 10000)) ]
}
pt_until 10 agree || die "the log says web has $want us of quota per 100 ms, its group $q"
echo "web at quota >= 0.9 at t=$t_max s; then the log's $want us per 100 ms, the group's $q"

wait "$lg_web"
# (30 s: a hang guard; the run lasts 60. In a guest under emulation the 12 s this was failed
# with web back at 0.1 at the end: the timeline below says by which steps.)
t_back=$(pt_log_wait "r['t'] > $t_max and w['web']['quota'] <= 0.3 and w['web']['action'] == 'down quota'" 30) || {
	python3 - "$PT_TMP/log.jsonl" "$t_max" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get('summary') or r['t'] <= float(sys.argv[2]):
        continue
    w = {x['name']: x for x in r['wl']}
    print(r['t'], {n: (x.get('quota'), x.get('action'), x.get('state')) for n, x in w.items()})
PY
	die "web did not give its quota back after its load stopped"
}
echo "web back to <= 0.3 cores at t=$t_back s"
python3 - "$PT_TMP/log.jsonl" <<'PY' || die "a record over-committed the quota"
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get('summary'):
        continue
    total = sum(w['quota'] for w in r['wl'] if w['alive'])
    assert total <= 1.2 + 1e-6, (r['t'], total)
    assert all(w['quota'] >= 0.1 - 1e-6 for w in r['wl']), r['t']
PY

pt_stop_restored TERM
pt_log_summary
echo "PASS"
