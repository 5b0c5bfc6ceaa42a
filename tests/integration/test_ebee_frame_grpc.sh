#!/bin/bash
# gRPC framed as HTTP/2 by stream (the socket path's bytes, no libgrpc uprobes), for
# servers in any language:
#   python: Debian's python3-grpcio (gRPC core linked into its cygrpc module: no libgrpc
#     for the grpc mode's uprobes, so `auto` frames it), a server sleeping 10, 30, 30 ms per call in turn and a
#     client keeping 8 calls in flight on one channel (one HTTP/2 connection, streams
#     ending out of order): ebee counts every call, framing http2, trusted; its sojourn
#     p50 is at least the handler's own 30 ms and at most the client's p50, and below the
#     client's by no more than the client's own cost plus 15% of the client's p50 (the
#     own cost: the p50 the same client measured, same run, with 8 calls of no delay in
#     flight; under emulation the Python client alone costs some ms a call, on a host
#     < 1 ms).
#   c++: the grpc++ fixture (tests/fixtures/grpc/), traced with --mode io (auto takes the
#     grpc mode's uprobes on its libgrpc), 16 calls in flight on one channel, a
#     handler of 3 deadlines, every 4th call given a deadline scaled to this run (long
#     enough for the call's HEADERS to reach the server first): each such stream is
#     one request whichever side ends it first, the client's reset (RST_STREAM, counted
#     as aborted) or the server's own DEADLINE_EXCEEDED trailers (the deadline travels in
#     grpc-timeout; both timers run out together, so either wins: 6 resets of 20 in one
#     run here; both at once, on two CPUs, is one request too: http2.h's ebee_h2_take).
set -u
. "$(dirname "$0")/../lib/ebeetest.sh"
. tests/lib/servers.sh
[ -n "$(awk '$3 == "cgroup2"' /proc/mounts)" ] || { echo "SKIP: no cgroup v2 hierarchy mounted"; exit 77; }
# Debian's python3-grpcio is for Debian's python3, which another python3 may shadow in PATH.
py=
for p in python3 /usr/bin/python3; do "$p" -c "import grpc" 2>/dev/null && { py=$p; break; }; done
[ -n "$py" ] || { echo "SKIP: python3-grpcio not installed (make deps)"; exit 77; }
[ -x build/fixtures/grpc_server ] && [ -x build/fixtures/grpc_client ] ||
	{ echo "FAIL: build first (make all: build/fixtures/grpc_server)"; exit 1; }

$py tests/lib/grpc_py.py server "$tmp/py.port" 16 >"$tmp/py.log" 2>&1 &
ppid=$!
pids+=("$ppid")
for _ in $(seq 200); do [ -s "$tmp/py.port" ] && break; sleep 0.05; done
[ -s "$tmp/py.port" ] || fail "python gRPC server did not start: $(cat "$tmp/py.log")"
$py tests/lib/grpc_py.py client "$(cat "$tmp/py.port")" 100 8 0 >"$tmp/py.floor" ||
	fail "python gRPC client, no delay: $(cat "$tmp/py.floor")"
ebee_on py "$ppid"
$py tests/lib/grpc_py.py client "$(cat "$tmp/py.port")" 300 8 10,30,30 >"$tmp/py.client" ||
	fail "python gRPC client: $(cat "$tmp/py.client")"
ebee_off py
python3 - "$tmp/py.json" "$tmp/py.client" "$tmp/py.floor" <<'PY' || fail "$(cat "$tmp/py.json")"
import json, sys
e = json.loads(open(sys.argv[1]).read().splitlines()[-1])
c = json.loads(open(sys.argv[2]).read())
floor = json.loads(open(sys.argv[3]).read())["p50_us"]
assert c["ok"] == c["calls"] == 300 and c["failed"] == 0, c
assert e["framing"] == "http2" and e["untrusted"] is False and e["warning"] is None, e
assert e["mode"] == "io", e["mode"]
assert e["requests"] == c["ok"], (e["requests"], c["ok"])
r = e["sojourn_p50_ns"] / 1e3 / c["p50_us"]
print(f"ok: python grpcio, 8 calls in flight on one channel: ebee {e['requests']} = client's "
      f"{c['ok']}; p50 client {c['p50_us']/1e3:.1f} ms, ebee sojourn "
      f"{e['sojourn_p50_ns']/1e6:.1f} ms (ratio {r:.3f}), service {e['p50_ns']/1e6:.1f} ms; "
      f"the client's own p50 with no delay {floor/1e3:.2f} ms")
# Each call's sojourn lies inside its client latency and holds its whole sleep (the
# median call sleeps 30 ms); 1% for the percentiles' resolution.
assert e["sojourn_p50_ns"] >= 30e6 * 0.99, "sojourn p50 below the handler's 30 ms"
assert r <= 1.01, "sojourn p50 above the client's"
gap = c["p50_us"] - e["sojourn_p50_ns"] / 1e3
assert gap <= floor + 0.15 * c["p50_us"], (gap, floor)
PY

build/fixtures/grpc_server --port-file "$tmp/cc.port" --delay-us 0 >"$tmp/cc.log" 2>&1 &
cpid=$!
pids+=("$cpid")
for _ in $(seq 200); do [ -s "$tmp/cc.port" ] && break; sleep 0.05; done
[ -s "$tmp/cc.port" ] || fail "grpc_server did not start: $(cat "$tmp/cc.log")"
# The deadline must leave a call's HEADERS time to reach the server (one that expires in
# the client before it is sent is a call the client counts and no stream ever carried: 75
# of 80 with 50 ms in a guest under emulation; 79 of 80 in another, beside the host suite,
# with twice the slowest probe call): four times the slowest of 32 untraced calls with no
# handler delay (a whole call, more than its HEADERS need), at least 100 ms; the handler 3
# deadlines (80 calls, 16 in flight: 15 deadlines in all, 1.5 s at the floor).
build/fixtures/grpc_client --port "$(cat "$tmp/cc.port")" -n 32 -c 16 >"$tmp/cc.probe" 2>&1 ||
	fail "grpc_client: $(cat "$tmp/cc.probe")"
max_us=$(awk '$1 == "max_us" { print $2 }' "$tmp/cc.probe")
[ "${max_us:-0}" -gt 0 ] || fail "grpc_client printed no max_us: $(cat "$tmp/cc.probe")"
dl_ms=$((4 * max_us / 1000))
[ "$dl_ms" -ge 100 ] || dl_ms=100
ebee_on cc "$cpid" --mode io
build/fixtures/grpc_client --port "$(cat "$tmp/cc.port")" -n 80 -c 16 --delay-us $((3000 * dl_ms)) \
	--deadline-every 4 --deadline-ms "$dl_ms" >"$tmp/cc.client" 2>&1 ||
	fail "grpc_client: $(cat "$tmp/cc.client")"
ebee_off cc
python3 - "$tmp/cc.json" "$tmp/cc.client" "$dl_ms" <<'PY' || fail "$(cat "$tmp/cc.json")"
import json, sys
e = json.loads(open(sys.argv[1]).read().splitlines()[-1])
c = dict(l.split() for l in open(sys.argv[2]) if l.strip() and not l.startswith("grpc_client"))
ok, dl = int(c["ok"]), int(c["deadline"])
# every 4th call but those of the first round (16 threads: ids 3, 7, 11, 15)
assert ok == 64 and dl == 16 and int(c["failed"]) == 0, c
assert e["framing"] == "http2" and e["untrusted"] is False and e["warning"] is None, e
assert e["requests"] == ok + dl, (e["requests"], ok, dl)
assert 0 <= e["aborted"] <= dl, (e["aborted"], dl)
print(f"ok: grpc++ 16 in flight, every 4th call past its {sys.argv[3]} ms deadline: ebee {e['requests']} "
      f"requests = {ok} ok + {dl} past their deadline, {e['aborted']} of them ended by the "
      f"client's reset")
PY
echo PASS
