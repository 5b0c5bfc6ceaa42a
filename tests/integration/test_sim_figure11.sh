#!/bin/bash
# The simulated Figure 11 study end to end at a short scale (12 virtual seconds): the
# study script runs parties --simulate fed by client, service and sojourn p99, every log
# carries the three p99s of both workloads, the summary and the plots exist, and the
# command line keeps its promises (same seed: byte-identical log; different seed: a
# different one; a sim config without --simulate, or --simulate without [simulation],
# exits 2). Needs no root and touches nothing on the machine.
set -u
cd "$(dirname "$0")/../.."
[ -x build/parties ] || { echo "SKIP: build/parties not built"; exit 77; }
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null || { echo "SKIP: no matplotlib"; exit 77; }
T=$(mktemp -d /tmp/ebee-test-sim.XXXXXX)
trap 'rm -rf "$T"' EXIT
die() { echo "FAIL: $*"; exit 1; }

experiments/figure11/sim.sh --out "$T/study" --scale 0.02 --seeds 1 --jobs 2 \
	--policies parties,util,static >"$T/out" 2>&1 || { cat "$T/out"; die "sim.sh failed"; }
for f in summary.txt summary.json figure11-sim-parties.png figure11-sim-parties.pdf \
	figure11-sim-util.png figure11-sim-static.png; do
	[ -s "$T/study/$f" ] || die "$f missing"
done
for feed in client service sojourn; do
	grep -q "^feed = $feed" "$T/study/summary.txt" || die "no table for feed $feed"
	/usr/bin/python3 - "$T/study/parties-$feed-s1.jsonl" <<'PY' || die "log of feed $feed"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
iv = [r for r in recs if not r.get("summary")]
assert len(iv) == 24, len(iv)
for r in iv[1:]:
    names = [w["name"] for w in r["wl"]]
    assert names == ["hotel", "memcached"], names
    for w in r["wl"]:
        for k in ("p99_client_us", "p99_service_us", "p99_sojourn_us", "cpu_used", "rps"):
            assert isinstance(w.get(k), float), (k, w)
        # service <= sojourn request by request, over the same window (both end at
        # the end of service); the client window ends at reception, so a few
        # records differ at its edges
        assert w["p99_service_us"] <= w["p99_sojourn_us"], w
        assert w["p99_client_us"] >= 0.9 * w["p99_sojourn_us"], w
PY
done

# reproducibility through the command line
cfg="$T/study/parties-client.ini"
build/parties -c "$cfg" --simulate --seed 5 --log "$T/a.jsonl" 2>/dev/null || die "run a"
build/parties -c "$cfg" --simulate --seed 5 --log "$T/b.jsonl" 2>/dev/null || die "run b"
build/parties -c "$cfg" --simulate --seed 6 --log "$T/c.jsonl" 2>/dev/null || die "run c"
cmp -s "$T/a.jsonl" "$T/b.jsonl" || die "same seed, different logs"
cmp -s "$T/a.jsonl" "$T/c.jsonl" && die "different seeds, same log"

build/parties -c "$cfg" --duration 1 >/dev/null 2>"$T/err"
[ $? = 2 ] && grep -q "run it with --simulate" "$T/err" || die "sim config without --simulate"
build/parties -c configs/example.ini --simulate >/dev/null 2>"$T/err"
[ $? = 2 ] && grep -q "no \[simulation\] section" "$T/err" || die "--simulate, no [simulation]"
build/parties -c "$cfg" --simulate --seed x >/dev/null 2>&1
[ $? = 2 ] || die "--seed x: want exit 2"
echo "PASS: simulated Figure 11 at scale 0.02: three feeds, three p99s, plots, seeds"
