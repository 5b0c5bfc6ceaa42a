#!/bin/bash
# Slowloris against both /metrics endpoints (`ebee trace --listen`, `parties --metrics`):
# while 100 connections to 127.0.0.1 each send one more header line every 2 s and never
# finish their request (tests/lib/slowloris.py, reopening any the server closes), 10
# scrapes, 1 s apart, must each be answered. The bound on each scrape, 1 s, is not a
# measurement of this machine but the requirement itself (the endpoints must "answer a scrape within
# 1 s while 100 slow connections are held open"); a scrape that is not answered at all
# (curl gives up after 5 s) fails too. The server must also have cut slow connections (a
# request deadline, however active the connection), which the attacker then reopens.
. "$(dirname "$0")/test_parties_lib.sh"
pt_require build/parties build/ebee curl
N=100 INTERVAL=2 BOUND=1.0

# scrape_under_attack NAME PORT PID: start the attack, scrape 10 times, stop it. PID is
# the server's: a scrape that fails because it is gone says so, rather than "timeout".
scrape_under_attack()
{
	local name=$1 port=$2 pid=$3 t worst=0 late=0 i
	rm -f "$PT_TMP/ready"
	python3 tests/lib/slowloris.py "$port" $N $INTERVAL 18 "$PT_TMP/ready" >"$PT_TMP/sl.out" 2>&1 &
	local sl=$!
	PT_PIDS+=($sl)
	for _ in $(seq 100); do [ -s "$PT_TMP/ready" ] && break; sleep 0.1; done
	[ -s "$PT_TMP/ready" ] || die "$name: the slow connections did not open: $(cat "$PT_TMP/sl.out")"
	sleep $((INTERVAL * 2)) # the attack has been going on for two of its ticks
	for i in $(seq 10); do
		t=$(curl -sS -o "$PT_TMP/page" -m 5 -w '%{time_total}' "http://127.0.0.1:$port/metrics" 2>&1)
		if [ $? -ne 0 ] || ! grep -q '^# TYPE' "$PT_TMP/page"; then
			kill -0 "$pid" 2>/dev/null || die "$name: the server (pid $pid) exited during the attack: $(head -1 <<<"$t")"
			echo "  $name scrape $i: $t"
			t=timeout
			late=$((late + 1))
		elif awk -v t="$t" -v b=$BOUND 'BEGIN { exit !(t > b) }'; then
			late=$((late + 1))
		fi
		echo "  $name scrape $i: $t s"
		[ "$t" != timeout ] && worst=$(awk -v a="$worst" -v b="$t" 'BEGIN { print (b > a ? b : a) }')
		sleep 1
	done
	wait $sl
	cat "$PT_TMP/sl.out"
	local held
	held=$(sed -n 's/^held //p' "$PT_TMP/sl.out")
	[ "$held" = $N ] || die "$name: only ${held:-0} of the $N slow connections were held open"
	# and they were cut by a request deadline, however active (none ever went idle)
	grep -q ', 0 closed by the server' "$PT_TMP/sl.out" &&
		die "$name: no slow connection was closed in 18 s: no per-request deadline"
	[ $late = 0 ] || die "$name: $late of 10 scrapes not answered within $BOUND s while $N slow connections were open"
	echo "ok: $name: 10 of 10 scrapes answered with $N slow connections open (slowest $worst s, bound $BOUND s)"
}

pt_feed_workload 400 5000
pt_ini_feed_dry
pt_parties -c "$PT_TMP/dry.ini" --dry-run --duration 60 --metrics 127.0.0.1:0
port=
for _ in $(seq 50); do
	port=$(sed -n 's/.*metrics at .*(port \([0-9]*\)).*/\1/p' "$PT_TMP/parties.err")
	[ -n "$port" ] && break
	sleep 0.1
done
[ -n "$port" ] || { cat "$PT_TMP/parties.err"; die "no 'metrics at' line"; }
scrape_under_attack "parties --metrics" "$port" $PT_PARTIES
kill -TERM $PT_PARTIES
wait $PT_PARTIES
PT_PARTIES=

sleep 120 & # traced by ebee, which exits when what it traces does
PT_PIDS+=($!)
eport=$(free_port)
build/ebee trace --pid $! --listen "127.0.0.1:$eport" --interval 1000 >/dev/null 2>"$PT_TMP/ebee.err" &
ebee_pid=$!
PT_PIDS+=($ebee_pid)
for _ in $(seq 200); do grep -qs "probes live" "$PT_TMP/ebee.err" && break; sleep 0.05; done
grep -q "probes live" "$PT_TMP/ebee.err" || die "ebee did not start: $(cat "$PT_TMP/ebee.err")"
scrape_under_attack "ebee --listen" "$eport" $ebee_pid
echo PASS
