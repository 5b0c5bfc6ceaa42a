#!/bin/bash
# requests and rps come from the kernel's per-workload counters, not from the records that
# reach user space: memcached under memcaslap, traced by `ebee trace` with the smallest
# rings (--ringbuf-size 4096, a page per CPU) whose process is stopped (SIGSTOP) for a
# second in the middle of the load, so its consumer cannot drain and the rings overflow
# for certain. Then, on each path: dropped > 0; requests equals what memcached itself
# served (cmd_get + cmd_set) exactly; the JSON says the percentiles are over a share of
# the window's requests below 1 (covered, window_lost), and with that much lost (far above
# 1%) the workload is untrusted and the warning says why. Prometheus (--listen) shows the
# share below 1 too.
. "$(dirname "$0")/../lib/ebeetest.sh"
. tests/lib/servers.sh
command -v memcaslap >/dev/null || { echo "SKIP: memcaslap missing (apt-get install libmemcached-tools)"; exit 77; }

port=$(free_port)
mc=$(SERVERS_LOG_DIR=$tmp start_memcached "$port") || fail "memcached did not start"
pids+=($mc)
fails=0
ran=0
for path in socket syscall; do
	if ! build/ebee trace --pid $$ --path $path --duration 0.1 >/dev/null 2>"$tmp/probe.err"; then
		echo "SKIP: $path path: $(head -1 "$tmp/probe.err")"
		continue
	fi
	ran=$((ran + 1))
	before=$(memcached_requests "$port")
	: >"$tmp/$path.err"
	mport=$(free_port)
	# no --duration: ebee must still serve Prometheus after the load, however long the
	# load took (a TCG guest's ran past a 6 s --duration: connection refused); SIGINT
	# ends it after the scrape, and the summary follows
	build/ebee trace --pid "$mc" --mode io --path $path --ringbuf-size 4096 --window 2000000 \
		--listen "127.0.0.1:$mport" --json >"$tmp/$path.json" 2>"$tmp/$path.err" &
	eb=$!
	pids+=($eb)
	ebee_wait_live "$eb" "$tmp/$path.err" || fail "$path: ebee did not start: $(cat "$tmp/$path.err")"
	prom_n() { curl -s "http://127.0.0.1:$mport/metrics" | awk '/^ebee_requests_total\{/ { print int($NF) }'; }
	# How long ebee must be stopped for the rings to overflow for certain: a 4096-byte ring
	# holds about 100 records, and at 234 requests/s (a busy 6.1 guest) a 1 s stop spread
	# over 4 CPUs' rings filled none (691 requests, nothing dropped). So a first load of 1 s
	# measures the rate (its start included: a lower rate, a longer stop), and the stop is
	# ten rings' worth per CPU at that rate, 1-20 s. The load is never killed: a client
	# killed mid-request leaves one memcached served and ebee never saw answered.
	t0=$EPOCHREALTIME
	memcaslap -s 127.0.0.1:$port -T 2 -c 8 -t 1s >/dev/null 2>&1
	n0=$(prom_n)
	stop_s=$(awk -v n="${n0:-0}" -v t0="$t0" -v t1="$EPOCHREALTIME" -v c="$(nproc)" 'BEGIN {
		r = n / (t1 - t0); s = (r > 0) ? 1000 * c / r : 20
		printf "%.0f", s < 1 ? 1 : (s > 20 ? 20 : s) }')
	echo "$path: ${n0:-0} requests in the first load; ebee is stopped for $stop_s s in the second"
	# the second load, long enough for its start (more than 2 s in a TCG guest), the stop
	# and after
	memcaslap -s 127.0.0.1:$port -T 2 -c 8 -t $((stop_s + 8))s >/dev/null 2>&1 &
	load=$!
	# the stop while the load flows: asked of ebee's Prometheus (asking memcached would be
	# a request ebee counts and memcached not)
	for _ in $(seq 300); do
		n=$(prom_n)
		[ "${n:-0}" -gt $((${n0:-0} + 200)) ] && break
		sleep 0.1
	done
	sleep 0.5
	kill -STOP $eb
	sleep "$stop_s"
	kill -CONT $eb
	wait $load
	# Prometheus says the same share, while ebee still traces.
	python3 - "$mport" "$path" <<'PY' || fails=$((fails + 1))
import sys, urllib.request
body = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=5).read()
vals = [float(l.split()[-1]) for l in body.decode().splitlines()
        if l.startswith("ebee_window_covered_ratio{")]
if len(vals) != 1 or not 0 <= vals[0] < 1:
    print("FAIL: %s path: ebee_window_covered_ratio %s, want one value below 1" % (sys.argv[2], vals))
    sys.exit(1)
print("ok: %s path: Prometheus ebee_window_covered_ratio %.4f" % (sys.argv[2], vals[0]))
PY
	kill -INT $eb
	wait $eb || fail "$path: ebee exited $? on SIGINT: $(cat "$tmp/$path.err")"
	after=$(memcached_requests "$port")
	if python3 - "$tmp/$path.json" $((after - before)) $path <<'PY'; then
import json, sys
o = json.loads(open(sys.argv[1]).read().splitlines()[-1])
served, path = int(sys.argv[2]), sys.argv[3]
print("%s path: requests %d, memcached served %d; dropped %d records; window %d records "
      "of %d requests (%d lost), covered %.4f; rps %.0f; untrusted %s: %s"
      % (path, o["requests"], served, o["dropped"], o["window"], o["window_requests"],
         o["window_lost"], o["covered"], o["rps"], o["untrusted"], o["warning"]))
assert o["dropped"] > 0, "nothing was dropped with the consumer stopped"
assert o["requests"] == served, "requests differ from memcached's own count"
assert o["window"] > 0 and o["p99_ns"] is not None, "no percentile over the records that arrived"
assert 0 < o["window_lost"] <= o["window_requests"], "the window's lost requests are not counted"
assert 0 <= o["covered"] < 1, "covered does not say the percentiles are over a share"
assert abs(o["covered"] - (1 - o["window_lost"] / o["window_requests"])) < 1e-3
assert o["rps"] > 0
# A window that did not fill (--window 2000000: the run's 3 s at 75 000 requests/s filled
# the default 100000, and after the stop it held none lost) holds every record that arrived: each
# request the kernel counted arrived into it or is a record lost (memcaslap sends one
# request at a time: one record each). Whether the lost ones fall inside the window's span
# (window_lost) or outside it depends on when the consumer fell behind: on this host only
# during the stop (window_lost within 0.1% of dropped), in a TCG guest all along, so that
# those lost after the newest record that arrived are past the span (324 of 3 292).
if o["window"] < 2000000:
    assert o["requests"] == o["window"] + o["dropped"], \
        "requests are not the window's records and the lost ones"
assert o["window_lost"] <= o["dropped"], "more lost in the window than in all"
if 1 - o["covered"] > 0.01:
    assert o["untrusted"] and "lost their records" in (o["warning"] or ""), \
        "more than 1%% lost but not untrusted with the reason"
PY
		echo "ok: $path path: requests exact with records lost, percentiles marked sampled"
	else
		echo "FAIL: $path path: $(tail -1 "$tmp/$path.json")"
		fails=$((fails + 1))
	fi
done
[ "$ran" -gt 0 ] || { echo "SKIP: no path could trace"; exit 77; }
exit $((fails > 0))
