#!/bin/bash
# What ebee prints for people: --hist (bcc-style log2 histogram whose counts add up to the
# requests), JSON lines with a wall-clock time, comm and name (and log2_us with --hist),
# and `ebee top` sorted by p99 that keeps its columns on a narrow terminal.
# The tracers run until the clients are done and are then stopped by SIGINT (their final
# report), not for a fixed time: under emulation (the VM lane) the clients can outlast any.
# The sort is checked against the P99_us column the final screen shows: which server's p99
# is higher is the machine's business (under TCG a 1 ms server's tail can pass a 4 ms one's).
# The requests are Debian's curl's (tests/lib/curl_get.sh): the counts are the responses it got.
set -u
. "$(dirname "$0")/../lib/ebeetest.sh"
. tests/lib/curl_get.sh
command -v curl >/dev/null || { echo "SKIP: curl not installed (make deps)"; exit 77; }
start_cpr fast --delay-ms 1
start_cpr slow --delay-ms 4
live() { for _ in $(seq 100); do grep -qs "probes live" "$1" && return; sleep 0.05; done; fail "ebee did not start: $(cat "$1")"; }

t_start=$(date +%s.%N)
# --mode conn: in auto, until the choice, the histogram takes the requests of whichever
# pattern is in front at each moment, so it can differ from the final count by a request of
# the pattern that lost (91 against 90 in a busy run; ebee.h, on_request); the sum is exact
# for a mode that is given
build/ebee trace --pid "$fast_pid" --mode conn --duration 120 --hist >"$tmp/hist" 2>"$tmp/e1" &
pids+=($!); e1=$!
build/ebee trace --pid "$fast_pid:front" --mode conn --duration 120 --hist --json >"$tmp/json" 2>"$tmp/e2" &
pids+=($!); e2=$!
COLUMNS=60 build/ebee top --pid "$fast_pid" --pid "$slow_pid" --duration 120 --interval 500 >"$tmp/top60" 2>"$tmp/e3" &
pids+=($!); e3=$!
COLUMNS=200 build/ebee top --pid "$fast_pid" --pid "$slow_pid" --duration 120 --interval 500 --sort pid \
	>"$tmp/top200" 2>"$tmp/e4" &
pids+=($!); e4=$!
live "$tmp/e1"; live "$tmp/e2"; live "$tmp/e3"; live "$tmp/e4"
n=$(curl_get "$fast_port" 90)
[ "$n" = 90 ] || fail "curl got $n responses of 90"
n=$(curl_get "$slow_port" 40)
[ "$n" = 40 ] || fail "curl got $n responses of 40"
t_stop=$(date +%s.%N)
kill -INT $e1 $e2 $e3 $e4
wait $e1 && wait $e2 && wait $e3 && wait $e4 || fail "an ebee exited non-zero"

grep -qE '^ +usecs +: count +distribution$' "$tmp/hist" || { cat "$tmp/hist"; fail "no histogram header"; }
sum=$(awk '/ -> / { s += $5 } END { print s }' "$tmp/hist")
[ "$sum" = 90 ] || { cat "$tmp/hist"; fail "histogram counts add up to $sum, not curl's 90"; }
grep -q '^      1024 -> 2047       : ' "$tmp/hist" || fail "no 1024 -> 2047 us row for a 1 ms server"
echo "ok: --hist: $sum requests in the log2 histogram"

# the last line's wall-clock time (when it is printed: the final report, after SIGINT): not
# before the signal, not in the future
python3 - "$tmp/json" "$fast_pid" "$t_start" "$t_stop" <<'PY' || fail "json: $(cat "$tmp/json")"
import json, sys, datetime
o = json.loads(open(sys.argv[1]).read().splitlines()[-1])
t = datetime.datetime.strptime(o["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
now = datetime.datetime.now(datetime.timezone.utc)
start, stop = (datetime.datetime.fromtimestamp(float(x), datetime.timezone.utc) for x in sys.argv[3:5])
ms = datetime.timedelta(milliseconds=1)  # the field's resolution
assert start <= stop - ms <= t <= now, (str(start), str(stop), o["time"], str(now))
age = (now - t).total_seconds()
assert o["pid"] == int(sys.argv[2]) and o["comm"] == "cpr_server" and o["name"] == "front", o
assert sum(o["log2_us"]) == o["requests"] == 90, o
print(f"ok: json: time {o['time']} ({age:.1f} s ago), comm {o['comm']}, name {o['name']}, log2_us sums to 90")
PY

strip() { sed 's/\x1b\[[HJ]//g' "$1"; }
long=$(strip "$tmp/top60" | awk 'length > 60' | head -1)
[ -z "$long" ] || fail "a top line is wider than 60 columns: '$long'"
hdr=$(strip "$tmp/top60" | grep '^PID' | tail -1)
for c in PID MODE RPS P99_us; do echo "$hdr" | grep -qw "$c" || fail "60 columns: $c missing: $hdr"; done
echo "$hdr" | grep -q LATEST_us && fail "60 columns: LATEST_us kept: $hdr"
# the final screen (the last header and the rows after it): both servers, each with a p99,
# largest first (equal ones by pid)
strip "$tmp/top60" | awk '/^PID/ { n = 0; for (i = 1; i <= NF; i++) if ($i == "P99_us") c = i; next }
	c && $1 ~ /^[0-9]+$/ { row[++n] = $1 " " $c } END { for (i = 1; i <= n; i++) print row[i] }' \
	>"$tmp/rows"
[ "$(sort -u "$tmp/rows" | awk '{ print $1 }' | sort -n | tr '\n' ' ')" = \
	"$(printf '%s\n' "$fast_pid" "$slow_pid" | sort -n | tr '\n' ' ')" ] ||
	{ strip "$tmp/top60" | tail -8; fail "the final top screen does not show both servers once"; }
awk '$2 !~ /^[0-9.]+$/ { exit 1 }' "$tmp/rows" ||
	{ strip "$tmp/top60" | tail -8; fail "a server has no p99 in the final top screen"; }
sort -k2,2gr -k1,1n "$tmp/rows" | cmp -s - "$tmp/rows" ||
	{ strip "$tmp/top60" | tail -8; fail "top not sorted by p99: $(tr '\n' ';' <"$tmp/rows")"; }
echo "ok: top's final screen by p99: $(tr '\n' ';' <"$tmp/rows") (pid p99_us)"
hdr=$(strip "$tmp/top200" | grep '^PID' | tail -1)
[ "$(echo "$hdr" | wc -w)" = 13 ] || fail "200 columns: not every column: $hdr"
first=$(strip "$tmp/top200" | grep -A1 '^PID' | tail -1 | awk '{ print $1 }')
want=$(printf '%s\n%s\n' "$fast_pid" "$slow_pid" | sort -n | head -1)
[ "$first" = "$want" ] || fail "--sort pid: first row $first"
echo "ok: top: 60 columns keep PID MODE RPS P99_us and drop the rest, sorted by p99; 200 columns show all"
echo PASS
