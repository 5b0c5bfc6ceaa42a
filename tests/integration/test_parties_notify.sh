#!/bin/bash
# parties speaks systemd's notify protocol when NOTIFY_SOCKET is set (as under
# Type=notify): READY=1 once the workloads are managed, a STATUS line per interval naming
# each workload, WATCHDOG=1 when WATCHDOG_USEC asks for it, and STOPPING=1 at the end.
# The socket is ours (a python datagram listener), so this runs without systemd as PID 1.
. "$(dirname "$0")/test_parties_lib.sh"
pt_require build/parties

pt_feed_workload 20 500
pt_ini_feed_dry
python3 - "$PT_TMP/notify.sock" "$PT_TMP/msgs" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(8)
with open(sys.argv[2], "w") as f:
    try:
        while True:
            m = s.recv(4096).decode()
            f.write(m.replace("\n", "|") + "\n")
            f.flush()
            if "STOPPING=1" in m:
                break
    except socket.timeout:
        pass
PY
PT_PIDS+=($!)
lst=$!
for _ in $(seq 50); do [ -S "$PT_TMP/notify.sock" ] && break; sleep 0.05; done
NOTIFY_SOCKET="$PT_TMP/notify.sock" WATCHDOG_USEC=5000000 \
	build/parties -c "$PT_TMP/dry.ini" --dry-run --duration 1.5 2>"$PT_TMP/err" ||
	{ cat "$PT_TMP/err"; die "parties failed"; }
wait $lst
grep -q '^READY=1|STATUS=managing 1 workload(s) with policy parties' "$PT_TMP/msgs" ||
	{ cat "$PT_TMP/msgs"; die "no READY=1"; }
grep -q '^STATUS=.* intervals, .*; web ' "$PT_TMP/msgs" || { cat "$PT_TMP/msgs"; die "no STATUS"; }
[ "$(grep -c '^WATCHDOG=1' "$PT_TMP/msgs")" -ge 5 ] || { cat "$PT_TMP/msgs"; die "watchdog not pinged each interval"; }
tail -1 "$PT_TMP/msgs" | grep -q '^STOPPING=1' || { cat "$PT_TMP/msgs"; die "no STOPPING=1 last"; }
echo "ok: $(grep -c '' "$PT_TMP/msgs") notifications: READY, STATUS, WATCHDOG, STOPPING"
echo "PASS"
