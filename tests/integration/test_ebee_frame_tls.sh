#!/bin/bash
# TLS record framing: nginx (Debian's, http_ssl) with a self-signed certificate made here,
# TLS 1.3 on one port and TLS 1.2 on another, driven by an HTTPS client with one request at
# a time per connection (tests/lib/https_client.py, Python's http.client). ebee must count
# every request, exactly what the client received and nginx logged, and no handshake:
#   - keep-alive connections, TLS 1.3 and 1.2: framing "tls", trusted;
#   - a new connection (a full handshake) per request, in io mode, where the length
#     pattern took each handshake round trip for a request: still exactly the requests;
#   - a slow upstream behind nginx (20 ms): ebee's sojourn p50 within 15% of the client's;
#   - a client offering h2 (nginx chooses http/1.1): counted exactly, but untrusted with an
#     h2 warning in TLS 1.3, whose ServerHello hides the choice; trusted in TLS 1.2, whose
#     ServerHello shows it;
#   - curl fetching several URLs on one connection, likewise;
#   - responses of 200 KB (13 records across segments): exact, trusted; POSTs of 100 KB over
#     TLS 1.2, the body written apart from the headers (http.client), answered after the body
#     is read: exact, but untrusted (the client wrote again before the reply: pipelining or a request
#     in pieces, the bytes do not say).
set -u
. "$(dirname "$0")/../lib/ebeetest.sh"
. tests/lib/servers.sh
command -v nginx >/dev/null || { echo "SKIP: nginx not installed (make deps)"; exit 77; }
nginx -V 2>&1 | grep -q -- --with-http_ssl_module ||
	{ echo "SKIP: this nginx has no http_ssl module (apt-get install nginx-light)"; exit 77; }
command -v openssl >/dev/null || { echo "SKIP: openssl not installed (make deps)"; exit 77; }
[ -n "$(awk '$3 == "cgroup2"' /proc/mounts)" ] || { echo "SKIP: no cgroup v2 hierarchy mounted"; exit 77; }

p13=$(free_port)
p12=$(free_port)
mkdir -p "$tmp/nginx/tmp"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
	-keyout "$tmp/nginx/key.pem" -out "$tmp/nginx/cert.pem" >/dev/null 2>&1 ||
	fail "openssl req could not make a certificate"
head -c 200000 /dev/zero | tr '\0' x >"$tmp/nginx/big"
chmod 755 "$tmp" "$tmp/nginx" && chmod 644 "$tmp/nginx/big" # nginx's workers are nobody
start_cpr up --delay-ms 20 --threads 4
[ -n "$up_port" ] || fail "cpr_server did not start"
site() {
	cat <<CONF
	server {
		listen 127.0.0.1:$1 ssl;
		ssl_protocols $2;
		ssl_certificate $tmp/nginx/cert.pem;
		ssl_certificate_key $tmp/nginx/key.pem;
		location / { default_type text/plain; return 200 "ok\n"; }
		location = /big { alias $tmp/nginx/big; }
		location /slow/ { proxy_pass http://127.0.0.1:$up_port/; }
		# POSTs: proxying reads the whole body before the upstream answers (a GET
		# without it), so the reply comes after the body; a "return" would answer
		# while the client still writes the body, the exchange tls.h cannot count.
		location = /sink {
			client_body_buffer_size 256k; # in memory: no temporary file for nobody to write
			proxy_pass http://127.0.0.1:$up_port/;
			proxy_method GET;
			proxy_pass_request_body off;
			proxy_set_header Content-Length "";
		}
	}
CONF
}
nginx_conf "$tmp/nginx" "$(site "$p13" TLSv1.3)
$(site "$p12" TLSv1.2)" || fail "cannot write nginx.conf"
npid=$(run_nginx "$tmp/nginx" "$p13" "$p12") || fail "nginx did not start"
pids+=("$npid")

# curl_client PORT N [ALPN ARGS...]: curl fetching N URLs on one connection (its
# keep-alive), the https_client.py JSON fields check reads.
curl_client() {
	local port=$1 n=$2 urls=() ok
	shift 2
	for _ in $(seq "$n"); do urls+=("https://127.0.0.1:$port/"); done
	ok=$(curl -sk "$@" -o /dev/null -w '%{http_code}\n' "${urls[@]}" | grep -c '^200$')
	echo "{\"sent\": $n, \"responses\": $ok, \"bad\": $((n - ok)), \"alpn\": \"not asked (curl $*)\"}"
}

# trace NAME "EBEE ARGS" CLIENT_ARGS...: the client's JSON in NAME.client, ebee's in
# NAME.json, the access log lines the run added in NAME.logged. CLIENT_ARGS are
# https_client.py's, or curl_client and its.
trace() {
	local name=$1 eargs=$2 e before
	shift 2
	before=$(wc -l <"$tmp/nginx/access.log" 2>/dev/null || echo 0)
	# shellcheck disable=SC2086
	: >"$tmp/$name.err"
	build/ebee trace --pid "$npid" $eargs --json >"$tmp/$name.json" 2>"$tmp/$name.err" &
	e=$!
	pids+=("$e")
	ebee_wait_live "$e" "$tmp/$name.err" || fail "ebee did not start: $(cat "$tmp/$name.err")"
	if [ "$1" = curl_client ]; then
		"$@" >"$tmp/$name.client" || fail "client ($name)"
	else
		python3 tests/lib/https_client.py "$@" >"$tmp/$name.client" || fail "client ($name)"
	fi
	sleep 0.2 # the client's close_notify and FIN through the hooks
	kill -INT "$e"
	wait "$e" || fail "ebee exited non-zero: $(cat "$tmp/$name.err")"
	echo $(($(wc -l <"$tmp/nginx/access.log") - before)) >"$tmp/$name.logged"
}

# check NAME WANT TRUSTED [WORD]: ebee's count = the client's = nginx's = WANT, framing tls,
# untrusted as TRUSTED says (WORD in the warning when untrusted).
check() {
	python3 - "$tmp/$1.json" "$tmp/$1.client" "$(cat "$tmp/$1.logged")" "$@" <<'PY' || fail "$1: $(tail -n 1 "$tmp/$1.json"); nginx's error log: $(tail -n 5 "$tmp/nginx/error.log")"
import json, sys
e = json.loads(open(sys.argv[1]).read().splitlines()[-1])
c = json.loads(open(sys.argv[2]).read())
logged, name, want, trusted = int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), sys.argv[6] == "trusted"
word = sys.argv[7] if len(sys.argv) > 7 else None
assert c["sent"] == c["responses"] == logged == want and c["bad"] == 0, (c, logged)
assert e["requests"] == want, ("ebee", e["requests"], "client", want)
assert e["framing"] == "tls", e
if trusted:
    assert e["untrusted"] is False and e["warning"] is None, e
else:
    assert e["untrusted"] is True and word in (e["warning"] or ""), e
print(f"ok: {name}: ebee {e['requests']} requests = client's {c['responses']} = nginx's {logged}, "
      f"framing tls, {'trusted' if trusted else 'untrusted: ' + e['warning']} "
      f"(ALPN chosen: {c['alpn']})")
PY
}

trace ka13 "" "$p13" 4 50 / keepalive h1
check ka13 200 trusted
trace ka12 "" "$p12" 4 50 / keepalive none
check ka12 200 trusted
trace new13 "--mode io" "$p13" 1 60 / newconn h1
check new13 60 trusted
trace new12 "--mode io" "$p12" 1 60 / newconn none
check new12 60 trusted
trace h2_13 "" "$p13" 2 20 / keepalive h2
check h2_13 40 untrusted h2
trace h2_12 "" "$p12" 2 20 / keepalive h2
check h2_12 40 trusted
# curl, several URLs on one connection: --http1.1 offers http/1.1 only; by default it offers
# h2 too (nghttp2), which nginx without http2 declines: exact, untrusted in TLS 1.3.
trace curl13 "" curl_client "$p13" 30 --http1.1
check curl13 30 trusted
if curl -V | grep -qw HTTP2; then
	trace curl13h2 "" curl_client "$p13" 30
	check curl13h2 30 untrusted h2
fi
trace curl12 "" curl_client "$p12" 30 --tlsv1.2
check curl12 30 trusted

trace big13 "" "$p13" 2 20 /big keepalive h1
check big13 40 trusted
# TLS 1.2: in 1.3 the server's session tickets can leave between the first request's
# records (after its headers, before its body), and the body's next record then counts as a
# request (tls.h, "Known wrong"): 41 of 40 in 1 of 4 runs here.
trace post12 "" "$p12" 2 20 /sink keepalive h1 100000
check post12 40 untrusted "wrote again"

# The latency: each request's sojourn lies inside the client's latency of it and holds the
# upstream's 20 ms; the client's latency exceeds it by the client's own time and the
# round trip, which the same run measures against nginx's immediate "/" with the same
# client and connections just before and just after (untraced; the larger p50 of the two):
# the gap is at most that no-delay p50 plus 15% of the client's p50. In a guest under
# emulation the Python client's TLS alone took some ms a request, and 15% failed there
# (client 33.6 ms, sojourn 27.9 ms); so did 15%-or-the-floor, whichever is more (a gap of
# 5.27 ms, the floor 4.11, the client's wake-up after a wait not in the floor); and with
# the floor taken from the keep-alive runs minutes earlier, a busy moment of a guest beside
# the host suite failed it once (TLS 1.2: gap 11.18 ms, that floor 3.84 ms, client 44.07 ms).
for v in 13 12; do
	eval "port=\$p$v"
	python3 tests/lib/https_client.py "$port" 2 40 / keepalive h1 >"$tmp/floor$v.a" || fail "client (floor$v)"
	trace "lat$v" "" "$port" 2 40 /slow/ keepalive h1
	python3 tests/lib/https_client.py "$port" 2 40 / keepalive h1 >"$tmp/floor$v.b" || fail "client (floor$v)"
	check "lat$v" 80 trusted
	python3 - "$tmp/lat$v.json" "$tmp/lat$v.client" "$v" "$tmp/floor$v.a" "$tmp/floor$v.b" <<'PY' || fail "$(cat "$tmp/lat$v.json")"
import json, sys
e = json.loads(open(sys.argv[1]).read().splitlines()[-1])
c = json.loads(open(sys.argv[2]).read())
floor = max(json.loads(open(f).read())["p50_us"] for f in sys.argv[4:6])
r = e["sojourn_p50_ns"] / 1e3 / c["p50_us"]
print(f"ok: TLS 1.{sys.argv[3][1]}, slow upstream: client p50 {c['p50_us']/1e3:.2f} ms, ebee sojourn "
      f"p50 {e['sojourn_p50_ns']/1e6:.2f} ms, service p50 {e['p50_ns']/1e6:.2f} ms, ratio {r:.3f}; "
      f"the client's p50 with no upstream, around it {floor/1e3:.2f} ms")
assert e["sojourn_p50_ns"] >= 20e6 * 0.99, "sojourn p50 below the upstream's 20 ms"
assert r <= 1.01, "sojourn p50 above the client's"
gap = c["p50_us"] - e["sojourn_p50_ns"] / 1e3
assert gap <= floor + 0.15 * c["p50_us"], (gap, floor)
PY
done
echo PASS
