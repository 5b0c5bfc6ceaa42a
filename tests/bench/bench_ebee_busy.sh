#!/bin/bash
# Records lost on a busy host (issue 40, "the consumer keeps up"): with ebee's default
# settings (rings, wakeups, its threads' priority), memcached -t 2 saturated by memcaslap
# (-T 2 -c 32) is traced while the machine is busy in each of these ways, interleaved
# round by round:
#   quiet    nothing else (the same run's reference)
#   spin12   12 CPU-bound processes (a shell loop each, nice 0) on every CPU
#   guests   the VM lane's two guests (tests/vm/run.sh --cmd: 6.1 and 6.12 under qemu's
#            TCG, one host thread each, burning their vCPUs), booted before the round and
#            running through it; only where the lane's image is built (build/vm/stamp,
#            `make vm` builds it), else "not measured" with why
# Each round: ebee started (JSON, the default --mode auto), the load for BENCH_BUSY_SECS,
# ebee stopped by SIGINT; once with the default rings and once with each size of
# BENCH_BUSY_RINGS (default 131072, the default before 2026-12-07: what the larger rings
# changed, side by side). Printed per condition: requests (ebee's, from the kernel's
# counters) against memcached's own (cmd_get + cmd_set), records lost (`dropped`) per
# million requests, over all rounds and the worst round, and the share of the window the
# percentiles cover. Environment: BENCH_BUSY_ROUNDS (default 3), BENCH_BUSY_SECS (5),
# BENCH_BUSY_CONDS (default "quiet spin12 guests"), BENCH_BUSY_RINGS (bytes per CPU's
# ring, besides the default; "" for the default alone).
set -u
cd "$(dirname "$0")/../.."
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
command -v memcaslap >/dev/null || { echo "SKIP: memcaslap missing (apt-get install libmemcached-tools)"; exit 77; }
[ -x build/ebee ] || { echo "build first (build/ebee missing)"; exit 1; }
rounds=${BENCH_BUSY_ROUNDS:-3}
secs=${BENCH_BUSY_SECS:-5}
conds=${BENCH_BUSY_CONDS:-quiet spin12 guests}
rings="default ${BENCH_BUSY_RINGS-131072}"
tmp=$(mktemp -d /tmp/ebee-busy.XXXXXX)
mcpid="" epid="" vmpid=""
spins=()
stop_spin() {
	# not `wait` with no pid: that would wait for the guests too
	[ ${#spins[@]} -gt 0 ] || return 0
	kill "${spins[@]}" 2>/dev/null
	wait "${spins[@]}" 2>/dev/null
	spins=()
}
# vm_signal STOP|CONT: the guests' qemu processes paused between their rounds, so that the
# other conditions' rounds run without them
vm_signal() {
	local p
	for p in $(pgrep -f '^qemu-system-x86_64 -name vm-'); do kill -"$1" "$p" 2>/dev/null; done
}
stop_vm() {
	vm_signal CONT
	# run.sh's own trap stops qemu and removes its run folders
	[ -n "$vmpid" ] && { kill -TERM "$vmpid" 2>/dev/null; wait "$vmpid" 2>/dev/null; }
	vmpid=""
}
cleanup() {
	stop_spin
	stop_vm
	[ -n "$epid" ] && kill "$epid" 2>/dev/null
	[ -n "$mcpid" ] && kill "$mcpid" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
. tests/lib/servers.sh

port=$(free_port)
mcpid=$(SERVERS_LOG_DIR=$tmp start_memcached "$port") || exit 1
memcaslap -s 127.0.0.1:$port -T 2 -c 32 -t 1s >/dev/null 2>&1 # warm-up, fills the cache

# The guests: booted once, kept running for all rounds of the condition (a boot takes
# minutes under TCG); each guest's job burns its vCPUs until the bench stops it.
vm_ok=0 vm_why=
if [[ " $conds " == *" guests "* ]]; then
	if [ ! -f build/vm/stamp ]; then
		vm_why="the VM lane's image is not built (make vm, or tests/vm/build.sh)"
	elif [ "$(systemd-detect-virt 2>/dev/null)" = qemu ]; then
		vm_why="this is itself a guest under emulation"
	else
		vm_ok=1
	fi
fi

start_vm() {
	# 4 shell loops per guest, its vCPUs busy as in the lane's tests; the guests' own
	# timeout (900 s for --cmd) bounds them if the bench is killed hard
	tests/vm/run.sh --cmd 'for i in 1 2 3 4; do (while :; do :; done) & done; sleep 100000' \
		>"$tmp/vm.log" 2>&1 &
	vmpid=$!
	# up when both guests' consoles show the job running: wait for their qemu processes,
	# then the boot (the busiest part) to pass
	local t=0
	while [ $t -lt 600 ]; do
		[ "$(pgrep -c -f '^qemu-system-x86_64 -name vm-')" -ge 2 ] && break
		kill -0 $vmpid 2>/dev/null || { echo "note: the guests did not start: $(tail -3 "$tmp/vm.log")"; return 1; }
		sleep 1
		t=$((t + 1))
	done
	# the boot is part of what the lane does beside the host: the first round starts while
	# they boot, the later ones while their jobs run
	echo "note: guests started ($(pgrep -c -f '^qemu-system-x86_64 -name vm-') qemu processes)"
}

# one_round RING: one traced run with that ring size (default: ebee's); prints "served requests dropped window_requests window_lost covered"
one_round() {
	local before after
	before=$(memcached_requests "$port")
	: >"$tmp/ebee.err"
	local ropt=()
	[ "$1" = default ] || ropt=(--ringbuf-size "$1")
	build/ebee trace --pid "$mcpid" "${ropt[@]}" --json >"$tmp/ebee.json" 2>"$tmp/ebee.err" &
	epid=$!
	local i
	for i in $(seq 500); do grep -q "probes live" "$tmp/ebee.err" && break; sleep 0.02; done
	grep -q "probes live" "$tmp/ebee.err" || { echo "ebee did not start: $(cat "$tmp/ebee.err")" >&2; return 1; }
	memcaslap -s 127.0.0.1:$port -T 2 -c 32 -t "${secs}s" >/dev/null 2>&1
	# the last requests' records reach the consumer before it stops
	sleep 0.5
	kill -INT $epid
	wait $epid || { echo "ebee exited $?: $(cat "$tmp/ebee.err")" >&2; epid=""; return 1; }
	epid=""
	after=$(memcached_requests "$port")
	python3 - "$tmp/ebee.json" $((after - before)) <<'PY'
import json, sys
o = json.loads(open(sys.argv[1]).read().splitlines()[-1])
print(sys.argv[2], o["requests"], o["dropped"], o["window_requests"], o["window_lost"], o["covered"])
PY
}

declare -A rows
for c in $conds; do for g in $rings; do rows[$c/$g]=""; done; done
for ((r = 1; r <= rounds; r++)); do
	for c in $conds; do
		case $c in
		quiet) ;;
		spin12)
			for _ in $(seq 12); do (while :; do :; done) & spins+=($!); done
			;;
		guests)
			[ $vm_ok = 1 ] || continue
			if [ -z "$vmpid" ]; then
				start_vm || { vm_ok=0; vm_why="the guests did not start"; continue; }
			else
				vm_signal CONT
			fi
			;;
		*) echo "unknown condition $c (quiet, spin12, guests)"; exit 2 ;;
		esac
		for g in $rings; do
			line=$(one_round "$g") || exit 1
			echo "round $r $c, ring $g: served requests dropped window_requests window_lost covered: $line"
			rows[$c/$g]+="$line"$'\n'
		done
		stop_spin
		# the guests stay up for the next round (a boot takes minutes), stopped meanwhile
		[ "$c" = guests ] && vm_signal STOP
	done
done
stop_vm

echo
printf '%-8s %-8s %7s %10s %10s %6s %9s %12s %14s %9s\n' condition ring rounds served requests exact dropped "lost/million" "worst round" "covered"
for c in $conds; do for g in $rings; do
	if [ -z "${rows[$c/$g]}" ]; then
		printf '%-8s %-8s not measured: %s\n' "$c" "$g" "${vm_why:-no round ran}"
		continue
	fi
	printf '%s' "${rows[$c/$g]}" | awk -v c="$c" -v g="$g" '
	{ n++; s += $1; q += $2; d += $3; if (!exact_set) { ex = 1; exact_set = 1 } if ($1 != $2) ex = 0
	  pm = ($2 > 0 ? $3 / $2 * 1e6 : 0); if (pm > w) w = pm; if (!cmin_set || $6 < cmin) { cmin = $6; cmin_set = 1 } }
	END { printf "%-8s %-8s %7d %10d %10d %6s %9d %12.1f %14.1f %9.4f\n", c, g, n, s, q, ex ? "yes" : "NO", d, (q > 0 ? d / q * 1e6 : 0), w, cmin }'
done; done
echo "(served: memcached cmd_get + cmd_set; requests: ebee's, from the kernel's counters; dropped: records"
echo " the ring could not take; lost/million over all rounds, and the worst round's; covered: the lowest"
echo " share of a window the percentiles covered; load average now: $(cut -d' ' -f1-3 /proc/loadavg))"
