#!/bin/bash
# The ebee command as a user runs it (root): JSON summary with exact counts,
# the "probes live" line within one second of its CPU, time series, SIGINT, and a
# one-line reason with a non-zero exit for each kind of bad input. The requests are
# Debian's curl's (tests/lib/curl_get.sh): each count is exactly the responses it got.
set -u
cd "$(dirname "$0")/../.."
EBEE=build/ebee
. tests/lib/ebee_live.sh
. tests/lib/curl_get.sh
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
[ -x $EBEE ] && [ -x build/fixtures/cpr_server ] || { echo "FAIL: build first (make all)"; exit 1; }
command -v curl >/dev/null || { echo "SKIP: curl not installed (make deps)"; exit 77; }

tmp=$(mktemp -d /tmp/ebee-test.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

build/fixtures/cpr_server --ready-file "$tmp/ready" --delay-ms 3 --stats-file "$tmp/stats" \
	--timeout 900 >"$tmp/srv.out" 2>&1 &
srv=$!
pids+=($srv)
for _ in $(seq 100); do [ -s "$tmp/ready" ] && break; sleep 0.05; done
port=$(cat "$tmp/ready")

# --- summary with --json, exact count, the "probes live" line soon. Soon is judged by
# ebee's own CPU time up to that line (under 1 s), not by the wall clock, which a busy
# machine stretches (2.5 s seen under load 17); the wall clock only bounds a hang (30 s).
# The counting cases trace until their client is done and then send SIGINT, not for a
# fixed --duration: in a loaded guest (the VM lane) 2.5 s ended before the client did
# (22 of 30 counted). --duration's own exit is the text summary's case below.
start=$(date +%s.%N)
$EBEE trace --pid $srv --json >"$tmp/out.json" 2>"$tmp/err" &
eb=$!
pids+=($eb)
live=""
end=$((SECONDS + 30))
while [ $SECONDS -lt $end ]; do
	if grep -q "probes live" "$tmp/err"; then
		live=$(date +%s.%N)
		cpu=$(awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$eb/stat" 2>/dev/null)
		break
	fi
	kill -0 $eb 2>/dev/null || break
	sleep 0.02
done
if [ -n "$live" ]; then
	dt=$(python3 -c "print('%.2f' % ($live - $start))")
	# Under qemu's TCG (the VM lane) every instruction is emulated and the verifier's
	# seconds are not the kernel's: the bound is a host's (systemd-detect-virt says "qemu"
	# for TCG, "kvm" under KVM, where the bound holds).
	if [ "$(systemd-detect-virt 2>/dev/null)" = qemu ]; then
		echo "SKIP (this case): probes live after ${cpu} s of ebee's CPU (${dt} s wall) under TCG emulation, where CPU time says nothing of the < 1 s bound"
	elif python3 -c "import sys; sys.exit(0 if ${cpu:-9} < 1.0 else 1)"; then
		ok "probes live after ${cpu} s of ebee's CPU (${dt} s wall)"
	else
		bad "probes live only after ${cpu:-?} s of ebee's CPU (want < 1 s; ${dt} s wall)"
	fi
else
	bad "no 'probes live' line on stderr: $(cat "$tmp/err")"
fi
n=$(curl_get "$port" 150 -Z --parallel-max 2 --no-progress-meter) # 2 at a time
[ "$n" = 150 ] || bad "curl got $n responses of 150"
kill -INT $eb
wait $eb; rc=$?
[ $rc -eq 0 ] && ok "exit 0 after SIGINT" || bad "exit $rc after SIGINT"
# The server's own service p50 over these 150 requests (it rewrites the file
# at most every 100 ms): ebee's is checked against it, not a fixed window.
for _ in $(seq 100); do grep -qs '^count 150$' "$tmp/stats" && break; sleep 0.05; done
srv_p50_us=$(awk '$1 == "p50_us" { print $2 }' "$tmp/stats" 2>/dev/null)
srv_read_p50_us=$(awk '$1 == "read_p50_us" { print $2 }' "$tmp/stats" 2>/dev/null)
python3 - "$tmp/out.json" $srv "${srv_p50_us:--1}" "${srv_read_p50_us:--1}" <<'PY' && ok "json summary: $(cat "$tmp/out.json")" || bad "json summary wrong: $(cat "$tmp/out.json")"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, lines
o = json.loads(lines[0])
for k in ["pid", "mode", "requests", "rps", "latest_ns", "avg_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "dropped",
          "sojourn_avg_ns", "sojourn_p50_ns", "sojourn_p90_ns", "sojourn_p99_ns", "sojourn_p999_ns", "path", "attach"]:
    assert k in o, k
assert (o["attach"] in ("tp_btf", "fentry")) == (o["path"] == "socket"), o["attach"]
if o["path"] == "socket":
    # sojourn starts at the handshake, before the server's first read
    assert o["sojourn_p50_ns"] >= o["p50_ns"], (o["sojourn_p50_ns"], o["p50_ns"])
else:
    assert o["sojourn_p50_ns"] is None
assert o["pid"] == int(sys.argv[2])
assert o["requests"] == 150, o["requests"]
assert o["mode"] == "conn", o["mode"]
# within 10% + 0.5 ms of the server's own p50: tu_svc_near() in tests/lib/testutil.h says why;
# the socket path starts a conn request at its first read (it sees no accept), the syscall
# path at accept's return: the server's own clock from the same point (cpr_server.c)
srv = float(sys.argv[4 if o["path"] == "socket" else 3]) * 1e3
assert srv > 0, "no server stats"
print("p50: ebee %.0f us, server's own %.0f us" % (o["p50_ns"] / 1e3, srv / 1e3))
assert abs(o["p50_ns"] - srv) <= 0.10 * srv + 0.5e6, (o["p50_ns"], srv)
assert o["p50_ns"] <= o["p90_ns"] <= o["p99_ns"] <= o["p999_ns"]
assert o["dropped"] == 0
PY

# --- --interval: a time series, then SIGINT ends it with a summary and exit 0
$EBEE trace --pid $srv --interval 300 --json --mode conn >"$tmp/series" 2>"$tmp/err2" &
eb=$!
pids+=($eb)
ebee_wait_live "$eb" "$tmp/err2" || bad "--interval: ebee not live: $(cat "$tmp/err2")"
n=$(curl_get "$port" 40)
[ "$n" = 40 ] || bad "--interval: curl got $n responses of 40"
# until an interval line has counted the 40 and a few lines were written (30 s at most)
for _ in $(seq 300); do
	[ "$(wc -l <"$tmp/series")" -ge 4 ] && tail -1 "$tmp/series" | grep -q '"requests":40,' && break
	sleep 0.1
done
kill -INT $eb
wait $eb; rc=$?
n=$(wc -l <"$tmp/series")
[ $rc -eq 0 ] && ok "SIGINT: exit 0" || bad "SIGINT: exit $rc"
[ "$n" -ge 4 ] && ok "time series: $n lines" || bad "time series: $n lines (want >= 4)"
last=$(tail -1 "$tmp/series")
echo "$last" | grep -q '"requests":40,' && ok "final line counts 40" || bad "final line: $last"

# --- the other path, forced: same count; sojourn only on the socket path
for path in syscall socket; do
	: >"$tmp/perr"
	$EBEE trace --pid $srv --path $path --json >"$tmp/p.json" 2>"$tmp/perr" &
	eb=$!
	pids+=($eb)
	if ebee_wait_live "$eb" "$tmp/perr"; then
		n=$(curl_get "$port" 30)
		[ "$n" = 30 ] || bad "curl got $n responses of 30"
	fi
	kill -INT $eb 2>/dev/null
	wait $eb
	if why=$(ebee_unsupported "$tmp/perr"); then
		echo "SKIP: --path $path: $why"
		continue
	fi
	python3 - "$tmp/p.json" $path <<'PY' && ok "--path $path: $(cat "$tmp/p.json")" || bad "--path $path: $(cat "$tmp/p.json") $(cat "$tmp/perr")"
import json, sys
o = json.loads(open(sys.argv[1]).read())
assert o["path"] == sys.argv[2], o["path"]
assert o["requests"] == 30, o["requests"]
assert (o["sojourn_p99_ns"] is None) == (sys.argv[2] == "syscall")
PY
done

# --- each attach method of the socket path, forced: same count, named on the start line
for attach in tp_btf fentry; do
	: >"$tmp/aerr"
	$EBEE trace --pid $srv --attach $attach --json >"$tmp/a.json" 2>"$tmp/aerr" &
	eb=$!
	pids+=($eb)
	if ebee_wait_live "$eb" "$tmp/aerr"; then
		n=$(curl_get "$port" 30)
		[ "$n" = 30 ] || bad "curl got $n responses of 30"
	fi
	kill -INT $eb 2>/dev/null
	wait $eb
	if ! grep -q "probes live" "$tmp/aerr" && why=$(ebee_unsupported "$tmp/aerr"); then
		echo "SKIP: --attach $attach: $why"
		continue
	fi
	grep -q "socket path ($attach), probes live" "$tmp/aerr" && ok "--attach $attach: start line names it" ||
		bad "--attach $attach: start line: $(cat "$tmp/aerr")"
	python3 - "$tmp/a.json" $attach <<'PY' && ok "--attach $attach: $(cat "$tmp/a.json")" || bad "--attach $attach: $(cat "$tmp/a.json") $(cat "$tmp/aerr")"
import json, sys
o = json.loads(open(sys.argv[1]).read())
assert o["path"] == "socket" and o["attach"] == sys.argv[2], (o["path"], o["attach"])
assert o["requests"] == 30, o["requests"]
assert o["sojourn_p99_ns"] is not None
PY
done

# --- text summary and top run
$EBEE trace --pid $srv --duration 0.5 >"$tmp/text" 2>/dev/null && grep -q "^PID" "$tmp/text" &&
	ok "text summary" || bad "text summary: $(cat "$tmp/text")"
$EBEE top --pid $srv --duration 1.2 --interval 500 >"$tmp/top" 2>/dev/null && grep -q "ebee top" "$tmp/top" &&
	ok "top view" || bad "top view: $(head -5 "$tmp/top")"

# --- bad input: non-zero exit, one line naming the problem
expect_err() { # pattern, args...
	local pat=$1 out rc
	shift
	out=$("$@" 2>&1 >/dev/null); rc=$?
	if [ $rc -ne 0 ] && [ "$(echo "$out" | wc -l)" -eq 1 ] && echo "$out" | grep -q -- "$pat"; then
		ok "$* -> $out"
	else
		bad "$* -> exit $rc, '$out' (want one line matching '$pat')"
	fi
}
sh -c 'exit 0' & gone=$!; wait $gone
expect_err "no such process: $gone" $EBEE trace --pid $gone
expect_err "unknown option '--frobnicate'" $EBEE trace --pid $srv --frobnicate
expect_err "bad pid 'x12'" $EBEE trace --pid x12
expect_err "bad duration '-3'" $EBEE trace --pid $srv --duration -3
expect_err "bad interval '10ms'" $EBEE trace --pid $srv --interval 10ms
expect_err "bad mode 'tcp'" $EBEE trace --pid $srv --mode tcp
expect_err "no --pid given" $EBEE trace
expect_err "unknown command 'watch'" $EBEE watch --pid $srv
expect_err "needs a value" $EBEE trace --pid
expect_err "ring buffer size" $EBEE trace --pid $srv --ringbuf-size 5000
expect_err "bad path 'kprobe'" $EBEE trace --pid $srv --path kprobe
expect_err "bad attach method 'kprobe'" $EBEE trace --pid $srv --attach kprobe
expect_err "applies to the socket path only" $EBEE trace --pid $srv --path syscall --attach fentry
if command -v setpriv >/dev/null; then
	expect_err "not root" setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all $EBEE trace --pid $srv --duration 1
else
	echo "SKIP: setpriv missing, not-root case not run"
fi
# tracefs unmounted, in a private mount namespace so the host keeps it: the
# syscall path needs it, the socket path (BTF tracepoints) does not
if command -v unshare >/dev/null; then
	expect_err "tracefs is not mounted at /sys/kernel/tracing (mount -t tracefs" \
		unshare -m --propagation private sh -c "umount -l /sys/kernel/tracing 2>/dev/null; umount -l /sys/kernel/debug 2>/dev/null; exec $EBEE trace --path syscall --pid $srv --duration 1"
	if unshare -m --propagation private sh -c "umount -l /sys/kernel/tracing 2>/dev/null; umount -l /sys/kernel/debug 2>/dev/null; exec $EBEE trace --path socket --pid $srv --duration 0.5" >/dev/null 2>"$tmp/nt"; then
		ok "socket path runs without tracefs"
	elif why=$(ebee_unsupported "$tmp/nt"); then
		echo "SKIP: socket path not available: $why"
	else
		bad "socket path without tracefs: $(cat "$tmp/nt")"
	fi
else
	echo "SKIP: unshare missing, tracefs case not run"
fi
# ours: run from this checkout (another checkout's ebee, or a user's, is not this test's)
left=
for p in $(pgrep -f "$EBEE trace"); do
	[ "$(readlink "/proc/$p/cwd" 2>/dev/null)" = "$PWD" ] && left="$left $p"
done
[ -z "$left" ] || bad "ebee processes left running:$left"
echo "$fails failure(s)"
[ $fails -eq 0 ]
