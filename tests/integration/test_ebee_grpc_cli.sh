#!/bin/bash
# `ebee trace --mode grpc` as a user runs it (root): exact count and mode in the
# JSON summary for a gRPC server multiplexing 16 calls on one connection, auto
# mode choosing grpc, a one-line refusal for a process without libgrpc, and a
# --help that documents the mode.
set -u
cd "$(dirname "$0")/../.."
EBEE=build/ebee
. tests/lib/ebee_live.sh
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
[ -x $EBEE ] && [ -x build/fixtures/grpc_server ] && [ -x build/fixtures/grpc_client ] ||
	{ echo "FAIL: build first (make all)"; exit 1; }

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
# the handler sleeps 2 ms: no call is shorter. The 16 client threads call one after
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
	build/fixtures/grpc_client --port "$port" -n 200 -c 16 >"$tmp/client" || bad "client failed"
	wall=$(($(date +%s%N) - t0))
	sleep 0.3 # the last records reach ebee's consumer
	kill -INT $eb
	wait $eb
	rc=$?
	[ $rc -eq 0 ] || bad "--mode $mode: exit $rc: $(cat "$tmp/$mode.err")"
	check_json "$tmp/$mode.json" grpc 200 "$wall" && ok "--mode $mode: $(cat "$tmp/$mode.json")" ||
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
