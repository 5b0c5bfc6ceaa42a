#!/bin/bash
# Never zero without a word (issue 40): a workload whose connections move bytes while ebee
# counts no request gets the warning no_requests (untrusted), its count the bytes the
# programs saw, its text why, from the state ebee has. Each byte count is checked against
# what the clients sent and got back and against the kernel's own per-socket counters of
# the server's connections (ss -ti: bytes_received + bytes_sent, read while they are still
# open: no fixture can fake them), each request count against the clients' own.
#   long:  an echo server (tests/lib/echo_server.py) in conn mode with one connection that
#          stays open for the whole run: 30 x 100 bytes there and back, so 6000 bytes and
#          no request ("none has" closed);
#   short: the same server, 10 connections of one line each (the kernel's data segments in
#          read while they are open), then closed: 10 requests, no no_requests warning (the
#          control);
#   sink:  a server that reads and never answers, in auto mode, one connection opened
#          before ebee started (adopted) and one after: 10 x 50 bytes read, no pattern
#          completes ("mode auto is undecided", "1 connection(s) were open before tracing").
# The reason is checked where the other reasons show: the JSON (warnings, warning),
# Prometheus (ebee_warning{reason="no_requests"}, its count; 0 for the control) and
# `ebee top` (the text under the row).
set -u
. "$(dirname "$0")/../lib/ebeetest.sh"
. tests/lib/servers.sh

for s in long short; do
	python3 tests/lib/echo_server.py 0 "$tmp/$s.port" >"$tmp/$s.log" 2>&1 &
	pids+=($!)
	eval "${s}_pid=$!"
done
python3 - "$tmp/sink.port" >"$tmp/sink.log" 2>&1 <<'PY' &
import socket, sys, threading
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(8)
open(sys.argv[1], "w").write(f"{srv.getsockname()[1]}\n")
def sink(c):
    while c.recv(65536):
        pass
while True:
    threading.Thread(target=sink, args=(srv.accept()[0],), daemon=True).start()
PY
pids+=($!)
sink_pid=$!
for s in long short sink; do
	for _ in $(seq 100); do [ -s "$tmp/$s.port" ] && break; sleep 0.05; done
	[ -s "$tmp/$s.port" ] || fail "$s did not start: $(cat "$tmp/$s.log")"
	eval "${s}_port=$(cat "$tmp/$s.port")"
done

# clients: the long connection (held open until release appears), the short ones, and
# the sink's two connections, one opened now (before ebee) and written to once ebee is live.
python3 - "$long_port" "$short_port" "$sink_port" "$tmp" >"$tmp/clients.out" 2>&1 <<'PY' &
import json, os, socket, sys, time
lport, sport, kport, tmp = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
early = socket.create_connection(("127.0.0.1", kport))
open(f"{tmp}/early", "w").write("1\n")
while not os.path.exists(f"{tmp}/go"):
    time.sleep(0.02)
out = {"long_bytes": 0, "short_ok": 0, "sink_bytes": 0}
long = socket.create_connection(("127.0.0.1", lport))
for _ in range(30):
    long.sendall(b"x" * 99 + b"\n")
    got = b""
    while len(got) < 100:
        got += long.recv(100 - len(got))
    out["long_bytes"] += 200  # there and back
    time.sleep(0.01)
shorts = []  # closed once the kernel's count of them is read (short_close)
for _ in range(10):
    s = socket.create_connection(("127.0.0.1", sport))
    s.sendall(b"hello\n")
    if s.recv(100) == b"hello\n":
        out["short_ok"] += 1
    shorts.append(s)
late = socket.create_connection(("127.0.0.1", kport))
for _ in range(5):
    for c in (early, late):
        c.sendall(b"y" * 49 + b"\n")
        out["sink_bytes"] += 50
        time.sleep(0.01)
print(json.dumps(out), flush=True)
while not os.path.exists(f"{tmp}/short_close"):
    time.sleep(0.02)
for s in shorts:
    s.close()
open(f"{tmp}/short_closed", "w").write("1\n")
while not os.path.exists(f"{tmp}/release"):  # the connections stay open past the run
    time.sleep(0.05)
PY
cl=$!
pids+=("$cl")
for _ in $(seq 100); do [ -s "$tmp/early" ] && break; sleep 0.05; done
[ -s "$tmp/early" ] || fail "the sink's early client did not connect: $(cat "$tmp/clients.out")"

eport=$(free_port)
: >"$tmp/conn.err"
build/ebee trace --pid "$long_pid:long" --pid "$short_pid:short" --mode conn --json \
	--listen "127.0.0.1:$eport" >"$tmp/conn.json" 2>"$tmp/conn.err" &
e1=$!
pids+=("$e1")
ebee_wait_live "$e1" "$tmp/conn.err" || fail "ebee (conn) did not start: $(cat "$tmp/conn.err")"
: >"$tmp/auto.err"
build/ebee trace --pid "$sink_pid:sink" --json >"$tmp/auto.json" 2>"$tmp/auto.err" &
e2=$!
pids+=("$e2")
ebee_wait_live "$e2" "$tmp/auto.err" || fail "ebee (auto) did not start: $(cat "$tmp/auto.err")"
COLUMNS=200 build/ebee top --pid "$long_pid:long" --pid "$short_pid:short" --mode conn \
	--interval 300 --duration 30 >"$tmp/top" 2>"$tmp/top.err" &
t=$!
pids+=("$t")
for _ in $(seq 200); do grep -qs "probes live" "$tmp/top.err" && break; sleep 0.05; done
grep -qs "probes live" "$tmp/top.err" || fail "ebee top did not start: $(cat "$tmp/top.err")"

touch "$tmp/go"
for _ in $(seq 300); do [ -s "$tmp/clients.out" ] && break; sleep 0.05; done
[ -s "$tmp/clients.out" ] || fail "clients did not finish: $(cat "$tmp/clients.out")"
# the short connections, still open: the kernel's data segments in on their server side,
# one line each (a count the clients do not make); then they close (conn mode's requests)
kshort=$(ss -tinH state established "( sport = :$short_port )" | grep -o 'data_segs_in:[0-9]*' |
	awk -F: '{ s += $2 } END { print s + 0 }')
touch "$tmp/short_close"
for _ in $(seq 300); do [ -s "$tmp/short_closed" ] && break; sleep 0.05; done
[ -s "$tmp/short_closed" ] || fail "the short connections did not close: $(cat "$tmp/clients.out")"
sleep 1 # readings of the kernel's counters (every 100 ms), a refresh of top
curl -fsS "http://127.0.0.1:$eport/metrics" >"$tmp/page" || fail "scrape failed"
kill -INT "$e1" "$e2" "$t"
wait "$e1" || fail "ebee (conn) exited non-zero: $(cat "$tmp/conn.err")"
wait "$e2" || fail "ebee (auto) exited non-zero: $(cat "$tmp/auto.err")"
wait "$t"
# kbytes PORT: the bytes the kernel moved on the server's established connections of PORT,
# received and sent (TCP_INFO's tcpi_bytes_received and tcpi_bytes_sent; retransmissions,
# none on loopback, would be in the latter)
kbytes() {
	ss -tinH state established "( sport = :$1 )" |
		grep -o 'bytes_\(sent\|received\):[0-9]*' | awk -F: '{ s += $2 } END { print s + 0 }'
}
klong=$(kbytes "$long_port")
ksink=$(kbytes "$sink_port")
touch "$tmp/release"
wait "$cl"

python3 - "$tmp/conn.json" "$tmp/auto.json" "$tmp/clients.out" "$tmp/page" "$tmp/top" "$klong" "$ksink" "$kshort" <<'PY' ||
import json, re, sys
rows = {}
for f in sys.argv[1:3]:
    for line in open(f).read().splitlines():
        o = json.loads(line)
        rows[o["name"]] = o  # the last line: the whole run
cl = json.loads(open(sys.argv[3]).read().splitlines()[0])
klong, ksink, kshort = int(sys.argv[6]), int(sys.argv[7]), int(sys.argv[8])
assert cl["long_bytes"] == 6000 and cl["short_ok"] == 10 and cl["sink_bytes"] == 500, cl
# the kernel's count of the bytes on the server's side of those connections
assert klong == cl["long_bytes"] and ksink == cl["sink_bytes"], (klong, ksink, cl)
if rows["long"]["path"] != "socket":
    # The syscall path sees I/O in io mode only (conn mode attaches no read/write probe).
    print(f"SKIP: ebee chose the {rows['long']['path']} path: conn mode sees no I/O there")
    sys.exit(77)

def reason(o, rid):
    return {w["reason"]: w for w in o["warnings"]}.get(rid)

o = rows["long"]
w = reason(o, "no_requests")
assert o["mode"] == "conn" and o["requests"] == 0, o
assert w and o["untrusted"] is True and w["text"] in o["warning"], o
assert w["count"] == cl["long_bytes"] == klong, (w, cl, klong)
assert "60 reads and writes" in w["text"], w
assert "conn mode counts a request when its connection closes: none has" in w["text"], w
print(f"ok: long: 0 requests, untrusted, no_requests {w['count']} bytes = the client's "
      f"{cl['long_bytes']} = the kernel's {klong} (ss -ti): {w['text']}")

o = rows["short"]
assert o["requests"] == cl["short_ok"] == kshort == 10, (o, cl, kshort)
assert reason(o, "no_requests") is None and o["untrusted"] is False, o
print(f"ok: short (control): {o['requests']} requests = the client's = the kernel's {kshort} data "
      f"segments in (ss -ti), trusted, no no_requests")

o = rows["sink"]
w = reason(o, "no_requests")
assert o["mode"] == "auto" and o["requests"] == 0, o
assert w and o["untrusted"] is True, o
# Exact where the socket tracepoints attach (tp_btf: this host, 6.12). With fentry (the
# 6.1 guest) one 50-byte read went uncounted in two runs of two (450 of 500): most likely
# the early connection's first read, whose recv() was already blocked in inet_recvmsg when
# ebee attached (the sink's thread waits there from before ebee starts). An fexit program
# runs only for calls that entered through its trampoline; the tracepoint sits in the
# code and fires whenever the call returns. Said here, never passed over in silence.
attach = o.get("attach")
if attach == "fentry" and 0 < w["count"] < cl["sink_bytes"]:
    print(f"SKIP (this case): sink's bytes exact: fentry counted {w['count']} of the clients' "
          f"{cl['sink_bytes']} bytes (with fexit, a read already blocked in inet_recvmsg at the attach is not seen); "
          f"the reason and its text are checked")
else:
    assert w["count"] == cl["sink_bytes"] == ksink, (w, cl, ksink)
for part in ["mode auto is undecided", "1 connection(s) were open before tracing began"]:
    assert part in w["text"], (part, w)
print(f"ok: sink: 0 requests, untrusted, no_requests {w['count']} bytes (the clients' "
      f"{cl['sink_bytes']}, the kernel's {ksink}): {w['text']}")

page = open(sys.argv[4]).read()
def series(name):
    m = re.search(r'^ebee_warning\{workload="%s",pid="\d+",reason="no_requests"\} (\S+)$'
                  % name, page, re.M)
    assert m, (name, page[-1500:])
    return float(m.group(1))
assert series("long") == reason(rows["long"], "no_requests")["count"], page[-1500:]
assert series("short") == 0, page[-1500:]
assert re.search(r'^ebee_untrusted\{workload="long",pid="\d+"\} 1$', page, re.M)
print(f"ok: prometheus: ebee_warning{{reason=\"no_requests\"}} {series('long'):.0f} for long, "
      f"0 for short")

top = re.sub(r"\x1b\[[HJ]", "", open(sys.argv[5]).read())
assert "warning: 6000 bytes in 60 reads and writes on its connections" in top, top[-2000:]
print("ok: top: the reason under long's row")
PY
	{ [ $? -eq 77 ] && exit 77; fail "$(tail -n 1 "$tmp/conn.json"; tail -n 1 "$tmp/auto.json")"; }
echo PASS
