#!/bin/bash
# A connection's first bytes can complete its handshake: a server listening with
# TCP_DEFER_ACCEPT (nginx's `listen ... deferred`, here) drops the client's bare ACK and
# makes the connection only when data comes, and elsewhere a client's first data can
# overtake that ACK (lane run 12: a Go gRPC connection in the 8-vCPU guest). That segment
# is filtered in the listener's context, before the connection exists: ebee once never
# parsed it and counted the connection by length without a word (h2load --h1 -m 8 against
# nginx `deferred`: 141 of 1000 requests, trusted). Now it is parsed at the listener and
# the connection takes that state over (frame_adopt in bpf/frame/adopt.bpf.h):
#   - h2c, h2load -c 2 -m 10: every request counted, framing http2, trusted, both
#     connections' first bytes seen in the handshake (handshake_data 2);
#   - HTTP/1.1 pipelined, h2load --h1 -c 2 -m 8: the same with framing http1;
#   - HTTPS keep-alive (TLS 1.3), h2load --h1 -c 2 -m 1: the ClientHello is what came with
#     the handshake; framing tls, every request counted;
#   - a request split across the handshake's segment and the next ("GET / HTTP/1.1\r\nHo"
#     first, the rest 0.2 s later), then 4 pipelined: 5 requests (the client's 5 responses,
#     nginx's 5 access log lines), one adopted connection;
#   - a first segment that does not parse (a Content-Length of "1x"): counted by length
#     and said (unseen 1, untrusted, a warning that names it), never silently.
set -u
. "$(dirname "$0")/../lib/ebeetest.sh"
. tests/lib/servers.sh
command -v nginx >/dev/null || { echo "SKIP: nginx not installed (make deps)"; exit 77; }
command -v h2load >/dev/null || { echo "SKIP: h2load not installed (nghttp2-client; make deps)"; exit 77; }
command -v openssl >/dev/null || { echo "SKIP: openssl not installed (make deps)"; exit 77; }
nginx -V 2>&1 | grep -q -- --with-http_ssl_module ||
	{ echo "SKIP: this nginx has no http_ssl module (apt-get install nginx-light)"; exit 77; }
[ -n "$(awk '$3 == "cgroup2"' /proc/mounts)" ] || { echo "SKIP: no cgroup v2 hierarchy mounted"; exit 77; }

p2=$(free_port)
p1=$(free_port)
[ "$p1" != "$p2" ] || p1=$((p2 + 1))
pt=$(free_port)
[ "$pt" != "$p2" ] && [ "$pt" != "$p1" ] || pt=$((p1 + 2))
mkdir -p "$tmp/nginx"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
	-keyout "$tmp/nginx/key.pem" -out "$tmp/nginx/cert.pem" >/dev/null 2>&1 ||
	fail "openssl req could not make a certificate"
nginx_conf "$tmp/nginx" "	server {
		listen 127.0.0.1:$pt ssl deferred;
		ssl_protocols TLSv1.3;
		ssl_certificate $tmp/nginx/cert.pem;
		ssl_certificate_key $tmp/nginx/key.pem;
		location / { default_type text/plain; return 200 \"ok\\n\"; }
	}
	server {
		listen 127.0.0.1:$p2 http2 deferred;
		location / { default_type text/plain; return 200 \"ok\\n\"; }
	}
	server {
		listen 127.0.0.1:$p1 deferred;
		location / { default_type text/plain; return 200 \"ok\\n\"; }
	}" || fail "cannot write nginx.conf"
npid=$(run_nginx "$tmp/nginx" "$p2" "$p1" "$pt") || fail "nginx did not start"
pids+=("$npid")

# check NAME WANT_REQUESTS FRAMING: ebee's last line of NAME.json against the client.
check() {
	python3 - "$tmp/$1.json" "$2" "$3" "$1" <<'PY' || fail "$(tail -1 "$tmp/$1.json")"
import json, sys
e = json.loads(open(sys.argv[1]).read().splitlines()[-1])
want, framing, name = int(sys.argv[2]), sys.argv[3], sys.argv[4]
conns = 1 if name == "split" else 2
assert e["path"] == "socket", e["path"]
assert e["framing"] == framing and e["untrusted"] is False and e["warning"] is None, e
assert e["requests"] == want, (e["requests"], want)
assert e["handshake_data"] == conns and e["unseen"] == 0, e
print(f"ok: {name}: ebee {e['requests']} requests = the client's {want}, framing {framing}, "
      f"trusted; {e['handshake_data']} connection(s) framed from their handshake's bytes")
PY
}

# h2load_ok FILE: the succeeded count of an h2load run, checked for no failures.
h2load_ok() {
	python3 - "$1" <<'PY' || fail "h2load: $(tail -5 "$1")"
import re, sys
h = open(sys.argv[1]).read()
m = re.search(r"requests: (\d+) total, \d+ started, (\d+) done, (\d+) succeeded, (\d+) failed", h)
assert m and m.group(1) == m.group(2) == m.group(3) and m.group(4) == "0", h
print(m.group(3))
PY
}

ebee_on h2 "$npid"
h2load -n 2000 -c 2 -m 10 "http://127.0.0.1:$p2/" >"$tmp/h2.h2load" 2>&1 || fail "h2load: $(tail -5 "$tmp/h2.h2load")"
ebee_off h2
check h2 "$(h2load_ok "$tmp/h2.h2load")" http2

ebee_on h1 "$npid"
h2load --h1 -n 2000 -c 2 -m 8 "http://127.0.0.1:$p1/" >"$tmp/h1.h2load" 2>&1 || fail "h2load: $(tail -5 "$tmp/h1.h2load")"
ebee_off h1
check h1 "$(h2load_ok "$tmp/h1.h2load")" http1

ebee_on tls "$npid"
h2load --h1 -n 400 -c 2 -m 1 "https://127.0.0.1:$pt/" >"$tmp/tls.h2load" 2>&1 || fail "h2load: $(tail -5 "$tmp/tls.h2load")"
ebee_off tls
grep -q "TLSv1.3" "$tmp/tls.h2load" || fail "h2load did not speak TLS 1.3: $(cat "$tmp/tls.h2load")"
check tls "$(h2load_ok "$tmp/tls.h2load")" tls

# client PORT MODE: one connection; prints the responses it read.
client() {
	python3 - "$1" "$2" <<'PY'
import socket, sys, time
port, mode = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
req = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
if mode == "split":
    s.sendall(req[:18])  # completes the handshake, mid-header
    time.sleep(0.2)
    s.sendall(req[18:])
    time.sleep(0.2)
    s.sendall(req * 4)
    want = 5
else:
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1x\r\n\r\n")
    want = 1
buf = b""
s.settimeout(10)
while buf.count(b"HTTP/1.1 ") < want:
    b = s.recv(65536)
    if not b:
        break
    buf += b
s.close()
print(buf.count(b"HTTP/1.1 "))
PY
}

logged0=$(wc -l <"$tmp/nginx/access.log")
ebee_on split "$npid"
n=$(client "$p1" split) || fail "the split client failed"
[ "$n" = 5 ] || fail "the split client read $n responses, not 5"
ebee_off split
logged=$(($(wc -l <"$tmp/nginx/access.log") - logged0))
[ "$logged" = 5 ] || fail "nginx logged $logged requests of the split client, not 5"
check split "$logged" http1

ebee_on bad "$npid"
n=$(client "$p1" bad) || fail "the bad client failed"
[ "$n" = 1 ] || fail "the bad client read $n responses (nginx's 400), not 1"
ebee_off bad
python3 - "$tmp/bad.json" <<'PY' || fail "$(tail -1 "$tmp/bad.json")"
import json, sys
e = json.loads(open(sys.argv[1]).read().splitlines()[-1])
assert e["unseen"] == 1 and e["handshake_data"] == 0, e
assert e["framing"] == "length" and e["untrusted"] is True, e
assert "did not see" in (e["warning"] or ""), e["warning"]
print(f"ok: a first segment that does not parse: framing length, untrusted: {e['warning']}")
PY
echo PASS
