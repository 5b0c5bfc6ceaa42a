#!/bin/bash
# parties.service grants only CapabilityBoundingSet= from the unit. Run the daemon for real
# (ebee tracing a launched server, cores and quota) with exactly that bounding set, as
# systemd would: it must manage the workload, see its p99 and restore everything. Without
# CAP_BPF it must fail with a reason, which shows the set is not wider than it needs to be
# in that respect.
. "$(dirname "$0")/test_parties_lib.sh"
pt_require build/parties build/fixtures/cpr_server setpriv

caps=$(sed -n 's/^CapabilityBoundingSet=//p' systemd/parties.service.in)
[ -n "$caps" ] || die "no CapabilityBoundingSet= in the unit"
bset="-all"
for c in $caps; do bset="$bset,+$(echo "${c#CAP_}" | tr 'A-Z' 'a-z')"; done

port=$(free_port)
{
	pt_ini_controller 200
	printf '[resources]\ncpus = 0-1\nquota = true\n'
	pt_ini_server web "$port" 2 2 50 "cores = 1"
} >"$PT_TMP/p.ini"

(sleep 1.5; build/fixtures/http_client --port "$port" --requests 200 --concurrency 2 >/dev/null 2>&1) &
PT_PIDS+=($!)
setpriv --bounding-set "$bset" --inh-caps -all build/parties -c "$PT_TMP/p.ini" --duration 4 \
	2>"$PT_TMP/parties.err" || { cat "$PT_TMP/parties.err"; die "parties failed with bounding set $bset"; }
grep -q "managing 1 workload" "$PT_TMP/parties.err" || { cat "$PT_TMP/parties.err"; die "did not start"; }
python3 - "$PT_TMP/log.jsonl" <<'PY' || die "no ebee p99 under the unit's capabilities"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if '"wl"' in l]
p99 = [w["p99_ebee_us"] for l in lines for w in l["wl"] if w.get("p99_ebee_us")]
assert p99, "no p99_ebee_us"
print(f"ok: {len(p99)} intervals with an ebee p99 (last {p99[-1]:.0f} us)")
PY
[ -z "$(pt_cgroups_left)" ] || die "cgroups left after the run: $(pt_cgroups_left)"
echo "ok: bounding set $bset: managed, traced, restored"

bset_nobpf=$(echo "$bset" | sed 's/,+bpf//')
setpriv --bounding-set "$bset_nobpf" --inh-caps -all build/parties -c "$PT_TMP/p.ini" --duration 1 \
	2>"$PT_TMP/nobpf.err"
rc=$?
[ $rc -ne 0 ] || die "parties ran without CAP_BPF"
grep -q "cannot start ebee tracing" "$PT_TMP/nobpf.err" || { cat "$PT_TMP/nobpf.err"; die "no reason without CAP_BPF"; }
echo "ok: without CAP_BPF: exit $rc, '$(grep -m1 'cannot start ebee' "$PT_TMP/nobpf.err")'"
[ -z "$(pt_cgroups_left)" ] || die "cgroups left: $(pt_cgroups_left)"
echo PASS
