#!/bin/bash
# Never a silent wrong answer: what ebee cannot count exactly it says, in the JSON
# (framing, untrusted, warning, warnings), in `ebee top` and in Prometheus (ebee_framing,
# ebee_untrusted, ebee_warning). Echo servers (tests/lib/echo_server.py: the length pattern's shape) get
# what a framer recognises and cannot count exactly, or cannot parse:
#   tls:  a real ClientHello (Python's ssl) offering h2 and http/1.1, then records: the
#         server's choice is not in the bytes (the echo sends no ServerHello), so
#         multiplexing cannot be excluded;
#   tlsp: a ClientHello offering http/1.1 only, then two records before the reply (the
#         client wrote again: pipelined, or a request in pieces);
#   tlsboth: both at once, two reasons whose texts together pass 255 characters: each
#         must come whole (JSON warnings, one per reason; warning, them joined; top), as
#         its own Prometheus series (ebee_warning{reason=...}, its count), never cut as
#         the one 256-byte warning once was ("...counted as one request; 1");
#   junk: a RESP array whose elements are not bulk strings: the RESP framer loses sync.
# A minimal HTTP/2 server (tests/lib/h2_responder.py, answering every open stream at the
# client's PING) gets more streams in flight on one connection than ebee's table holds:
#   h2many: 70 streams at once: 64 timed, 6 not counted, said so.
# Three get what a framer frames: trusted, no warning, exact counts (the controls):
#   resp: RESP commands to Debian's redis-server (an echo server where it is not installed),
#     counted against redis's own total_commands_processed; h2: HTTP/2 streams, two and one
#     in flight, on 5 connections; tls1: a ClientHello offering http/1.1 only, one record at
#     a time, counted against the kernel's data segments in of its server's connections
#     (ss -ti, held open until read) less the ClientHellos.
set -u
. "$(dirname "$0")/../lib/ebeetest.sh"
. tests/lib/servers.sh
[ -n "$(awk '$3 == "cgroup2"' /proc/mounts)" ] || { echo "SKIP: no cgroup v2 hierarchy mounted"; exit 77; }

echoes="tls tlsp tlsboth tls1 junk"
all="h2 h2many resp $echoes"
if command -v redis-server >/dev/null && command -v redis-cli >/dev/null; then
	resp_port=$(free_port)
	redis-server --port "$resp_port" --bind 127.0.0.1 --save '' --appendonly no --dir "$tmp" \
		>"$tmp/resp.log" 2>&1 &
	pids+=($!)
	resp_pid=$!
	for _ in $(seq 100); do port_accepts "$resp_port" && break; sleep 0.05; done
	port_accepts "$resp_port" || fail "redis did not start: $(cat "$tmp/resp.log")"
	echo "$resp_port" >"$tmp/resp.port"
	# the commands redis ran so far, by its own count (read untraced, before and after ebee)
	rcmds() { redis-cli -p "$resp_port" info stats | tr -d '\r' | sed -n 's/^total_commands_processed://p'; }
else
	echo "note: no redis-server: the resp control is an echo server, its count the client's"
	echoes="$echoes resp"
	rcmds() { echo -; }
fi
for s in $echoes; do
	python3 tests/lib/echo_server.py 0 "$tmp/$s.port" >"$tmp/$s.log" 2>&1 &
	pids+=($!)
	eval "${s}_pid=$!"
done
for s in h2 h2many; do
	python3 tests/lib/h2_responder.py 0 "$tmp/$s.port" >"$tmp/$s.log" 2>&1 &
	pids+=($!)
	eval "${s}_pid=$!"
done
for s in $all; do
	for _ in $(seq 100); do [ -s "$tmp/$s.port" ] && break; sleep 0.05; done
	eval "${s}_port=$(cat "$tmp/$s.port")"
done
r0=$(rcmds) # "-": no redis (the clients then talk to an echo server)
eport=$(free_port)
args=()
for s in $all; do eval "args+=(--pid \$${s}_pid:$s)"; done
: >"$tmp/e.err"
build/ebee trace "${args[@]}" --json --listen "127.0.0.1:$eport" >"$tmp/e.json" 2>"$tmp/e.err" &
e=$!
pids+=("$e")
ebee_wait_live "$e" "$tmp/e.err" || fail "ebee did not start: $(cat "$tmp/e.err")"
COLUMNS=200 build/ebee top "${args[@]}" --interval 300 --duration 30 >"$tmp/top" 2>"$tmp/top.err" &
t=$!
pids+=("$t")
# A narrow one: each reason wraps, under its row, and is still whole.
COLUMNS=72 build/ebee top "${args[@]}" --interval 300 --duration 30 >"$tmp/top72" 2>/dev/null &
t72=$!
pids+=("$t72")
for _ in $(seq 200); do grep -qs "probes live" "$tmp/top.err" && break; sleep 0.05; done

[ "$(python3 tests/lib/h2_responder.py client "$h2_port" 5 2 1)" = 15 ] || fail "h2 client"
[ "$(python3 tests/lib/h2_responder.py client "$h2many_port" 1 70)" = 70 ] || fail "h2many client"
# The clients; tls1's connections are held open until $tmp/hold exists, for the kernel's
# count of what their server took in (below).
python3 - "$tls_port" "$junk_port" "$resp_port" "$tlsp_port" "$tls1_port" "$tlsboth_port" "$r0" \
	"$tmp/hold" >"$tmp/clients.out" 2>&1 <<'PY' &
import os, socket, ssl, sys, time
held = []
# talk: each message, then its echo (as long as the message), or with redis one reply line
# (+PONG, $-1: GET of a missing key); keep: the connection is held, not closed
def talk(port, msgs, redis=False, keep=False):
    s = socket.create_connection(("127.0.0.1", int(port)))
    for m in msgs:
        s.sendall(m)
        got = b""
        while (not got.endswith(b"\r\n")) if redis else len(got) < len(m):
            got += s.recv(65536)
    if keep:
        held.append(s)
    else:
        s.close()
# A ClientHello as Python's ssl writes it, offering these ALPN protocols.
def hello(alpn):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(alpn)
    i, o = ssl.MemoryBIO(), ssl.MemoryBIO()
    try:
        ctx.wrap_bio(i, o).do_handshake()
    except ssl.SSLWantReadError:
        pass
    return o.read()
rec = lambda b: b"\x17\x03\x03" + len(b).to_bytes(2, "big") + b
for _ in range(5):
    talk(sys.argv[1], [hello(["h2", "http/1.1"]), rec(b"hi"), rec(b"ho")])
for _ in range(5):
    talk(sys.argv[4], [hello(["http/1.1"]), rec(b"hi") + rec(b"ho")])
for _ in range(5):
    talk(sys.argv[5], [hello(["http/1.1"]), rec(b"hi"), rec(b"ho"), rec(b"hu")], keep=True)
for _ in range(5):
    talk(sys.argv[6], [hello(["h2", "http/1.1"]), rec(b"hi") + rec(b"ho")])
# RESP framed, then not RESP: "*2" announces two bulk strings, ":1" is not one.
for _ in range(3):
    talk(sys.argv[2], [b"*1\r\n$4\r\nPING\r\n", b"*2\r\n:1\r\n:2\r\n", b"*1\r\n$4\r\nPING\r\n"])
for _ in range(3):
    talk(sys.argv[3], [b"*1\r\n$4\r\nPING\r\n", b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"],
         sys.argv[7] != "-")
print("done", flush=True)
end = time.monotonic() + 120  # a hang guard
while not os.path.exists(sys.argv[8]) and time.monotonic() < end:
    time.sleep(0.02)
for s in held:
    s.close()
PY
cl=$!
pids+=("$cl")
for _ in $(seq 1200); do grep -qs '^done$' "$tmp/clients.out" && break; kill -0 $cl 2>/dev/null || break; sleep 0.05; done
# the kernel's data segments in on tls1's server side: a ClientHello and 3 records a
# connection, each written alone and echoed before the next (ss -ti, connections still open)
tls1_segs=$(ss -tinH state established "( sport = :$tls1_port )" | grep -o 'data_segs_in:[0-9]*' |
	awk -F: '{ s += $2 } END { print s + 0 }')
touch "$tmp/hold"
wait $cl || fail "clients: $(cat "$tmp/clients.out")"
sleep 1 # a refresh of top
curl -fsS "http://127.0.0.1:$eport/metrics" >"$tmp/page" || fail "scrape failed"
if command -v promtool >/dev/null; then
	promtool check metrics <"$tmp/page" >"$tmp/lint" 2>&1 ||
		fail "promtool rejects the page: $(head -3 "$tmp/lint")"
	echo "ok: promtool accepts the page"
else
	echo "note: no promtool: the page's syntax is not checked here (test_prom_utf8.sh does)"
fi
kill -INT "$e" "$t" "$t72"
wait "$e" || fail "ebee exited non-zero: $(cat "$tmp/e.err")"
wait "$t"
wait "$t72"
# redis counts a command after it ran: the INFO that read r0 is in this count, not ebee's
served=-
[ "$r0" = - ] || served=$(($(rcmds) - r0 - 1))

python3 - "$tmp/e.json" "$tmp/page" "$tmp/top" "$tmp/top72" "$served" "$tls1_segs" <<'PY' || fail "$(cat "$tmp/e.json")"
import json, re, sys
rows = {}
for line in open(sys.argv[1]).read().splitlines():
    o = json.loads(line)
    rows[o["name"]] = o
want = {"h2many": ("http2", "beyond 64 in flight"), "tls": ("tls", "offered h2"),
        "tlsp": ("tls", "wrote again"), "junk": ("resp", "lost sync")}
want["tlsboth"] = ("tls", "wrote again")
for name, (fr, word) in want.items():
    o = rows[name]
    assert o["framing"] == fr, (name, o)
    assert o["untrusted"] is True and word in (o["warning"] or ""), (name, o)
    print(f"ok: {name}: framing {fr}, untrusted, warning: {o['warning']}")
for name, fr, n in [("resp", "resp", 6), ("h2", "http2", 15), ("tls1", "tls", 15)]:
    o = rows[name]
    assert o["framing"] == fr and o["untrusted"] is False and o["warning"] is None, o
    assert o["requests"] == n, o
    print(f"ok: {name} (control): framing {fr}, trusted, {o['requests']} requests")
if sys.argv[5] != "-":
    assert rows["resp"]["requests"] == int(sys.argv[5]), (rows["resp"], sys.argv[5])
    print(f"ok: resp (control): = redis's {sys.argv[5]} commands (total_commands_processed)")
# the kernel's segments in less the 5 ClientHellos (the handshakes, no requests)
assert rows["tls1"]["requests"] == int(sys.argv[6]) - 5, (rows["tls1"], sys.argv[6])
print(f"ok: tls1 (control): = the kernel's {sys.argv[6]} data segments in less the 5 ClientHellos")
assert rows["h2many"]["requests"] == 64, rows["h2many"]
print(f"ok: h2many: the 64 streams that fit counted, {rows['h2many']['requests']}")
page = open(sys.argv[2]).read()
for name, fr, u in [("h2", "http2", 0), ("h2many", "http2", 1), ("tls", "tls", 1),
                    ("tlsp", "tls", 1), ("junk", "resp", 1), ("resp", "resp", 0),
                    ("tls1", "tls", 0)]:
    assert re.search(r'^ebee_framing\{workload="%s",pid="\d+",framing="%s"\} 1$' % (name, fr), page, re.M), name
    assert re.search(r'^ebee_untrusted\{workload="%s",pid="\d+"\} %d$' % (name, u), page, re.M), name
print("ok: prometheus: ebee_framing and ebee_untrusted per workload")

# Each reason whole: the list, the joined text made of it, one series each.
series = {}
for m in re.finditer(r'^ebee_warning\{workload="([^"]*)",pid="\d+",reason="([a-z_]+)"\} (\S+)$',
                     page, re.M):
    series[(m.group(1), m.group(2))] = float(m.group(3))
assert "# TYPE ebee_warning gauge" in page and "# HELP ebee_warning " in page
reasons = sorted({r for _, r in series})
for name, o in rows.items():
    ws = o["warnings"]
    assert o["untrusted"] is bool(ws), (name, o)
    assert o["warning"] == ("; ".join(w["text"] for w in ws) if ws else None), (name, o)
    for w in ws:
        assert set(w) == {"reason", "count", "text"} and w["count"] > 0, (name, w)
        assert series[(name, w["reason"])] == w["count"], (name, w, series)
    listed = {w["reason"] for w in ws}
    for r in reasons:  # every reason has its series; those not listed are 0
        assert (name, r) in series, (name, r)
        assert r in listed or series[(name, r)] == 0, (name, r, series[(name, r)])
by = {w["reason"]: w for w in rows["tlsboth"]["warnings"]}
assert set(by) >= {"tls_mux", "tls_again"}, rows["tlsboth"]
assert by["tls_mux"]["count"] == 5 and by["tls_again"]["count"] == 5, by
assert by["tls_mux"]["text"].endswith("requests multiplexed in encrypted records count as one"), by
assert by["tls_again"]["text"].endswith("(pipelined, or a request in pieces): counted as one request"), by
assert len(rows["tlsboth"]["warning"]) > 255, rows["tlsboth"]["warning"]
assert {w["reason"] for w in rows["h2many"]["warnings"]} >= {"untimed"}, rows["h2many"]
print(f"ok: tlsboth: {sorted(by)} whole, joined {len(rows['tlsboth']['warning'])} characters; "
      f"ebee_warning per reason ({len(reasons)} reasons) matches each count")
top = re.sub(r"\x1b\[[HJ]", "", open(sys.argv[3]).read())
assert re.search(r"^\d+ .* http2!\s*$", top, re.M) and "beyond 64 in flight" in top, top[-2000:]
assert re.search(r"^\d+ .* http2\s*$", top, re.M), top[-2000:]
assert re.search(r"^\d+ .* resp\s*$", top, re.M), top[-2000:]
# Each reason on its own warning line(s), wrapped, never cut: the continuation lines
# (indented under the text) joined back give each text of the JSON whole.
def reasons_of(screen):
    lines, cur = [], None
    for l in screen.splitlines():
        if l.startswith("         warning: "):
            cur = l[len("         warning: "):].rstrip()
            lines.append(cur)
        elif cur is not None and l.startswith(" " * 18) and l.strip():
            lines[-1] += " " + l.strip()
        else:
            cur = None
    return lines
top72 = re.sub(r"\x1b\[[HJ]", "", open(sys.argv[4]).read())
for screen, width in [(top, 200), (top72, 72)]:
    got = reasons_of(screen)
    for w in rows["tlsboth"]["warnings"]:
        assert w["text"] in got, (width, w["text"], got[-6:])
    assert max(len(l) for l in screen.splitlines()) <= width, width
print("ok: top: FRAMING column (! when untrusted) and each reason whole on its lines, "
      "wrapped within 72 columns too")
PY
echo PASS
