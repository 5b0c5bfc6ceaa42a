#!/bin/bash
# parties does not act on figures ebee marks untrusted: two echo servers
# (tests/lib/echo_server.py) fed TLS records after a ClientHello offering h2, which ebee
# frames by record but cannot trust (framing tls, untrusted: the server's choice is hidden,
# the streams may be multiplexed). Workload "h2" has the default trust_unframed = no: its
# intervals are stale with ebee's reasons (their ids: tls_mux) in the log's stale_why, and
# parties says why on stderr once, each reason whole. Workload "trusting" has
# trust_unframed = yes: its p99 drives as usual (fresh).
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
[workload h2]
command = python3 tests/lib/echo_server.py $p1 $PT_TMP/h2.port
target_ms = 50
cores = 1
source = ebee
ebee_mode = io
[workload trusting]
command = python3 tests/lib/echo_server.py $p2 $PT_TMP/trusting.port
target_ms = 50
cores = 1
source = ebee
ebee_mode = io
trust_unframed = yes
INI
} >"$PT_TMP/parties.ini"

pt_parties -c "$PT_TMP/parties.ini" --duration 40
pt_wait_started
pt_wait_port "$p1" || die "h2 does not accept on $p1"
pt_wait_port "$p2" || die "trusting does not accept on $p2"

# TLS clients: a ClientHello as Python's ssl writes it, offering h2 and http/1.1, then
# application-data records one at a time, echoed back; a few connections every 100 ms for 6 s.
python3 - "$p1" "$p2" <<'PY' &
import socket, ssl, sys, time
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
ctx.set_alpn_protocols(["h2", "http/1.1"])
i, o = ssl.MemoryBIO(), ssl.MemoryBIO()
try:
    ctx.wrap_bio(i, o).do_handshake()
except ssl.SSLWantReadError:
    pass
hello = o.read()
rec = lambda b: b"\x17\x03\x03" + len(b).to_bytes(2, "big") + b
end = time.time() + 6
while time.time() < end:
    for port in sys.argv[1:]:
        s = socket.create_connection(("127.0.0.1", int(port)))
        for m in (hello, rec(b"hi"), rec(b"ho")):
            s.sendall(m)
            got = b""
            while len(got) < len(m):
                got += s.recv(65536)
        s.close()
    time.sleep(0.1)
PY
client=$!
PT_PIDS+=($client)

pt_log_wait 'w["h2"]["state"] == "stale" and "untrusted" in (w["h2"].get("stale_why") or "") and "tls_mux" in w["h2"]["stale_why"]' 20 >/dev/null ||
	{ tail -3 "$PT_TMP/log.jsonl"; die "h2 was not held stale as untrusted"; }
pt_log_wait 'w["trusting"]["state"] == "fresh" and w["trusting"]["p99_ebee_us"] is not None' 20 >/dev/null ||
	{ tail -3 "$PT_TMP/log.jsonl"; die "trusting (trust_unframed = yes) was not fresh"; }
echo "ok: h2 held stale: $(python3 -c 'import json,sys
for l in reversed(open(sys.argv[1]).read().splitlines()):
    r = json.loads(l)
    if r.get("summary"): continue
    w = {x["name"]: x for x in r["wl"]}
    if w["h2"].get("stale_why"): print(w["h2"]["stale_why"]); break' "$PT_TMP/log.jsonl")"
echo "ok: trusting (trust_unframed = yes) fresh, its p99 drives"
sleep 1
n=$(grep -c "ebee cannot count pid .* requests exactly" "$PT_TMP/parties.err")
[ "$n" = 1 ] || { cat "$PT_TMP/parties.err"; die "the refusal was said $n times on stderr, not once"; }
# The reason whole, to its last words (the log once cut it at 70 characters).
grep "ebee cannot count pid .* requests exactly" "$PT_TMP/parties.err" |
	grep -q "offered h2 (ALPN) or a ClientHello ebee could not read: requests multiplexed in encrypted records count as one; not acting" ||
	{ cat "$PT_TMP/parties.err"; die "the reason was not logged whole"; }
echo "ok: said once on stderr, whole: $(grep "ebee cannot count" "$PT_TMP/parties.err")"
kill "$client" 2>/dev/null
wait "$client" 2>/dev/null
pt_stop_restored
echo PASS
