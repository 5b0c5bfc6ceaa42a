#!/bin/bash
# Framing from mid-stream: connections opened before ebee started (adopted), whose first
# bytes ebee never saw, must be framed by their protocol from the first point where it can
# be found again (an ingress segment that begins a message; the server's side from the
# first segment that may begin a response), not counted by length (a burst of reads one
# request, wrong for pipelined and multiplexed traffic). JSON `midstream` counts the
# connections framed that way.
# Paused clients, one case per framer, each a real server and ONE connection
# (tests/lib/midstream_client.py; the Go gRPC client's -before/-pause-file): some requests
# pipelined, then a pause with nothing in flight while ebee starts on the server, then K
# requests more on the same connection, pipelined the same way, and the connection held
# open until ebee has stopped (no close in its window). Each must be counted exactly:
# ebee's requests = K = what the client had answered = the server's own count over the
# traced phase (read before ebee's start and after its stop, on connections ebee does not
# see), framing the protocol's name, midstream >= 1, untrusted false (the client was idle
# at ebee's start: no request of the pause's other side half seen):
#   - redis-server, RESP, 16 commands a write (SET, GET, INCR): INFO commandstats' delta;
#   - nginx, HTTP/1.1, 8 GETs a write: the access log's lines added;
#   - nginx, HTTPS: not yet (SKIP below);
#   - nginx, h2c (prior knowledge), 16 streams opened a write: the access log's lines;
#   - memcached, text, 8 single-key gets a write: stats cmd_get + cmd_set's delta;
#   - Go gRPC (tests/fixtures/gogrpc/), 16 calls in flight: the client's count after the
#     pause (the server keeps none).
# Started mid-burst: redis-benchmark (-P 16 -k 1 -c 2, GETs) sends without a pause from
# before ebee's start to after its stop, so requests are in flight at ebee's start and the
# window's edges cut batches: no exact count to compare (which batch was whole inside
# ebee's window is not known outside it, and ebee is live before the first reference read
# and stops 0.3 s after the last); framing must be resp, midstream >= 1, and ebee's
# requests at least 90% of redis's commandstats delta read on a connection of its own
# (opened before ebee: adopted too) right after ebee went live and just before its stop.
# Length counting counts about one in 16 there.
# Every case runs and prints its line; the test fails at the end if any failed.
set -u
. "$(dirname "$0")/../lib/ebeetest.sh"
. tests/lib/servers.sh
[ -n "$(awk '$3 == "cgroup2"' /proc/mounts)" ] || { echo "SKIP: no cgroup v2 hierarchy mounted"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
bad=()  # the cases that failed
ran=0   # the cases that ran

# wait_for FILE PID WHAT: until FILE is not empty (or exists, FILE ending in .paused) while
# PID lives; 60 s a hang guard only.
wait_for() {
	local f=$1 pid=$2 end=$((SECONDS + 60))
	while [ $SECONDS -lt $end ]; do
		if [[ "$f" == *.paused ]]; then [ -e "$f" ] && return 0; else [ -s "$f" ] && return 0; fi
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.02
	done
	if [[ "$f" == *.paused ]]; then [ -e "$f" ]; else [ -s "$f" ]; fi
}

# paused NAME PID REF CLIENT...: CLIENT (its files $tmp/NAME.paused, .go, .stop) paused
# while ebee starts tracing PID, then its requests after the pause under ebee; REF prints
# the server's count (none: no reference), its delta over the traced phase in
# $tmp/NAME.ref; the client's JSON in NAME.client, ebee's in NAME.json. 1 when the client
# failed (said so).
paused() {
	local name=$1 pid=$2 ref=$3 c r0=0 r1=0
	shift 3
	"$@" >"$tmp/$name.client" 2>"$tmp/$name.cerr" &
	c=$!
	pids+=("$c")
	wait_for "$tmp/$name.paused" "$c" ||
		{ echo "$name: the client did not reach its pause: $(tail -3 "$tmp/$name.cerr")"; return 1; }
	[ "$ref" = none ] || r0=$($ref)
	ebee_on "$name" "$pid"
	touch "$tmp/$name.go"
	if ! wait_for "$tmp/$name.client" "$c"; then
		echo "$name: the client did not finish: $(tail -3 "$tmp/$name.cerr")"
		touch "$tmp/$name.stop"
		ebee_off "$name"
		return 1
	fi
	ebee_off "$name"
	[ "$ref" = none ] || r1=$($ref)
	touch "$tmp/$name.stop"
	wait "$c" || { echo "$name: the client failed: $(tail -3 "$tmp/$name.cerr")"; return 1; }
	if [ "$ref" = none ]; then echo none; else echo $((r1 - r0)); fi >"$tmp/$name.ref"
}

# check NAME K FRAMING: the counts of paused NAME (see the header).
check() {
	python3 - "$tmp/$1" "$2" "$3" <<'PY'
import json, sys
p, k, framing = sys.argv[1], int(sys.argv[2]), sys.argv[3]
name = p.rsplit("/", 1)[1]
lines = open(p + ".json").read().splitlines()
if not lines:
    print(f"{name}: ebee printed no JSON")
    sys.exit(1)
e = json.loads(lines[-1])
c = json.loads(open(p + ".client").read().splitlines()[-1])
answered = c.get("answered", c.get("ok"))
bad = c.get("bad", c.get("failed"))
ref = open(p + ".ref").read().strip()
ms = e.get("midstream", "absent")
print(f"{name}: ebee requests {e['requests']} (want {k}), framing {e['framing']}, midstream "
      f"{ms}, untrusted {e['untrusted']}; client answered {answered}, server "
      f"{'-' if ref == 'none' else ref}; unseen {e.get('unseen')}, warning: {e['warning']}")
why = []
if answered != k or bad:
    why.append(f"the client had {answered} of {k} answered, {bad} bad")
if ref != "none" and int(ref) != k:
    why.append(f"the server counted {ref}, not {k}")
if e["requests"] != k:
    why.append(f"ebee counted {e['requests']}, not {k}")
if e["framing"] != framing:
    why.append(f"framing {e['framing']}, not {framing}")
if "midstream" not in e:
    why.append("no field midstream in ebee's JSON (a build without mid-stream framing)")
elif not e["midstream"] or e["midstream"] < 1:
    why.append(f"midstream {e['midstream']}, not at least 1")
if e["untrusted"] is not False:
    why.append(f"untrusted, though the client was idle at ebee's start ({e['warning']})")
if why:
    print(f"{name}: FAIL: " + "; ".join(why))
    sys.exit(1)
print(f"ok: {name}: exact from mid-stream")
PY
}

# case NAME K FRAMING PID REF CLIENT...: paused, then check; a failure is added to bad.
case_() {
	local name=$1 k=$2 framing=$3
	shift 3
	ran=$((ran + 1))
	paused "$name" "$@" && check "$name" "$k" "$framing" || bad+=("$name")
}
mc() { python3 tests/lib/midstream_client.py "$@"; }

# redis: RESP, 16 a write; the commands it processed (INFO commandstats) read with
# redis-cli before ebee's start and after its stop.
rport=
if command -v redis-server >/dev/null && command -v redis-cli >/dev/null; then
	rport=$(free_port)
	redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --dir "$tmp" \
		>"$tmp/redis.log" 2>&1 &
	rpid=$!
	pids+=("$rpid")
	for _ in $(seq 100); do port_accepts "$rport" && break; sleep 0.05; done
	port_accepts "$rport" || fail "redis did not start: $(cat "$tmp/redis.log")"
	# The commands run so far by redis's count (INFO commandstats' calls summed, INFO's
	# own left out: redis counts the one asking after it ran, in the next reading), on a
	# connection of its own, which ebee does not see (read before its start, after its stop).
	rcmds() {
		redis-cli -p "$rport" info commandstats | tr -d '\r' | grep -v '^cmdstat_info:' |
			sed -n 's/^cmdstat_[^:]*:calls=\([0-9]*\),.*/\1/p' | awk '{ s += $1 } END { print s + 0 }'
	}
	case_ resp 320 resp "$rpid" rcmds mc resp "$rport" "$tmp/resp" 64 320 16
else
	echo "SKIP: resp: redis-server/redis-cli not installed (make deps)"
fi

# nginx: HTTP/1.1, HTTPS and h2c on three ports; the requests it served, its access log's
# lines (one log for the three; one client at a time).
if command -v nginx >/dev/null && command -v openssl >/dev/null &&
	nginx -V 2>&1 | grep -q -- --with-http_ssl_module; then
	ph=$(free_port) pt=$(free_port) p2=$(free_port)
	mkdir -p "$tmp/nginx/tmp"
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
		-keyout "$tmp/nginx/key.pem" -out "$tmp/nginx/cert.pem" >/dev/null 2>&1 ||
		fail "openssl req could not make a certificate"
	h2=
	nginx -V 2>&1 | grep -q -- --with-http_v2_module && h2="	server {
		listen 127.0.0.1:$p2 http2;
		location / { default_type text/plain; return 200 \"ok\\n\"; }
	}"
	nginx_conf "$tmp/nginx" "	server {
		listen 127.0.0.1:$ph;
		location / { default_type text/plain; return 200 \"ok\\n\"; }
	}
	server {
		listen 127.0.0.1:$pt ssl;
		ssl_protocols TLSv1.3;
		ssl_certificate $tmp/nginx/cert.pem;
		ssl_certificate_key $tmp/nginx/key.pem;
		location / { default_type text/plain; return 200 \"ok\\n\"; }
	}
$h2" || fail "cannot write nginx.conf"
	ports=("$ph" "$pt")
	[ -n "$h2" ] && ports+=("$p2")
	npid=$(run_nginx "$tmp/nginx" "${ports[@]}") || fail "nginx did not start"
	pids+=("$npid")
	logged() { wc -l <"$tmp/nginx/access.log"; }
	case_ http1 200 http1 "$npid" logged mc http1 "$ph" "$tmp/http1" 24 200 8
	# TLS is not found again mid-stream yet: an application-data record can be found, but
	# whether the handshake chose h2 (multiplexed: no request-response turns) cannot be
	# read after it, so such a connection stays counted by length (and said so)
	echo "SKIP (this case): tls: TLS is not framed from mid-stream yet (whether the unseen handshake chose h2 cannot be read later)"
	if [ -n "$h2" ]; then
		case_ h2c 320 http2 "$npid" logged mc h2c "$p2" "$tmp/h2c" 32 320 16
	else
		echo "SKIP: h2c: this nginx has no http_v2 module"
	fi
else
	echo "SKIP: http1, tls, h2c: nginx (with http_ssl) or openssl not installed (make deps)"
fi

# memcached: text, 8 single-key gets a write; cmd_get + cmd_set (servers.sh) on a
# connection of its own.
if command -v memcached >/dev/null; then
	mport=$(free_port)
	mpid=$(SERVERS_LOG_DIR=$tmp start_memcached "$mport") || fail "memcached did not start"
	pids+=("$mpid")
	mref() { memcached_requests "$mport"; }
	case_ memcache 200 memcache "$mpid" mref mc memcache "$mport" "$tmp/memcache" 24 200 8
else
	echo "SKIP: memcache: memcached not installed (make deps)"
fi

# Go gRPC: 16 calls in flight on one ClientConn, the handler sleeping 2 ms so that streams
# overlap and end out of order; the client's own count of the calls after its pause.
if [ -x build/fixtures/gogrpc_server ] && [ -x build/fixtures/gogrpc_client ]; then
	build/fixtures/gogrpc_server -port-file "$tmp/go.port" -delay 2ms >"$tmp/go.log" 2>&1 &
	gpid=$!
	pids+=("$gpid")
	for _ in $(seq 200); do [ -s "$tmp/go.port" ] && break; sleep 0.05; done
	[ -s "$tmp/go.port" ] || fail "gogrpc_server did not start: $(cat "$tmp/go.log")"
	case_ grpc 800 http2 "$gpid" none build/fixtures/gogrpc_client -port "$(cat "$tmp/go.port")" \
		-n 800 -c 16 -before 64 -paused-file "$tmp/grpc.paused" -pause-file "$tmp/grpc.go" \
		-stop-file "$tmp/grpc.stop"
else
	echo "SKIP: grpc: Go gRPC fixtures not built (golang-go, golang-google-grpc-dev: make deps, then make all)"
fi

# Started mid-burst (see the header): redis-benchmark's 2 connections sending from before
# ebee's start; redis's count read on an adopted connection of its own (midstream_client.py
# info) right after ebee went live and just before it stops.
if [ -n "$rport" ] && command -v redis-benchmark >/dev/null; then
	ran=$((ran + 1))
	redis-benchmark -p "$rport" -P 16 -k 1 -c 2 -n 1000000000 -t get >/dev/null 2>&1 &
	bpid=$!
	pids+=("$bpid")
	b0=$(rcmds)
	for _ in $(seq 200); do [ "$(rcmds)" -gt $((b0 + 1000)) ] && break; sleep 0.05; done
	mc info "$rport" "$tmp/burst" >"$tmp/burst.info" 2>"$tmp/burst.cerr" &
	ipid=$!
	pids+=("$ipid")
	wait_for "$tmp/burst.paused" "$ipid" || fail "burst: the INFO client did not connect"
	ebee_on burst "$rpid"
	touch "$tmp/burst.go1"
	for _ in $(seq 500); do [ "$(wc -l <"$tmp/burst.info")" -ge 1 ] && break; sleep 0.01; done
	sleep 1 # the traced burst
	touch "$tmp/burst.go2"
	for _ in $(seq 500); do [ "$(wc -l <"$tmp/burst.info")" -ge 2 ] && break; sleep 0.01; done
	ebee_off burst
	kill "$bpid"
	wait "$bpid" 2>/dev/null
	wait "$ipid" || fail "burst: the INFO client failed: $(cat "$tmp/burst.cerr")"
	python3 - "$tmp/burst.json" "$tmp/burst.info" <<'PY' || bad+=(burst)
import json, sys
e = json.loads(open(sys.argv[1]).read().splitlines()[-1])
a, b = (int(x) for x in open(sys.argv[2]).read().split())
delta = b - a
ms = e.get("midstream", "absent")
print(f"burst: ebee requests {e['requests']}, redis's delta {delta} (ratio "
      f"{e['requests'] / max(delta, 1):.3f}, want >= 0.9), framing {e['framing']}, midstream "
      f"{ms}, untrusted {e['untrusted']}; unseen {e.get('unseen')}, warning: {e['warning']}")
why = []
if delta < 1000:
    why.append(f"redis ran only {delta} commands in the traced second: no burst")
if e["framing"] != "resp":
    why.append(f"framing {e['framing']}, not resp")
if "midstream" not in e:
    why.append("no field midstream in ebee's JSON (a build without mid-stream framing)")
elif not e["midstream"] or e["midstream"] < 1:
    why.append(f"midstream {e['midstream']}, not at least 1")
if e["requests"] < 0.9 * delta:
    why.append(f"ebee counted {e['requests']}, under 90% of redis's {delta}")
if why:
    print("burst: FAIL: " + "; ".join(why))
    sys.exit(1)
print("ok: burst: framed resp from mid-stream")
PY
else
	echo "SKIP: burst: redis-server/redis-benchmark not installed (make deps)"
fi

[ "$ran" -gt 0 ] || { echo "SKIP: no server installed for any case (make deps)"; exit 77; }
[ ${#bad[@]} -eq 0 ] || fail "cases failed: ${bad[*]}"
echo PASS
