#!/bin/bash
# RESP framing (issue 20): redis-server driven by Debian's redis-benchmark with 16 commands
# pipelined per write. ebee must count every command, exactly what redis counted
# (total_commands_processed), and frame them as "resp", untrusted false; its sojourn p50 is
# within 15% of the client's p50 (redis-benchmark times a batch until its first reply, which
# every command of the batch shares; ebee times each from its arrival to the egress of the
# segment holding its reply's end). The same load framed by length (--no-framing) is counted
# once per batch: what ebee said before, shown for the record.
set -u
. "$(dirname "$0")/../lib/ebeetest.sh"
. tests/lib/servers.sh
command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null ||
	{ echo "SKIP: redis-server/redis-benchmark not installed (make deps)"; exit 77; }
[ -n "$(awk '$3 == "cgroup2"' /proc/mounts)" ] || { echo "SKIP: no cgroup v2 hierarchy mounted"; exit 77; }

port=$(free_port)
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$tmp" \
	--enable-debug-command local \
	>"$tmp/redis.log" 2>&1 &
rpid=$!
pids+=("$rpid")
for _ in $(seq 100); do port_accepts "$port" && break; sleep 0.05; done
port_accepts "$port" || fail "redis did not start: $(cat "$tmp/redis.log")"
cmds() { redis-cli -p "$port" info stats | tr -d '\r' | sed -n 's/^total_commands_processed://p'; }

# run NAME EBEE_ARGS...: trace redis while redis-benchmark runs; the JSON in $tmp/NAME.json,
# the benchmark's output in $tmp/NAME.bench and redis's command delta in NAME_delta.
run() {
	local name=$1 e
	shift
	: >"$tmp/$name.err"
	build/ebee trace --pid "$rpid" --json "$@" >"$tmp/$name.json" 2>"$tmp/$name.err" &
	e=$!
	pids+=("$e")
	ebee_wait_live "$e" "$tmp/$name.err" || fail "ebee did not start: $(cat "$tmp/$name.err")"
	local b a
	b=$(cmds)
	redis-benchmark -p "$port" -n 32000 -c 4 -P 16 -t get,set,lpush,lrange_100 \
		>"$tmp/$name.bench" 2>&1 || fail "redis-benchmark: $(tail -3 "$tmp/$name.bench")"
	a=$(cmds)
	# The INFO that read $a ran while traced but is not in $a (redis counts a command
	# after it ran); the one that read $b is in the delta.
	eval "${name}_delta=$((a - b + 1))"
	kill -INT "$e"
	wait "$e" || fail "ebee exited non-zero: $(cat "$tmp/$name.err")"
}

field() { python3 -c 'import json,sys; o=json.loads(open(sys.argv[1]).read().splitlines()[-1]); print(o[sys.argv[2]])' "$1" "$2"; }

run framed
n=$(field "$tmp/framed.json" requests)
fr=$(field "$tmp/framed.json" framing)
un=$(field "$tmp/framed.json" untrusted)
[ "$fr" = resp ] || fail "framing '$fr', not resp: $(cat "$tmp/framed.json")"
[ "$un" = False ] || fail "untrusted: $(field "$tmp/framed.json" warning)"
[ "$n" = "$framed_delta" ] || fail "ebee counted $n commands, redis $framed_delta"
echo "ok: redis-benchmark -P 16: ebee $n commands = redis's $framed_delta, framing resp, trusted"

run length --no-framing
n2=$(field "$tmp/length.json" requests)
fr2=$(field "$tmp/length.json" framing)
[ "$fr2" = length ] || fail "--no-framing: framing '$fr2'"
[ "$n2" -lt "$length_delta" ] || fail "--no-framing counted $n2 of $length_delta: not batches?"
echo "ok: --no-framing: framing length, $n2 of $length_delta commands (one per batch or so)"

# Latency: commands that take the server 0.5 ms each (DEBUG SLEEP), 16 a batch, so that
# server time, which is what ebee sees, dominates the client's own (at a few tens of us,
# redis-benchmark's p50 of plain GETs is mostly its own event loop's).
build/ebee trace --pid "$rpid" --json >"$tmp/lat.json" 2>"$tmp/lat.err" &
e=$!
pids+=("$e")
for _ in $(seq 200); do grep -qs "probes live" "$tmp/lat.err" && break; sleep 0.05; done
redis-benchmark -p "$port" -n 1600 -c 2 -P 16 -q debug sleep 0.0005 2>&1 | tr '\r' '\n' |
	grep 'p50=' >"$tmp/lat.bench" || fail "redis-benchmark debug sleep"
kill -INT "$e"
wait "$e" || fail "ebee exited non-zero"
cp50=$(sed -n 's/.*p50=\([0-9.]*\) msec.*/\1/p' "$tmp/lat.bench" | tail -1)
ep50=$(field "$tmp/lat.json" sojourn_p50_ns)
python3 - "$cp50" "$ep50" <<'PY' || fail "sojourn p50 not within 15% of the client's"
import sys
c, e = float(sys.argv[1]) * 1e6, float(sys.argv[2])
print(f"client p50 {c/1e3:.0f} us, ebee sojourn p50 {e/1e3:.0f} us, ratio {e/c:.3f}")
sys.exit(0 if abs(e / c - 1) <= 0.15 else 1)
PY
echo PASS
