#!/bin/bash
# build/hotel, the Hotel App Search workload, against a real memcached (root): the documented
# answer for the standard query over HTTP, exact request counts (client, server and ebee in
# `conn` mode agree), the rate cache filled through memcached, 400 for bad parameters, and
# the fallback to the database when memcached is gone. Bounded: about 15 s.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/servers.sh
. tests/lib/ebee_live.sh
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (ebee loads BPF programs)"; exit 77; }
command -v memcached >/dev/null || { echo "SKIP: memcached is not installed"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }
for b in build/hotel build/ebee build/fixtures/http_client; do
	[ -x "$b" ] || { echo "FAIL: $b missing (make all)"; exit 1; }
done

tmp=$(mktemp -d /tmp/hotel-test.XXXXXX)
mc_pid="" hotel_pid="" ebee_pid=""
cleanup() {
	[ -n "$ebee_pid" ] && stop_pid "$ebee_pid"
	[ -n "$hotel_pid" ] && stop_pid "$hotel_pid"
	[ -n "$mc_pid" ] && stop_pid "$mc_pid"
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
die() { echo "FAIL: $*"; exit 1; }

# get PATH: print "STATUS BODY" of one GET on a fresh connection.
get() {
	python3 - "$port" "$1" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(b"GET " + sys.argv[2].encode() + b" HTTP/1.1\r\nHost: hotel\r\n\r\n")
d = b""
while True:
    c = s.recv(4096)
    if not c:
        break
    d += c
head, _, body = d.partition(b"\r\n\r\n")
print(head.split(b" ")[1].decode(), body.decode())
PY
}

# count_stat NAME: a memcached stat (get_hits, cmd_set, ...).
mc_stat() {
	python3 - "$mc_port" "$1" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(b"stats\r\n")
d = b""
while not d.endswith(b"END\r\n"):
    d += s.recv(65536)
for line in d.decode().split("\r\n"):
    f = line.split()
    if len(f) == 3 and f[1] == sys.argv[2]:
        print(f[2])
PY
}

mc_port=$(free_port) || die "no free port"
mc_pid=$(SERVERS_LOG_DIR=$tmp start_memcached "$mc_port") || die "memcached did not start"
build/hotel --port 0 --threads 4 --memcached-port "$mc_port" --ready-file "$tmp/ready" \
	--count-file "$tmp/count" --timeout 60 >"$tmp/hotel.out" 2>"$tmp/hotel.err" &
hotel_pid=$!
for _ in $(seq 100); do [ -s "$tmp/ready" ] && break; sleep 0.05; done
[ -s "$tmp/ready" ] || die "hotel did not start: $(cat "$tmp/hotel.err")"
port=$(cat "$tmp/ready")
grep -q "memcached" "$tmp/hotel.err" && bad "hotel could not reach memcached: $(cat "$tmp/hotel.err")"

std="/search?lat=37.7963&lon=-122.4015&inDate=2015-04-09&outDate=2015-04-11"
r=$(get "$std")
[ "$r" = '200 {"hotelIds":["2","1","3"]}' ] && ok "standard query: $r" || bad "standard query: '$r'"
r=$(get "/search")
[ "$r" = '200 {"hotelIds":["2","1","3"]}' ] && ok "defaults are the standard query" || bad "no parameters: '$r'"
r=$(get "/search?lat=north&lon=-122.4015")
[ "${r%% *}" = 400 ] && ok "bad lat: $r" || bad "bad lat answered '$r'"
r=$(get "/search?lat=36.0&lon=-122.4")
[ "$r" = '200 {"hotelIds":[]}' ] && ok "nothing within 10 km: $r" || bad "far query: '$r'"
# The first search missed and set the five keys; the ones after hit them.
sets=$(mc_stat cmd_set)
[ "$sets" = 5 ] && ok "first search set 5 rate keys in memcached" || bad "memcached cmd_set $sets, want 5"

# ebee first; wait until its probes are live, then exactly N requests. ebee runs until
# SIGINT after they are served, not for a --duration: 300 requests took over 4 s in the
# 6.1 guest under TCG, past the 5 s --duration this had (ebee 214 and 255 of 300).
n=300
: >"$tmp/ebee.err"
build/ebee trace --pid "$hotel_pid" --json >"$tmp/ebee.json" 2>"$tmp/ebee.err" &
ebee_pid=$!
ebee_wait_live "$ebee_pid" "$tmp/ebee.err" || die "ebee: no 'probes live' line: $(cat "$tmp/ebee.err")"
before=$(cat "$tmp/count")
hits0=$(mc_stat get_hits)
out=$(build/fixtures/http_client --port "$port" --requests $n --concurrency 4 --path "$std") ||
	bad "http_client: $out"
[ "$out" = "sent $n ok $n errors 0" ] && ok "client: $out" || bad "client: $out"
for _ in $(seq 100); do [ "$(cat "$tmp/count")" -ge $((before + n)) ] && break; sleep 0.05; done
# a conn request ends at the server's close, just after its answer: give the last ones time
sleep 1
kill -INT "$ebee_pid"
wait "$ebee_pid"
rc=$?
ebee_pid=""
[ $rc -eq 0 ] || bad "ebee exited $rc: $(cat "$tmp/ebee.err")"
python3 - "$tmp/ebee.json" "$hotel_pid" $n <<'PY' && ok "ebee: $(cat "$tmp/ebee.json")" || bad "ebee summary: $(cat "$tmp/ebee.json")"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, lines
o = json.loads(lines[0])
assert o["pid"] == int(sys.argv[2]), o["pid"]
assert o["requests"] == int(sys.argv[3]), o["requests"]
assert o["mode"] == "conn", o["mode"]
assert 0 < o["p50_ns"] <= o["p99_ns"] < 1e9, o
PY
after=$(cat "$tmp/count")
[ $((after - before)) -eq $n ] && ok "server counted $n" || bad "server counted $((after - before)), want $n"
hits=$(( $(mc_stat get_hits) - hits0 ))
[ "$hits" -eq $((5 * n)) ] && ok "each search read its 5 rates from memcached ($hits hits)" ||
	bad "memcached get_hits grew by $hits, want $((5 * n))"

# memcached gone: still the right answer, counted as fallbacks.
stop_pid "$mc_pid"
mc_pid=""
r=$(get "$std")
[ "$r" = '200 {"hotelIds":["2","1","3"]}' ] && ok "without memcached: $r" || bad "without memcached: '$r'"
stop_pid "$hotel_pid"
hotel_pid=""
grep -Eq "served $((after + 1)) \(.*[1-9][0-9]* searches fell back" "$tmp/hotel.err" &&
	ok "$(tail -1 "$tmp/hotel.err")" || bad "hotel's exit line: $(cat "$tmp/hotel.err")"

[ $fails -eq 0 ] && { echo "PASS"; exit 0; }
echo "$fails check(s) failed"
exit 1
