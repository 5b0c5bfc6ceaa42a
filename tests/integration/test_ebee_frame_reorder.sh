#!/bin/bash
# Client segments that reach ebee out of order (bpf/frame/stash.bpf.h's sstash). ebee's
# framing hook sees a connection's segments before TCP puts them in order; on loopback each
# is processed on the CPU that sent it, so a client writing from two threads, one segment
# left in a busy CPU's backlog, has its next segment arrive first: taken as a gap, that
# cost an HTTP/2 connection its sync for good (Go gRPC in the VM lane's 6.1 guest: 207 and
# 1 229 of 1 600 calls, untrusted). Made to happen here at will: a RESP client in a
# network namespace of its own reaches redis-server through a router namespace whose
# egress holds back segments of IP length 1024-2047 (htb, 100 kbit/s, u32 on the length)
# and lets smaller ones by, so each round's later commands arrive before its first.
#   1. 30 rounds of a delayed SET and a 50-byte one: ebee counts all 60 commands, exactly
#      redis's count, framing resp, trusted, and says it held early segments
#      (`reordered` >= 1, the host's TCPOFOQueue moved too). Before the change: 32 of 60,
#      untrusted, 28 gaps.
#   2. three 50-byte SETs early in each round, three segments: held as one run (appended),
#      all 120 counted, trusted.
#   3. the early segment larger than ebee holds (5000 bytes, over 4 KiB; MTU 9000): a gap
#      as before, said (untrusted, "lost sync ... at a sequence gap"), never silent; then
#      (bigt) 16 commands in order after the rounds: the connection trusted again
#      (EBEE_FRAME_REGAIN), the loss of sync no longer a reason (regained 1).
#   4. h2c (nginx, tests/lib/h2_gap_client.py): 30 rounds of a delayed POST of 1000 bytes and
#      a 5000-byte one that arrives first, a gap each round. HTTP/2 resynchronises at a
#      frame header confirmed by the next (frame_h2_mid): framing http2, the gaps said, a
#      resync per gap, and the streams after each gap counted (requests >= 30 of nginx's
#      60: at least each round's early stream): 32 of 60 here, 28 gaps, 28 resyncs (the
#      first two rounds came in order). Before the change: 4 of 60, the first gap lost
#      the connection for good (1 gap, 0 resyncs). The streams opened in the gaps are
#      counted from the client's stream ids (gap_lost): requests + gap_lost = nginx's
#      count exactly (36 + 28 = 64 here). 4 streams in order after the rounds (h2): still
#      untrusted (regaining 1); 16 (h2t): trusted again, 48 + 28 = 76.
set -u
. "$(dirname "$0")/../lib/ebeetest.sh"
. tests/lib/servers.sh
command -v redis-server >/dev/null && command -v redis-cli >/dev/null ||
	{ echo "SKIP: redis-server/redis-cli not installed (make deps)"; exit 77; }
command -v tc >/dev/null || { echo "SKIP: tc not installed (iproute2)"; exit 77; }
[ -n "$(awk '$3 == "cgroup2"' /proc/mounts)" ] || { echo "SKIP: no cgroup v2 hierarchy mounted"; exit 77; }

c=ebee-roc-$$ r=ebee-ror-$$ v=vro$$
ip netns add "$c" 2>/dev/null || { echo "SKIP: cannot create a network namespace"; exit 77; }
trap 'ip netns del "$c" 2>/dev/null; ip netns del "$r" 2>/dev/null; ebeetest_cleanup' EXIT
ip netns add "$r" || fail "cannot create a second network namespace"
# client 10.234.1.2 -- 10.234.1.1 router 10.234.2.2 -- 10.234.2.1 this namespace (redis)
ip link add eth0 netns "$c" type veth peer name eth0 netns "$r" &&
	ip link add "$v" type veth peer name eth1 netns "$r" &&
	ip -n "$c" addr add 10.234.1.2/24 dev eth0 && ip -n "$c" link set eth0 up &&
	ip -n "$c" link set lo up && ip -n "$c" route add default via 10.234.1.1 &&
	ip -n "$r" addr add 10.234.1.1/24 dev eth0 && ip -n "$r" link set eth0 up &&
	ip -n "$r" addr add 10.234.2.2/24 dev eth1 && ip -n "$r" link set eth1 up &&
	ip netns exec "$r" sysctl -qw net.ipv4.ip_forward=1 &&
	ip addr add 10.234.2.1/24 dev "$v" && ip link set "$v" up &&
	ip route add 10.234.1.0/24 via 10.234.2.2 || fail "cannot set up the namespaces' links"
# The hold-back is in the router, past the client's veth: TCP's small-queue limit, which
# counts what waits in the client's own qdisc, would otherwise hold the next write too.
rtc() { ip netns exec "$r" tc "$@"; }
rtc qdisc add dev eth1 root handle 1: htb default 10 &&
	rtc class add dev eth1 parent 1: classid 1:10 htb rate 1gbit 2>/dev/null &&
	rtc class add dev eth1 parent 1: classid 1:20 htb rate 100kbit burst 1600 cburst 1600 &&
	rtc filter add dev eth1 parent 1: protocol ip prio 1 u32 match u16 0x0400 0xfc00 at 2 flowid 1:20 ||
	{ echo "SKIP: the htb qdisc or the u32 classifier is not available"; exit 77; }

port=$(free_port)
redis-server --port "$port" --bind 127.0.0.1 10.234.2.1 --protected-mode no --save '' \
	--appendonly no --dir "$tmp" >"$tmp/redis.log" 2>&1 &
rpid=$!
pids+=("$rpid")
for _ in $(seq 100); do port_accepts "$port" && break; sleep 0.05; done
port_accepts "$port" || fail "redis did not start: $(cat "$tmp/redis.log")"
cmds() { redis-cli -p "$port" info stats | tr -d '\r' | sed -n 's/^total_commands_processed://p'; }
ofo() { awk '/^TcpExt:/ { if (!h) { split($0, n); h = 1 } else for (i = 1; i <= NF; i++) if (n[i] == "TCPOFOQueue") print $i }' /proc/net/netstat; }

# run NAME EARLY_BYTES [EARLY_COUNT [TAIL]]: 30 rounds traced (then TAIL commands in order); $tmp/NAME.json, NAME.client, the
# deltas in NAME.delta
run() {
	local name=$1 b o
	b=$(cmds) o=$(ofo)
	ebee_on "$name" "$rpid"
	ip netns exec "$c" python3 tests/lib/resp_reorder.py 10.234.2.1 "$port" 30 "$2" "${3:-1}" "${4:-0}" \
		>"$tmp/$name.client" 2>&1 || fail "$name: client: $(cat "$tmp/$name.client")"
	ebee_off "$name"
	# redis counts a command after it ran: the INFO that read $b is in the count, untraced
	echo "$(($(cmds) - b - 1)) $(($(ofo) - o))" >"$tmp/$name.delta"
}

run held 50
run run3 50 3
for l in eth0 eth1; do ip -n "$r" link set "$l" mtu 9000; done
ip -n "$c" link set eth0 mtu 9000 && ip link set "$v" mtu 9000 || fail "cannot set the MTU"
run big 5000
run bigt 5000 1 16

# h2c: nginx on 10.234.2.1 (and 127.0.0.1, where run_nginx looks for it); its access log's
# lines, one a stream, are what it served
h2=
if command -v nginx >/dev/null && nginx -V 2>&1 | grep -q -- --with-http_v2_module; then
	p2=$(free_port)
	nginx_conf "$tmp/nginx" "	server {
		listen 127.0.0.1:$p2 http2;
		listen 10.234.2.1:$p2 http2;
		location / { default_type text/plain; return 200 \"ok\\n\"; }
	}" || fail "cannot write nginx.conf"
	npid=$(run_nginx "$tmp/nginx" "$p2") || fail "nginx did not start"
	pids+=("$npid")
	# h2run NAME TAIL: 30 gap rounds then TAIL streams in order, traced; NAME.delta: the
	# streams nginx served
	h2run() {
		local b
		b=$(wc -l <"$tmp/nginx/access.log")
		ebee_on "$1" "$npid"
		ip netns exec "$c" python3 tests/lib/h2_gap_client.py 10.234.2.1 "$p2" 30 1000 5000 \
			"$2" >"$tmp/$1.client" 2>&1 || fail "$1: client: $(cat "$tmp/$1.client")"
		ebee_off "$1"
		echo "$(($(wc -l <"$tmp/nginx/access.log") - b))" >"$tmp/$1.delta"
	}
	h2run h2 4
	h2run h2t 16
	h2=1
else
	echo "SKIP (this case): h2: nginx with the http_v2 module not installed (make deps)"
fi

python3 - "$tmp" "$h2" <<'PY' || fail "$(for n in held big bigt ${h2:+h2 h2t}; do tail -1 "$tmp/$n.json"; done)"
import json, re, sys
t = sys.argv[1]
last = lambda n: json.loads(open(f"{t}/{n}.json").read().splitlines()[-1])
delta = lambda n: [int(x) for x in open(f"{t}/{n}.delta").read().split()]
sent = lambda n: int(open(f"{t}/{n}.client").read().split()[1])

e, (cmds, ofo), n = last("held"), delta("held"), sent("held")
assert n == cmds == 60, (n, cmds)
assert ofo >= 1, f"no segment came out of order at the host (TCPOFOQueue +{ofo}): the setup did nothing"
assert e["framing"] == "resp" and e["untrusted"] is False and e["warning"] is None, e
assert e["requests"] == cmds, (e["requests"], cmds)
assert e["reordered"] >= 1, e
print(f"ok: held: ebee {e['requests']} commands = redis's {cmds}, framing resp, trusted; "
      f"{e['reordered']} early segment(s) held and parsed in order (TCPOFOQueue +{ofo})")

e, (cmds, ofo), n = last("run3"), delta("run3"), sent("run3")
assert n == cmds == 120, (n, cmds)
assert e["framing"] == "resp" and e["untrusted"] is False and e["warning"] is None, e
assert e["requests"] == cmds and e["reordered"] >= 1, (e["requests"], cmds, e["reordered"])
print(f"ok: run3: three early segments a round: ebee {e['requests']} commands = redis's {cmds}, "
      f"trusted; {e['reordered']} run(s) held (TCPOFOQueue +{ofo})")

e, (cmds, ofo), n = last("big"), delta("big"), sent("big")
assert n == cmds == 60, (n, cmds)
assert e["untrusted"] is True and "lost sync" in (e["warning"] or ""), e
m = re.search(r"(\d+) at a sequence gap", e["warning"])
assert m and int(m.group(1)) >= 1, e["warning"]
assert e["regaining"] == 1 and e["gap_lost"] == 0, e  # RESP's gaps are not a number
print(f"ok: big: an early segment larger than ebee holds is a gap, said: ebee {e['requests']} of "
      f"{cmds}, untrusted: {e['warning']}")

# The same, then 16 commands in order: the loss of sync no longer a reason (the responses of
# the gaps' commands found no request: unmatched, still said)
e, (cmds, ofo), n = last("bigt"), delta("bigt"), sent("bigt")
assert n == cmds == 76, (n, cmds)
kinds = [w["reason"] for w in e["warnings"]]
assert e["desync"] >= 1 and e["resync"] >= 1, f"bigt: no gap: the setup did nothing: {e}"
assert "desync" not in kinds and e["regaining"] == 0 and e["regained"] >= 1, e
assert e["requests"] >= 30 + 16, (e["requests"], cmds)
print(f"ok: bigt: {e['desync']} gap(s), 16 commands in order after: regained {e['regained']}, "
      f"regaining {e['regaining']}; ebee {e['requests']} of {cmds}: {e['warning']}")

if sys.argv[2]:
    # After the gap rounds, 4 streams in order: fewer than EBEE_FRAME_REGAIN (16) answered
    # in sync since the last gap, still untrusted; 16: trusted again, the loss still said.
    for name, tail in (("h2", 4), ("h2t", 16)):
        e, (served,) = last(name), delta(name)
        words = open(f"{t}/{name}.client").read().split()
        n = 60 + tail
        assert words[:4] == ["sent", str(n), "ok", str(n)] and served == n, (words, served)
        assert e["framing"] == "http2", e
        assert e["desync"] >= 1, f"{name}: no gap: the setup did nothing: {e}"
        assert e["resync"] >= 1, f"{name}: never resynchronised: {e}"
        # each round's early stream at least, once its gap is past; never more than sent
        assert 30 + tail <= e["requests"] <= served, (name, e["requests"], served, e["resync"])
        # the streams opened inside the gaps, from their ids: with those ebee counted, what
        # nginx served (its access log's lines)
        assert e["requests"] + e["gap_lost"] == served, \
            (name, e["requests"], e["gap_lost"], served, e["warning"])
        kinds = [w["reason"] for w in e["warnings"]]
        if tail < 16:
            m = re.search(r"(\d+) at a sequence gap", e["warning"] or "")
            assert m and int(m.group(1)) >= 1, f"{name}: no gap said: {e['warning']}"
            assert e["untrusted"] is True and "desync" in kinds and e["regaining"] == 1, e
        else:
            assert "desync" not in kinds and e["regaining"] == 0 and e["regained"] >= 1, e
            assert e["untrusted"] is False, e
        print(f"ok: {name}: {e['desync']} loss(es) of sync, {e['resync']} resync(s): ebee "
              f"{e['requests']} streams + {e['gap_lost']} lost in gaps = nginx's {served}; "
              f"{tail} in order after: untrusted {e['untrusted']}, regained {e['regained']}, "
              f"regaining {e['regaining']}: {e['warning']}")
PY
echo PASS
