#!/bin/bash
# ebee's dgram pattern on a UDP echo server of our own (tests/fixtures/udp_echo) that reads
# with recvmmsg and answers with sendmmsg in batches, on each path:
#   - mode dgram counts every datagram answered, batches per datagram: ebee's count equals
#     the client's and the server's, and the server did read several per call;
#   - auto picks dgram for this UDP-only server and counts the same;
#   - one-way traffic (a server that never answers) is counted 0 requests, its datagrams
#     reported as expired (JSON, Prometheus), with a warning in the JSON and on stderr, and
#     the mode stays auto;
#   - IPv6 and dual-stack sockets (v4-mapped peers) count exactly.
# The echo servers and their clients run in a network namespace of their own, whose Udp
# counters (/proc/net/snmp, and snmp6's Udp6 for IPv6 peers) are the kernel's count of what
# moved: no fixture can fake them, and nothing else sends there. Each request is a datagram
# in and one out on each side (client, server), so InDatagrams and OutDatagrams over the
# client's run are twice ebee's count; one-way, once the expired ones.
# A path the kernel cannot run (one of ebee's refusals in tests/lib/ebee_unsupported.re)
# says SKIP and the rest runs; any other error fails; with no path at all, the test is a
# SKIP (exit 77), not a pass.
# shellcheck source=../lib/ebeetest.sh
. "$(dirname "$0")/../lib/ebeetest.sh"
[ -x build/fixtures/udp_echo ] && [ -x build/fixtures/udp_client ] || fail "build first (make all)"
ns=ebee-dgram-$$
ip netns add "$ns" 2>/dev/null || { echo "SKIP: cannot create a network namespace"; exit 77; }
trap 'rc=$?; ip netns del "$ns" 2>/dev/null; (exit $rc); ebeetest_cleanup' EXIT
ip -n "$ns" link set lo up || fail "cannot set up the namespace's loopback"
# in_ns CMD...: CMD in the namespace when $in_ns is set (ip netns exec execs it: same pid)
in_ns() { if [ -n "${in_ns:-}" ]; then ip netns exec "$ns" "$@"; else "$@"; fi; }
# udp_snmp: the namespace's Udp InDatagrams and OutDatagrams, the kernel's count, with
# Udp6's added (a datagram counts in one of them: Udp6 for an IPv6 peer, Udp for an IPv4
# one, v4-mapped on a dual-stack socket too)
udp_snmp() {
	ip netns exec "$ns" awk '/^Udp:/ { if (!h) { split($0, n); h = 1; next }
		for (i = 2; i <= NF; i++) { if (n[i] == "InDatagrams") in_ += $i; if (n[i] == "OutDatagrams") out += $i } }
		$1 == "Udp6InDatagrams" { in_ += $2 } $1 == "Udp6OutDatagrams" { out += $2 }
		END { print in_ + 0, out + 0 }' /proc/net/snmp /proc/net/snmp6
}

# start_ebee PID ARGS...: ebee trace in the background (its pid in $eb), waits for its
# "probes live" line.
start_max_ms=0
start_ebee() {
	local pid=$1
	shift
	# A fresh file: the last run's "probes live" must not be taken for this one's.
	rm -f "$tmp/err" "$tmp/out.json"
	local t0
	t0=$(date +%s%N)
	build/ebee trace --pid "$pid" --json "$@" >"$tmp/out.json" 2>"$tmp/err" &
	eb=$!
	pids+=($eb)
	ebee_wait_live "$eb" "$tmp/err" || fail "ebee did not start: $(cat "$tmp/err")"
	# the slowest start of this run, in ms: the mid-request case's margin
	local ms=$((($(date +%s%N) - t0) / 1000000))
	[ "$ms" -gt "$start_max_ms" ] && start_max_ms=$ms
}

# start_echo ARGS...: the echo server (pid in $srv, port in $port).
start_echo() {
	rm -f "$tmp/ready" "$tmp/stats"
	# not through in_ns: a function in the background is a subshell, whose pid is not the server's
	${in_ns:+ip netns exec "$ns"} build/fixtures/udp_echo --ready-file "$tmp/ready" \
		--stats-file "$tmp/stats" --timeout 120 "$@" &
	srv=$!
	pids+=($srv)
	for _ in $(seq 100); do [ -s "$tmp/ready" ] && break; sleep 0.05; done
	port=$(cat "$tmp/ready")
	[ -n "$port" ] || fail "udp_echo did not start"
}

stop_echo() {
	kill "$srv"
	wait "$srv" 2>/dev/null
	[ -s "$tmp/stats" ] || fail "udp_echo wrote no stats"
}

stat_of() { awk -v k="$1" '$1 == k { print $2 }' "$tmp/stats"; }

skipped=()
for path in socket syscall; do
	if ! build/ebee trace --pid $$ --path $path --duration 0.1 >/dev/null 2>"$tmp/probe.err"; then
		why=$(ebee_unsupported "$tmp/probe.err") ||
			fail "$path path: ebee cannot trace: $(cat "$tmp/probe.err")"
		echo "SKIP: $path path: $why"
		skipped+=("$path path: $why")
		continue
	fi
	for mode in dgram auto; do
		in_ns=1 start_echo --batch 16 --work-us 20
		# Traced until the client is done, then SIGINT (a fixed duration ran out before
		# the client of the IPv6 case below began, once, in the 6.12 guest of a busy run).
		start_ebee "$srv" --mode $mode --path $path --duration 300
		# The server has been blocked in recvmmsg since before ebee started. Under
		# fentry/fexit (6.1) a call that entered before the trampoline runs no fexit,
		# so the first datagram it returned would go unseen (design.md, "Attach
		# methods"; the IPv6 cases below count that case). The server's 200 ms
		# SO_RCVTIMEO ends that call: 0.3 s on, every receive is a traced one. In
		# the 6.1 guest, 3999 of 4000 once without this wait.
		sleep 0.3
		# --idle-ms: the client gives up on a window after that long without an answer;
		# 1 s (its default) most likely ran out once in a busy 6.12 guest: the client had
		# 3096 answers of the server's 3160, 64 short: one window, answered after it left.
		read -r in0 out0 < <(udp_snmp)
		in_ns=1 in_ns build/fixtures/udp_client --port "$port" --requests 4000 --window 64 --burst 16 \
			--sources 4 --idle-ms 15000 >"$tmp/client" || fail "$path/$mode: client failed"
		sleep 0.3 # the last records through the ring
		kill -INT $eb
		wait $eb || fail "$path/$mode: ebee exited $?: $(cat "$tmp/err")"
		stop_echo
		# InDatagrams counts a datagram when it is read: after the server is gone
		read -r in1 out1 < <(udp_snmp)
		answered=$(awk '$1 == "answered" { print $2 }' "$tmp/client")
		python3 - "$tmp/out.json" "$answered" "$(stat_of answered)" "$(stat_of max_batch)" \
			$mode $path $((in1 - in0)) $((out1 - out0)) <<'PY' || fail "$path/$mode: $(cat "$tmp/out.json") $(cat "$tmp/err")"
import json, sys
o = json.loads(open(sys.argv[1]).read().splitlines()[-1])
client, server, batch, mode, path = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
kin, kout = int(sys.argv[7]), int(sys.argv[8])
print("%s/%s: mode %s, ebee %d requests, client %d answered, server %d answered, kernel %d in and "
      "%d out (both sides), largest recvmmsg %d, service p50 %s ns, expired %d"
      % (path, mode, o["mode"], o["requests"], client, server, kin, kout, batch, o["p50_ns"],
         o["expired"]))
assert client == 4000 and server == client, "client and server disagree: the test is broken"
assert batch > 1, "the server never read a batch: the recvmmsg case was not exercised"
assert o["mode"] == "dgram", "mode %s, want dgram" % o["mode"]
assert o["requests"] == client, "ebee counted %d, client %d" % (o["requests"], client)
assert kin == kout == 2 * o["requests"], "ebee counted %d, the kernel moved %d in, %d out" % (
    o["requests"], kin, kout)
assert o["warning"] is None, o["warning"]
assert o["dropped"] == 0
PY
	done

	# A scrape that failed: who is gone, and how udp_echo ended (once, in a busy 6.12 guest,
	# it was gone after 166 of the 600 datagrams, ebee then ending with it).
	one_way_gone() {
		local e=running rc=running
		kill -0 $eb 2>/dev/null || e=gone
		if ! kill -0 $srv 2>/dev/null; then
			wait $srv
			rc="exited $? ($(tr '\n' ' ' <"$tmp/stats" 2>/dev/null))"
		fi
		fail "$path/one-way: scrape failed (ebee $e, udp_echo $rc, client: $(tr '\n' ' ' <"$tmp/client")): $(cat "$tmp/err")"
	}
	# One-way: datagrams that are never answered are no requests; they expire (1 s) and
	# are reported, with a warning.
	in_ns=1 start_echo --batch 8 --one-way
	eport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	start_ebee "$srv" --path $path --listen "127.0.0.1:$eport"
	read -r in0 out0 < <(udp_snmp)
	in_ns=1 in_ns build/fixtures/udp_client --port "$port" --requests 600 --one-way --sources 3 >"$tmp/client" ||
		fail "$path/one-way: client failed"
	# Prometheus too: after the 1 s timeout and a sweep (every second); polled, with a 30 s
	# hang guard (a fixed 2.8 s inside a 4 s --duration outlasted ebee in the 6.12 guest).
	for _ in $(seq 300); do
		curl -fsS "http://127.0.0.1:$eport/metrics" >"$tmp/page" || one_way_gone
		grep -Eq '^ebee_expired_total\{.*\} 600$' "$tmp/page" && break
		sleep 0.1
	done
	grep -Eq '^ebee_expired_total\{.*\} 600$' "$tmp/page" ||
		fail "$path/one-way: /metrics: $(grep expired "$tmp/page")"
	kill -INT $eb
	wait $eb || fail "$path/one-way: ebee exited $?: $(cat "$tmp/err")"
	stop_echo
	read -r in1 out1 < <(udp_snmp)
	python3 - "$tmp/out.json" "$(stat_of received)" "$tmp/err" $path $((in1 - in0)) $((out1 - out0)) <<'PY' ||
import json, sys
o = json.loads(open(sys.argv[1]).read().splitlines()[-1])
received, err, path = int(sys.argv[2]), open(sys.argv[3]).read(), sys.argv[4]
kin, kout = int(sys.argv[5]), int(sys.argv[6])
print("%s/one-way: server received %d (the kernel: %d in, %d out), ebee mode %s, %d requests, "
      "%d expired, warning %r" % (path, received, kin, kout, o["mode"], o["requests"],
                                  o["expired"], o["warning"]))
assert received == 600, "the server received %d of 600 (loss on loopback?)" % received
assert kin == kout == o["expired"], "the kernel moved %d in, %d out; ebee expired %d" % (
    kin, kout, o["expired"])
assert o["requests"] == 0, "one-way datagrams counted as requests"
assert o["expired"] == received, "expired %d, want %d" % (o["expired"], received)
assert o["mode"] == "auto", "mode %s for a server that answers nothing" % o["mode"]
assert o["warning"] and "none answered" in o["warning"], o["warning"]
# The same reason in the list, by its id, with what it counts: the datagrams received.
assert [(w["reason"], w["count"]) for w in o["warnings"]] == [("udp_unanswered", received)], o
assert o["warnings"][0]["text"] == o["warning"], o
assert "none answered" in err, "the warning is not on stderr: " + err
PY
		fail "$path/one-way: $(cat "$tmp/out.json") $(cat "$tmp/err")"
done
# the cases below trace on the path auto picks: there is none if both were refused
if [ ${#skipped[@]} -eq 2 ]; then
	echo "SKIP: no path ran: ${skipped[0]}; ${skipped[1]}"
	exit 77
fi

# Tracing that begins between a request and its response: the server's first I/O seen is
# that response, on a socket bound to 127.0.0.1 port 0 (an address of its choosing, no
# port). It is still a server socket: the requests that follow count.
# The first answer waits three times the slowest start of ebee this run saw, plus a
# second (1.5 s on an idle host; a start takes seconds under emulation). If ebee still went
# live only after that answer (its client had exited: the case not exercised, once in the
# 6.12 guest), the case is set up again with twice the wait, three times at most.
first_ms=$((3 * start_max_ms + 1000))
mid=""
for try in 1 2 3; do
	in_ns=1 start_echo --first-work-us $((first_ms * 1000))
	read -r in0 out0 < <(udp_snmp)
	ip netns exec "$ns" build/fixtures/udp_client --port "$port" --requests 1 \
		--idle-ms $((first_ms + 5000)) >"$tmp/client1" & # exec'd: its pid
	c1=$!
	sleep 0.2
	start_ebee "$srv" --mode dgram --duration $((first_ms / 1000 + 9)) -v
	if kill -0 $c1 2>/dev/null; then # still awaiting its answer: ebee is live mid-request
		mid=$first_ms
		break
	fi
	echo "mid-request: ebee went live after the first answer ($first_ms ms, try $try)"
	kill -INT $eb
	wait $eb
	wait $c1
	stop_echo
	last_ms=$first_ms
	first_ms=$((first_ms * 2))
done
[ -n "$mid" ] || fail "mid-request: ebee went live after the first answer in 3 tries (last wait $last_ms ms): the case was not exercised"
wait $c1
grep -q '^answered 1$' "$tmp/client1" || fail "mid-request: the first request got no answer"
in_ns=1 in_ns build/fixtures/udp_client --port "$port" --requests 3 --idle-ms 5000 >"$tmp/client" ||
	fail "mid-request: client failed"
wait $eb || fail "mid-request: ebee exited $?: $(cat "$tmp/err")"
stop_echo
read -r in1 out1 < <(udp_snmp)
req=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])["requests"])' "$tmp/out.json")
unsol=$(grep -c ' 1 unsolicited\|(1 client)' "$tmp/err")
echo "mid-request start: answered $(awk '$1 == "answered" { print $2 }' "$tmp/client") after the first, ebee $req requests, sweeps that saw the first answer first: $unsol"
[ "$unsol" -gt 0 ] || fail "mid-request: ebee saw the first request: the case was not exercised ($(grep dgram: "$tmp/err" | tail -1))"
grep -q '^answered 3$' "$tmp/client" || fail "mid-request: the client got $(cat "$tmp/client")"
[ "$req" = 3 ] || fail "mid-request: ebee counted $req of the 3 requests that followed"
# the kernel's: 4 requests and their answers each way, the first the one ebee went live in
echo "mid-request: the kernel moved $((in1 - in0)) in, $((out1 - out0)) out (both sides)"
[ $((in1 - in0)) = $((2 * (req + 1))) ] && [ $((out1 - out0)) = $((2 * (req + 1))) ] ||
	fail "mid-request: ebee counted $req after the first, the kernel moved $((in1 - in0)) in, $((out1 - out0)) out"

# IPv6: an IPv6 socket (peers from the recvmsg6/sendmsg6 hooks) and a dual-stack one whose
# IPv4 peers arrive as v4-mapped addresses and are answered through sendmsg4.
for fam in "6 ::1" "dual 127.0.0.1" "dual ::1"; do
	set -- $fam
	rm -f "$tmp/ready6"
	ip netns exec "$ns" tests/lib/udp_echo6.py "$1" "$tmp/ready6" & # exec'd: its pid
	srv=$!
	pids+=($srv)
	for _ in $(seq 100); do [ -s "$tmp/ready6" ] && break; sleep 0.05; done
	port=$(cat "$tmp/ready6") || fail "udp_echo6.py did not start"
	start_ebee "$srv" --mode dgram --duration 300
	read -r in0 out0 < <(udp_snmp)
	answered=$(ip netns exec "$ns" python3 - "$2" "$port" <<'PY'
import socket, sys
host, port = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(1)
ok = 0
for i in range(300):
    s.sendto(b"q%d" % i, (host, port))
    try:
        ok += s.recv(64) == b"q%d" % i
    except socket.timeout:
        pass
print(ok)
PY
)
	read -r in1 out1 < <(udp_snmp)
	sleep 0.3 # the last records through the ring
	kill -INT $eb
	wait $eb || fail "$fam: ebee exited $?: $(cat "$tmp/err")"
	kill $srv
	read -r req attach < <(python3 -c 'import json,sys; o = json.loads(open(sys.argv[1]).read().splitlines()[-1]); print(o["requests"], o["attach"])' "$tmp/out.json")
	# This server blocks in recvfrom before ebee starts. A tracepoint fires where that
	# call ends, so its datagram counts; an fexit program is not run for a call that
	# entered before the trampoline was installed (design.md, "Attach methods"), so with
	# fentry/fexit the first datagram's read is unseen and its answer is unsolicited, as
	# when tracing begins mid-request (above): exactly one fewer.
	miss=0
	case $attach in *fentry*) miss=1 ;; esac
	echo "IPv6 $1 socket, client on $2: client $answered answered, ebee $req requests (attach $attach), kernel $((in1 - in0)) in and $((out1 - out0)) out (both sides)"
	[ "$answered" = 300 ] || fail "$fam: the client got $answered of 300 answers"
	[ "$req" = "$((answered - miss))" ] ||
		fail "$fam: ebee counted $req, the client $answered (attach $attach: want $((answered - miss)))"
	[ $((in1 - in0)) = $((2 * (req + miss))) ] && [ $((out1 - out0)) = $((2 * (req + miss))) ] ||
		fail "$fam: ebee counted $req (attach $attach: $miss unseen), the kernel moved $((in1 - in0)) in, $((out1 - out0)) out"
done
echo "PASS"
