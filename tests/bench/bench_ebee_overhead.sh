#!/bin/bash
# What tracing costs, measured side by side in one run (root):
#  1. memcached -t 2 saturated by memcaslap (-T 2 -c 32), untraced and traced
#     by `ebee trace --mode io` in interleaved pairs: throughput ratio (median
#     of pairs), server+tracer CPU per request, exact counts vs memcached's own.
#  2. BPF run time per event of every attached program (kernel.bpf_stats_enabled),
#     and BPF time per request.
#  3. The cost to a process that is NOT traced: a syscall-heavy dd, alone vs
#     while ebee traces another process in io mode and in conn mode.
# Environment: BENCH_PAIRS (default 5), BENCH_SECS per run (default 3).
set -u
cd "$(dirname "$0")/../.."
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
command -v memcaslap >/dev/null || { echo "SKIP: memcaslap missing (apt-get install libmemcached-tools)"; exit 77; }
[ -x build/ebee ] || { echo "build first"; exit 1; }
pairs=${BENCH_PAIRS:-5}
secs=${BENCH_SECS:-3}
tmp=$(mktemp -d /tmp/ebee-bench.XXXXXX)
mcpid=""
cleanup() {
	[ -n "$mcpid" ] && kill "$mcpid" 2>/dev/null
	pkill -f "build/ebee trace --pid" 2>/dev/null
	sysctl -qw kernel.bpf_stats_enabled=0
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
. tests/lib/servers.sh

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
mc_cmds() {
	python3 - "$1" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"stats\r\n"); b = b""
while not b.endswith(b"END\r\n"): b += s.recv(65536)
st = dict(l.split()[1:3] for l in b.decode().splitlines() if l.startswith("STAT"))
print(int(st["cmd_get"]) + int(st["cmd_set"]))
PY
}
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
hz=$(getconf CLK_TCK)

port=$(free_port)
mcpid=$(start_memcached "$port") || exit 1
memcaslap -s 127.0.0.1:$port -T 2 -c 32 -t 1s >/dev/null 2>&1 # warm-up, fills the cache

run_slap() { # prints ops
	memcaslap -s 127.0.0.1:$port -T 2 -c 32 -t ${secs}s 2>/dev/null | awk '/^Run time/ { for (i = 1; i <= NF; i++) if ($i == "Ops:") print $(i + 1) }'
}

echo "memcached -t 2 saturated by memcaslap -T 2 -c 32, ${secs}s runs, $pairs interleaved pairs"
printf "%-5s %12s %12s %8s %14s %14s %10s %10s\n" pair untraced_ops traced_ops ratio cpu_us/req_off cpu_us/req_on ebee_reqs memcached
: >"$tmp/ratios"; : >"$tmp/cpu_off"; : >"$tmp/cpu_on"
exact=1
for i in $(seq "$pairs"); do
	c0=$(cpu_ticks "$mcpid")
	off=$(run_slap)
	c1=$(cpu_ticks "$mcpid")

	before=$(mc_cmds "$port")
	build/ebee trace --pid "$mcpid" --mode io --duration $((secs + 3)) --json >"$tmp/ebee.json" 2>"$tmp/ebee.err" &
	epid=$!
	for _ in $(seq 100); do grep -q "probes live" "$tmp/ebee.err" && break; sleep 0.02; done
	e0=$(cpu_ticks "$epid")
	c2=$(cpu_ticks "$mcpid")
	on=$(run_slap)
	c3=$(cpu_ticks "$mcpid")
	e1=$(cpu_ticks "$epid")
	wait "$epid"
	after=$(mc_cmds "$port")
	reqs=$(python3 -c "import json; print(json.loads(open('$tmp/ebee.json').readline())['requests'])")
	[ "$reqs" -eq $((after - before - 0)) ] || exact=0
	ratio=$(awk -v a="$on" -v b="$off" 'BEGIN { printf "%.3f", a / b }')
	cpu_off=$(awk -v t=$((c1 - c0)) -v n="$off" -v hz="$hz" 'BEGIN { printf "%.2f", t / hz * 1e6 / n }')
	cpu_on=$(awk -v t=$((c3 - c2 + e1 - e0)) -v n="$on" -v hz="$hz" 'BEGIN { printf "%.2f", t / hz * 1e6 / n }')
	echo "$ratio" >>"$tmp/ratios"; echo "$cpu_off" >>"$tmp/cpu_off"; echo "$cpu_on" >>"$tmp/cpu_on"
	printf "%-5s %12s %12s %8s %14s %14s %10s %10s\n" "$i" "$off" "$on" "$ratio" "$cpu_off" "$cpu_on" "$reqs" "$((after - before))"
done
mr=$(median <"$tmp/ratios"); mo=$(median <"$tmp/cpu_off"); mn=$(median <"$tmp/cpu_on")
echo "median throughput traced/untraced: $mr"
echo "median CPU per request (server, + tracer when traced): untraced $mo us, traced $mn us, ratio $(awk -v a="$mn" -v b="$mo" 'BEGIN { printf "%.2f", a / b }')"
[ $exact -eq 1 ] && echo "counts: ebee requests == memcached cmd_get+cmd_set in every traced run" ||
	echo "counts: MISMATCH in some run (see table; dropped records are reported by ebee --json)"

echo
echo "BPF run time per event (kernel.bpf_stats_enabled=1), one traced ${secs}s run:"
sysctl -qw kernel.bpf_stats_enabled=1
build/ebee trace --pid "$mcpid" --mode io --duration $((secs + 2)) --json >"$tmp/ebee.json" 2>"$tmp/ebee.err" &
epid=$!
for _ in $(seq 100); do grep -q "probes live" "$tmp/ebee.err" && break; sleep 0.02; done
ops=$(run_slap)
bpftool prog show --json >"$tmp/progs.json"
wait "$epid"
sysctl -qw kernel.bpf_stats_enabled=0
python3 - "$tmp/progs.json" "$tmp/ebee.json" "$ops" <<'PY'
import json, sys
progs = json.load(open(sys.argv[1]))
reqs = json.loads(open(sys.argv[2]).readline())["requests"]
names = ("enter_", "exit_", "on_proc_")
tot_ns = tot_cnt = 0
rows = []
for p in progs:
    n = p.get("name", "")
    if not n.startswith(names) or "run_cnt" not in p:
        continue
    rows.append((n, p["run_cnt"], p["run_time_ns"]))
# several ebee instances may have run: keep the busiest program per name
best = {}
for n, c, t in rows:
    if n not in best or c > best[n][0]:
        best[n] = (c, t)
print("%-16s %12s %10s" % ("program", "events", "ns/event"))
for n in sorted(best):
    c, t = best[n]
    tot_ns += t; tot_cnt += c
    print("%-16s %12d %10s" % (n, c, "%.0f" % (t / c) if c else "-"))
print("all programs: %d events, %.0f ns/event on average; %.2f events and %.0f ns of BPF per request (%d requests)"
      % (tot_cnt, tot_ns / max(tot_cnt, 1), tot_cnt / max(reqs, 1), tot_ns / max(reqs, 1), reqs))
PY

echo
echo "Cost to an untraced process: dd bs=1 count=2000000 (4M read+write syscalls), $pairs interleaved triples"
kill "$mcpid"; mcpid=""
sleep 0.2
sleep 600 >/dev/null 2>&1 &
idle=$! # a traced process that does nothing
dd_secs() { local s=$EPOCHREALTIME; dd if=/dev/zero of=/dev/null bs=1 count=2000000 2>/dev/null; awk -v a="$s" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.4f", b - a }'; }
: >"$tmp/r_io"; : >"$tmp/r_conn"
printf "%-5s %10s %10s %10s\n" run alone_s io_s conn_s
for i in $(seq "$pairs"); do
	a=$(dd_secs)
	build/ebee trace --pid "$idle" --mode io --duration 30 >/dev/null 2>"$tmp/e.err" &
	epid=$!
	for _ in $(seq 100); do grep -q "probes live" "$tmp/e.err" && break; sleep 0.02; done
	b=$(dd_secs)
	kill -INT "$epid"; wait "$epid"
	build/ebee trace --pid "$idle" --mode conn --duration 30 >/dev/null 2>"$tmp/e.err" &
	epid=$!
	for _ in $(seq 100); do grep -q "probes live" "$tmp/e.err" && break; sleep 0.02; done
	c=$(dd_secs)
	kill -INT "$epid"; wait "$epid"
	printf "%-5s %10s %10s %10s\n" "$i" "$a" "$b" "$c"
	awk -v a="$a" -v b="$b" 'BEGIN { print b / a }' >>"$tmp/r_io"
	awk -v a="$a" -v c="$c" 'BEGIN { print c / a }' >>"$tmp/r_conn"
done
kill "$idle" 2>/dev/null
echo "median slowdown of the untraced dd: io probes attached $(median <"$tmp/r_io")x, conn probes only $(median <"$tmp/r_conn")x"
