#!/bin/bash
# A controller never gets a silent zero (issue 40): two echo servers
# (tests/lib/echo_server.py) traced by parties' ebee in conn mode, where a request is
# counted when its connection closes.
#   held:  one connection, opened after parties started, pings every 50 ms and stays open:
#          bytes move, no request is counted. Its intervals are stale, not idle, with
#          ebee's reason id (no_requests) in stale_why, and parties says why on stderr once,
#          the bytes included.
#   after: 10 short connections (counted: fresh), 3 s with no client (a true zero, the
#          control: idle), then a connection held like held's: the window of age
#          (ebee_window_ms) shows bytes and no request: stale.
. "$(dirname "$0")/test_parties_lib.sh"
pt_require build/parties
[ -n "$(awk '$3 == "cgroup2"' /proc/mounts)" ] || skip "no cgroup v2 hierarchy mounted"

p1=$(free_port)
p2=$(free_port)
{
	pt_ini_controller 300
	cat <<INI
[resources]
smt = shared
cpus = 0-1
quota = true
[workload held]
command = python3 tests/lib/echo_server.py $p1 $PT_TMP/held.port
target_ms = 50
cores = 1
source = ebee
ebee_mode = conn
[workload after]
command = python3 tests/lib/echo_server.py $p2 $PT_TMP/after.port
target_ms = 50
cores = 1
source = ebee
ebee_mode = conn
INI
} >"$PT_TMP/parties.ini"

pt_parties -c "$PT_TMP/parties.ini" --duration 60
pt_wait_started
for p in "$p1" "$p2"; do pt_wait_port "$p" || die "no server accepts on $p"; done

# held: one connection, a line every 50 ms for 20 s; after: 10 short connections, 3 s of
# nothing, then the same held connection.
python3 - "$p1" "$p2" <<'PY' &
import socket, sys, threading, time
def ping(s):
    s.sendall(b"ping\n")
    got = b""
    while len(got) < 5:
        got += s.recv(5 - len(got))
def held(port, first_short):
    for _ in range(first_short):
        with socket.create_connection(("127.0.0.1", port)) as s:
            ping(s)
    if first_short:
        time.sleep(3)  # the short ones' intervals (fresh), then nothing (idle)
    s = socket.create_connection(("127.0.0.1", port))
    end = time.time() + 20
    while time.time() < end:
        ping(s)
        time.sleep(0.05)
threads = [threading.Thread(target=held, args=(int(sys.argv[1]), 0)),
           threading.Thread(target=held, args=(int(sys.argv[2]), 10))]
for t in threads: t.start()
for t in threads: t.join()
PY
client=$!
PT_PIDS+=($client)

pt_log_wait 'w["after"]["state"] == "fresh"' 20 >/dev/null ||
	{ tail -3 "$PT_TMP/log.jsonl"; die "after's short connections were not counted (fresh)"; }
echo "ok: after: its short connections counted, fresh"
pt_log_wait 'w["after"]["state"] == "idle"' 20 >/dev/null ||
	{ tail -3 "$PT_TMP/log.jsonl"; die "after, with no client, was not idle"; }
echo "ok: after: no client, idle (a true zero)"
pt_log_wait 'w["held"]["state"] == "stale" and "no_requests" in (w["held"].get("stale_why") or "")' 20 >/dev/null ||
	{ tail -3 "$PT_TMP/log.jsonl"; die "held was not stale with no_requests (a silent zero)"; }
pt_log_wait 'w["after"]["state"] == "stale" and "no_requests" in (w["after"].get("stale_why") or "")' 20 >/dev/null ||
	{ tail -3 "$PT_TMP/log.jsonl"; die "after was not stale with no_requests once its window held no request"; }
echo "ok: held and after stale, not idle: $(python3 -c 'import json,sys
for l in reversed(open(sys.argv[1]).read().splitlines()):
    r = json.loads(l)
    if r.get("summary"): continue
    w = {x["name"]: x for x in r["wl"]}
    if "no_requests" in (w["held"].get("stale_why") or ""): print(w["held"]["stale_why"]); break' "$PT_TMP/log.jsonl")"
sleep 1
n=$(grep -c "ebee cannot count pid .* requests exactly: [0-9]* bytes in [0-9]* reads and writes" "$PT_TMP/parties.err")
[ "$n" = 2 ] || { cat "$PT_TMP/parties.err"; die "the reason was said $n times on stderr, not once for held and once for after"; }
grep "ebee cannot count pid" "$PT_TMP/parties.err" | grep -q "conn mode counts a request when its connection closes: none has; not acting" ||
	{ cat "$PT_TMP/parties.err"; die "the reason was not logged whole"; }
echo "ok: said once each on stderr, whole: $(grep -m1 "ebee cannot count" "$PT_TMP/parties.err")"
kill "$client" 2>/dev/null
wait "$client" 2>/dev/null
pt_stop_restored
echo PASS
