#!/bin/bash
# HTTP/1.1 framing with pipelining (issue 20): nginx (Debian's) answers a client that writes
# 10 requests at a time on each of 4 keep-alive connections (GET, HEAD, and POST with a
# body, in turn: tests/lib/http_pipeline.py). ebee must count every request, exactly what
# the client received and nginx logged, frame them as "http1", untrusted false, with its
# sojourn p50 within 15% of the client's p50 (each request from its batch's write to its
# response's last byte) where server time dominates (a slow upstream behind nginx), its
# count again exactly what the client received and nginx logged.
set -u
. "$(dirname "$0")/../lib/ebeetest.sh"
. tests/lib/servers.sh
command -v nginx >/dev/null || { echo "SKIP: nginx not installed (make deps)"; exit 77; }
[ -n "$(awk '$3 == "cgroup2"' /proc/mounts)" ] || { echo "SKIP: no cgroup v2 hierarchy mounted"; exit 77; }

port=$(free_port)
mkdir -p "$tmp/nginx/tmp"
# / answers at once; /slow/ is proxied to a cpr_server that sleeps 5 ms per request: server
# time, which is what ebee sees, dwarfing what the client adds (its own scheduling, Python's).
start_cpr up --delay-ms 5 --threads 4
[ -n "$up_port" ] || fail "cpr_server did not start"
nginx_conf "$tmp/nginx" "	server {
		listen 127.0.0.1:$port;
		location / { default_type text/plain; return 200 \"ok\\n\"; }
		location /slow/ { proxy_pass http://127.0.0.1:$up_port/; }
	}" || fail "cannot write nginx.conf"
npid=$(run_nginx "$tmp/nginx" "$port") || fail "nginx did not start"
pids+=("$npid")

# trace NAME CLIENT_ARGS...: the client's JSON in NAME.client, ebee's in NAME.json.
trace() {
	local name=$1 e
	shift
	: >"$tmp/$name.err"
	build/ebee trace --pid "$npid" --json >"$tmp/$name.json" 2>"$tmp/$name.err" &
	e=$!
	pids+=("$e")
	ebee_wait_live "$e" "$tmp/$name.err" || fail "ebee did not start: $(cat "$tmp/$name.err")"
	python3 tests/lib/http_pipeline.py "$port" "$@" >"$tmp/$name.client" || fail "client"
	kill -INT "$e"
	wait "$e" || fail "ebee exited non-zero: $(cat "$tmp/$name.err")"
}

trace count 4 100 10
logged=$(wc -l <"$tmp/nginx/access.log")
python3 - "$tmp/count.json" "$tmp/count.client" "$logged" <<'PY' || fail "$(cat "$tmp/count.json")"
import json, sys
e = json.loads(open(sys.argv[1]).read().splitlines()[-1])
c = json.loads(open(sys.argv[2]).read())
logged = int(sys.argv[3])
assert c["sent"] == c["responses"] == logged == 4000 and c["bad"] == 0, (c, logged)
assert e["framing"] == "http1" and e["untrusted"] is False and e["warning"] is None, e
assert e["requests"] == c["responses"], (e["requests"], c["responses"])
print(f"ok: pipelined HTTP/1.1: ebee {e['requests']} requests = client's {c['responses']} = "
      f"nginx's {logged}, framing http1, trusted")
PY

trace lat 2 30 6 /slow nohead
python3 - "$tmp/lat.json" "$tmp/lat.client" $(($(wc -l <"$tmp/nginx/access.log") - logged)) <<'PY' || fail "$(cat "$tmp/lat.json")"
import json, sys
e = json.loads(open(sys.argv[1]).read().splitlines()[-1])
c = json.loads(open(sys.argv[2]).read())
logged = int(sys.argv[3])  # the lines nginx logged for this run
assert c["responses"] == logged == 360 and c["bad"] == 0 and e["requests"] == 360, (c, logged, e["requests"])
print(f"ok: slow upstream: ebee {e['requests']} requests = client's {c['responses']} = nginx's {logged}")
r = e["sojourn_p50_ns"] / 1e3 / c["p50_us"]
print(f"ok: responses of a slow upstream: client p50 {c['p50_us']/1e3:.1f} ms, ebee sojourn p50 "
      f"{e['sojourn_p50_ns']/1e6:.1f} ms, ratio {r:.3f}")
assert abs(r - 1) <= 0.15, r
PY
echo PASS
