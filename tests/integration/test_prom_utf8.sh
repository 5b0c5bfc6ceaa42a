#!/bin/bash
# Label values are valid UTF-8 whatever a process calls itself: a real process renames
# itself with prctl(PR_SET_NAME, "\xff\xfeA") and `ebee trace --listen` labels it by that
# comm; the scraped page must pass `promtool check metrics` (Prometheus rejects the whole
# scrape otherwise) and carry the name with each invalid byte as U+FFFD.
set -u
. "$(dirname "$0")/../lib/ebeetest.sh"
for b in promtool curl python3; do
	command -v $b >/dev/null || { echo "SKIP: $b is not installed (make deps)"; exit 77; }
done
. tests/lib/servers.sh

python3 -c '
import ctypes, sys, time
ctypes.CDLL(None, use_errno=True).prctl(15, b"\xff\xfeA", 0, 0, 0)  # PR_SET_NAME
open(sys.argv[1], "w").write("ok")
time.sleep(60)
' "$tmp/named" &
named=$!
pids+=($named)
for _ in $(seq 100); do [ -s "$tmp/named" ] && break; sleep 0.05; done
od -An -c "/proc/$named/comm" | grep -q '377 376   A' ||
	fail "the process did not rename itself: $(od -An -c "/proc/$named/comm")"

eport=$(free_port)
: >"$tmp/ebee.err"
build/ebee trace --pid "$named" --listen "127.0.0.1:$eport" --interval 1000 >/dev/null \
	2>"$tmp/ebee.err" &
eb=$!
pids+=($eb)
ebee_wait_live "$eb" "$tmp/ebee.err" || fail "ebee did not start: $(cat "$tmp/ebee.err")"
curl -fsS -m 5 "http://127.0.0.1:$eport/metrics" >"$tmp/page" || fail "scrape failed"
grep -q 'workload="' "$tmp/page" || fail "no workload label on the page"
promtool check metrics <"$tmp/page" >"$tmp/lint" 2>&1 ||
	fail "promtool rejects the page: $(head -3 "$tmp/lint")"
grep -q $'workload="\xef\xbf\xbd\xef\xbf\xbdA"' "$tmp/page" ||
	fail "the name is not there as U+FFFD U+FFFD A: $(grep -a -m1 'workload=' "$tmp/page")"
echo "ok: comm \\377\\376A scraped as workload=\"$(printf '\xef\xbf\xbd\xef\xbf\xbdA')\", promtool accepts the page"
echo PASS
