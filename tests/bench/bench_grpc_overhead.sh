#!/bin/bash
# What tracing a gRPC server costs, measured side by side in one run (root):
#  1. grpc_server (no delay) saturated by grpc_client (32 calls in flight on one
#     channel), untraced and traced by `ebee trace --mode grpc` in interleaved
#     pairs: server+tracer CPU per RPC and its ratio, throughput ratio, and the
#     client's CPU per RPC (an untraced process mapping the same libgrpc: the
#     uprobes are on the file, so it takes the traps and the gate too). Exact
#     counts: ebee's requests == calls the client made.
#  2. BPF run time per uprobe hit of each grpc program (kernel.bpf_stats_enabled:
#     run_time_ns / run_cnt), hits per RPC, and the whole extra server CPU per
#     hit (trap + BPF), from part 1.
# Environment: BENCH_PAIRS (default 5), BENCH_CALLS per run (default 20000).
set -u
cd "$(dirname "$0")/../.."
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
[ -x build/ebee ] && [ -x build/fixtures/grpc_server ] && [ -x build/fixtures/grpc_client ] ||
	{ echo "build first (make all)"; exit 1; }
pairs=${BENCH_PAIRS:-5}
calls=${BENCH_CALLS:-20000}
tmp=$(mktemp -d /tmp/ebee-bench.XXXXXX)
srv="" epid=""
cleanup() {
	[ -n "$epid" ] && kill "$epid" 2>/dev/null
	[ -n "$srv" ] && kill "$srv" 2>/dev/null
	sysctl -qw kernel.bpf_stats_enabled=0
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
hz=$(getconf CLK_TCK)

build/fixtures/grpc_server --port-file "$tmp/port" --delay-us 0 >"$tmp/srv.out" 2>&1 &
srv=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
port=$(cat "$tmp/port")
build/fixtures/grpc_client --port "$port" -n 2000 -c 32 >/dev/null # warm-up

# One client run: prints "seconds client_cpu_seconds" (user + system, from
# /usr/bin/time; -1 without it).
run_client() {
	local s=$EPOCHREALTIME
	/usr/bin/time -f "%U %S" -o "$tmp/time" build/fixtures/grpc_client --port "$port" -n "$calls" -c 32 >"$tmp/client" ||
		echo "client failed: $(cat "$tmp/client")" >&2
	awk -v a="$s" -v b="$EPOCHREALTIME" -v t="$(cat "$tmp/time")" \
		'BEGIN { split(t, u, " "); printf "%.4f %.4f\n", b - a, u[1] + u[2] }'
}
[ -x /usr/bin/time ] || run_client() {
	local s=$EPOCHREALTIME
	build/fixtures/grpc_client --port "$port" -n "$calls" -c 32 >"$tmp/client"
	awk -v a="$s" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.4f -1\n", b - a }'
}

echo "grpc_server (no delay) saturated by grpc_client -c 32 on one channel, $calls calls per run, $pairs interleaved pairs"
printf "%-5s %8s %8s %9s %14s %13s %13s %14s %13s %10s\n" pair off_s on_s thr_ratio srv_us/rpc_off srv_us/rpc_on ebee_us/rpc cli_us/rpc_off cli_us/rpc_on ebee_reqs
: >"$tmp/r_thr"; : >"$tmp/r_cpu"; : >"$tmp/off"; : >"$tmp/on"; : >"$tmp/coff"; : >"$tmp/con"; : >"$tmp/tr"
exact=1
for i in $(seq "$pairs"); do
	c0=$(cpu_ticks "$srv")
	read -r t_off cl_off < <(run_client)
	c1=$(cpu_ticks "$srv")

	build/ebee trace --pid "$srv" --mode grpc --duration 600 --json >"$tmp/ebee.json" 2>"$tmp/ebee.err" &
	epid=$!
	for _ in $(seq 500); do grep -q "probes live" "$tmp/ebee.err" && break; sleep 0.02; done
	e0=$(cpu_ticks "$epid")
	c2=$(cpu_ticks "$srv")
	read -r t_on cl_on < <(run_client)
	c3=$(cpu_ticks "$srv")
	e1=$(cpu_ticks "$epid")
	kill -INT "$epid"
	wait "$epid"
	epid=""
	reqs=$(python3 -c "import json; print(json.loads(open('$tmp/ebee.json').readline())['requests'])" 2>/dev/null || echo -1)
	[ "$reqs" -eq "$calls" ] || exact=0
	off=$(awk -v t=$((c1 - c0)) -v n="$calls" -v hz="$hz" 'BEGIN { printf "%.2f", t / hz * 1e6 / n }')
	on=$(awk -v t=$((c3 - c2 + e1 - e0)) -v n="$calls" -v hz="$hz" 'BEGIN { printf "%.2f", t / hz * 1e6 / n }')
	tr=$(awk -v t=$((e1 - e0)) -v n="$calls" -v hz="$hz" 'BEGIN { printf "%.2f", t / hz * 1e6 / n }')
	coff=$(awk -v t="$cl_off" -v n="$calls" 'BEGIN { printf "%.2f", t * 1e6 / n }')
	con=$(awk -v t="$cl_on" -v n="$calls" 'BEGIN { printf "%.2f", t * 1e6 / n }')
	thr=$(awk -v a="$t_off" -v b="$t_on" 'BEGIN { printf "%.3f", a / b }')
	echo "$thr" >>"$tmp/r_thr"
	awk -v a="$on" -v b="$off" 'BEGIN { print a / b }' >>"$tmp/r_cpu"
	echo "$off" >>"$tmp/off"; echo "$on" >>"$tmp/on"; echo "$coff" >>"$tmp/coff"; echo "$con" >>"$tmp/con"; echo "$tr" >>"$tmp/tr"
	printf "%-5s %8s %8s %9s %14s %13s %13s %14s %13s %10s\n" "$i" "$t_off" "$t_on" "$thr" "$off" "$on" "$tr" "$coff" "$con" "$reqs"
done
mo=$(median <"$tmp/off"); mn=$(median <"$tmp/on")
echo "median throughput traced/untraced: $(median <"$tmp/r_thr")"
echo "median CPU per RPC (server, + tracer when traced): untraced $mo us, traced $mn us (of which the ebee process $(median <"$tmp/tr") us); median of pair ratios $(median <"$tmp/r_cpu")"
echo "median CPU per RPC of the (untraced) client on the same libgrpc: untraced $(median <"$tmp/coff") us, while the server is traced $(median <"$tmp/con") us"
[ $exact -eq 1 ] && echo "counts: ebee requests == calls made in every traced run" ||
	echo "counts: MISMATCH in some run (see table)"

echo
echo "BPF run time per uprobe hit (kernel.bpf_stats_enabled=1), one traced run of $calls calls:"
sysctl -qw kernel.bpf_stats_enabled=1
build/ebee trace --pid "$srv" --mode grpc --duration 600 --json >"$tmp/ebee.json" 2>"$tmp/ebee.err" &
epid=$!
for _ in $(seq 500); do grep -q "probes live" "$tmp/ebee.err" && break; sleep 0.02; done
run_client >/dev/null
bpftool prog show --json >"$tmp/progs.json"
kill -INT "$epid"
wait "$epid"
epid=""
sysctl -qw kernel.bpf_stats_enabled=0
python3 - "$tmp/progs.json" "$calls" "$mo" "$mn" "$(median <"$tmp/coff")" "$(median <"$tmp/con")" <<'PY'
import json, sys
progs = json.load(open(sys.argv[1]))
calls = int(sys.argv[2])
off, on, coff, con = (float(x) for x in sys.argv[3:7])
best = {}
for p in progs:
    n = p.get("name", "")
    if n.startswith("grpc_stream_") and "run_cnt" in p:
        if n not in best or p["run_cnt"] > best[n][0]:
            best[n] = (p["run_cnt"], p["run_time_ns"])
print("%-20s %12s %10s %10s" % ("program", "hits", "hits/rpc", "ns/hit"))
tot_c = tot_t = 0
for n in sorted(best):
    c, t = best[n]
    tot_c += c; tot_t += t
    print("%-20s %12d %10.2f %10s" % (n, c, c / calls, "%.0f" % (t / c) if c else "-"))
# The client maps the same file: its hits count too (they stop at the gate).
print("all grpc programs: %d hits (server and client), %.0f ns of BPF per hit on average, %.2f hits per RPC"
      % (tot_c, tot_t / max(tot_c, 1), tot_c / calls))
if tot_c and coff >= 0:
    extra = (on - off) + (con - coff)
    print("extra CPU per RPC, traced - untraced (medians; server + tracer + client): %.2f us, "
          "i.e. ~%.0f ns per uprobe hit including the trap" % (extra, extra * 1e3 / (tot_c / calls)))
PY
