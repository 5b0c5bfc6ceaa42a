#!/bin/bash
# The Figure 11 study (root): hotel search ramping 7% -> 100% -> 7% of its max next to
# memcached at a constant low load, PARTIES moving CPU quota between them, run once per
# feed (the latency that drives PARTIES) and rep; both feeds' p99 are logged in every run.
#
#   experiments/figure11/run.sh [options]
#
#   --out DIR          results (default experiments/figure11/results/UTC-TIMESTAMP)
#   --scale F          multiply the schedule's times by F (default 1: 240 s per run)
#   --reps N           runs per feed, interleaved (default 3); seed = rep
#   --feeds LIST       comma-separated feed specs (default client,ebee): client, ebee,
#                      ebee-sojourn (needs the per-workload ebee_latency key), each
#                      optionally +fallback (downsize_fallback = on) and/or +code
#                      (PARTIES flavour = code), e.g. client,ebee,ebee+fallback
#   --mc-target-mult M memcached's target = M x its p99 at the knee (default 1; 2 for the
#                      sensitivity run)
#   --window-ms W      p99 window of both feeds (default 2000)
#   --settle-ms S      judge an action S ms after it (default 60% of W)
#   --link-util U      hotel's share of the link: a rate its peak fills to U (default 0.9)
#   --link-mc-util U   memcached's share: a rate its constant load fills to U (default 0.5)
#   --link-mbit H,M    the two shares' rates instead (Mbit/s each way)
#   --calibration FILE reuse a calibration.json from an earlier study
#   --skip-calibration HOTEL_RPS,MC_RPS,MC_KNEE_P99_US   give the calibration instead
#                      (then --link-mbit is needed: no bytes per request were measured)
#   --config INI       template (default configs/figure11-2cpu.ini)
#   --cfs-period-us N  [resources] cfs_period_us of every run and calibration (default:
#                      not set, the kernel's 100 ms)
#   --peak-pct P       hotel's peak in % of its calibrated 100% (default 100)
#   --deconfound       the study without its confound (README "De-confounded"): feeds
#                      client,ebee-sojourn, cfs_period_us 10000, hotel's peak 130%, the
#                      link sized on hotel's peak (--link-util 0.9) and memcached's
#                      load (--link-mc-util 0.1), then both workloads calibrated again
#                      through their shaped link, their targets derived there; any
#                      option given as well overrides its preset
#   --smoke            small scale for the integration test: 1 s calibration steps,
#                      --scale 0.05, --reps 1 (unless given)
#
# The load generators run in their own network namespace (ebee-fig11) behind a veth pair
# whose htb qdisc gives each workload's traffic a link rate; they, parties and ebee's
# consumer run on CPU 0, the servers on the other CPUs. Everything is torn down on exit,
# however it exits (see README.md).
set -u
cd "$(dirname "$0")/../.."
HERE=experiments/figure11
CMDLINE=$(printf '%q ' "$0" "$@")
OUT=""
SCALE=1
REPS=3
FEEDS=client,ebee
MC_MULT=1
WINDOW_MS=2000
SETTLE_MS=""
LINK_UTIL=0.9
LINK_MC_UTIL=0.5
LINK_MBIT=""
CALFILE=""
SKIP=""
TEMPLATE=configs/figure11-2cpu.ini
CFS_PERIOD_US=""
PEAK_PCT=""
DECONFOUND=0
SMOKE=0
GIVEN=" "
usage() { sed -n '2,41p' "$0" | sed 's/^# \{0,1\}//'; }
need() { [ $# -ge 2 ] || { echo "run.sh: $1 needs a value (see --help)" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
	GIVEN="$GIVEN$1 "
	case "$1" in
	--cfs-period-us) need "$@"; CFS_PERIOD_US=$2; shift 2 ;;
	--peak-pct) need "$@"; PEAK_PCT=$2; shift 2 ;;
	--deconfound) DECONFOUND=1; shift ;;
	--smoke) SMOKE=1; shift ;;
	--out) need "$@"; OUT=$2; shift 2 ;;
	--scale) need "$@"; SCALE=$2; shift 2 ;;
	--reps) need "$@"; REPS=$2; shift 2 ;;
	--feeds) need "$@"; FEEDS=$2; shift 2 ;;
	--mc-target-mult) need "$@"; MC_MULT=$2; shift 2 ;;
	--window-ms) need "$@"; WINDOW_MS=$2; shift 2 ;;
	--settle-ms) need "$@"; SETTLE_MS=$2; shift 2 ;;
	--link-util) need "$@"; LINK_UTIL=$2; shift 2 ;;
	--link-mc-util) need "$@"; LINK_MC_UTIL=$2; shift 2 ;;
	--link-mbit) need "$@"; LINK_MBIT=$2; shift 2 ;;
	--calibration) need "$@"; CALFILE=$2; shift 2 ;;
	--skip-calibration) need "$@"; SKIP=$2; shift 2 ;;
	--config) need "$@"; TEMPLATE=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
done
given() { [[ "$GIVEN" == *" $1 "* ]]; }
# presets, each unless the option was given
if [ $DECONFOUND = 1 ]; then
	given --feeds || FEEDS=client,ebee-sojourn
	given --cfs-period-us || CFS_PERIOD_US=10000
	given --peak-pct || PEAK_PCT=130
	given --link-util || LINK_UTIL=0.9
	given --link-mc-util || LINK_MC_UTIL=0.1
fi
if [ $SMOKE = 1 ]; then
	given --scale || SCALE=0.05
	given --reps || REPS=1
fi
[ -n "$PEAK_PCT" ] || PEAK_PCT=100
CAL_S=3   # seconds per memcached calibration step (hotel: one more)
CAL_DRAIN=2
[ $SMOKE = 1 ] && CAL_S=1 && CAL_DRAIN=1
num() { # num NAME VALUE MIN MAX [int]
	local int=${5:-}
	python3 -c "import sys; v=float(sys.argv[2]); sys.exit(0 if $3 <= v <= $4 and ('$int' != 'int' or v == int(v)) else 1)" \
		"$1" "$2" 2>/dev/null || { echo "run.sh: $1 must be ${int:+a whole number }in $3..$4, not '$2'" >&2; exit 2; }
}
num --scale "$SCALE" 0.01 10
num --reps "$REPS" 1 100 int
num --mc-target-mult "$MC_MULT" 0.1 100
num --window-ms "$WINDOW_MS" 100 60000 int
[ -z "$SETTLE_MS" ] && SETTLE_MS=$((WINDOW_MS * 6 / 10))
num --settle-ms "$SETTLE_MS" 0 600000 int
num --link-util "$LINK_UTIL" 0.05 1
num --link-mc-util "$LINK_MC_UTIL" 0.01 1
num --peak-pct "$PEAK_PCT" 10 300 int
# the kernel's range (min/max_cfs_quota_period); parties checks it again
[ -z "$CFS_PERIOD_US" ] || num --cfs-period-us "$CFS_PERIOD_US" 1000 1000000 int
if [ $DECONFOUND = 1 ] && { [ -n "$SKIP" ] || [ -n "$LINK_MBIT" ]; }; then
	echo "run.sh: --deconfound calibrates through the link it sizes: not with --skip-calibration or --link-mbit" >&2
	exit 2
fi
if [ -n "$LINK_MBIT" ]; then
	IFS=, read -r LINK_H_MBIT LINK_M_MBIT <<<"$LINK_MBIT"
	num "--link-mbit (hotel)" "${LINK_H_MBIT:-x}" 0.1 100000
	num "--link-mbit (memcached)" "${LINK_M_MBIT:-x}" 0.1 100000
fi
[ -f "$TEMPLATE" ] || { echo "run.sh: no config $TEMPLATE" >&2; exit 2; }
[ -z "$CALFILE" ] || [ -s "$CALFILE" ] || { echo "run.sh: no calibration file $CALFILE" >&2; exit 2; }
if [ -n "$SKIP" ]; then
	[[ "$SKIP" =~ ^[0-9]+,[0-9]+,[0-9]+$ ]] ||
		{ echo "run.sh: --skip-calibration HOTEL_RPS,MC_RPS,MC_KNEE_P99_US (whole numbers)" >&2; exit 2; }
	[ -n "$LINK_MBIT" ] || { echo "run.sh: --skip-calibration needs --link-mbit" >&2; exit 2; }
fi
# Debian's python3 (a pyenv or venv python3 first in PATH would not see python3-matplotlib)
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
IFS=, read -r -a FEED_LIST <<<"$FEEDS"
[ ${#FEED_LIST[@]} -gt 0 ] || { echo "run.sh: --feeds is empty" >&2; exit 2; }
for f in "${FEED_LIST[@]}"; do
	$PY -c "import sys; sys.path.insert(0, '$HERE'); import fig11; fig11.parse_spec('$f')" || exit 2
done

[ "$(id -u)" -eq 0 ] || { echo "run.sh: needs root (BPF, cgroups, network namespaces)" >&2; exit 1; }
for b in build/ebee build/parties build/loadgen build/hotel; do
	[ -x "$b" ] || { echo "run.sh: $b missing: run make all" >&2; exit 1; }
done
for c in memcached ip tc taskset; do
	command -v $c >/dev/null || { echo "run.sh: $c missing (make deps)" >&2; exit 1; }
done
$PY -c 'import matplotlib' 2>/dev/null ||
	{ echo "run.sh: python3-matplotlib missing (make deps, or apt-get install python3-matplotlib)" >&2; exit 1; }
NCPU=$(getconf _NPROCESSORS_ONLN)
[ "$NCPU" -ge 2 ] || { echo "run.sh: needs at least 2 CPUs (one for the clients, one for the servers)" >&2; exit 1; }
LG_CPU=0
if [ "$NCPU" -eq 2 ]; then SRV_CPUS=1; else SRV_CPUS=1-$((NCPU - 1)); fi
SRV_CORES=$((NCPU - 1))
CPU_DESC="CPU 0: load generators, parties, ebee's consumer; CPU $SRV_CPUS: both servers"

[ -n "$OUT" ] || OUT=$HERE/results/$(date -u +%Y%m%d-%H%M%S)
# the summary reads every run below DIR/runs: never mix two studies
[ -z "$(ls -A "$OUT/runs" 2>/dev/null)" ] || { echo "run.sh: $OUT already holds runs: give a new --out" >&2; exit 2; }
mkdir -p "$OUT/runs" || exit 1
OUT=$(cd "$OUT" && pwd)
echo "run.sh: results in $OUT"

# --- the emulated network -------------------------------------------------------------------
NS=ebee-fig11
VS=f11srv # servers' end, in the host's namespace
VC=f11lg  # clients' end, inside $NS
ADDR_S=10.211.0.1
ADDR_C=10.211.0.2
HOTEL_PORT=18090
MC_PORT=18091
net_down() {
	local p
	for p in $(ip netns pids $NS 2>/dev/null); do kill "$p" 2>/dev/null; done
	ip netns del $NS 2>/dev/null
	ip link del $VS 2>/dev/null
	return 0
}
net_up() {
	net_down
	ip netns add $NS &&
		ip link add $VS type veth peer name $VC netns $NS &&
		ip addr add $ADDR_S/30 dev $VS && ip link set $VS up &&
		ip -n $NS addr add $ADDR_C/30 dev $VC && ip -n $NS link set $VC up &&
		ip -n $NS link set lo up
}
# net_rate HOTEL_KBIT MC_KBIT: on each end of the veth an htb with one class per workload
# (matched by the server's port), so each direction carries two links of those rates; a
# class queues at most 100 ms of its rate (bfifo), the rest of the traffic is not limited
net_rate() {
	local side t dev m k lim
	for side in srv lg; do
		if [ $side = srv ]; then t=(tc); dev=$VS; m=sport; else t=(tc -n $NS); dev=$VC; m=dport; fi
		# (quantum: one MTU, as htb's rate/r2q default is out of range at these rates)
		"${t[@]}" qdisc replace dev $dev root handle 1: htb default 30 &&
			"${t[@]}" class add dev $dev parent 1: classid 1:10 htb rate "$1kbit" ceil "$1kbit" quantum 1514 &&
			"${t[@]}" class add dev $dev parent 1: classid 1:20 htb rate "$2kbit" ceil "$2kbit" quantum 1514 &&
			"${t[@]}" class add dev $dev parent 1: classid 1:30 htb rate 10gbit quantum 1514 || return 1
		for k in 10 20; do
			if [ $k = 10 ]; then lim=$(($1 * 1000 / 8 / 10)); else lim=$(($2 * 1000 / 8 / 10)); fi
			[ $lim -lt 4500 ] && lim=4500
			"${t[@]}" qdisc add dev $dev parent 1:$k bfifo limit $lim || return 1
		done
		"${t[@]}" filter add dev $dev parent 1: protocol ip prio 1 u32 match ip $m $HOTEL_PORT 0xffff flowid 1:10 &&
			"${t[@]}" filter add dev $dev parent 1: protocol ip prio 1 u32 match ip $m $MC_PORT 0xffff flowid 1:20 ||
			return 1
	done
}
net_unlimited() {
	tc qdisc del dev $VS root 2>/dev/null
	tc -n $NS qdisc del dev $VC root 2>/dev/null
	return 0
}
lg() { ip netns exec $NS taskset -c $LG_CPU build/loadgen --host $ADDR_S "$@"; }
# the same in the background ("lg_bg ARGS &"): exec, so $! is the load generator itself
lg_bg() { exec ip netns exec $NS taskset -c $LG_CPU build/loadgen --host $ADDR_S "$@"; }

pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	net_down
	echo "run.sh: network namespace $NS and link $VS removed"
}
trap cleanup EXIT
trap 'echo "run.sh: interrupted"; exit 130' INT TERM
net_up || { echo "run.sh: cannot create the network namespace and veth pair" >&2; exit 1; }
echo "network: $NS ($VC $ADDR_C) <-> host ($VS $ADDR_S), no rate limit yet"

# wait_port PORT PID: until PORT accepts on the servers' address (PID: the parties that starts it)
wait_port() {
	local i
	for i in $(seq 200); do
		(exec 3<>"/dev/tcp/$ADDR_S/$1") 2>/dev/null && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}
# start_parties CONF LOG DURATION -> PARTIES_PID; pinned to the clients' CPU (its threads,
# ebee's consumer among them, inherit it; the servers get their own CPUs from taskset)
start_parties() {
	taskset -c $LG_CPU build/parties -c "$1" --log "$2" --duration "$3" >"$2.out" 2>&1 &
	PARTIES_PID=$!
	pids+=("$PARTIES_PID")
}
stop_parties() {
	kill "$PARTIES_PID" 2>/dev/null
	wait "$PARTIES_PID" 2>/dev/null
}
conf() { # conf OUT FEED LOG FEEDDIR SEED [--only WL --static]
	local out=$1 feed=$2 log=$3 fd=$4 seed=$5
	shift 5
	$PY $HERE/fig11.py conf "$TEMPLATE" "$out" --feed "$feed" --log "$log" --feed-dir "$fd" \
		--bind $ADDR_S --srv-cpus $SRV_CPUS --srv-cores $SRV_CORES --window-ms $WINDOW_MS \
		--settle-ms $SETTLE_MS --mc-target-us "${MC_TARGET_US:-1000}" --seed "$seed" \
		${CFS_PERIOD_US:+--cfs-period-us $CFS_PERIOD_US} "$@"
}
bytes() { echo "$(cat /sys/class/net/$VS/statistics/tx_bytes) $(cat /sys/class/net/$VS/statistics/rx_bytes)"; }

# --- 1. calibration (no rate limit: each workload alone on the servers' CPUs) ----------------
HPATH='/search?lat=37.7963&lon=-122.4015&inDate=2015-04-09&outDate=2015-04-11'
CAL=$OUT/calibration.json
CALD=$OUT/calibration
mkdir -p "$CALD"
# step WL RATE SECONDS TARGET_US [loadgen args] -> "pass|fail p99_us achieved"
step() {
	local wl=$1 rate=$2 secs=$3 tgt=$4 args
	shift 4
	if [ "$wl" = hotel ]; then args=(--port $HOTEL_PORT --path "$HPATH"); else args=(--port $MC_PORT --proto memcached); fi
	lg "${args[@]}" --rate "$rate" --duration "$secs" --drain $CAL_DRAIN --json "$@" >"$CALD/step.json" 2>/dev/null
	$PY $HERE/fig11.py step-result "$CALD/step.json" "$rate" "$tgt"
}
# probe WL RATE [args]: bytes per request each way ("down up") over a 3 s step
probe() {
	local wl=$1 rate=$2 b0 b1
	shift 2
	b0=$(bytes)
	step "$wl" "$rate" $CAL_S 1e12 "$@" >/dev/null
	b1=$(bytes)
	$PY -c "import json,sys; o=json.load(open('$CALD/step.json')); a='$b0'.split(); b='$b1'.split()
n=max(1, o['ok']); print('[%.1f, %.1f]' % ((int(b[0])-int(a[0]))/n, (int(b[1])-int(a[1]))/n))"
}
# CP: the calibration's file prefix ("" over the unlimited veth, "shaped-" through the link)
CP=""
calib_start() { # WL
	conf "$CALD/$CP$1.ini" client "$CALD/$CP$1.jsonl" "$CALD" 1 --only "$1" --static || return 1
	: >"$CALD/$1.feed"
	start_parties "$CALD/$CP$1.ini" "$CALD/$CP$1.jsonl" 900
	local port=$HOTEL_PORT
	[ "$1" = memcached ] && port=$MC_PORT
	wait_port $port "$PARTIES_PID" || { echo "run.sh: $1 did not start" >&2; cat "$CALD/$CP$1.jsonl.out" >&2; return 1; }
	sleep 1
}
calibrate_hotel() { # -> HOTEL_MAX, HOTEL_BYTES, HOTEL_FLOOR_US (p99 at the first step)
	# the shaped sweep starts at half the unshaped 100% (at most 100 rps): a first rate far
	# above what the link carries leaves a backlog of retransmissions for the next steps
	local r=${HOTEL_START:-100} lo=0 hi=0 res i mid
	HOTEL_FLOOR_RPS=$r
	HOTEL_FLOOR_US=""
	calib_start hotel || return 1
	while :; do
		res=$(step hotel $r $((CAL_S + 1)) 25000)
		echo "  ${CP}hotel sweep $r rps: $res"
		[ -n "$HOTEL_FLOOR_US" ] || HOTEL_FLOOR_US=$(echo "$res" | cut -d' ' -f2)
		if [ "${res%% *}" = pass ]; then
			lo=$r
			[ $r -ge 6400 ] && break
			r=$((r * 2))
		else
			hi=$r
			break
		fi
	done
	if [ $hi -gt 0 ]; then
		for i in 1 2 3 4; do
			mid=$(((lo + hi) / 2))
			res=$(step hotel $mid $((CAL_S + 1)) 25000)
			echo "  ${CP}hotel bisect $mid rps: $res"
			if [ "${res%% *}" = pass ]; then lo=$mid; else hi=$mid; fi
		done
	fi
	HOTEL_MAX=$lo
	if [ "$HOTEL_MAX" -eq 0 ]; then
		echo "run.sh: calibration failed: hotel ${CP:+(through the shaped link) }met 25 ms at no rate down to $mid rps, alone at its max quota (a busy machine?)" >&2
		stop_parties
		return 1
	fi
	if [ -z "$CP" ]; then
		HOTEL_BYTES=$(probe hotel $((lo / 2 > 0 ? lo / 2 : 1)))
		echo "  hotel: 100% = $HOTEL_MAX rps; bytes per request (down, up): $HOTEL_BYTES"
	else
		# alone at its max quota, at its peak: past saturation it cannot keep up
		HOTEL_PEAK_RES=$(step hotel $((HOTEL_MAX * PEAK_PCT / 100)) $((CAL_S + 1)) 25000)
		echo "  ${CP}hotel: 100% = $HOTEL_MAX rps (p99 at $HOTEL_FLOOR_RPS rps: $HOTEL_FLOOR_US us); at its peak ($PEAK_PCT%, $((HOTEL_MAX * PEAK_PCT / 100)) rps) alone: $HOTEL_PEAK_RES"
	fi
	stop_parties
}
# memcached: its own load-latency curve (a doubling sweep, then points between the last
# rate that kept up and the first that did not); the knee gives its 100% and its target
calibrate_memcached() { # -> MC_MAX, MC_KNEE_US, MC_BYTES, curve in $CALD/mc-curve.json
	local r=1000 last=0 min_p99="" res p99 ach k pre=() pts=()
	calib_start memcached || return 1
	if [ -n "$CP" ]; then # keys loaded with the link unlimited, as in the runs
		net_unlimited
		lg --port $MC_PORT --proto memcached --rate 1 --duration 0.1 >"$CALD/${CP}preload.out" 2>&1 ||
			{ echo "run.sh: memcached key preload failed" >&2; return 1; }
		net_rate "$LINK_KBIT" "$LINK_MC_KBIT" || return 1
		pre=(--no-preload)
	fi
	while :; do
		res=$(step memcached $r $CAL_S 1e12 "${pre[@]}")
		pre=(--no-preload) # keys stay loaded
		read -r _ p99 ach <<<"$res"
		echo "  ${CP}memcached sweep $r rps: p99 $p99 us, achieved $ach rps"
		pts+=("[$r, $p99, $ach]")
		[ -n "$p99" ] || { echo "run.sh: memcached step at $r rps failed" >&2; return 1; }
		[ -z "$min_p99" ] || [ "$p99" -lt "$min_p99" ] && min_p99=$p99
		# saturated: it did not keep up, or p99 is 10x the lowest so far (or the cap)
		if [ "$ach" -lt $((r * 98 / 100)) ] || [ "$p99" -gt $((min_p99 * 10)) ] || [ $r -ge 64000 ]; then
			# not even the first rate kept up (a busy machine, a narrow link): start lower
			if [ $last -eq 0 ] && [ $r -gt 125 ]; then
				r=$((r / 2))
				continue
			fi
			break
		fi
		last=$r
		r=$((r * 2))
	done
	if [ $last -gt 0 ]; then
		for k in 1 2 3; do
			local m=$((last + (r - last) * k / 4))
			res=$(step memcached $m $CAL_S 1e12 --no-preload)
			read -r _ p99 ach <<<"$res"
			echo "  ${CP}memcached curve $m rps: p99 $p99 us, achieved $ach rps"
			pts+=("[$m, $p99, $ach]")
		done
	fi
	(IFS=,; echo "[${pts[*]}]") >"$CALD/${CP}mc-curve.json"
	read -r MC_MAX MC_KNEE_US <<<"$($PY $HERE/fig11.py knee "$CALD/${CP}mc-curve.json")"
	[ -n "$MC_KNEE_US" ] || { echo "run.sh: no knee in memcached's ${CP}curve (see $CALD/${CP}mc-curve.json)" >&2; return 1; }
	MC_FLOOR_US=$min_p99
	if [ -z "$CP" ]; then
		MC_BYTES=$(probe memcached 2000 --no-preload)
		echo "  memcached: knee $MC_MAX rps at p99 $MC_KNEE_US us; bytes per request (down, up): $MC_BYTES"
	else
		echo "  ${CP}memcached: knee $MC_MAX rps at p99 $MC_KNEE_US us (lowest p99 of its doubling sweep: $MC_FLOOR_US us)"
	fi
	stop_parties
}

if [ -n "$SKIP" ]; then
	IFS=, read -r HOTEL_MAX MC_MAX MC_KNEE_US <<<"$SKIP"
	echo "{\"hotel\": $HOTEL_MAX, \"memcached\": $MC_MAX, \"mc_knee_p99_us\": $MC_KNEE_US, \"note\": \"given with --skip-calibration\"}" >"$CAL"
	echo "=== 1. calibration given: hotel $HOTEL_MAX rps, memcached $MC_MAX rps, knee p99 $MC_KNEE_US us"
elif [ -n "$CALFILE" ]; then
	[ "$(realpath "$CALFILE")" = "$(realpath -m "$CAL")" ] || cp "$CALFILE" "$CAL"
	read -r HOTEL_MAX MC_MAX MC_KNEE_US <<<"$($PY -c "import json; c=json.load(open('$CAL')); print(c['hotel'], c['memcached'], c['mc_knee_p99_us'])")" ||
		{ echo "run.sh: $CALFILE is not a calibration.json of this study" >&2; exit 1; }
	echo "=== 1. calibration reused from $CALFILE: hotel $HOTEL_MAX rps, memcached $MC_MAX rps, knee p99 $MC_KNEE_US us"
else
	echo "=== 1. calibration: each workload alone at its max quota on CPU $SRV_CPUS, clients through the veth (no rate limit)"
	calibrate_hotel || exit 1
	calibrate_memcached || exit 1
	cat >"$CAL" <<EOF
{"hotel": $HOTEL_MAX, "memcached": $MC_MAX, "mc_knee_p99_us": $MC_KNEE_US,
 "mc_curve": $(cat "$CALD/mc-curve.json"),
 "bytes_per_request": {"hotel": $HOTEL_BYTES, "memcached": $MC_BYTES},
 "template": "$TEMPLATE",
 "note": "alone at max_quota on CPU $SRV_CPUS, clients in netns $NS over an unlimited veth; hotel: highest rate with p99 <= 25 ms and achieved >= 98% (sweep, 4 bisections, 4 s steps); memcached: knee (Kneedle on log p99) of its load-latency curve (3 s steps), its p99 there is the target"}
EOF
fi
[ "$HOTEL_MAX" -gt 0 ] && [ "$MC_MAX" -gt 0 ] || { echo "run.sh: calibration failed" >&2; exit 1; }
MC_TARGET_US=$($PY -c "print(round($MC_KNEE_US * $MC_MULT))")
MC_PCT=15 # memcached constant, below 20% of its max (the paper's setup)
MC_RATE=$($PY -c "print(round($MC_MAX * $MC_PCT / 100))")

# --- the link's rate ------------------------------------------------------------------------
if [ -n "$LINK_MBIT" ]; then
	LINK_KBIT=$($PY -c "print(round($LINK_H_MBIT * 1000))")
	LINK_MC_KBIT=$($PY -c "print(round($LINK_M_MBIT * 1000))")
	LINK_WHY="given with --link-mbit"
else
	# hotel's share is sized on its peak rate (the unshaped 100% x --peak-pct)
	read -r LINK_KBIT LINK_MC_KBIT <<<"$($PY $HERE/fig11.py link-rate "$CAL" "$((HOTEL_MAX * PEAK_PCT / 100))" "$MC_RATE" "$LINK_UTIL" "$LINK_MC_UTIL")"
	[ -n "$LINK_MC_KBIT" ] || { echo "run.sh: no bytes per request in $CAL: give --link-mbit" >&2; exit 1; }
	LINK_WHY="hotel's peak fills $LINK_UTIL of its share, memcached's load $LINK_MC_UTIL of its"
fi
net_rate "$LINK_KBIT" "$LINK_MC_KBIT" || { echo "run.sh: cannot set the htb qdisc" >&2; exit 1; }
[ $DECONFOUND = 1 ] &&
	LINK_WHY="sized on the unshaped calibration: hotel's ${PEAK_PCT}% peak ($((HOTEL_MAX * PEAK_PCT / 100)) rps) fills $LINK_UTIL of its share in the busier direction, memcached's load $LINK_MC_UTIL of its"
LINK_DESC="veth+htb, each way: hotel $($PY -c "print('%g' % ($LINK_KBIT/1000))") Mbit/s, memcached $($PY -c "print('%g' % ($LINK_MC_KBIT/1000))") Mbit/s ($LINK_WHY)"
echo "link: $LINK_DESC; each share queues at most 100 ms"

# --- 1b. (--deconfound) calibration again, through the shaped link ---------------------------
# Every target and every 100% is derived through the path the clients then use: the same
# link shares, the same CFS period, each workload alone at its maximum quota.
TARGETS_DESC="hotel 25 ms (the paper's); memcached ${MC_MULT}x the p99 at the knee of its curve over the unlimited veth"
PEAK_DESC=""
if [ $DECONFOUND = 1 ]; then
	if $PY -c "import json,sys; sys.exit(0 if 'shaped' in json.load(open('$CAL')) else 1)"; then
		read -r HOTEL_MAX MC_MAX MC_KNEE_US HOTEL_FLOOR_US MC_FLOOR_US HOTEL_FLOOR_RPS <<<"$($PY -c "import json; s=json.load(open('$CAL'))['shaped']; print(s['hotel'], s['memcached'], s['mc_knee_p99_us'], s['hotel_floor_p99_us'], s['mc_floor_p99_us'], s.get('hotel_floor_rps', 100))")"
		HOTEL_PEAK_RES=$($PY -c "import json; print(json.load(open('$CAL'))['shaped']['hotel_peak_alone'])")
		echo "=== 1b. shaped calibration reused from $CALFILE"
	else
		echo "=== 1b. calibration through the shaped link (cfs_period_us ${CFS_PERIOD_US:-kernel default}): each workload alone at its max quota"
		CP=shaped-
		HOTEL_START=$((HOTEL_MAX / 2 > 100 ? 100 : (HOTEL_MAX / 2 < 5 ? 5 : HOTEL_MAX / 2)))
		calibrate_hotel || exit 1
		calibrate_memcached || exit 1
		CP=""
		$PY - "$CAL" <<EOF || exit 1
import json, sys
c = json.load(open(sys.argv[1]))
c["shaped"] = {"hotel": $HOTEL_MAX, "hotel_floor_p99_us": $HOTEL_FLOOR_US, "hotel_floor_rps": $HOTEL_FLOOR_RPS,
               "hotel_peak_alone": "$HOTEL_PEAK_RES", "peak_pct": $PEAK_PCT,
               "memcached": $MC_MAX, "mc_knee_p99_us": $MC_KNEE_US, "mc_floor_p99_us": $MC_FLOOR_US,
               "mc_curve": json.load(open("$CALD/shaped-mc-curve.json")),
               "link_kbit_hotel": $LINK_KBIT, "link_kbit_memcached": $LINK_MC_KBIT,
               "cfs_period_us": ${CFS_PERIOD_US:-None},
               "note": "through the shaped link the runs use, alone at max_quota on CPU $SRV_CPUS; hotel_peak_alone: 'pass|fail p99_us achieved_rps' at the peak rate; hotel_floor_p99_us: hotel's p99 at the first rate of its sweep (hotel_floor_rps); mc_floor_p99_us: the lowest p99 of memcached's doubling sweep"}
json.dump(c, open(sys.argv[1], "w"), indent=1)
EOF
	fi
	[ "$HOTEL_MAX" -gt 0 ] && [ "$MC_MAX" -gt 0 ] || { echo "run.sh: shaped calibration failed" >&2; exit 1; }
	[ "$HOTEL_FLOOR_US" -lt 25000 ] ||
		echo "run.sh: warning: hotel's p99 at $HOTEL_FLOOR_RPS rps through its link ($HOTEL_FLOOR_US us) is not below its 25 ms target"
	MC_TARGET_US=$($PY -c "print(round($MC_KNEE_US * $MC_MULT))")
	MC_RATE=$($PY -c "print(round($MC_MAX * $MC_PCT / 100))")
	TARGETS_DESC="through the shaped link: hotel 25 ms (the paper's; its p99 alone at $HOTEL_FLOOR_RPS rps there: $HOTEL_FLOOR_US us); memcached ${MC_MULT}x the p99 at the knee of its curve through its share ($MC_KNEE_US us at $MC_MAX rps; lowest p99 of its doubling sweep $MC_FLOOR_US us) = $MC_TARGET_US us"
	case "$HOTEL_PEAK_RES" in
	fail*) PAST="past its saturation: alone at its max quota it does not keep up or exceeds 25 ms" ;;
	*) PAST="NOT past its saturation on this calibration: alone at its max quota it kept up within 25 ms" ;;
	esac
	PEAK_DESC="$PEAK_PCT% of its 100% through the link ($HOTEL_MAX rps: the highest rate with p99 <= 25 ms and achieved >= 98%, alone at its max quota); alone at the peak rate: $HOTEL_PEAK_RES (pass|fail p99_us achieved_rps), $PAST"
	echo "targets: $TARGETS_DESC"
	echo "peak: $PEAK_DESC"
fi
LOAD_BEFORE=$(uptime)

# --- 2. the runs ----------------------------------------------------------------------------
# hotel in % of its max: 7% for 20 s, up to 100% over 80 s, hold 30 s, down over 80 s, 7%
SCHED_PCT="0:7 20:7 100:$PEAK_PCT 130:$PEAK_PCT 210:7 240:7"
SCHED=$($PY -c "print(','.join('%g:%s' % (float(t)*$SCALE, r) for t, r in (p.split(':') for p in '$SCHED_PCT'.split())))")
SCHED_JSON=$($PY -c "print([[float(t)*$SCALE, float(r)] for t, r in (p.split(':') for p in '$SCHED_PCT'.split())])")
END=$($PY -c "import math; print(math.ceil(240*$SCALE))")
HSCALE=$($PY -c "print($HOTEL_MAX/100)")
FEED_S=$($PY -c "print($WINDOW_MS/1000)")
echo "schedule (hotel, % of $HOTEL_MAX rps): $SCHED over $END s; memcached constant $MC_RATE rps ($MC_PCT% of $MC_MAX); memcached target $MC_TARGET_US us"
cat >"$OUT/study.json" <<EOF
{"description": "Figure 11: hotel 7%->${PEAK_PCT}%->7% next to memcached at $MC_PCT%, PARTIES moving cpu quota; feeds ${FEEDS}, $REPS rep(s), scale $SCALE",
 "calibration": $(cat "$CAL"), "mc_target_us": $MC_TARGET_US, "mc_target_mult": $MC_MULT,
 "mc_pct": $MC_PCT, "mc_rate": $MC_RATE, "hotel_max": $HOTEL_MAX,
 "link_kbit_hotel": $LINK_KBIT, "link_kbit_memcached": $LINK_MC_KBIT, "link_desc": "$LINK_DESC",
 "netns": "$NS", "addr_servers": "$ADDR_S", "addr_clients": "$ADDR_C",
 "cpu_desc": "$CPU_DESC", "srv_cpus": "$SRV_CPUS", "srv_cores": $SRV_CORES, "lg_cpu": $LG_CPU,
 "window_ms": $WINDOW_MS, "settle_ms": $SETTLE_MS, "feeds": "$FEEDS", "reps": $REPS,
 "scale": $SCALE, "schedule": $SCHED_JSON, "template": "$TEMPLATE",
 "deconfound": $DECONFOUND, "smoke": $SMOKE, "cfs_period_us": ${CFS_PERIOD_US:-null}, "peak_pct": $PEAK_PCT,
 "targets_desc": "$TARGETS_DESC", "peak_desc": "$PEAK_DESC", "load_before": "$LOAD_BEFORE"}
EOF
$PY $HERE/fig11.py manifest "$OUT/manifest.json" "command=$CMDLINE" "study=$(cat "$OUT/study.json")"

order=0
for rep in $(seq "$REPS"); do
	for FEED in "${FEED_LIST[@]}"; do
		order=$((order + 1))
		d=$OUT/runs/$FEED-r$rep
		rm -rf "$d"
		mkdir -p "$d"
		label="$FEED rep $rep/$REPS"
		echo "=== 2. run: PARTIES fed by $FEED, rep $rep of $REPS (seed $rep)"
		: >"$d/hotel.feed"
		: >"$d/memcached.feed"
		conf "$d/conf.ini" "$FEED" "$d/log.jsonl" "$d" "$rep" || exit 1
		start_parties "$d/conf.ini" "$d/log.jsonl" $((END + 30))
		if ! wait_port $HOTEL_PORT "$PARTIES_PID" || ! wait_port $MC_PORT "$PARTIES_PID"; then
			echo "run.sh: servers did not start" >&2
			cat "$d/log.jsonl.out" >&2
			exit 1
		fi
		feedargs=(--feed-window "$FEED_S" --feed-min-samples 1 --seed "$rep")
		# memcached's keys are loaded with the link unlimited (10 MB would take seconds
		# through it and still be queued when the schedule starts)
		net_unlimited
		lg --port $MC_PORT --proto memcached --rate 1 --duration 0.1 >"$d/lg-preload.out" 2>&1 ||
			{ echo "run.sh: memcached key preload failed" >&2; cat "$d/lg-preload.out" >&2; exit 1; }
		net_rate "$LINK_KBIT" "$LINK_MC_KBIT" || { echo "run.sh: cannot set the htb qdisc" >&2; exit 1; }
		lg_bg --port $MC_PORT --proto memcached --no-preload --rate "$MC_RATE" --duration $((END + 4)) \
			--feed "$d/memcached.feed" "${feedargs[@]}" --json >"$d/lg-memcached.json" 2>"$d/lg-memcached.err" &
		lgm=$!
		pids+=("$lgm")
		sleep 3 # a little memcached-only load first
		t0=$($PY $HERE/fig11.py now-t "$d/log.jsonl")
		lg_bg --port $HOTEL_PORT --path "$HPATH" --schedule "$SCHED" --scale "$HSCALE" \
			--feed "$d/hotel.feed" "${feedargs[@]}" --json >"$d/lg-hotel.json" 2>"$d/lg-hotel.err" &
		lgh=$!
		pids+=("$lgh")
		(while sleep 5; do $PY $HERE/fig11.py progress "$d/log.jsonl" "$label" "$t0"; done) &
		prog=$!
		pids+=("$prog")
		sleep 1
		# where everything runs, from the kernel's view (the smoke test checks it)
		wlpids=$($PY -c "
import json
for ln in open('$d/log.jsonl'):
    o = json.loads(ln)
    if 'wl' in o:
        print(' '.join('%s=%d' % (w['name'], w['pid']) for w in o['wl'])); break")
		# shellcheck disable=SC2086
		$PY $HERE/fig11.py placement "$d/placement.json" parties=$PARTIES_PID \
			loadgen_hotel=$lgh loadgen_memcached=$lgm $wlpids
		wait "$lgh"
		wait "$lgm"
		kill "$prog" 2>/dev/null
		wait "$prog" 2>/dev/null
		sleep 1
		stop_parties
		cat >"$d/meta.json" <<EOF
{"feed": "$FEED", "rep": $rep, "seed": $rep, "order": $order, "t0": $t0, "scale": $SCALE,
 "schedule": $SCHED_JSON, "hotel_max": $HOTEL_MAX, "mc_max": $MC_MAX, "mc_rate": $MC_RATE,
 "mc_target_us": $MC_TARGET_US, "window_ms": $WINDOW_MS, "settle_ms": $SETTLE_MS,
 "link_kbit_hotel": $LINK_KBIT, "link_kbit_memcached": $LINK_MC_KBIT}
EOF
		$PY $HERE/fig11.py manifest "$d/manifest.json" "command=$CMDLINE" "feed=$FEED" \
			"rep=$rep" "seed=$rep" "config=$(cat "$d/conf.ini" | $PY -c 'import json,sys; print(json.dumps(sys.stdin.read()))')" \
			"study=$(cat "$OUT/study.json")" "placement=$(cat "$d/placement.json")"
		tail -1 "$d/log.jsonl.out" | sed 's/^/  /'
	done
done

# --- 3. summary and plot ----------------------------------------------------------------------
printf 'before the runs: %s\nafter the runs:  %s\n' "$LOAD_BEFORE" "$(uptime)" >"$OUT/uptime.txt"
echo "=== 3. summary ($OUT/summary.txt) and figure ($OUT/figure11.png, .pdf)"
$PY $HERE/fig11.py summary "$OUT" || exit 1
$PY $HERE/fig11.py plot "$OUT" || exit 1
echo "figure: $OUT/figure11.png $OUT/figure11.pdf"
echo "cgroups left: $(ls -d /sys/fs/cgroup/*/parties-fig11* 2>/dev/null || echo none)"
