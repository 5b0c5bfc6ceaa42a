#!/bin/bash
# Where the framing program attaches (docs/design.md 4.9, "Scope"): to the cgroups of the
# traced workload's sockets, not to the cgroup v2 root, so that neighbours' packets (here
# the clients', in the root) never run it; and wherever those sockets are, exactly.
#  1. redis in a cgroup of its own: frame_io on that cgroup's two hooks, the root's
#     attachments as they were; redis-benchmark with 16 commands pipelined counted exactly
#     (resp, trusted). When ebee exits, the links go.
#  2. redis started in cgroup B (its listener there) and moved to A before ebee starts:
#     both cgroups, from the socket diagnostics' cgroup id of its listener; exact again.
#  3. A listener made after ebee started, in a cgroup outside the scope (redis moved to C,
#     then CONFIG SET port): the first connection's bytes go unseen, the kernel side
#     reports the server reading them (frame_missed), ebee attaches to C too and says so;
#     the connections after it are framed and every command is counted.
#  4. A worker of the traced process in a cgroup of its own (D) with a listener there, made
#     before ebee starts: D is in the scope from the start (the descendants are read too).
# The counts are redis's own (total_commands_processed).
set -u
. "$(dirname "$0")/../lib/ebeetest.sh"
. tests/lib/servers.sh
command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null ||
	{ echo "SKIP: redis-server/redis-benchmark not installed (make deps)"; exit 77; }
command -v bpftool >/dev/null || { echo "SKIP: bpftool not installed (make deps)"; exit 77; }
cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$cg2" ] || { echo "SKIP: no cgroup v2 hierarchy mounted"; exit 77; }

base=ebee-scope-$$
for c in own a b c d; do mkdir "$cg2/$base-$c" || fail "cannot make $cg2/$base-$c"; done
scope_cleanup() {
	local rc=$? p c
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	for c in own a b c d; do
		rmdir "$cg2/$base-$c" 2>/dev/null || sleep 0.5
		rmdir "$cg2/$base-$c" 2>/dev/null
	done
	(exit "$rc")
	ebeetest_cleanup
}
trap scope_cleanup EXIT

# start_redis CGROUP PORT: redis-server made in cgroup CGROUP; sets rpid.
start_redis() {
	(
		echo "$BASHPID" >"$cg2/$1/cgroup.procs" || exit 1
		exec redis-server --port "$2" --bind 127.0.0.1 --save '' --appendonly no --dir "$tmp"
	) >"$tmp/redis-$2.log" 2>&1 &
	rpid=$!
	pids+=("$rpid")
	for _ in $(seq 100); do port_accepts "$2" && break; sleep 0.05; done
	port_accepts "$2" || fail "redis did not start: $(cat "$tmp/redis-$2.log")"
}
cmds() { redis-cli -p "$1" info stats | tr -d '\r' | sed -n 's/^total_commands_processed://p'; }
field() { python3 -c 'import json,sys; o=json.loads(open(sys.argv[1]).read().splitlines()[-1]); print(o[sys.argv[2]])' "$1" "$2"; }
# frame_io's attachments to cgroup DIR (ingress and egress, each a line)
frame_links() { bpftool cgroup show "$1" 2>/dev/null | grep -c ' frame_io'; }
bench() {
	redis-benchmark -p "$1" -n 16000 -c 4 -P 16 -t get,set >"$tmp/bench-$1.out" 2>&1 ||
		fail "redis-benchmark: $(tail -3 "$tmp/bench-$1.out")"
}
# check NAME EXPECTED: ebee's JSON says EXPECTED requests, framed resp, trusted.
check() {
	local n fr un
	n=$(field "$tmp/$1.json" requests)
	fr=$(field "$tmp/$1.json" framing)
	un=$(field "$tmp/$1.json" untrusted)
	[ "$fr" = resp ] || fail "$1: framing '$fr', not resp: $(tail -1 "$tmp/$1.json")"
	[ "$un" = False ] || fail "$1: untrusted: $(field "$tmp/$1.json" warning)"
	[ "$n" = "$2" ] || fail "$1: ebee counted $n commands, redis $2"
	echo "ok: $1: ebee $n commands = redis's, framing resp, trusted"
}

# 1. A cgroup of its own.
port=$(free_port)
start_redis "$base-own" "$port"
root_before=$(frame_links "$cg2")
ebee_on own "$rpid" -v
grep -q "framing attaches to cgroup(s) /$base-own\$" "$tmp/own.err" ||
	fail "no scope line for /$base-own: $(grep framing "$tmp/own.err")"
[ "$(frame_links "$cg2/$base-own")" = 2 ] ||
	fail "frame_io is not on $base-own's two hooks: $(bpftool cgroup show "$cg2/$base-own")"
root_now=$(frame_links "$cg2")
[ "$root_now" = "$root_before" ] ||
	fail "frame_io attachments on the root went from $root_before to $root_now"
b=$(cmds "$port")
bench "$port"
a=$(cmds "$port")
ebee_off own
check own $((a - b + 1))
[ "$(frame_links "$cg2/$base-own")" = 0 ] || fail "frame_io still on $base-own after ebee exited"
echo "ok: frame_io on /$base-own only (the root's attachments: $root_before before and during), gone after"
kill "$rpid"
wait "$rpid" 2>/dev/null

# 2. The listener in B, the process in A.
port=$(free_port)
start_redis "$base-b" "$port"
echo "$rpid" >"$cg2/$base-a/cgroup.procs" || fail "cannot move redis to $base-a"
ebee_on moved "$rpid" -v
line=$(grep "framing attaches to cgroup(s)" "$tmp/moved.err")
for c in a b; do
	echo "$line" | grep -q "/$base-$c\b" || fail "scope without /$base-$c: $line"
	[ "$(frame_links "$cg2/$base-$c")" = 2 ] || fail "frame_io is not on $base-$c's hooks"
done
b=$(cmds "$port")
bench "$port"
a=$(cmds "$port")
ebee_off moved
check moved $((a - b + 1))
echo "ok: listener in $base-b, process in $base-a: ${line#ebee: }"

# 3. A listener made later, elsewhere. ebee traces redis (in A, listener in B); redis moves
# to C and rebinds: its new listener is C's.
ebee_on later "$rpid" -v
echo "$rpid" >"$cg2/$base-c/cgroup.procs" || fail "cannot move redis to $base-c"
port2=$(free_port)
redis-cli -p "$port" config set port "$port2" >/dev/null || fail "CONFIG SET port"
for _ in $(seq 100); do port_accepts "$port2" && break; sleep 0.05; done
ss -ltn --cgroup 2>/dev/null | grep -q ":$port2 .*cgroup:/$base-c" ||
	fail "the new listener is not in $base-c: $(ss -ltn --cgroup | grep ":$port2")"
# The first connection on it (this INFO) is read before frame_io is there.
b=$(cmds "$port2")
for _ in $(seq 100); do grep -qs "a connection in cgroup /$base-c" "$tmp/later.err" && break; sleep 0.05; done
grep "a connection in cgroup /$base-c" "$tmp/later.err" ||
	fail "no report of the connection in $base-c: $(grep framing "$tmp/later.err")"
[ "$(frame_links "$cg2/$base-c")" = 2 ] || fail "frame_io is not on $base-c's hooks after the report"
bench "$port2"
a=$(cmds "$port2")
ebee_off later
# CONFIG SET ran traced, before $b was read: one command more than the delta.
check later $((a - b + 2))
kill "$rpid"
wait "$rpid" 2>/dev/null

# 4. A worker elsewhere: a parent in OWN forks a child, the test moves the child to D, and
# only then does the child listen (so its listener is D's).
port=$(free_port)
(
	echo "$BASHPID" >"$cg2/$base-own/cgroup.procs" || exit 1
	exec python3 - "$port" "$tmp/moved" <<'PY'
import os, socket, sys, time
port, flag = int(sys.argv[1]), sys.argv[2]
child = os.fork()
if child == 0:
    while not os.path.exists(flag):
        time.sleep(0.02)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(8)
    time.sleep(120)
    sys.exit(0)
print(child, flush=True)
time.sleep(120)
PY
) >"$tmp/fork.out" 2>&1 &
ppid=$!
pids+=("$ppid")
for _ in $(seq 100); do [ -s "$tmp/fork.out" ] && break; sleep 0.05; done
kid=$(head -1 "$tmp/fork.out")
[ -n "$kid" ] || fail "the forking server did not start: $(cat "$tmp/fork.out")"
pids+=("$kid")
echo "$kid" >"$cg2/$base-d/cgroup.procs" || fail "cannot move the worker to $base-d"
touch "$tmp/moved"
for _ in $(seq 100); do port_accepts "$port" && break; sleep 0.05; done
port_accepts "$port" || fail "the worker does not listen"
ebee_on worker "$ppid" -v
line=$(grep "framing attaches to cgroup(s)" "$tmp/worker.err")
for c in own d; do
	echo "$line" | grep -q "/$base-$c\b" || fail "scope without /$base-$c: $line"
done
[ "$(frame_links "$cg2/$base-d")" = 2 ] || fail "frame_io is not on $base-d's hooks"
ebee_off worker
echo "ok: a worker with its listener in $base-d: ${line#ebee: }"
echo PASS
