#!/bin/bash
# `ebee trace --mode grpc` as a user runs it (root): exact count and mode in the
# JSON summary for a gRPC server multiplexing 16 calls on one connection, auto
# mode choosing grpc, a one-line refusal for a process without libgrpc, and a
# --help that documents the mode. The calls are Debian's h2load's (issue 40: a client count
# no fixture makes): the unary /ebeetest.Work/Do with an empty WorkRequest in its 5-byte
# gRPC frame, 16 streams in flight on one connection; each must have taken the handler's
# 2 ms by h2load's own log (a call the server refused at once would be a 200 too).
set -u
cd "$(dirname "$0")/../.."
EBEE=build/ebee
. tests/lib/ebee_live.sh
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
[ -x $EBEE ] && [ -x build/fixtures/grpc_server ] || { echo "FAIL: build first (make all)"; exit 1; }
command -v h2load >/dev/null || { echo "SKIP: h2load not installed (nghttp2-client; make deps)"; exit 77; }

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

build/fixtures/grpc_server --port-file "$tmp/port" --delay-us 2000 >"$tmp/srv.out" 2>&1 &
srv=$!
pids+=($srv)
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
port=$(cat "$tmp/port")
printf '\0\0\0\0\0' >"$tmp/do.grpc" # uncompressed, 0 bytes: WorkRequest{} (the server's delay)
# h2load_ok: the calls h2load's output says succeeded, with none failed and every call at
# least the handler's 2 ms long in its log (start, status, duration in us a line); else -1
h2load_ok() {
	python3 - "$tmp/h2load" "$tmp/h2load.log" <<'PY'
import re, sys
h = open(sys.argv[1]).read()
m = re.search(r"requests: (\d+) total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed", h)
lat = [int(l.split("\t")[2]) for l in open(sys.argv[2]) if l.strip()]
ok = m and m.group(1) == m.group(2) == m.group(3) and m.group(4) == "0" and len(lat) == int(m.group(3))
print(m.group(3) if ok and min(lat) >= 2000 else -1)
PY
}

# One JSON summary: requests == calls, mode as expected.
check_json() { # file mode want client-wall-ns
	python3 - "$1" "$2" "$3" $srv "$4" <<'PY'
import json, sys
f, mode, want, pid = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
wall_ns = float(sys.argv[5])
o = json.loads(open(f).read().strip().splitlines()[-1])
assert o["pid"] == pid, o
assert o["mode"] == mode, o
assert o["requests"] == want, o
# the handler sleeps 2 ms: no call is shorter. The client's 16 streams call one after
# another, so the calls' latencies add up to at most 16 x the client's wall time, and
# the server-side latency is part of each: the mean is at most 16 x wall / calls.
assert o["p50_ns"] >= 2e6, o
assert o["avg_ns"] <= 16 * wall_ns / want, (o, wall_ns)
assert "grpc" in o["probes"] and "read" not in o["probes"], o
PY
}

# ebee runs until the client is done (SIGINT then), not for a fixed time: in a guest under
# emulation the 200 calls outlasted a 3 s --duration (173 counted), and loading the
# programs outlasted a 2 s wait for "probes live" (ebee_wait_live: no deadline but a hang guard).
for mode in grpc auto; do
	: >"$tmp/$mode.err"
	$EBEE trace --pid $srv --mode $mode --json >"$tmp/$mode.json" 2>"$tmp/$mode.err" &
	eb=$!
	pids+=($eb)
	ebee_wait_live "$eb" "$tmp/$mode.err" || bad "--mode $mode: not live: $(cat "$tmp/$mode.err")"
	t0=$(date +%s%N)
	: >"$tmp/h2load.log"
	h2load -n 200 -c 1 -m 16 -H 'content-type: application/grpc' -H 'te: trailers' \
		-d "$tmp/do.grpc" --log-file="$tmp/h2load.log" "http://127.0.0.1:$port/ebeetest.Work/Do" \
		>"$tmp/h2load" 2>&1 || bad "h2load failed: $(tail -3 "$tmp/h2load")"
	wall=$(($(date +%s%N) - t0))
	calls=$(h2load_ok)
	[ "$calls" = 200 ] || bad "h2load: $calls of 200 calls succeeded, each 2 ms or more: $(grep requests: "$tmp/h2load")"
	sleep 0.3 # the last records reach ebee's consumer
	kill -INT $eb
	wait $eb
	rc=$?
	[ $rc -eq 0 ] || bad "--mode $mode: exit $rc: $(cat "$tmp/$mode.err")"
	check_json "$tmp/$mode.json" grpc "$calls" "$wall" && ok "--mode $mode: h2load's $calls calls: $(cat "$tmp/$mode.json")" ||
		bad "--mode $mode: wrong summary: $(cat "$tmp/$mode.json")"
done

# A process without libgrpc: one line naming the reason, exit 1.
sleep 30 &
slp=$!
pids+=($slp)
$EBEE trace --pid $slp --mode grpc --duration 1 >"$tmp/no.out" 2>"$tmp/no.err"
rc=$?
if [ $rc -eq 1 ] && [ "$(wc -l <"$tmp/no.err")" -eq 1 ] && grep -q "maps no libgrpc" "$tmp/no.err"; then
	ok "non-gRPC process refused: $(cat "$tmp/no.err")"
else
	bad "non-gRPC process: exit $rc, stderr: $(cat "$tmp/no.err")"
fi

$EBEE --help | grep -q "grpc (gRPC C-core server streams" && ok "--help documents grpc" ||
	bad "--help does not mention grpc"

[ $fails -eq 0 ] && echo "all ok" || echo "$fails failed"
[ $fails -eq 0 ]
