#!/bin/bash
# The Figure 11 claim study (experiments/figure11/claim.sh) end to end at a short scale
# (30 virtual seconds, 1 seed, 2 points: base and link=95): the summary, the CSV and the
# plot exist; every point and every feed is in them; each point's configs set what the
# point says (the link rate that fills 95% at hotel's peak); the lead is the client-fed
# scale-down minus the feed's; and a bad point is refused. No root; touches nothing.
set -u
cd "$(dirname "$0")/../.."
[ -x build/parties ] || { echo "SKIP: build/parties not built"; exit 77; }
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null || { echo "SKIP: no matplotlib"; exit 77; }
T=$(mktemp -d /tmp/ebee-test-claim.XXXXXX)
trap 'rm -rf "$T"' EXIT
die() { echo "FAIL: $*"; exit 1; }

experiments/figure11/claim.sh --out "$T/out" --work "$T/work" --scale 0.05 --seeds 1 \
	--jobs 2 --points base,link=95 --keep-logs >"$T/log" 2>&1 || { cat "$T/log"; die "claim.sh failed"; }
for f in summary.txt summary.json claim.csv claim-map.md claim-lead.png claim-lead.pdf runs.json; do
	[ -s "$T/out/$f" ] || die "$f missing"
done
for p in base link=95; do
	grep -q "^point $p: " "$T/out/summary.txt" || die "no table for point $p"
	grep -q "^| $p | " "$T/out/claim-map.md" || die "no row for point $p in claim-map.md"
done
[ "$(grep -c '^| .* | \(client\|sojourn\|service\) | ' "$T/out/claim-map.md")" = 6 ] ||
	die "claim-map.md: not 2 points x 3 feeds"
grep -q '^link_gbps = 0.45' "$T/work/link95-client.ini" || die "link=95: link_gbps not set"
/usr/bin/python3 - "$T/out" <<'PY' || die "table"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1] + "/claim.csv")))
got = {(r["point"], r["feed"]) for r in rows}
want = {(p, f) for p in ("base", "link=95") for f in ("client", "sojourn", "service")}
assert got == want, got ^ want
by = {(r["point"], r["feed"]): r for r in rows}
assert abs(float(by["link=95", "client"]["link_util_pct"]) - 95) < 0.5, by["link=95", "client"]
assert float(by["base", "client"]["link_util_pct"]) < 6  # 10 Gbit/s: about 4%
for r in rows:
    assert 0 <= float(r["qos_pct_mean"]) <= 100, r
    assert float(r["core_s_mean"]) > 0 and float(r["energy_kj_mean"]) > 0, r
    if r["feed"] == "client" or not r["down_s_mean"]:
        continue
    cl = by[r["point"], "client"]
    if cl["down_s_mean"]:
        lead = float(cl["down_s_mean"]) - float(r["down_s_mean"])
        assert abs(float(r["lead_s_mean"]) - lead) < 1e-6, (r, lead)
meta = json.load(open(sys.argv[1] + "/runs.json"))
assert len(meta["runs"]) == 6, len(meta["runs"])
# the scale-down time, recomputed from each log: the schedule (scaled by 0.05) falls at
# 18 s; the plateau level is hotel's lowest cores x GHz over 15-18 s (its last 3 s)
for r in meta["runs"]:
    log = "%s/../work/%s-%s-s1.jsonl" % (sys.argv[1], r["point"].replace("=", ""), r["feed"])
    cap = []
    for ln in open(log):
        j = json.loads(ln)
        for w in j.get("wl", []):
            if w["name"] == "hotel":
                cap.append((j["t"], w["cores"] * w["freq_mhz"] / 1000))
    level = min(c for t, c in cap if 15 <= t <= 18)
    down = next((t - 18 for t, c in cap if t >= 18 and c < level - 1e-9), None)
    assert down == r["down_s"], (r, down)
PY
experiments/figure11/claim.sh --out "$T/bad" --work "$T/bw" --points link=x >/dev/null 2>"$T/err"
[ $? != 0 ] && grep -q "bad point 'link=x'" "$T/err" || die "a bad point was not refused"
echo "PASS: claim study at scale 0.05: 2 points x 3 feeds in the table, CSV and plot"
