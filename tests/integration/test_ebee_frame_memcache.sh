#!/bin/bash
# memcached framing (issue 20): Debian's memcached driven by tests/lib/memcache_client.py,
# commands pipelined 20 per write. Text: gets (hits, misses, multi-key), sets whose data
# holds "\r\nEND\r\n", noreply sets and deletes, incr, meta mg/ms/mn; binary: SET GET GETQ
# SETQ DELETEQ DELETE, each batch ended by a NOOP. ebee must count exactly the requests the
# client saw answered, framed as "memcache" / "memcache-binary", trusted, and count the
# noreply and quiet ones apart (unanswered); memcached's own counters (stats cmd_set,
# cmd_get, delete_*, incr_*, read before and after) must show it served what the client
# counted, so that ebee's requests + unanswered are every command the server processed. Meta
# commands in quiet mode make the workload untrusted, said so in its warning.
# One request at a time (alone, stall): counted by length once verified, still exact; a
# client that pipelines later (late) is found by a sample and said so.
# Latency: memcached has no command that takes long (redis's DEBUG SLEEP), and at a few tens
# of microseconds a pipelined batch's client-side time is mostly the client's own (python),
# so the pipelined runs print sojourn p50 against the client's for the record only. The check
# is on a server-side delay: the client stops memcached (SIGSTOP) before each get and
# continues it 20 ms later; ebee's sojourn p50 (arrival to the server's write) must lie
# within the client's p50 (its write to its read of the response), as below.
set -u
. "$(dirname "$0")/../lib/ebeetest.sh"
. tests/lib/servers.sh
command -v memcached >/dev/null || { echo "SKIP: memcached not installed (make deps)"; exit 77; }
[ -n "$(awk '$3 == "cgroup2"' /proc/mounts)" ] || { echo "SKIP: no cgroup v2 hierarchy mounted"; exit 77; }

port=$(free_port)
mpid=$(SERVERS_LOG_DIR=$tmp start_memcached "$port") || fail "memcached did not start"
pids+=("$mpid")

# mcstats FILE: memcached's stats (a connection ebee does not trace: read before ebee starts
# and after it stopped) as JSON.
mcstats() {
	python3 - "$port" >"$1" <<'PY'
import json, socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"stats\r\n"); b = b""
while not b.endswith(b"END\r\n"): b += s.recv(65536)
print(json.dumps({l.split()[1]: l.split()[2] for l in b.decode().splitlines() if l.startswith("STAT")}))
PY
}

# run NAME CLIENT_ARGS...: the client under ebee; ebee's last JSON in $tmp/NAME.json, the
# client's counts in $tmp/NAME.client, memcached's stats before and after in NAME.before/after.
run() {
	local name=$1 e
	shift
	mcstats "$tmp/$name.before"
	: >"$tmp/$name.err"
	build/ebee trace --pid "$mpid" --json >"$tmp/$name.json" 2>"$tmp/$name.err" &
	e=$!
	pids+=("$e")
	ebee_wait_live "$e" "$tmp/$name.err" || fail "ebee did not start: $(cat "$tmp/$name.err")"
	python3 tests/lib/memcache_client.py "$port" "$@" >"$tmp/$name.client" ||
		fail "memcache_client.py $*"
	sleep 0.3 # the last records through the ring
	kill -INT "$e"
	wait "$e" || fail "ebee exited non-zero: $(cat "$tmp/$name.err")"
	mcstats "$tmp/$name.after"
}

# check NAME FRAMING [VERIFIED]: exact counts, trusted, memcached's own counters agree;
# VERIFIED: how many connections were counted by length once verified (JSON verified).
check() {
	python3 - "$tmp/$1" "$2" "${3:-0}" <<'PY' || fail "$1: counts differ"
import json, statistics, sys
p, framing, verified = sys.argv[1], sys.argv[2], int(sys.argv[3])
e = json.loads(open(p + ".json").read().splitlines()[-1])
c = json.loads(open(p + ".client").read())
b, a = (json.loads(open(p + x).read()) for x in (".before", ".after"))
d = lambda *k: sum(int(a[x]) - int(b[x]) for x in k)
ok = True
def want(what, got, exp):
    global ok
    if got != exp:
        print(f"{what}: {got}, want {exp}")
        ok = False
want("framing", e["framing"], framing)
if e["framing"] != framing:  # how its connections' first bytes were seen
    print(f"handshake_data {e['handshake_data']}, unseen {e['unseen']}, warning {e['warning']}")
want("untrusted", e["untrusted"], False)
if e["untrusted"]:
    print("warning:", e["warning"])
want("ebee requests = answered", e["requests"], c["answered"])
want("ebee unanswered = noreply/quiet", e["unanswered"], c["unanswered"])
want("connections verified, counted by length", e["verified"], verified)
want("of them seen pipelining later", e["late"], 0)
# memcached's own counts: what it served is what the client sent.
want("memcached cmd_set", d("cmd_set"), c["sets"])
want("memcached cmd_get (keys)", d("cmd_get"), c["get_keys"])
want("memcached deletes", d("delete_hits", "delete_misses"), c["deletes"])
want("memcached incrs", d("incr_hits", "incr_misses"), c["incrs"])
# Every command the server processed is one of ebee's requests or unanswered ones: cmd_get
# counts keys, the client's multi-key gets are 3 keys, 1 command.
server_cmds = (d("cmd_set") + d("cmd_get") - (c["get_keys"] - c["gets_cmds"]) +
               d("delete_hits", "delete_misses") + d("incr_hits", "incr_misses") + c["other"])
want("ebee requests + unanswered = server's commands", e["requests"] + e["unanswered"],
     server_cmds)
lat = statistics.median(c["lat_us"])
print(f"{framing}: ebee {e['requests']} requests = client's {c['answered']} answered, "
      f"{e['unanswered']} unanswered = {c['unanswered']} noreply/quiet; memcached: cmd_set "
      f"{d('cmd_set')}, cmd_get {d('cmd_get')}, {server_cmds} commands; "
      f"(for the record: client p50 {lat:.0f} us from its batch's write, ebee sojourn p50 "
      f"{(e['sojourn_p50_ns'] or 0) / 1e3:.0f} us)")
sys.exit(0 if ok else 1)
PY
}

run text text --batches 50 --per 20
check text memcache
echo "ok: text protocol, pipelined: exact"

run binary binary --batches 50 --per 24
check binary memcache-binary
echo "ok: binary protocol, quiet opcodes ended by NOOP: exact"

# One request at a time: after 32 alone the io pattern counts the connection (the gate's
# cost, not the parser's: make bench section 1), one segment in 16 still parsed; still exact.
run alone alone -n 120 --batches 0
check alone memcache 1
echo "ok: text, one at a time: verified, counted by length, exact"
run alonebin alone -n 120 --batches 0 --binary
check alonebin memcache-binary 1
echo "ok: binary, one at a time: verified, counted by length, exact"

# A client that pipelines only later: a sample finds a segment of 20 gets, the connection is
# parsed again from there (exact from then), the bursts before it may have counted one each,
# which the warning says (untrusted). At most 16 batches go by unsampled (the client's ACKs
# count among the segments; a sampled ACK hands the sample to the next segment). The
# bound's reference is memcached's own count of what it served (cmd_get + cmd_set), which
# must be the client's answered.
run late alone -n 60 --batches 40 --per 20
python3 - "$tmp/late" <<'PY' || fail "late pipelining: not found or not said"
import json, sys
e = json.loads(open(sys.argv[1] + ".json").read().splitlines()[-1])
c = json.loads(open(sys.argv[1] + ".client").read())
b, a = (json.loads(open(sys.argv[1] + x).read()) for x in (".before", ".after"))
served = sum(int(a[k]) - int(b[k]) for k in ("cmd_get", "cmd_set"))
print(f"late pipelining: ebee {e['requests']} of {c['answered']} answered (memcached served "
      f"{served}), verified {e['verified']}, late {e['late']}, untrusted {e['untrusted']}, "
      f"warning: {e['warning']}")
ok = (e["framing"] == "memcache" and e["verified"] == 1 and e["late"] == 1 and e["untrusted"]
      and "counted by length" in (e["warning"] or "") and served == c["answered"]
      and served - 16 * 19 <= e["requests"] <= served)
sys.exit(0 if ok else 1)
PY
echo "ok: pipelining after verification: found by a sample, parsed from there, untrusted"

python3 tests/lib/memcache_client.py "$port" floor -n 100 >"$tmp/floor" || fail "memcache_client.py floor"
run stall stall --pid "$mpid" -n 100 --stall-ms 20
check stall memcache 1
# The stalled gets' sojourn lies inside the client's latency and holds the 20 ms stall; the
# client's latency exceeds it by the client's own time, which the same run measured on as
# many gets answered at once (untraced, just before): the gap is at most that p50 plus 15%
# of the client's p50. 20 ms, not 2: the client's wake-up after a stall is not in that
# reference, and on a busy machine it took 1.5 ms (2 ms stalls: client 3652 us, sojourn 2106).
python3 - "$tmp/stall" "$tmp/floor" "$(systemd-detect-virt 2>/dev/null)" <<'PY' || fail "sojourn p50 not within the client's latency and its own time"
import json, statistics, sys
e = json.loads(open(sys.argv[1] + ".json").read().splitlines()[-1])
cl = json.loads(open(sys.argv[1] + ".client").read())
c = statistics.median(cl["lat_us"]) * 1e3
floor = json.loads(open(sys.argv[2]).read())["floor_us"] * 1e3
s = e["sojourn_p50_ns"]
print(f"server stalled 20 ms a get: client p50 {c/1e3:.0f} us, ebee sojourn p50 {s/1e3:.0f} us, "
      f"ratio {s/c:.3f}; the client's p50 for a get answered at once {floor/1e3:.0f} us")
inside = s >= 20e6 * 0.99 and s <= c * 1.01
near = c - s <= floor + 0.15 * c
if inside and not near and sys.argv[3] == "qemu":
    # Under emulation the client's own wake-up after the stall is the emulator's: 8 vCPUs
    # in one host thread beside the host suite (the 6.12 guest, a full run on 2026-12-07) woke it 18-23
    # ms late (client p50 48972 us, sojourn 31295 us), which the untraced floor (gets
    # answered at once: no sleep to wake from) cannot hold. What ebee measured is still
    # checked: inside the client's latency and holding the 20 ms stall.
    print(f"SKIP (this case): sojourn within the client's own time: under emulation the "
          f"client woke {(c - s)/1e3:.0f} us after ebee's response, past its floor "
          f"{floor/1e3:.0f} us + 15%")
    sys.exit(0)
sys.exit(0 if inside and near else 1)
PY
echo "ok: latency: sojourn p50 inside the client's, the gap within its own time or 15% (not under emulation)"

# Meta commands in quiet mode: which get an answer depends on the outcome: untrusted.
run quiet quiet
python3 - "$tmp/quiet" <<'PY' || fail "quiet mode: not said"
import json, sys
e = json.loads(open(sys.argv[1] + ".json").read().splitlines()[-1])
c = json.loads(open(sys.argv[1] + ".client").read())
print(f"quiet mode: framing {e['framing']}, untrusted {e['untrusted']}, unanswered "
      f"{e['unanswered']}, warning: {e['warning']}")
ok = (e["framing"] == "memcache" and e["untrusted"] and "quiet mode" in (e["warning"] or "")
      and e["unanswered"] == c["unanswered"])
sys.exit(0 if ok else 1)
PY
echo "ok: meta quiet mode: untrusted, warned"
echo PASS
