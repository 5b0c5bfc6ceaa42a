#!/bin/bash
# The policy bench end to end at a small scale (every schedule at 5% of its length, one
# seed): every policy and variant `parties --list-policies` prints and every scenario of
# the scenario directory (one added here, unknown to the bench, among them) appears in the
# leaderboard, with one run per policy, scenario and feed; every run's log is complete;
# an unknown policy is refused. Needs no root and touches nothing on the machine.
set -u
cd "$(dirname "$0")/../.."
[ -x build/parties ] || { echo "SKIP: build/parties not built"; exit 77; }
T=$(mktemp -d /tmp/ebee-test-pbench.XXXXXX)
trap 'rm -rf "$T"' EXIT
die() { echo "FAIL: $*"; exit 1; }

# the shipped scenarios plus one the bench has never seen
mkdir "$T/sc"
cp experiments/policy-bench/scenarios/*.ini "$T/sc/"
sed 's/^sim_load = .*20%, 240:20%$/sim_load = 0:40%, 240:10%/' "$T/sc/step.ini" >"$T/sc/zz-extra.ini"
nice -n 10 experiments/policy-bench/run.sh --out "$T/out" --scenario-dir "$T/sc" --scale 0.05 \
	--seeds 1 --jobs 2 >"$T/log" 2>&1 || { cat "$T/log"; die "bench failed"; }
[ -s "$T/out/leaderboard.txt" ] && [ -s "$T/out/leaderboard.json" ] || die "no leaderboard"

build/parties --list-policies >"$T/policies" || die "--list-policies"
[ "$(wc -l <"$T/policies")" -ge 4 ] || die "fewer than 4 policies listed"
/usr/bin/python3 - "$T" <<'PY' || die "leaderboard content"
import glob, json, os, sys
T = sys.argv[1]
pols = []
for ln in open(os.path.join(T, "policies")):
    parts = ln.split()
    pols.append(" ".join([parts[0]] + [p.split("=", 1)[1] for p in parts[1:]]))
for want in ("parties paper", "parties code", "util", "static"):
    assert want in pols, (want, pols)
scen = sorted(os.path.basename(f)[:-4] for f in glob.glob(os.path.join(T, "sc", "*.ini")))
assert len(scen) >= 6 and "zz-extra" in scen, scen
feeds = ["client", "sojourn", "service"]
text = open(os.path.join(T, "out", "leaderboard.txt")).read()
board = json.load(open(os.path.join(T, "out", "leaderboard.json")))
rows = [r["policy"] for r in board["leaderboard"]]
assert sorted(rows) == sorted(pols), (rows, pols)
lines = text.splitlines()
top = lines[lines.index(next(l for l in lines if l.startswith("rank policy"))) + 1:][:len(pols)]
for p in pols:
    assert any(p in l for l in top), ("not ranked", p)
tables = [l for l in lines if l.startswith("policy   ")]
assert len(tables) == 2, tables
head = tables[0]
for s in scen:
    assert s in head, ("scenario not in the table", s)
for f in feeds:
    assert f in tables[1].split(), ("feed not in the table", f)
# one result per policy, scenario and feed (seed 1), each with its metrics
seen = {}
for r in board["runs"]:
    k = (r["policy"], r["scenario"], r["feed"])
    seen[k] = seen.get(k, 0) + 1
    for m in ("qos", "core_s", "energy_kj", "changes"):
        assert isinstance(r[m], (int, float)), (m, r)
    assert 0 <= r["qos"] <= 1 and r["core_s"] > 0 and r["energy_kj"] > 0, r
want = {(p, s, f) for p in pols for s in scen for f in feeds}
assert set(seen) == want and set(seen.values()) == {1}, (len(seen), len(want))
# something happened: the adaptive policies moved allocations, static never did
ch = {p: sum(r["changes"] for r in board["runs"] if r["policy"] == p) for p in pols}
assert ch["static"] == 0 and ch["util"] > 0 and ch["parties paper"] > 0, ch
# every log is whole: one record per interval to the end of its schedule
for lg in glob.glob(os.path.join(T, "out", "*.jsonl")):
    recs = [json.loads(l) for l in open(lg)]
    assert recs and recs[-1].get("summary"), lg
    assert recs[-2]["t"] >= 11.5, (lg, recs[-2]["t"])
PY
experiments/policy-bench/run.sh --out "$T/bad" --policies nosuch --seeds 1 >"$T/err" 2>&1 &&
	die "unknown policy accepted"
grep -q "unknown policy" "$T/err" || die "unknown policy: no reason given"
echo "PASS: policy bench at scale 0.05: $(wc -l <"$T/policies") policies x $(ls "$T/sc" | wc -l) scenarios x 3 feeds in the leaderboard"
