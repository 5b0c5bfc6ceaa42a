#!/bin/bash
# What tracing costs, on both of ebee's paths (socket tracepoints and syscall
# tracepoints), measured side by side in one run (root). Every comparison is
# interleaved (untraced, socket, syscall, untraced, ...; section 1 alternates
# the order per round, ABBA) and reported as the median of per-round ratios,
# because the machine's speed drifts between runs.
#  1. memcached -t 2 saturated by memcaslap (-T 2 -c 32): throughput and
#     server+tracer CPU per request (server CPU includes the BPF run time;
#     ebee's own CPU is added), exact counts against memcached's own, and the
#     framing of the last round (memcache: verified connections counted by length).
#     1b: the same ratio with untraced and traced phases inside one memcaslap run (ebee
#     started and stopped under it, ABBA), which the load's own run-to-run swings do not blur.
#  2. BPF run time per event of every attached program (kernel.bpf_stats_enabled),
#     events and BPF ns per request, per path.
#  3. The cost to processes that are NOT traced, while ebee traces an idle
#     memcached in io mode: 1-byte writes+reads through a pipe, and through a
#     TCP connection on 127.0.0.1 (build/fixtures/io_spin): rate traced/alone.
#  4. memcached at half its saturation rate from the open-loop load generator
#     (build/loadgen; saturation = what it achieves when offered far more):
#     p99 traced/untraced.
#  5. redis-server saturated by redis-benchmark with 16 commands pipelined per
#     write (RESP framing, docs/design.md 4.9): server+tracer CPU per command
#     traced/untraced, exact counts against redis's total_commands_processed;
#     then one more traced run for the BPF time per event (as 2) of the framer.
#  6. nginx (h2c) saturated by h2load -c 4 -m 16 (HTTP/2 framing by stream,
#     docs/design.md 4.9): server+tracer CPU per request traced/untraced, exact
#     counts against h2load's succeeded requests; the BPF time per event as in 5.
#  7. nginx saturated by h2load --h1: HTTP/1.1 pipelined 16 deep (HTTP/1.x framing)
#     and HTTPS, TLS 1.3 keep-alive (TLS record framing): as 6, each.
# Environment: BENCH_PAIRS (rounds, default 5), BENCH_SECS per run (default 3), BENCH_WARM
# (section 1: seconds of load before each run, not measured; default 1),
# BENCH_SECTIONS (default "1 2 3 4 5 6 7"), BENCH_PATHS (default "socket socket-fentry
# syscall": socket as auto attaches it, socket with fentry forced, left out where
# auto took fentry already or the kernel refuses it),
# BENCH_SPIN (section 3's 1-byte round trips: "PIPE TCP", default "1000000 200000"; fewer
# under emulation), BENCH_QUERY_MS (ebee reports, i.e. queries every percentile, this often; 1000),
# BENCH_REDIS_N, BENCH_H2_N, BENCH_H1_N (requests a run in sections 5, 6 and 7: 400000,
# 200000, 200000),
# BENCH_INRUN_ROUNDS (1b's rounds, default 15; 0: none), BENCH_INRUN_SECS (1b's phase length, 2),
# BENCH_SRV_CGROUP (1: the servers in a cgroup v2 of their own, the default; 0: in the bench's),
# BENCH_BASE_EBEE (another build's ebee binary: adds a column "base", its socket
# path, to compare two versions side by side; section 1 also prints the median
# of socket / base per round).
set -u
cd "$(dirname "$0")/../.."
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
command -v memcaslap >/dev/null || { echo "SKIP: memcaslap missing (apt-get install libmemcached-tools)"; exit 77; }
for b in build/ebee build/loadgen build/fixtures/io_spin; do
	[ -x $b ] || { echo "build first ($b missing)"; exit 1; }
done
pairs=${BENCH_PAIRS:-5}
secs=${BENCH_SECS:-3}
tmp=$(mktemp -d /tmp/ebee-bench.XXXXXX)
mcpid=""
epids=()
cleanup() {
	[ -n "$mcpid" ] && kill "$mcpid" 2>/dev/null
	for p in "${epids[@]}"; do kill "$p" 2>/dev/null; done
	sysctl -qw kernel.bpf_stats_enabled=0
	wait 2>/dev/null
	# the servers' cgroup, once they have gone (they may take a moment to exit)
	bench_srv_cgroup_remove
	rm -rf "$tmp"
}
trap cleanup EXIT
. tests/lib/servers.sh
. tests/lib/bench.sh

# Under emulation (qemu's TCG: systemd-detect-virt says qemu, KVM says kvm) every rate is
# the emulator's: only ratios from the same run mean anything, and those only roughly.
virt=$(systemd-detect-virt 2>/dev/null)
[ "$virt" = qemu ] && echo "note: measured under emulation (qemu TCG, kernel $(uname -r)): absolute figures are meaningless, ratios are rough"

# ebee's arguments for a configuration: a path, or socket-fentry (the socket path, fentry forced).
path_args() { case $1 in socket-fentry) echo "--path socket --attach fentry" ;; *) echo "--path $1" ;; esac; }

# Which paths this kernel can do (the socket path needs its tracepoints or fentry), and
# how the socket path attaches.
paths=()
auto_attach=
for p in ${BENCH_PATHS:-socket socket-fentry syscall}; do
	# shellcheck disable=SC2046
	if build/ebee trace --pid $$ $(path_args "$p") --duration 0.1 --json >"$tmp/probe.json" 2>"$tmp/probe.err"; then
		a=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["attach"] or "")' "$tmp/probe.json")
		[ "$p" = socket ] && auto_attach=$a
		if [ "$p" = socket-fentry ] && [ "$auto_attach" = fentry ]; then
			echo "note: socket-fentry left out: the socket path attaches with fentry here"
			continue
		fi
		paths+=("$p")
		echo "note: $p path${a:+, attach $a}"
	else
		echo "note: $p path not available here: $(cat "$tmp/probe.err")"
	fi
done
[ -n "${BENCH_BASE_EBEE:-}" ] && paths+=(base)
[ ${#paths[@]} -gt 0 ] || { echo "SKIP: no ebee path works here"; exit 77; }

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
div() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }'; }
# round_order I: the order of round I's runs in $order: odd rounds run untraced first, even
# rounds last (ABBA), so that a drift of the machine's speed within a round favours neither.
round_order() {
	order=(untraced "${paths[@]}")
	if [ $(($1 % 2)) -eq 0 ]; then
		local rev=() j
		for ((j = ${#order[@]} - 1; j >= 0; j--)); do rev+=("${order[j]}"); done
		order=("${rev[@]}")
	fi
}
hz=$(getconf CLK_TCK)
want() { [[ " ${BENCH_SECTIONS:-1 2 3 4 5 6 7} " == *" $1 "* ]]; }

# Start `ebee trace` on memcached with path $1 for $2 seconds; its pid in $epid.
start_ebee() {
	local bin=build/ebee path=$1
	[ "$path" = base ] && { bin=$BENCH_BASE_EBEE; path=socket; }
	# shellcheck disable=SC2046
	# Queried like a controller would (every interval, all percentiles of
	# both latencies), so the window's lazy tree (window.c) is paid for.
	# Emptied here: the job's own redirection happens when it gets scheduled,
	# and until then the wait below would find the previous run's "probes
	# live" and start the load before this ebee sees the connections open
	# (they are then adopted and framed by length: the bench's count
	# mismatches, memcached's included).
	: >"$tmp/ebee.err"
	"$bin" trace --pid "${target_pid:-$mcpid}" --mode io $(path_args "$path") --duration "$2" --interval "${BENCH_QUERY_MS:-1000}" --json >"$tmp/ebee.json" 2>"$tmp/ebee.err" &
	epid=$!
	epids+=($epid)
	for _ in $(seq 150); do grep -q "probes live" "$tmp/ebee.err" && return 0; sleep 0.02; done
	echo "ebee did not start: $(cat "$tmp/ebee.err")" >&2
	return 1
}

# bpf_report PROGS_JSON EBEE_JSON: ns per event of ebee's programs (bpftool prog show
# --json, taken while ebee ran with kernel.bpf_stats_enabled=1) and events and BPF time per
# request (ebee's last JSON line).
bpf_report() {
	python3 - "$1" "$2" <<'PY'
import json, sys
progs = json.load(open(sys.argv[1]))
reqs = json.loads(open(sys.argv[2]).readlines()[-1])["requests"]
names = ("enter_", "exit_", "on_proc_", "sock_", "frame_")
best = {}
for p in progs:
    n = p.get("name", "")
    if not n.startswith(names) or "run_cnt" not in p:
        continue
    # several ebee instances may have run: keep the busiest program per name
    if n not in best or p["run_cnt"] > best[n][0]:
        best[n] = (p["run_cnt"], p["run_time_ns"])
tot_ns = tot_cnt = 0
print("  %-16s %12s %10s" % ("program", "events", "ns/event"))
for n in sorted(best):
    c, t = best[n]
    if not c:
        continue
    tot_ns += t; tot_cnt += c
    print("  %-16s %12d %10.0f" % (n, c, t / c))
print("  all programs: %d events, %.0f ns/event on average; %.2f events and %.0f ns of BPF per request (%d requests; events of other processes on the host included)"
      % (tot_cnt, tot_ns / max(tot_cnt, 1), tot_cnt / max(reqs, 1), tot_ns / max(reqs, 1), reqs))
PY
}

port=$(free_port)
# The servers (memcached, and redis and nginx in sections 5-7) in a cgroup of their own,
# their clients (memcaslap, loadgen, redis-benchmark, h2load) where the bench runs (why:
# tests/lib/bench.sh).
bench_srv_cgroup "ebee-bench-$$"
mcpid=$(in_srvcg start_memcached "$port") || exit 1
memcaslap -s 127.0.0.1:$port -T 2 -c 32 -t 1s >/dev/null 2>&1 # warm-up, fills the cache

# Section 1 measures the steady state: each run begins with BENCH_WARM seconds (default 1;
# 0: none) of the same load, not measured, traced or not. In its first second a new ebee
# fills its 100 000-record window, about 2 000 first-touch page faults once per workload,
# which in 3 s runs measured from the start were half of ebee's own CPU per request
# (0.19-0.28 us against 0.08-0.1 us after it).
warm=${BENCH_WARM:-1}
warm_slap() {
	[ "$warm" = 0 ] || memcaslap -s 127.0.0.1:$port -T 2 -c 32 -t ${warm}s >/dev/null 2>&1
}
run_slap() { # prints ops
	memcaslap -s 127.0.0.1:$port -T 2 -c 32 -t ${secs}s 2>/dev/null | awk '/^Run time/ { for (i = 1; i <= NF; i++) if ($i == "Ops:") print $(i + 1) }'
}

if want 1; then
echo "1. memcached -t 2 saturated by memcaslap -T 2 -c 32, ${secs}s runs after ${warm}s of the same load, $pairs interleaved rounds"
printf "%-5s %-13s %12s %12s %14s %10s %10s %12s\n" round path ops ratio cpu_us/req cpu_ratio exact ebee_us/req
exact=1
# One saturated run of configuration $1 (untraced or a path): sets ops[$1],
# cpu[$1] (server + tracer CPU per request, us), ebee_us[$1] and ok[$1].
declare -A ops cpu ebee_us ok framing
run_config() {
	local p=$1 c0 c1 e0=0 e1=0 before after reqs
	if [ "$p" = untraced ]; then
		warm_slap
		c0=$(cpu_ticks "$mcpid")
		ops[$p]=$(run_slap)
		c1=$(cpu_ticks "$mcpid")
		ok[$p]=-
	else
		before=$(memcached_requests "$port")
		start_ebee "$p" $((secs + warm + 3)) || exit 1
		warm_slap
		e0=$(cpu_ticks "$epid")
		c0=$(cpu_ticks "$mcpid")
		ops[$p]=$(run_slap)
		c1=$(cpu_ticks "$mcpid")
		e1=$(cpu_ticks "$epid")
		wait "$epid"
		after=$(memcached_requests "$port")
		read -r reqs framing[$p] < <(python3 -c "import json; e = json.loads(open('$tmp/ebee.json').readlines()[-1]); print(e['requests'], f\"{e['framing']}, {e.get('verified', 0)} connection(s) verified and counted by length, {e.get('late', 0)} late, untrusted {e['untrusted']}\")")
		ok[$p]=yes
		[ "$reqs" -eq $((after - before)) ] || { ok[$p]="no($reqs/$((after - before)))"; exact=0; }
	fi
	cpu[$p]=$(awk -v t=$((c1 - c0 + e1 - e0)) -v n="${ops[$p]}" -v hz="$hz" 'BEGIN { printf "%.3f", t / hz * 1e6 / n }')
	ebee_us[$p]=$(awk -v t=$((e1 - e0)) -v n="${ops[$p]}" -v hz="$hz" 'BEGIN { printf "%.3f", t / hz * 1e6 / n }')
}
for i in $(seq "$pairs"); do
	round_order "$i"
	for p in "${order[@]}"; do run_config "$p"; done
	off=${ops[untraced]}
	echo "$off" >>"$tmp/ops_off"
	printf "%-5s %-13s %12s %12s %14s %10s %10s\n" "$i" untraced "$off" 1 "${cpu[untraced]}" 1 -
	for p in "${paths[@]}"; do
		div "${ops[$p]}" "$off" >>"$tmp/r_ops_$p"; echo >>"$tmp/r_ops_$p"
		div "${cpu[$p]}" "${cpu[untraced]}" >>"$tmp/r_cpu_$p"; echo >>"$tmp/r_cpu_$p"
		printf "%-5s %-13s %12s %12s %14s %10s %10s %12s\n" "$i" "$p" "${ops[$p]}" "$(div "${ops[$p]}" "$off")" "${cpu[$p]}" "$(div "${cpu[$p]}" "${cpu[untraced]}")" "${ok[$p]}" "${ebee_us[$p]}"
	done
	# this build against BENCH_BASE_EBEE in the same round
	[ -n "${cpu[base]:-}" ] && [ -n "${cpu[socket]:-}" ] &&
		{ div "${cpu[socket]}" "${cpu[base]}"; echo; } >>"$tmp/r_cpu_vs_base"
done
for p in "${paths[@]}"; do
	echo "  $p path: median throughput traced/untraced $(median <"$tmp/r_ops_$p"), median CPU per request traced/untraced $(median <"$tmp/r_cpu_$p") (target <= 1.10)"
done
[ -s "$tmp/r_cpu_vs_base" ] &&
	echo "  socket path / base, CPU per request, same rounds: median $(median <"$tmp/r_cpu_vs_base")"
for p in "${paths[@]}"; do echo "  framing, $p path, last round: ${framing[$p]}"; done
[ $exact -eq 1 ] && echo "  counts: ebee requests == memcached cmd_get+cmd_set in every traced run" ||
	echo "  counts: MISMATCH in some run (see the table; dropped records are reported by ebee --json)"

# 1b. The same ratio with the untraced and traced phases inside ONE load run. Each memcaslap
# run settles into a pace of its own (which CPU each of the four busy threads gets, how many
# requests a wakeup finds): untraced runs alone differ by 5-10% in CPU per request, and the
# ratio of two separate runs swings by 0.12 (sd) around its median, so 15 rounds leave that
# median about 0.04 either way. Within one run the pace changes seldom, so here memcaslap
# runs once, for the whole section, and ebee is started and stopped under it: each round
# measures BENCH_INRUN_SECS (2) seconds untraced and as long traced (from 1 s after ebee's
# probes are live), the order ABBA. memcaslap's connections are open when ebee starts, so
# they are adopted and counted by length (framing `length`): on the server's side
# the same per-request work as memcached's verified connections (the gate, the io
# pattern, one record), without the 1 in 16 ingress samples, which on loopback run in the
# client's context. CPU is memcached's + ebee's, requests are memcached's own count.
inrun=${BENCH_INRUN_ROUNDS:-15}
ipaths=()
for p in "${paths[@]}"; do [ "$p" = syscall ] || ipaths+=("$p"); done
if [ "$inrun" -gt 0 ] && [ ${#ipaths[@]} -gt 0 ]; then
	isecs=${BENCH_INRUN_SECS:-2}
	echo "1b. the same within one memcaslap run: ${isecs}s untraced and traced phases, ABBA, $inrun rounds (paths: ${ipaths[*]})"
	# memcached's cmd_get + cmd_set, read in this shell (no process started mid-phase).
	mc_count() {
		local a b c n=0
		exec 7<>"/dev/tcp/127.0.0.1/$port" || return 1
		printf 'stats\r\n' >&7
		while IFS=' ' read -r -u 7 a b c; do
			case $b in cmd_get | cmd_set) n=$((n + ${c%$'\r'})) ;; esac
			[ "${a%$'\r'}" = END ] && break
		done
		exec 7>&-
		echo "$n"
	}
	# One phase of configuration $1: CPU per request (us) in $phase_cpu.
	inrun_phase() {
		local p=$1 c0 c1 r0 r1 e0=0 e1=0
		if [ "$p" != untraced ]; then
			start_ebee "$p" 600 || return 1
			sleep 1
			e0=$(cpu_ticks "$epid")
		fi
		c0=$(cpu_ticks "$mcpid")
		r0=$(mc_count) || return 1
		sleep "$isecs"
		c1=$(cpu_ticks "$mcpid")
		r1=$(mc_count) || return 1
		kill -0 "$slap_pid" 2>/dev/null || { echo "1b: memcaslap ended before the phases did" >&2; return 1; }
		if [ "$p" != untraced ]; then
			e1=$(cpu_ticks "$epid")
			kill -INT "$epid"
			wait "$epid"
		fi
		phase_cpu=$(awk -v t=$((c1 - c0 + e1 - e0)) -v n=$((r1 - r0)) -v hz="$hz" 'BEGIN { printf "%.4f", (n > 0 ? t / hz * 1e6 / n : 0) }')
	}
	# the load outlasts the phases (an ebee start takes seconds under emulation); it is
	# stopped after the last one, and a phase that finds it gone fails the section
	per_round=$(((1 + ${#ipaths[@]}) * (isecs + 8)))
	memcaslap -s 127.0.0.1:$port -T 2 -c 32 -t $((inrun * per_round + 30))s >/dev/null 2>&1 &
	slap_pid=$!
	sleep 2
	printf "  %-5s %-13s %12s %10s\n" round path cpu_us/req cpu_ratio
	declare -A icpu
	for i in $(seq "$inrun"); do
		order=(untraced "${ipaths[@]}")
		if [ $((i % 2)) -eq 0 ]; then
			rev=()
			for ((j = ${#order[@]} - 1; j >= 0; j--)); do rev+=("${order[j]}"); done
			order=("${rev[@]}")
		fi
		for p in "${order[@]}"; do
			inrun_phase "$p" || { kill "$slap_pid"; exit 1; }
			icpu[$p]=$phase_cpu
		done
		printf "  %-5s %-13s %12s %10s\n" "$i" untraced "${icpu[untraced]}" 1
		for p in "${ipaths[@]}"; do
			r=$(div "${icpu[$p]}" "${icpu[untraced]}")
			echo "$r" >>"$tmp/i_cpu_$p"
			printf "  %-5s %-13s %12s %10s\n" "$i" "$p" "${icpu[$p]}" "$r"
		done
		[ -n "${icpu[base]:-}" ] && [ -n "${icpu[socket]:-}" ] &&
			{ div "${icpu[socket]}" "${icpu[base]}"; echo; } >>"$tmp/i_cpu_vs_base"
	done
	kill "$slap_pid" 2>/dev/null
	wait "$slap_pid" 2>/dev/null
	for p in "${ipaths[@]}"; do
		echo "  $p path, within one run: median CPU per request traced/untraced $(median <"$tmp/i_cpu_$p") (quartiles $(quartiles <"$tmp/i_cpu_$p"), target <= 1.10)"
	done
	[ -s "$tmp/i_cpu_vs_base" ] &&
		echo "  socket path / base, within one run, same rounds: median $(median <"$tmp/i_cpu_vs_base") (quartiles $(quartiles <"$tmp/i_cpu_vs_base"))"
	echo "  framing, last traced phase: $(python3 -c "import json; e = json.loads(open('$tmp/ebee.json').readlines()[-1]); print(e['framing'], 'untrusted', e['untrusted'], 'unseen', e.get('unseen', 0))")"
fi
echo
fi

if want 2; then
echo "2. BPF run time per event (kernel.bpf_stats_enabled=1), one traced ${secs}s run per path"
for p in "${paths[@]}"; do
	sysctl -qw kernel.bpf_stats_enabled=1
	start_ebee "$p" $((secs + 2)) || exit 1
	run_slap >/dev/null
	bpftool prog show --json >"$tmp/progs.json"
	wait "$epid"
	sysctl -qw kernel.bpf_stats_enabled=0
	echo "  $p path:"
	bpf_report "$tmp/progs.json" "$tmp/ebee.json"
done
echo
fi

if want 3; then
echo "3. Cost to untraced processes while ebee traces an idle memcached in io mode, $pairs interleaved rounds"
echo "   (rate traced/alone: 1.0 = no cost; pipe target >= 0.98)"
spin() { build/fixtures/io_spin "$@"; }
read -r npipe ntcp <<<"${BENCH_SPIN:-1000000 200000}"
printf "%-5s %-13s %10s %10s %10s %10s\n" round path pipe_s pipe_rate tcp_s tcp_rate
for i in $(seq "$pairs"); do
	pa=$(spin --pipe --count "$npipe")
	ta=$(spin --tcp --count "$ntcp")
	printf "%-5s %-13s %10s %10s %10s %10s\n" "$i" alone "$pa" 1 "$ta" 1
	for p in "${paths[@]}"; do
		start_ebee "$p" 60 || exit 1
		pb=$(spin --pipe --count "$npipe")
		tb=$(spin --tcp --count "$ntcp")
		kill -INT "$epid"; wait "$epid"
		div "$pa" "$pb" >>"$tmp/r_pipe_$p"; echo >>"$tmp/r_pipe_$p"
		div "$ta" "$tb" >>"$tmp/r_tcp_$p"; echo >>"$tmp/r_tcp_$p"
		printf "%-5s %-13s %10s %10s %10s %10s\n" "$i" "$p" "$pb" "$(div "$pa" "$pb")" "$tb" "$(div "$ta" "$tb")"
	done
done
for p in "${paths[@]}"; do
	echo "  $p path: median rate of an untraced pipe user $(median <"$tmp/r_pipe_$p"), of an untraced TCP user $(median <"$tmp/r_tcp_$p")"
done
echo
fi

if want 5; then
if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
	echo "5. skipped: redis-server or redis-benchmark missing (make deps)"
else
rport=$(free_port)
(in_srvcg exec redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --dir "$tmp") >"$tmp/redis.log" 2>&1 &
rpid=$!
epids+=($rpid)
for _ in $(seq 100); do port_accepts "$rport" && break; sleep 0.05; done
rn=${BENCH_REDIS_N:-400000}
echo "5. redis-server saturated by redis-benchmark -P 16 -c 4 -t get,set -n $rn, $pairs interleaved rounds"
printf "%-5s %-13s %12s %14s %10s %10s %12s\n" round path cmds cpu_us/cmd cpu_ratio exact ebee_us/cmd
rcmds() { redis-cli -p "$rport" info stats | tr -d '\r' | sed -n 's/^total_commands_processed://p'; }
declare -A rcpu rok rebee
run_redis() {
	local p=$1 c0 c1 e0=0 e1=0 b a reqs
	b=$(rcmds)
	if [ "$p" != untraced ]; then
		target_pid=$rpid start_ebee "$p" 600 || exit 1
		e0=$(cpu_ticks "$epid")
	fi
	c0=$(cpu_ticks "$rpid")
	redis-benchmark -p "$rport" -n "$rn" -c 4 -P 16 -t get,set -q >/dev/null 2>&1
	[ -n "${bpf_snap:-}" ] && bpftool prog show --json >"$tmp/progs.json"
	c1=$(cpu_ticks "$rpid")
	a=$(rcmds)
	rok[$p]=-
	if [ "$p" != untraced ]; then
		e1=$(cpu_ticks "$epid")
		kill -INT "$epid"; wait "$epid"
		reqs=$(python3 -c "import json; print(json.loads(open('$tmp/ebee.json').readlines()[-1])['requests'])")
		# the INFO that read $b ran before tracing and is in the delta, the
		# one that read $a ran while traced and is not: they cancel out
		rok[$p]=yes
		[ "$reqs" -eq $((a - b)) ] || rok[$p]="no($reqs/$((a - b)))"
		# what ebee said about it (dropped records, the framing's warning)
		[ "${rok[$p]}" = yes ] || echo "    $p: $(python3 -c "import json; o = json.loads(open('$tmp/ebee.json').readlines()[-1]); print('dropped', o['dropped'], 'framing', o['framing'], 'warning', o['warning'])")" >&2
	fi
	rcmd[$p]=$((a - b))
	rcpu[$p]=$(awk -v t=$((c1 - c0 + e1 - e0)) -v n="$((a - b))" -v hz="$hz" 'BEGIN { printf "%.3f", t / hz * 1e6 / n }')
	rebee[$p]=$(awk -v t=$((e1 - e0)) -v n="$((a - b))" -v hz="$hz" 'BEGIN { printf "%.3f", t / hz * 1e6 / n }')
}
declare -A rcmd
for i in $(seq "$pairs"); do
	round_order "$i"
	for p in "${order[@]}"; do run_redis "$p"; done
	printf "%-5s %-13s %12s %14s %10s %10s\n" "$i" untraced "${rcmd[untraced]}" "${rcpu[untraced]}" 1 -
	for p in "${paths[@]}"; do
		div "${rcpu[$p]}" "${rcpu[untraced]}" >>"$tmp/r_rcpu_$p"; echo >>"$tmp/r_rcpu_$p"
		printf "%-5s %-13s %12s %14s %10s %10s %12s\n" "$i" "$p" "${rcmd[$p]}" "${rcpu[$p]}" \
			"$(div "${rcpu[$p]}" "${rcpu[untraced]}")" "${rok[$p]}" "${rebee[$p]}"
	done
done
for p in "${paths[@]}"; do
	echo "  $p path: median CPU per command traced/untraced $(median <"$tmp/r_rcpu_$p")"
done
echo "  (exact: ebee's count equals redis's; the syscall path and --no-framing count batches)"
if [[ " ${paths[*]} " == *" socket "* ]]; then
	sysctl -qw kernel.bpf_stats_enabled=1
	bpf_snap=1 run_redis socket
	sysctl -qw kernel.bpf_stats_enabled=0
	echo "  BPF run time per event, socket path, framing resp (one more traced run, kernel.bpf_stats_enabled=1):"
	bpf_report "$tmp/progs.json" "$tmp/ebee.json"
fi
kill "$rpid" 2>/dev/null
wait "$rpid" 2>/dev/null
fi
echo
fi

if want 6; then
if ! command -v nginx >/dev/null || ! command -v h2load >/dev/null; then
	echo "6. skipped: nginx or h2load missing (make deps: nginx-light, nghttp2-client)"
else
hport=$(free_port)
mkdir -p "$tmp/nginx/tmp"
nginx_conf "$tmp/nginx" "	server {
		listen 127.0.0.1:$hport http2;
		location / { default_type text/plain; return 200 \"ok\\n\"; }
	}" off || fail "cannot write nginx.conf"
(in_srvcg exec nginx -p "$tmp/nginx" -e "$tmp/nginx/error.log" -c "$tmp/nginx/nginx.conf") </dev/null >/dev/null 2>&1 &
hpid=$!
epids+=($hpid)
for _ in $(seq 100); do port_accepts "$hport" && break; sleep 0.05; done
hn=${BENCH_H2_N:-200000}
echo "6. nginx (h2c, 1 worker) saturated by h2load -n $hn -c 4 -m 16, $pairs interleaved rounds"
printf "%-5s %-13s %12s %14s %10s %10s %12s\n" round path reqs cpu_us/req cpu_ratio exact ebee_us/req
# nginx's CPU: the master's and its workers'
ngx_ticks() { local t=0 q; for q in "$hpid" $(pgrep -P "$hpid"); do t=$((t + $(cpu_ticks "$q"))); done; echo "$t"; }
declare -A hcpu hok hebee hreq
run_h2() {
	local p=$1 c0 c1 e0=0 e1=0 ok reqs
	if [ "$p" != untraced ]; then
		target_pid=$hpid start_ebee "$p" 600 || exit 1
		e0=$(cpu_ticks "$epid")
	fi
	c0=$(ngx_ticks)
	ok=$(h2load -n "$hn" -c 4 -m 16 "http://127.0.0.1:$hport/" 2>&1 | sed -n 's/.* \([0-9]*\) succeeded.*/\1/p')
	[ -n "${bpf_snap:-}" ] && bpftool prog show --json >"$tmp/progs.json"
	c1=$(ngx_ticks)
	hok[$p]=-
	if [ "$p" != untraced ]; then
		e1=$(cpu_ticks "$epid")
		sleep 0.3 # the last records reach ebee's consumer
		kill -INT "$epid"; wait "$epid"
		reqs=$(python3 -c "import json; print(json.loads(open('$tmp/ebee.json').readlines()[-1])['requests'])")
		hok[$p]=yes
		[ "$reqs" -eq "$ok" ] || hok[$p]="no($reqs/$ok)"
		[ "${hok[$p]}" = yes ] || echo "    $p: $(python3 -c "import json; o = json.loads(open('$tmp/ebee.json').readlines()[-1]); print('dropped', o['dropped'], 'framing', o['framing'], 'warning', o['warning'])")" >&2
	fi
	hreq[$p]=$ok
	hcpu[$p]=$(awk -v t=$((c1 - c0 + e1 - e0)) -v n="$ok" -v hz="$hz" 'BEGIN { printf "%.3f", t / hz * 1e6 / n }')
	hebee[$p]=$(awk -v t=$((e1 - e0)) -v n="$ok" -v hz="$hz" 'BEGIN { printf "%.3f", t / hz * 1e6 / n }')
}
for i in $(seq "$pairs"); do
	round_order "$i"
	for p in "${order[@]}"; do run_h2 "$p"; done
	printf "%-5s %-13s %12s %14s %10s %10s\n" "$i" untraced "${hreq[untraced]}" "${hcpu[untraced]}" 1 -
	for p in "${paths[@]}"; do
		div "${hcpu[$p]}" "${hcpu[untraced]}" >>"$tmp/r_hcpu_$p"; echo >>"$tmp/r_hcpu_$p"
		printf "%-5s %-13s %12s %14s %10s %10s %12s\n" "$i" "$p" "${hreq[$p]}" "${hcpu[$p]}" \
			"$(div "${hcpu[$p]}" "${hcpu[untraced]}")" "${hok[$p]}" "${hebee[$p]}"
	done
done
for p in "${paths[@]}"; do
	echo "  $p path: median CPU per request traced/untraced $(median <"$tmp/r_hcpu_$p")"
done
echo "  (exact: ebee's count equals h2load's succeeded; the syscall path and --no-framing count bursts)"
if [[ " ${paths[*]} " == *" socket "* ]]; then
	sysctl -qw kernel.bpf_stats_enabled=1
	bpf_snap=1 run_h2 socket
	sysctl -qw kernel.bpf_stats_enabled=0
	echo "  BPF run time per event, socket path, framing http2 (one more traced run, kernel.bpf_stats_enabled=1):"
	bpf_report "$tmp/progs.json" "$tmp/ebee.json"
fi
kill "$hpid" 2>/dev/null
wait "$hpid" 2>/dev/null
fi
echo
fi

if want 7; then
if ! command -v nginx >/dev/null || ! command -v h2load >/dev/null || ! command -v openssl >/dev/null; then
	echo "7. skipped: nginx, h2load or openssl missing (make deps: nginx-light, nghttp2-client, openssl)"
else
n1port=$(free_port)
n2port=$(free_port)
mkdir -p "$tmp/ngx7/tmp"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
	-keyout "$tmp/ngx7/key.pem" -out "$tmp/ngx7/cert.pem" >/dev/null 2>&1 ||
	{ echo "7. openssl req could not make a certificate" >&2; exit 1; }
nginx_conf "$tmp/ngx7" "	server {
		listen 127.0.0.1:$n1port;
		location / { default_type text/plain; return 200 \"ok\\n\"; }
	}
	server {
		listen 127.0.0.1:$n2port ssl;
		ssl_protocols TLSv1.3;
		ssl_certificate $tmp/ngx7/cert.pem;
		ssl_certificate_key $tmp/ngx7/key.pem;
		location / { default_type text/plain; return 200 \"ok\\n\"; }
	}" off || { echo "7. cannot write nginx.conf" >&2; exit 1; }
(in_srvcg exec nginx -p "$tmp/ngx7" -e "$tmp/ngx7/error.log" -c "$tmp/ngx7/nginx.conf") </dev/null >/dev/null 2>&1 &
npid=$!
epids+=($npid)
for _ in $(seq 100); do port_accepts "$n2port" && break; sleep 0.05; done
nn=${BENCH_H1_N:-200000}
echo "7. nginx (1 worker) saturated by h2load --h1 -n $nn -c 4: HTTP/1.1 pipelined 16 deep (framing http1), and HTTPS (TLS 1.3, one request at a time per connection: framing tls), $pairs interleaved rounds each"
# a process's CPU and its children's (nginx's master and worker)
tree_ticks() { local t=0 q; for q in "$1" $(pgrep -P "$1"); do t=$((t + $(cpu_ticks "$q"))); done; echo "$t"; }
declare -A ncpu nok nebee nreq nfr
# run_ngx LOAD PATH: one run of LOAD (h1 or tls) under PATH (or untraced).
run_ngx() {
	local load=$1 p=$2 c0 c1 e0=0 e1=0 ok reqs url=http://127.0.0.1:$n1port/ m=16
	[ "$load" = tls ] && { url=https://127.0.0.1:$n2port/; m=1; }
	if [ "$p" != untraced ]; then
		target_pid=$npid start_ebee "$p" 600 || exit 1
		e0=$(cpu_ticks "$epid")
	fi
	c0=$(tree_ticks "$npid")
	ok=$(h2load --h1 -n "$nn" -c 4 -m "$m" "$url" 2>&1 | sed -n 's/.* \([0-9]*\) succeeded.*/\1/p')
	[ -n "${bpf_snap:-}" ] && bpftool prog show --json >"$tmp/progs.json"
	c1=$(tree_ticks "$npid")
	nok[$p]=-
	if [ "$p" != untraced ]; then
		e1=$(cpu_ticks "$epid")
		sleep 0.3 # the last records reach ebee's consumer
		kill -INT "$epid"; wait "$epid"
		read -r reqs nfr[$p] < <(python3 -c "import json; o = json.loads(open('$tmp/ebee.json').readlines()[-1]); print(o['requests'], f\"{o['framing']}, untrusted {o['untrusted']}, warning {o['warning']}\")")
		nok[$p]=yes
		[ "$reqs" -eq "${ok:-0}" ] || nok[$p]="no($reqs/${ok:-0})"
	fi
	nreq[$p]=${ok:-0}
	ncpu[$p]=$(awk -v t=$((c1 - c0 + e1 - e0)) -v n="${ok:-0}" -v hz="$hz" 'BEGIN { printf "%.3f", n ? t / hz * 1e6 / n : 0 }')
	nebee[$p]=$(awk -v t=$((e1 - e0)) -v n="${ok:-0}" -v hz="$hz" 'BEGIN { printf "%.3f", n ? t / hz * 1e6 / n : 0 }')
}
for load in h1 tls; do
	echo "  $load:"
	printf "%-5s %-13s %12s %14s %10s %10s %12s\n" round path reqs cpu_us/req cpu_ratio exact ebee_us/req
	for i in $(seq "$pairs"); do
		round_order "$i"
		for p in "${order[@]}"; do run_ngx "$load" "$p"; done
		printf "%-5s %-13s %12s %14s %10s %10s\n" "$i" untraced "${nreq[untraced]}" "${ncpu[untraced]}" 1 -
		for p in "${paths[@]}"; do
			div "${ncpu[$p]}" "${ncpu[untraced]}" >>"$tmp/r_n${load}_$p"; echo >>"$tmp/r_n${load}_$p"
			printf "%-5s %-13s %12s %14s %10s %10s %12s\n" "$i" "$p" "${nreq[$p]}" "${ncpu[$p]}" \
				"$(div "${ncpu[$p]}" "${ncpu[untraced]}")" "${nok[$p]}" "${nebee[$p]}"
		done
	done
	for p in "${paths[@]}"; do
		echo "  $load, $p path: median CPU per request traced/untraced $(median <"$tmp/r_n${load}_$p"); framing (last round): ${nfr[$p]}"
	done
	if [[ " ${paths[*]} " == *" socket "* ]]; then
		sysctl -qw kernel.bpf_stats_enabled=1
		bpf_snap=1 run_ngx "$load" socket
		sysctl -qw kernel.bpf_stats_enabled=0
		echo "  BPF run time per event, $load, socket path (one more traced run, kernel.bpf_stats_enabled=1):"
		bpf_report "$tmp/progs.json" "$tmp/ebee.json"
	fi
done
echo "  (exact: ebee's count equals h2load's succeeded; the syscall path and --no-framing count bursts, pipelined HTTP/1.1 one per burst)"
kill "$npid" 2>/dev/null
wait "$npid" 2>/dev/null
fi
echo
fi

want 4 || exit 0
sat=$(build/loadgen --port "$port" --proto memcached --rate 1000000 --duration "$secs" --json 2>/dev/null |
	python3 -c "import json,sys; print(json.loads(sys.stdin.read())['achieved_rps'])")
half=$(awk -v s="$sat" 'BEGIN { printf "%d", s / 2 }')
echo "4. memcached at half saturation, build/loadgen open loop: saturated (offered 1M rps) it achieves $sat rps; $half rps, ${secs}s runs, $pairs interleaved rounds"
# p99 and the share of sends more than 1 ms late (the generator itself falling
# behind: then its tail, not memcached's, is what the p99 shows).
lg() { build/loadgen --port "$port" --proto memcached --rate "$half" --duration "$secs" --json 2>/dev/null | python3 -c "import json,sys; o=json.loads(sys.stdin.read()); print(o['p99_us'], '%.1f%%' % (100.0 * o['late'] / max(o['sent'], 1)))"; }
printf "%-5s %-13s %10s %10s %10s\n" round path p99_us ratio late_sends
for i in $(seq "$pairs"); do
	read -r a al < <(lg)
	printf "%-5s %-13s %10s %10s %10s\n" "$i" untraced "$a" 1 "$al"
	for p in "${paths[@]}"; do
		start_ebee "$p" 60 || exit 1
		read -r b bl < <(lg)
		kill -INT "$epid"; wait "$epid"
		div "$b" "$a" >>"$tmp/r_p99_$p"; echo >>"$tmp/r_p99_$p"
		printf "%-5s %-13s %10s %10s %10s\n" "$i" "$p" "$b" "$(div "$b" "$a")" "$bl"
	done
done
for p in "${paths[@]}"; do
	echo "  $p path: median p99 traced/untraced $(median <"$tmp/r_p99_$p") (goal <= 1.05)"
done
