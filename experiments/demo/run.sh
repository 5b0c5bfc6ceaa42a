#!/bin/bash
# The main job (`make demo`, root): both halves of the project on this machine.
#  1. ebee: a connection-per-request server and memcached under open-loop load;
#     `ebee trace` reports each one's server-side latency and throughput (no help
#     from the servers or the clients), next to what the load generator measured.
#  2. parties: the closed loop. A CPU-bound server starts on 1 of the 2 CPUs; its
#     load rises past what one CPU serves within the 10 ms p99 target and falls
#     back. PARTIES, fed by ebee, gives it the second CPU and takes it back later.
set -u
cd "$(dirname "$0")/../.."
[ "$(id -u)" -eq 0 ] || { echo "demo: needs root (BPF, cgroups)"; exit 1; }
for b in build/ebee build/parties build/loadgen build/fixtures/cpr_server; do
	[ -x "$b" ] || { echo "demo: $b missing: run make all"; exit 1; }
done
. tests/lib/servers.sh
tmp=$(mktemp -d /tmp/ebee-demo.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

echo "=== 1. ebee: server-side latency of two unmodified servers, from eBPF alone"
build/fixtures/cpr_server --ready-file "$tmp/ready" --threads 4 --work-us 300 --timeout 120 >/dev/null 2>&1 &
web=$!
pids+=($web)
mport=$(free_port)
mc=$(start_memcached "$mport") || exit 1
pids+=($mc)
for _ in $(seq 100); do [ -s "$tmp/ready" ] && break; sleep 0.05; done
wport=$(cat "$tmp/ready")
echo "web: cpr_server (pid $web, 300 us of CPU per request, one request per connection)"
echo "mc:  memcached (pid $mc, persistent connections)"
build/ebee trace --pid "$web" --pid "$mc" --duration 7 -v >"$tmp/ebee.out" 2>"$tmp/ebee.err" &
epid=$!
pids+=($epid)
for _ in $(seq 100); do grep -q "probes live" "$tmp/ebee.err" && break; sleep 0.02; done
build/loadgen --port "$wport" --proto http --rate 800 --duration 5 --summary >"$tmp/lg-web" 2>&1 &
l1=$!
build/loadgen --port "$mport" --proto memcached --rate 5000 --duration 5 --summary >"$tmp/lg-mc" 2>&1 &
l2=$!
wait $l1 $l2
wait $epid
grep -E "mode|exited" "$tmp/ebee.err" | sed 's/^/  /'
echo
echo "ebee trace (server side, all requests while tracing):"
sed 's/^/  /' "$tmp/ebee.out"
echo
echo "loadgen (client side, open loop, 5 s):"
echo "  web: $(grep -E '^sent' "$tmp/lg-web")"
echo "       $(grep -E 'latency us' "$tmp/lg-web" | sed 's/^ *//')"
echo "  mc:  $(grep -E '^sent' "$tmp/lg-mc")  (plus the key preload sets)"
echo "       $(grep -E 'latency us' "$tmp/lg-mc" | sed 's/^ *//')"
kill "$web" "$mc" 2>/dev/null
wait "$web" "$mc" 2>/dev/null

echo
echo "=== 2. parties: PARTIES fed by ebee moves a CPU to the workload that needs it"
echo "config: configs/demo-small.ini (one workload 'web', target p99 10 ms, starts on CPU 0)"
log=$tmp/parties.jsonl
build/parties -c configs/demo-small.ini --duration 40 --log "$log" >"$tmp/parties.out" 2>&1 &
ppid_=$!
pids+=($ppid_)
sleep 1.5
echo "load: 100 req/s, ramp to 800 req/s at t=5 s, hold 11 s, back to 100 req/s at t=17 s until t=36 s"
build/loadgen --port 18080 --schedule 0:100,4:100,5:800,16:800,17:100,36:100 --summary >"$tmp/lg" 2>&1
wait $ppid_
echo
printf "  %6s %8s %10s %6s  %s\n" t rps p99_ms cpus "action: reason"
python3 - "$log" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    o = json.loads(line)
    if o.get("summary"):
        print("\n  parties: %d intervals, %d actions; controller CPU %.0f us per interval (%.3f%% of a core)"
              % (o["intervals"], o["actions"], o["loop_cpu_us_per_interval"], o["loop_cpu_pct"]))
        continue
    if "wl" not in o:
        continue
    w = o["wl"][0]
    if o["tick"] % 2 and w["action"] in ("hold", "none"):
        continue  # every second quiet interval, to keep it short
    p99 = "%.2f" % (w["p99_ebee_us"] / 1000) if w.get("p99_ebee_us") is not None else "idle"
    print("  %6.1f %8.0f %10s %6s  %s: %s" % (o["t"], w.get("rps") or 0, p99, w["cpus"], w["action"], w["reason"]))
PY
echo
echo "client side (loadgen): $(grep -E '^sent' "$tmp/lg")"
echo "                       $(grep -E 'latency us' "$tmp/lg" | sed 's/^ *//')"
tail -1 "$tmp/parties.out" | sed 's/^/  /'
echo
echo "cgroups restored: $(ls -d /sys/fs/cgroup/cpuset/parties-demo 2>/dev/null || echo yes, parties-demo removed)"
