#!/bin/bash
# A protocol no framer knows, counted by length (read and write bursts), and a client that
# does not wait for its answers: ebee says so (overlap, untrusted, the warning), since
# requests the server reads together count as one. tests/lib/line_server.py answers each
# line in 3 writes 1 ms apart, whatever a read brought:
#   pipe: three lines in one write, then one a millisecond, answers read by another
#         thread: the next lines arrive while answers are being written;
#   solo: a line, its whole answer, the next line at once (the control): exact and trusted,
#         although on loopback the next line can arrive before the write that sent the
#         answer's last part has returned (which alone is no overlap: bpf/ebee.bpf.c).
#         Its count is checked against the kernel's too: the server socket's data segments
#         in (ss -ti, the connection held open until read), one a line.
# Both with the framing on (the connection's first bytes match no framer: "length") and
# with --no-framing. The socket path only: the syscall path has no arrival to compare.
set -u
. "$(dirname "$0")/../lib/ebeetest.sh"
n=60
for s in solo pipe; do
	python3 tests/lib/line_server.py 0 "$tmp/$s.port" >"$tmp/$s.log" 2>&1 &
	pids+=($!)
	eval "${s}_pid=$!"
done
for s in solo pipe; do
	for _ in $(seq 100); do [ -s "$tmp/$s.port" ] && break; sleep 0.05; done
	[ -s "$tmp/$s.port" ] || fail "line server $s did not start: $(cat "$tmp/$s.log")"
	eval "${s}_port=$(cat "$tmp/$s.port")"
done

for how in framing no-framing; do
	args=(--path socket)
	[ $how = no-framing ] && args+=(--no-framing)
	: >"$tmp/$how.err"
	build/ebee trace --pid "$solo_pid:solo" --pid "$pipe_pid:pipe" --json "${args[@]}" \
		>"$tmp/$how.json" 2>"$tmp/$how.err" &
	epid=$!
	pids+=("$epid")
	if ! ebee_wait_live "$epid" "$tmp/$how.err"; then
		# a kernel with neither the socket tracepoints nor fentry (6.1 under lockdown)
		! kill -0 "$epid" 2>/dev/null && why=$(ebee_unsupported "$tmp/$how.err") &&
			{ echo "SKIP: no socket path here: $why"; exit 77; }
		fail "ebee did not start: $(cat "$tmp/$how.err")"
	fi
	for s in solo pipe; do
		eval "port=\$${s}_port"
		if [ $s = solo ]; then
			# held open until the kernel's count of the lines it took in is read: the
			# server's socket's data segments in (ss -ti), one a line, a count no fixture
			# keeps
			rm -f "$tmp/hold"
			python3 tests/lib/line_client.py "$port" $n $s "$tmp/hold" >"$tmp/solo.got" &
			lc=$!
			pids+=("$lc")
			for _ in $(seq 1200); do
				[ -s "$tmp/solo.got" ] && break
				kill -0 $lc 2>/dev/null || break
				sleep 0.05
			done
			segs=$(ss -tinH state established "( sport = :$port )" |
				grep -o 'data_segs_in:[0-9]*' | cut -d: -f2)
			touch "$tmp/hold"
			wait $lc || fail "$how: $s client"
			got=$(cat "$tmp/solo.got")
		else
			got=$(python3 tests/lib/line_client.py "$port" $n $s) || fail "$how: $s client"
		fi
		[ "$got" = $n ] || fail "$how: $s client got $got answers of $n"
	done
	ebee_off "$how"
	python3 - "$tmp/$how.json" $n $how "${segs:-0}" <<'PY' || fail "$how: $(cat "$tmp/$how.json")"
import json, sys
rows = {}
for line in open(sys.argv[1]).read().splitlines():
    o = json.loads(line)
    rows[o["name"]] = o
n, how, segs = int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
s, p = rows["solo"], rows["pipe"]
assert s["framing"] == "length" and p["framing"] == "length", (s["framing"], p["framing"])
assert s["requests"] == n == segs and s["overlap"] == 0 and s["untrusted"] is False, (s, segs)
assert s["warning"] is None, s
print(f"ok: {how}: solo (control): {s['requests']} of {n} (the kernel: {segs} data segments "
      f"in), framing length, trusted, overlap 0")
assert p["overlap"] == 1 and p["untrusted"] is True, p
assert "sent more while a response was being written" in (p["warning"] or ""), p
assert 1 <= p["requests"] <= n, p
print(f"ok: {how}: pipe: {p['requests']} counted of {n} (the server read lines together), "
      f"overlap {p['overlap']}, untrusted: {p['warning']}")
PY
done
echo PASS
