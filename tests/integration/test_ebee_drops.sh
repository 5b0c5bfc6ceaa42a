#!/bin/bash
# Records lost to a full ring buffer are counted, never silent, on each path: `ebee trace`
# on memcached with the smallest rings (--ringbuf-size 4096, a page per CPU) is stopped
# (SIGSTOP: its consumer cannot drain) while a load generator runs, then continued. The
# rings overflow for certain, and the summary's requests (counted in the kernel, lost
# records included) must equal what memcached itself served (cmd_get + cmd_set), with
# dropped > 0: a path that traced without a drop fails. A path the kernel cannot run (one
# of ebee's refusals in tests/lib/ebee_unsupported.re) says SKIP; any other error fails; if
# no path ran, the test is a SKIP (exit 77), not a pass.
. "$(dirname "$0")/../lib/ebeetest.sh"
. tests/lib/servers.sh
command -v memcaslap >/dev/null || { echo "SKIP: memcaslap missing (apt-get install libmemcached-tools)"; exit 77; }

port=$(free_port)
mc=$(SERVERS_LOG_DIR=$tmp start_memcached "$port") || fail "memcached did not start"
pids+=($mc)
fails=0 dropped_on=() skipped=()
for path in socket syscall; do
	if ! build/ebee trace --pid $$ --path $path --duration 0.1 >/dev/null 2>"$tmp/probe.err"; then
		if why=$(ebee_unsupported "$tmp/probe.err"); then
			echo "SKIP: $path path: $why"
			skipped+=("$path path: $why")
		else
			echo "FAIL: $path path: ebee cannot trace: $(cat "$tmp/probe.err")"
			fails=$((fails + 1))
		fi
		continue
	fi
	before=$(memcached_requests "$port")
	: >"$tmp/err"
	build/ebee trace --pid "$mc" --mode io --path $path --ringbuf-size 4096 --duration 6 \
		--json >"$tmp/out.json" 2>"$tmp/err" &
	eb=$!
	pids+=($eb)
	ebee_wait_live "$eb" "$tmp/err" || fail "$path: ebee did not start: $(cat "$tmp/err")"
	kill -STOP $eb
	memcaslap -s 127.0.0.1:$port -T 2 -c 8 -t 1s >/dev/null 2>&1
	kill -CONT $eb
	wait $eb || fail "$path: ebee exited $?: $(cat "$tmp/err")"
	after=$(memcached_requests "$port")
	if python3 - "$tmp/out.json" $((after - before)) $path <<'PY'; then
import json, sys
o = json.loads(open(sys.argv[1]).read().splitlines()[-1])
served, path = int(sys.argv[2]), sys.argv[3]
print("%s path: %d requests (%d records dropped), memcached served %d"
      % (path, o["requests"], o["dropped"], served))
assert o["dropped"] > 0, "nothing was dropped with the consumer stopped"
assert o["requests"] == served
PY
		echo "ok: $path path: losses counted exactly"
		dropped_on+=("$path")
	else
		echo "FAIL: $path path: $(cat "$tmp/out.json")"
		fails=$((fails + 1))
	fi
done
[ "$fails" -eq 0 ] || exit 1
if [ ${#dropped_on[@]} -eq 0 ]; then
	echo "SKIP: no path ran: $(printf '%s; ' "${skipped[@]}" | sed 's/; $//')"
	exit 77
fi
echo "PASS: records dropped and counted on the ${dropped_on[*]} path(s)"
