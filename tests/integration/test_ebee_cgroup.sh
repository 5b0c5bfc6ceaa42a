#!/bin/bash
# ebee trace --cgroup: a server started inside a cgroup and one moved into it later are both
# traced and their requests counted exactly; a server outside the cgroup is not; the path
# may be given relative to the hierarchy; a missing cgroup is a one-line error. The
# requests are Debian's curl's (tests/lib/curl_get.sh): exactly the responses it got.
set -u
. "$(dirname "$0")/../lib/ebeetest.sh"
. tests/lib/curl_get.sh
command -v curl >/dev/null || { echo "SKIP: curl not installed (make deps)"; exit 77; }
if [ -d /sys/fs/cgroup/unified ] && [ -f /sys/fs/cgroup/unified/cgroup.procs ]; then
	base=/sys/fs/cgroup/unified
elif [ -f /sys/fs/cgroup/cgroup.controllers ]; then
	base=/sys/fs/cgroup
else
	echo "SKIP: no cgroup v2 hierarchy mounted"
	exit 77
fi
name=ebee-test-cg-$$
cg=$base/$name
cleanup() {
	ebeetest_cleanup
	for _ in $(seq 20); do rmdir "$cg" 2>/dev/null && break; sleep 0.1; done
}
trap cleanup EXIT
mkdir "$cg" || fail "mkdir $cg"

start_cpr a
echo "$a_pid" >"$cg/cgroup.procs" || fail "cannot move pid $a_pid into $cg"
start_cpr out

# Traced until the clients are done, then SIGINT: a fixed --duration 4 ran out before the
# clients began in the 6.12 guest (ebee live after 7 s there: 0 of 31 and 0 of 47 counted).
: >"$tmp/err"
build/ebee trace --cgroup "/$name" --json -v >"$tmp/out.json" 2>"$tmp/err" &
eb=$!
pids+=($eb)
ebee_wait_live "$eb" "$tmp/err" || fail "ebee did not start: $(cat "$tmp/err")"
grep -q "of cgroup $cg" "$tmp/err" || fail "no start line naming the cgroup: $(cat "$tmp/err")"

start_cpr b
echo "$b_pid" >"$cg/cgroup.procs" || fail "cannot move pid $b_pid into $cg"
# the watcher checks every 200 ms and says when it starts tracing a pid that joined
for _ in $(seq 300); do grep -qs "tracing pid $b_pid\b" "$tmp/err" && break; sleep 0.1; done
grep -q "tracing pid $b_pid\b" "$tmp/err" || fail "ebee did not pick up pid $b_pid in 30 s: $(cat "$tmp/err")"
n=$(curl_get "$a_port" 31)
[ "$n" = 31 ] || fail "client a: curl got $n responses of 31"
n=$(curl_get "$b_port" 47)
[ "$n" = 47 ] || fail "client b: curl got $n responses of 47"
n=$(curl_get "$out_port" 13)
[ "$n" = 13 ] || fail "client out: curl got $n responses of 13"
kill -INT $eb
wait $eb || fail "ebee exited non-zero after SIGINT: $(cat "$tmp/err")"
python3 - "$tmp/out.json" "$a_pid" "$b_pid" "$out_pid" <<'PY' || fail "counts wrong: $(cat "$tmp/out.json")"
import json, sys
rows = {o["pid"]: o for o in map(json.loads, open(sys.argv[1]).read().splitlines())}
a, b, out = map(int, sys.argv[2:])
assert rows[a]["requests"] == 31, rows[a]
assert rows[b]["requests"] == 47, rows[b]
assert out not in rows, "a process outside the cgroup was traced"
print(f"ok: started inside: {rows[a]['requests']} of curl's 31; joined later: {rows[b]['requests']} of curl's 47; outside: not traced")
PY

build/ebee trace --cgroup /no-such-cgroup-$$ --duration 1 2>"$tmp/err2"
[ $? = 1 ] && grep -q "no cgroup '/no-such-cgroup-$$'" "$tmp/err2" || fail "missing cgroup: $(cat "$tmp/err2")"
echo PASS
