#!/bin/bash
# A real Prometheus scrapes `ebee trace --listen`: Debian's prometheus on loopback with a
# generated config (1 s scrapes) and steady load on a test server (2 ms per request). Through
# Prometheus' HTTP API, histogram_quantile(0.99, rate(..._bucket[10s])) and the summary's
# p99 must agree with the p99 ebee itself reports for the same 10 s window within 10%, and
# every scraped page must pass `promtool check metrics`.
set -u
. "$(dirname "$0")/../lib/ebeetest.sh"
for b in prometheus promtool curl python3; do
	command -v $b >/dev/null || { echo "SKIP: $b is not installed (make deps)"; exit 77; }
done
. tests/lib/servers.sh

start_cpr web --delay-ms 2 --threads 4
srv=$web_pid port=$web_port
[ -n "$port" ] || fail "test server did not start"

eport=$(free_port)
: >"$tmp/ebee.err"
build/ebee trace --pid "$srv:web" --listen "127.0.0.1:$eport" --window-age 10000 \
	--interval 1000 --json >"$tmp/series" 2>"$tmp/ebee.err" &
eb=$!
pids+=($eb)
ebee_wait_live "$eb" "$tmp/ebee.err" || fail "ebee did not start: $(cat "$tmp/ebee.err")"

pport=$(free_port)
cat >"$tmp/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: ebee
    static_configs:
      - targets: ['127.0.0.1:$eport']
YML
promtool check config "$tmp/prometheus.yml" >/dev/null || fail "promtool rejects the generated config"
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/data" \
	--web.listen-address="127.0.0.1:$pport" --log.level=warn >"$tmp/prom.log" 2>&1 &
pids+=($!)
for _ in $(seq 200); do curl -fs "http://127.0.0.1:$pport/-/ready" >/dev/null && break; sleep 0.1; done
curl -fs "http://127.0.0.1:$pport/-/ready" >/dev/null || fail "prometheus not ready: $(tail -5 "$tmp/prom.log")"

# Steady closed-loop load, longer than the test reads.
build/fixtures/http_client --port "$port" --requests 1000000 --concurrency 2 --timeout 40 \
	--quiet >/dev/null 2>&1 &
pids+=($!)

# Every page a scraper sees is valid.
sleep 2
curl -fsS "http://127.0.0.1:$eport/metrics" >"$tmp/page" || fail "scrape failed"
promtool check metrics <"$tmp/page" || fail "promtool rejects ebee's page"

# 10 s of rate() needs 10 s of samples under load, plus a scrape or two.
sleep 13
q() { curl -fsS "http://127.0.0.1:$pport/api/v1/query" --data-urlencode "query=$1"; }
q 'histogram_quantile(0.99, rate(ebee_request_duration_seconds_bucket{workload="web"}[10s]))' >"$tmp/hq" ||
	fail "query failed"
q 'ebee_request_duration_window_seconds{workload="web",quantile="0.99"}' >"$tmp/sq" || fail "query failed"
q 'up{job="ebee"}' >"$tmp/up" || fail "query failed"
tail -1 "$tmp/series" >"$tmp/last"
python3 - "$tmp/hq" "$tmp/sq" "$tmp/up" "$tmp/last" <<'PY' || fail "disagreement (above)"
import json, sys
def val(path):
    d = json.load(open(path))
    assert d["status"] == "success", d
    r = d["data"]["result"]
    assert len(r) == 1, r
    return float(r[0]["value"][1])
hq, sq, up = val(sys.argv[1]), val(sys.argv[2]), val(sys.argv[3])
last = json.loads(open(sys.argv[4]).read())
ebee = last["p99_ns"] / 1e9
print(f"ebee p99 {ebee*1e3:.3f} ms; PromQL histogram_quantile {hq*1e3:.3f} ms "
      f"({(hq/ebee-1)*100:+.1f}%); summary p99 {sq*1e3:.3f} ms ({(sq/ebee-1)*100:+.1f}%); "
      f"rps {last['rps']}")
assert up == 1, up
assert last["requests"] > 1000, last
assert abs(hq / ebee - 1) <= 0.10, "histogram_quantile off by more than 10%"
assert abs(sq / ebee - 1) <= 0.10, "summary p99 off by more than 10%"
PY
echo "PASS"
