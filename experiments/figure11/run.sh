#!/bin/bash
# The Figure 11 study (root): hotel search ramping 7% -> 100% -> 7% of its max next to
# memcached at a constant low load, PARTIES moving CPU quota between them; run once fed by
# client p99 (loadgen feeds) and once by ebee server-side p99; plot both side by side.
#
#   experiments/figure11/run.sh [--out DIR] [--scale F] [--skip-calibration HOTEL,MC]
#                               [--config INI]
#
#   --out DIR     output directory (default /tmp/figure11); calibration cached there
#   --scale F     multiply the schedule's times by F (default 1: a 240 s run per feed;
#                 0.25 for a quick look)
#   --skip-calibration HOTEL_RPS,MC_RPS   use these 100% loads instead of calibrating
#   --config INI  template (default configs/figure11-2cpu.ini)
set -u
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
HERE=experiments/figure11
OUT=/tmp/figure11
SCALE=1
SKIP=""
TEMPLATE=configs/figure11-2cpu.ini
while [ $# -gt 0 ]; do
	case "$1" in
	--out) OUT=$2; shift 2 ;;
	--scale) SCALE=$2; shift 2 ;;
	--skip-calibration) SKIP=$2; shift 2 ;;
	--config) TEMPLATE=$2; shift 2 ;;
	-h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" -eq 0 ] || { echo "run.sh: needs root (BPF, cgroups)" >&2; exit 1; }
for b in build/ebee build/parties build/loadgen build/hotel; do
	[ -x "$b" ] || { echo "run.sh: $b missing: run make all" >&2; exit 1; }
done
command -v memcached >/dev/null || { echo "run.sh: memcached missing (make deps)" >&2; exit 1; }
# Debian's python3 (a pyenv or venv python3 first in PATH would not see python3-matplotlib)
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
if ! $PY -c 'import matplotlib' 2>/dev/null; then
	echo "run.sh: installing python3-matplotlib (Debian package)"
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends python3-matplotlib >/dev/null ||
		{ echo "run.sh: cannot install python3-matplotlib" >&2; exit 1; }
fi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
FEEDS=$OUT/feeds
mkdir -p "$FEEDS"

HOTEL_PORT=18090
MC_PORT=18091
HPATH='/search?lat=37.7963&lon=-122.4015&inDate=2015-04-09&outDate=2015-04-11'
# hotel in % of its max: 7% for 20 s, up to 100% over 80 s, hold 30 s, down over 80 s, 7%
SCHED_PCT="0:7 20:7 100:100 130:100 210:7 240:7"
MC_PCT=15 # memcached constant, below 20% of its max

pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
}
trap cleanup EXIT
trap 'echo "run.sh: interrupted"; exit 130' INT TERM

# wait_port PORT PID: until PORT accepts (PID = the parties that should start it)
wait_port() {
	local i
	for i in $(seq 200); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# start_parties CONF LOG DURATION -> sets PARTIES_PID
start_parties() {
	build/parties -c "$1" --log "$2" --duration "$3" >"$2.out" 2>&1 &
	PARTIES_PID=$!
	pids+=("$PARTIES_PID")
}
stop_parties() {
	kill "$PARTIES_PID" 2>/dev/null
	wait "$PARTIES_PID" 2>/dev/null
}

# --- 1. calibration ---------------------------------------------------------------------------
# step WL RATE SECONDS -> prints "pass|fail p99_us achieved"
step() {
	local wl=$1 rate=$2 secs=$3 port args
	if [ "$wl" = hotel ]; then
		args=(--port $HOTEL_PORT --path "$HPATH")
	else
		args=(--port $MC_PORT --proto memcached)
	fi
	build/loadgen "${args[@]}" --rate "$rate" --duration "$secs" --json >"$OUT/calib-step.json" 2>/dev/null
	$PY - "$OUT/calib-step.json" "$rate" "$4" <<'PY'
import json, sys
o = json.load(open(sys.argv[1])); rate = float(sys.argv[2]); tgt = float(sys.argv[3])
ok = o["p99_us"] <= tgt and o["achieved_rps"] >= 0.98 * rate and o["errors"] == 0
print("pass" if ok else "fail", "%.0f" % o["p99_us"], "%.0f" % o["achieved_rps"])
PY
}

# calibrate WL START CAP TARGET_US SECONDS -> prints the max rate (last line)
calibrate() {
	local wl=$1 r=$2 cap=$3 tgt=$4 secs=$5 lo=0 hi=0 res i mid
	local conf=$OUT/calib-$wl.ini
	: >"$FEEDS/$wl.feed"
	$PY $HERE/fig11.py conf "$TEMPLATE" "$conf" --feed-dir "$FEEDS" \
		--log "$OUT/calib-$wl.jsonl" --only "$wl" --static
	start_parties "$conf" "$OUT/calib-$wl.jsonl" 900
	local port=$HOTEL_PORT
	[ "$wl" = memcached ] && port=$MC_PORT
	wait_port $port "$PARTIES_PID" || { echo "run.sh: $wl did not start" >&2; cat "$OUT/calib-$wl.jsonl.out" >&2; return 1; }
	sleep 1
	# sweep: double until a step fails (or the cap passes)
	while :; do
		res=$(step "$wl" "$r" "$secs" "$tgt")
		echo "  $wl sweep $r rps: $res" >&2
		if [ "${res%% *}" = pass ]; then
			lo=$r
			[ "$r" -ge "$cap" ] && break
			r=$((r * 2))
			[ "$r" -gt "$cap" ] && r=$cap
		else
			hi=$r
			break
		fi
		sleep 1
	done
	if [ "$hi" -gt 0 ]; then
		for i in 1 2 3 4; do
			mid=$(((lo + hi) / 2))
			sleep 1
			res=$(step "$wl" "$mid" "$secs" "$tgt")
			echo "  $wl bisect $mid rps: $res" >&2
			if [ "${res%% *}" = pass ]; then lo=$mid; else hi=$mid; fi
		done
	else
		echo "  $wl: the cap $cap rps passes (the load generator's limit here)" >&2
	fi
	stop_parties
	echo "$lo"
}

CAL=$OUT/calibration.json
if [ -n "$SKIP" ]; then
	HOTEL_MAX=${SKIP%%,*}
	MC_MAX=${SKIP##*,}
	echo "{\"hotel\": $HOTEL_MAX, \"memcached\": $MC_MAX, \"note\": \"given with --skip-calibration\"}" >"$CAL"
elif [ -s "$CAL" ] && [ "$($PY -c "import json;c=json.load(open('$CAL'));print(c.get('template'))")" = "$TEMPLATE" ]; then
	echo "=== 1. calibration: cached in $CAL"
	HOTEL_MAX=$($PY -c "import json;print(json.load(open('$CAL'))['hotel'])")
	MC_MAX=$($PY -c "import json;print(json.load(open('$CAL'))['memcached'])")
else
	echo "=== 1. calibration: each workload alone at its max quota, 4 s steps (hotel) / 3 s (memcached)"
	HOTEL_MAX=$(calibrate hotel 200 6400 25000 4) || exit 1
	MC_MAX=$(calibrate memcached 5000 80000 1000 3) || exit 1
	echo "{\"hotel\": $HOTEL_MAX, \"memcached\": $MC_MAX, \"template\": \"$TEMPLATE\", \"note\": \"alone at max_quota; p99 within QoS, achieved >= 98% of offered\"}" >"$CAL"
fi
echo "100% load: hotel $HOTEL_MAX rps, memcached $MC_MAX rps"
[ "$HOTEL_MAX" -gt 0 ] && [ "$MC_MAX" -gt 0 ] || { echo "run.sh: calibration failed" >&2; exit 1; }

# --- 2. the two runs --------------------------------------------------------------------------
SCHED=$($PY -c "
import sys
pts=[p.split(':') for p in '$SCHED_PCT'.split()]
print(','.join('%g:%s' % (float(t)*$SCALE, r) for t, r in pts))")
SCHED_JSON=$($PY -c "print([[float(t)*$SCALE, float(r)] for t, r in (p.split(':') for p in '$SCHED_PCT'.split())])")
END=$($PY -c "print(int(float('${SCHED##*:}'.split(',')[0]) if False else max(float(p.split(':')[0]) for p in '$SCHED'.split(','))+0.999))")
HSCALE=$($PY -c "print($HOTEL_MAX/100)")
MC_RATE=$($PY -c "print(round($MC_MAX*$MC_PCT/100))")
echo "schedule (hotel, % of max): $SCHED over $END s; memcached constant $MC_RATE rps ($MC_PCT%)"

for FEED in client ebee; do
	echo "=== 2. run: PARTIES fed by $FEED"
	conf=$OUT/run-$FEED.ini
	log=$OUT/run-$FEED.jsonl
	rm -f "$log"
	: >"$FEEDS/hotel.feed"
	: >"$FEEDS/memcached.feed"
	$PY $HERE/fig11.py conf "$TEMPLATE" "$conf" --feed-dir "$FEEDS" --log "$log" --source "$FEED"
	start_parties "$conf" "$log" $((END + 30))
	wait_port $HOTEL_PORT "$PARTIES_PID" && wait_port $MC_PORT "$PARTIES_PID" ||
		{ echo "run.sh: servers did not start" >&2; cat "$log.out" >&2; exit 1; }
	build/loadgen --port $MC_PORT --proto memcached --rate "$MC_RATE" --duration $((END + 4)) \
		--feed "$FEEDS/memcached.feed" --json >"$OUT/lg-memcached-$FEED.json" 2>"$OUT/lg-memcached-$FEED.err" &
	lgm=$!
	pids+=("$lgm")
	sleep 3 # the key preload, then a little memcached-only load
	t0=$($PY $HERE/fig11.py now-t "$log")
	build/loadgen --port $HOTEL_PORT --path "$HPATH" --schedule "$SCHED" --scale "$HSCALE" \
		--feed "$FEEDS/hotel.feed" --json >"$OUT/lg-hotel-$FEED.json" 2>"$OUT/lg-hotel-$FEED.err"
	wait "$lgm"
	sleep 1
	stop_parties
	cat >"$OUT/run-$FEED.meta.json" <<EOF
{"feed": "$FEED", "t0": $t0, "scale": $SCALE, "schedule": $SCHED_JSON,
 "hotel_max": $HOTEL_MAX, "mc_max": $MC_MAX, "mc_rate": $MC_RATE}
EOF
	cp "$FEEDS/hotel.feed" "$OUT/hotel-$FEED.feed"
	cp "$FEEDS/memcached.feed" "$OUT/memcached-$FEED.feed"
	tail -1 "$log.out" | sed 's/^/  /'
done

# --- 3. summary and plot ----------------------------------------------------------------------
echo "=== 3. summary ($OUT/summary.txt) and plot ($OUT/figure11.png)"
$PY $HERE/fig11.py summary "$OUT"
$PY $HERE/fig11.py plot "$OUT" "$OUT/figure11.png" && echo "plot: $OUT/figure11.png"
echo "cgroups left: $(ls -d /sys/fs/cgroup/cpu/parties-fig11* 2>/dev/null || echo none)"
