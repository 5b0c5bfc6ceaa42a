#!/bin/bash
# ebee on a real UDP DNS server: Debian's dnsmasq on a loopback port of its own (never the
# host's resolver), forwarding every query (no cache) to a slow upstream of ours
# (tests/lib/slow_dns.py, 2 ms per answer), driven by Debian's dnsperf with 10 queries in
# flight. ebee, left to choose (auto), must pick dgram, count exactly the queries dnsperf
# completed, and its sojourn p50 must be within 15% of dnsperf's own latency p50
# (dnsperf -v prints each query's latency). dnsmasq's own sockets towards the upstream
# are client sockets: their answers must not count as requests.
# shellcheck source=../lib/ebeetest.sh
. "$(dirname "$0")/../lib/ebeetest.sh"
command -v dnsmasq >/dev/null || { echo "SKIP: dnsmasq not installed (make deps)"; exit 77; }
command -v dnsperf >/dev/null || { echo "SKIP: dnsperf not installed (make deps)"; exit 77; }

for i in $(seq 1000); do echo "h$i.dgram.test A"; done >"$tmp/queries"
tests/lib/slow_dns.py 0 2 "$tmp/up.ready" &
pids+=($!)
for _ in $(seq 100); do [ -s "$tmp/up.ready" ] && break; sleep 0.05; done
up=$(cat "$tmp/up.ready")
[ -n "$up" ] || fail "the upstream did not start"
# A free port for dnsmasq, which binds it for UDP and TCP both: the kernel's choice for a
# UDP socket that a TCP socket can bind too (the UDP choice alone was once a port a TCP
# socket of an earlier test held: "Address already in use"), both released at once.
port=$(python3 - <<'PY'
import socket
for _ in range(50):
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind(("127.0.0.1", 0))
    p = u.getsockname()[1]
    t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        t.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        t.close()
        u.close()
    print(p)
    break
PY
)
[ -n "$port" ] || fail "no port free for both UDP and TCP"
dnsmasq --keep-in-foreground --conf-file=/dev/null --port="$port" --listen-address=127.0.0.1 \
	--bind-interfaces --no-resolv --no-hosts --server="127.0.0.1#$up" --cache-size=0 \
	--no-negcache --pid-file= --log-facility=- 2>"$tmp/dnsmasq.err" &
dns=$!
pids+=($dns)
for _ in $(seq 100); do
	dig_ok=$(python3 - "$port" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(0.2)
q = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x04warm\x05dgram\x04test\x00\x00\x01\x00\x01"
try:
    s.sendto(q, ("127.0.0.1", int(sys.argv[1])))
    print("ok" if s.recv(512)[:2] == b"\x12\x34" else "")
except OSError:
    print("")
PY
)
	[ "$dig_ok" = ok ] && break
	sleep 0.1
done
[ "$dig_ok" = ok ] || fail "dnsmasq does not answer: $(cat "$tmp/dnsmasq.err")"

# Traced until dnsperf is done, then SIGINT: a fixed 8 s ran out in a busy 6.12 guest before
# dnsperf's 2000 queries had (691 and 1704 of them counted). 300 s only bounds a hang.
ebee_on dns "$dns" --duration 300 -v
dnsperf -s 127.0.0.1 -p "$port" -d "$tmp/queries" -n 2 -q 10 -v >"$tmp/perf" 2>&1 ||
	fail "dnsperf failed: $(tail -5 "$tmp/perf")"
ebee_off dns
python3 - "$tmp/dns.json" "$tmp/perf" <<'PY' || fail "$(cat "$tmp/dns.json") $(cat "$tmp/dns.err")"
import json, re, sys
o = json.loads(open(sys.argv[1]).read().splitlines()[-1])
perf = open(sys.argv[2]).read()
completed = int(re.search(r"Queries completed:\s+(\d+)", perf).group(1))
lats = sorted(float(l.split()[-1]) * 1e9 for l in perf.splitlines() if l.startswith("> "))
assert len(lats) == completed, "dnsperf printed %d latencies for %d queries" % (len(lats), completed)
n = len(lats)
h = (n - 1) * 0.5
p50 = lats[int(h)] + (h - int(h)) * (lats[min(int(h) + 1, n - 1)] - lats[int(h)])
print("dnsperf: %d queries completed, p50 %.0f us; ebee: mode %s, %d requests, sojourn p50 %.0f us, "
      "service p50 %.0f us, expired %d" % (completed, p50 / 1e3, o["mode"], o["requests"],
                                         o["sojourn_p50_ns"] / 1e3, o["p50_ns"] / 1e3, o["expired"]))
assert completed == 2000, "dnsperf completed %d of 2000" % completed
assert o["mode"] == "dgram", "mode %s, want dgram" % o["mode"]
assert o["requests"] == completed, "ebee counted %d, dnsperf %d" % (o["requests"], completed)
assert abs(o["sojourn_p50_ns"] - p50) <= 0.15 * p50, "sojourn p50 not within 15% of the client's"
assert o["warning"] is None, o["warning"]
PY
echo "PASS"
