#!/bin/bash
# parties closes the loop on a CPU-bound server (cpr_server: 1 ms of CPU per request, 32
# threads, p99 of its own service time), p99 target 10 ms, on 1 of 2 managed CPUs: when
# one CPU puts the p99 past the target PARTIES gives web the free CPU, and with two the
# p99 under the same load falls to at most 3/4 of what one gave; when the load falls the
# CPU is given back.
#
# The load is not a fixed rate: what one and two CPUs hold depends on what the machine
# gives the server now (an idle host, a host other jobs keep busy, an emulated guest where
# a request costs three times the CPU). So the test measures it first, in this run, and
# offers what overloads one CPU but fits in two:
#   1. cap2: the requests/s the server completes (its own count) on both CPUs, parties
#      running the static policy, under a closed loop (loadgen's arrivals far above what
#      it can do, at most 64 outstanding: the rest is dropped, so no backlog is left);
#   2. cap1: the same on one CPU, under PARTIES with a target no p99 reaches (an hour),
#      so PARTIES holds web on its one CPU;
#   3. the rate: 1.3 x cap1, at most 0.8 x cap2, and at least 1.1 x cap1 (the one-CPU
#      p99 needs only that one CPU be overloaded, all threads busy; the headroom goes to
#      two, where what the machine gives varies from second to second);
#   4. that rate, open loop (at most 64 outstanding again), on the one CPU for 3 s: the
#      one-CPU p99 of this load, in this run (all 32 threads busy: about 32 ms or more);
#   5. SIGHUP with target_ms = 10: PARTIES must upsize web (cores) with the p99 above 10 ms
#      in the record, web's cpuset must hold both CPUs, and while the load goes on (rps at
#      least 3/4 of the rate) the p99 must come to at most 3/4 of the one-CPU p99 in each
#      of three intervals in a row;
#   6. the load falls to 50 requests/s: within the policy's own window (2 x cooldown_s + 8
#      intervals of the daemon's time: see step 6 below) web must be on one CPU, by a
#      'down cores' taken after step 5, for 4 decisions in a row with requests coming in.
# 32 threads, not 8: where the server's threads share the CPUs task by task with other
# programs (cgroup v1, no cpu controller on web), its share of two CPUs grows with them.
# The session's autogroup runs at nice -20, the server and the tools at nice -20 (below):
# with autogroups a busy machine's other sessions otherwise took the second CPU.
#
# Never SKIP for a busy machine (only for a missing capability: no cpuset, not root).
# When a state cannot show the claim (two CPUs hold less than 1.375 x what one holds; the
# rate no longer overloads the one CPU; on two CPUs the machine gave the server under
# 1.15 x its CPU on one, or too little to keep up), the test measures again from step 1,
# at most 3 times (none begun after 100 s), then FAILs with the figures. It FAILs at
# once when PARTIES does not give the CPU, the cpuset lacks it, the server did get more CPU
# and the p99 did not fall, or web is not back on one CPU in the window (its records are
# printed). About 55 s a try (35 of them the two measures), 53-69 s a pass in one try at a
# load average of 20-29, 6 spinners beside or not.
. "$(dirname "$0")/test_parties_lib.sh"
pt_require build/parties build/fixtures/cpr_server build/loadgen
# Priorities. The claim is about the CPU PARTIES gives web, so web must be able to use
# it. Under the scheduler's autogroups (sched_autogroup_enabled, a session each) nice only
# orders the tasks of one session: here, beside other sessions (a VM guest's two TCG
# threads, other builds; a load average of 20-34 on 2 CPUs), two threads at nice -10 got
# 0.48 CPU, and two CPUs gave the server 1.0-1.2 x what one did, so no load overloads one
# CPU and fits in two. The test's session gets autogroup nice -20 while it runs (restored
# at exit; the same threads then got 1.91 CPU), and inside it the test, the server, the
# daemon and loadgen run at nice -20, anything else in the session (tests/busy.sh's
# spinners) at its own. The server at the tools' niceness, not below: with two CPUs web
# shares the second with loadgen and the daemon, and in one run each (load average 25-29)
# its p99 on two CPUs against one was 12-21 against 50 ms at -20, 24-34 against 61 at -15,
# 32-48 against 61-75 at -10, 63-165 against 67 at 0 (loadgen's weight above the server's
# bunches its sends). The calibration (closed loop) measures what loadgen manages too.
# Without autogroups (or the right to set them) nice alone orders.
python3 -c 'import os; os.setpriority(os.PRIO_PROCESS, '$$', -20)' ||
	die "cannot set the test's niceness to -20"
ag_nice=
if [ -w "/proc/$$/autogroup" ] && [ "$(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null)" = 1 ]; then
	ag_nice=$(sed -n 's/.* nice \(-\{0,1\}[0-9]*\)$/\1/p' "/proc/$$/autogroup")
	if echo -20 2>/dev/null >"/proc/$$/autogroup"; then
		trap 'echo "$ag_nice" >"/proc/$$/autogroup" 2>/dev/null; pt_cleanup' EXIT
		echo "the session's autogroup at nice -20 while the test runs (was $ag_nice)"
	else
		echo "autogroup nice not set (the session competes with others at nice $ag_nice)"
	fi
fi

threads=32
target_ms=10
interval_ms=500
cool_s=3
hold_ms=3600000
tries=3
conns=$((2 * threads))

# cb_ini POLICY CORES TARGET_MS: the config, on $port
cb_ini()
{
	pt_ini_controller $interval_ms
	cat <<INI
policy = $1
[resources]
smt = shared
cpus = 0-1
; cores alone: with cpufreq the wheel would step the frequency down first after an upsize
; (a change of direction moves to the next resource), and this test is about the CPU
freq = false
INI
	[ "$1" = parties ] && printf '[policy parties]\nfirst = cores\nidle = release\ncooldown_s = %s\n' "$cool_s"
	cat <<INI
[workload web]
command = build/fixtures/cpr_server --port $port --threads $threads --work-us 1000 --count-file $PT_TMP/count --timeout 600
target_ms = $3
cores = $2
source = ebee
ebee_mode = conn
; the server's own time: the accept-queue wait that sojourn adds is the backlog's, and
; this test is about the CPUs the threads get
ebee_latency = service
INI
}

# cb_start POLICY CORES TARGET_MS: a new daemon (and server) with a new log
cb_start()
{
	port=$(free_port)
	rm -f "$PT_TMP/log.jsonl" "$PT_TMP/count"
	cb_ini "$@" >"$PT_TMP/parties.ini"
	pt_parties -c "$PT_TMP/parties.ini" --duration 300
	pt_wait_started
	>/dev/null pt_wait_port "$port" || die "cpr_server does not accept on $port"
	pt_log_wait "w['web']['cores'] == $2" 30 >/dev/null || die "web did not start on $2 core(s)"
}

# cb_now: the daemon time of the log's latest record
cb_now()
{
	python3 - "$PT_TMP/log.jsonl" <<'PY'
import json, sys
t = 0
for line in open(sys.argv[1]):
    if line.endswith('}\n'):
        r = json.loads(line)
        if not r.get('summary'):
            t = r['t']
print(t)
PY
}

# cb_stats T0 T1: over the records with T0 < t <= T1, web's median p99 (us), rps and
# cpu_used, its fewest and most cores, and how many records
cb_stats()
{
	PYTHONPATH=tests/lib python3 - "$PT_TMP/log.jsonl" "$1" "$2" <<'PY'
import statistics, sys
from ptlog import records
t0, t1 = float(sys.argv[2]), float(sys.argv[3])
p, rps, cpu, cores = [], [], [], []
for r in records(sys.argv[1], t0, t1):
    w = {x['name']: x for x in r['wl']}['web']
    cores.append(w['cores'])
    for k, a in (('p99_ebee_us', p), ('rps', rps), ('cpu_used', cpu)):
        if w.get(k) is not None:
            a.append(w[k])
med = lambda a: statistics.median(a) if a else 0
print('%.0f %.0f %.3f %s %s %d' % (med(p), med(rps), med(cpu), min(cores, default=0),
                                   max(cores, default=0), len(cores)))
PY
}

# cb_wait_two T_UP RATE P_ONE TIMEOUT_S: until three records in a row after T_UP with web
# on two CPUs each have a p99 at most 3/4 of P_ONE, with a median rps at least 3/4 of RATE
# (the load went on: the cores did the work); prints the third's t. Three, each: on a busy
# machine one interval's p99 can fall by chance, and with the server at nice 0 a median of
# three passed on two such intervals (162, 14, 13 ms against a one-CPU 67 ms; 63 and 105
# after them).
cb_wait_two()
{
	PYTHONPATH=tests/lib python3 - "$PT_TMP/log.jsonl" "$@" <<'PY'
import statistics, sys
from ptlog import follow
path, (t_up, rate, p_one, timeout) = sys.argv[1], map(float, sys.argv[2:6])
run = []
for r in follow(path, timeout):
    if r['t'] <= t_up:
        continue
    w = {x['name']: x for x in r['wl']}['web']
    if w['cores'] != 2 or w.get('p99_ebee_us') is None or w.get('rps') is None:
        run = []
        continue
    run = (run + [w])[-3:]
    if (len(run) == 3 and max(x['p99_ebee_us'] for x in run) <= p_one * 3 / 4
            and statistics.median(x['rps'] for x in run) >= rate * 3 / 4):
        print(r['t'])
        sys.exit(0)
sys.exit(1)
PY
}

# cb_count_rate S: requests/s the server completed over S seconds, by its own count (the
# count file's value and the time it was written, twice). The second read waits, up to 10 s
# more, for a version written at least S/2 after the first: the file (rename of a new one,
# /tmp on the disk) once went unwritten for the whole 3 s beside tests/busy.sh's fsyncing
# writer while loadgen got its replies ("count 13099 -> 13099, written 0.00 s apart").
cb_count_rate()
{
	python3 - "$PT_TMP/count" "$1" <<'PY'
import os, sys, time
def read(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        return int(os.read(fd, 64)), os.fstat(fd).st_mtime
    finally:
        os.close(fd)
s = float(sys.argv[2])
n0, t0 = read(sys.argv[1])
time.sleep(s)
n1, t1 = read(sys.argv[1])
end = time.time() + 10
while t1 < t0 + s / 2 and time.time() < end:
    time.sleep(0.1)
    n1, t1 = read(sys.argv[1])
print('%.0f' % ((n1 - n0) / (t1 - t0)) if t1 > t0 else 0)
print('count %d -> %d, written %.2f s apart' % (n0, n1, t1 - t0), file=sys.stderr)
PY
}

# cb_capacity: "RPS CPU": what the server completes per second under a closed loop of
# $conns outstanding requests (by its count, over 3 s after 1.5 s to fill), and the
# median CPU it used meanwhile (the log)
cb_capacity()
{
	local lg t0 t1 rps cpu
	build/loadgen --port "$port" --rate 4000 --duration 60 --max-conns "$conns" \
		--max-queue "$conns" --req-timeout 5 --drain 0 --summary >"$PT_TMP/cap.out" 2>&1 &
	lg=$!
	PT_PIDS+=("$lg")
	sleep 1.5
	t0=$(cb_now)
	rps=$(cb_count_rate 3 2>"$PT_TMP/cap.why")
	t1=$(cb_now)
	kill -TERM "$lg" 2>/dev/null
	wait "$lg" 2>/dev/null
	echo "; loadgen: $(grep -E '^sent' "$PT_TMP/cap.out")" >>"$PT_TMP/cap.why"
	read -r _ _ cpu _ <<<"$(cb_stats "$t0" "$t1")"
	echo "$rps $cpu"
}

# cb_wait_one T_MET T_FALL WINDOW MIN_RECS TIMEOUT_S: until four records in a row after
# T_FALL with web on one CPU and the load on (fresh p99, rps above 0), the last 'down cores'
# before them after T_MET; prints the fourth's t, that down's t and its state (fresh: on
# slack; idle: no request in its interval). Fails at once when the log has passed
# T_FALL + WINDOW with at least MIN_RECS records after T_FALL and no such run has ended by
# then, and after TIMEOUT_S of wall time (the daemon stalled).
cb_wait_one()
{
	PYTHONPATH=tests/lib python3 - "$PT_TMP/log.jsonl" "$@" <<'PY'
import sys
from ptlog import follow
path = sys.argv[1]
t_met, t_fall, window = map(float, sys.argv[2:5])
min_recs, timeout = int(sys.argv[5]), float(sys.argv[6])
n, run, t_down, down_state = 0, 0, None, None
for r in follow(path, timeout):
    w = {x['name']: x for x in r['wl']}['web']
    if r['t'] > t_met and w['action'] == 'down cores':
        t_down, down_state = r['t'], w['state']
    if r['t'] <= t_fall:
        continue
    n += 1
    if r['t'] > t_fall + window and n > min_recs:
        sys.exit(1)
    on = w['state'] == 'fresh' and (w.get('rps') or 0) > 0
    run = run + 1 if w['cores'] == 1 and on and t_down is not None else 0
    if run == 4:
        print(r['t'], t_down, down_state)
        sys.exit(0)
sys.exit(1)
PY
}

# cb_records T: web's records after T, one line each
cb_records()
{
	PYTHONPATH=tests/lib python3 - "$PT_TMP/log.jsonl" "$1" <<'PY'
import sys
from ptlog import records
for r in records(sys.argv[1], float(sys.argv[2])):
    w = {x['name']: x for x in r['wl']}['web']
    print('t=%s cores %s %s p99 %s rps %s: %s (%s)' % (r['t'], w['cores'], w['state'], w.get('p99_ebee_us'),
                                                  w.get('rps'), w['action'], w['reason']))
PY
}

# cb_series T0 T1: web's p99 in ms and its cores, record by record, T0 < t <= T1
cb_series()
{
	PYTHONPATH=tests/lib python3 - "$PT_TMP/log.jsonl" "$1" "$2" <<'PY'
import sys
from ptlog import records
t0, t1, out = float(sys.argv[2]), float(sys.argv[3]), []
for r in records(sys.argv[1], t0, t1):
    w = {x['name']: x for x in r['wl']}['web']
    p = w.get('p99_ebee_us')
    out.append('%s/%d' % ('-' if p is None else '%.0f' % (p / 1000), w['cores']))
print(' '.join(out))
PY
}

cpu01_jiffies()
{
	awk '$1 == "cpu0" || $1 == "cpu1" { for (i = 2; i <= 9; i++) t += $i; b += $2 + $3 + $4 + $7 + $8 + $9 }
		END { print b, t }' /proc/stat
}
# cb_busy "B T" (from cpu01_jiffies): how many of CPUs 0-1 were busy since
cb_busy()
{
	echo "$1 $(cpu01_jiffies)" | awk '{ if ($4 > $2) printf "%.2f", 2 * ($3 - $1) / ($4 - $2); else print 0 }'
}

cg_dir()
{
	local cg=/sys/fs/cgroup/cpuset/$PT_PARENT/web
	[ -d "$cg" ] || cg=/sys/fs/cgroup/$PT_PARENT/web
	echo "$cg"
}
last_web_cores()
{
	tail -n 3 "$PT_TMP/log.jsonl" | python3 -c '
import json, sys
recs = [json.loads(l) for l in sys.stdin if l.endswith("}\n")]
recs = [r for r in recs if not r.get("summary")]
print({x["name"]: x for x in recs[-1]["wl"]}["web"]["cores"] if recs else "")'
}
# The second CPU is really there, not only in the log. Read while the log's latest record
# says web holds two: after the cool-down (3 s) PARTIES may try a downsize, and then one
# CPU is right. The log's cores read before and after the cpuset bracket it.
held_two()
{
	local before cpus after
	before=$(last_web_cores)
	cpus=$(cat "$(cg_dir)/cpuset.cpus")
	after=$(last_web_cores)
	[ "$before" = 2 ] && [ "$after" = 2 ] || return 1
	[ "$cpus" = 0-1 ] && return 0
	echo "the log says 2 cores before and after, web's cpuset says $cpus" >>"$PT_TMP/mismatch"
	return 1
}

# cb_again WHY: this try cannot show the claim: stop, and measure again (or FAIL after
# $tries, or once 100 s have gone: a try takes 35-55 s, and the test stays under 3 minutes)
cb_again()
{
	echo "try $try: $1"
	[ -n "${lg:-}" ] && { kill -TERM "$lg" 2>/dev/null; wait "$lg" 2>/dev/null; lg=; }
	pt_stop_restored TERM
	[ "$try" -lt "$tries" ] && [ "$SECONDS" -lt 100 ] || die "in $try tries ($SECONDS s) the machine never let this test show what a second CPU does; the last: $1"
}

try=0
while :; do
	try=$((try + 1))
	lg=
	# 1. two CPUs
	echo "try $try: measuring ($SECONDS s)"
	cb_start static 2 "$target_ms"
	j0=$(cpu01_jiffies)
	read -r cap2 cpu2 <<<"$(cb_capacity)"
	why2=$(tr -d '\n' <"$PT_TMP/cap.why")
	busy2=$(cb_busy "$j0")
	pt_stop_restored TERM
	# 2. one CPU, PARTIES holding
	cb_start parties 1 "$hold_ms"
	j0=$(cpu01_jiffies)
	read -r cap1 cpu1 <<<"$(cb_capacity)"
	why1=$(tr -d '\n' <"$PT_TMP/cap.why")
	busy1=$(cb_busy "$j0")
	# 3. the rate
	rate=$(awk -v a="$cap1" -v b="$cap2" 'BEGIN { r = 1.3 * a; if (r > 0.8 * b) r = 0.8 * b; printf "%d", r }')
	echo "try $try: one CPU completes $cap1 requests/s (the server used $cpu1 CPU, CPUs 0-1 $busy1 busy), two $cap2 ($cpu2, $busy2 busy): offering $rate/s ($SECONDS s)"
	if awk -v r="$rate" -v a="$cap1" 'BEGIN { exit !(r < 1.1 * a) }'; then
		cb_again "two CPUs completed $cap2/s, under 1.375 x the $cap1/s of one: no rate overloads one and fits in two (two: $why2; one: $why1)"
		continue
	fi
	# 4. the one-CPU p99 of that load
	build/loadgen --port "$port" --rate "$rate" --duration 120 --max-conns "$conns" \
		--max-queue "$conns" --drain 0 --summary >"$PT_TMP/loadgen.out" 2>&1 &
	lg=$!
	PT_PIDS+=("$lg")
	sleep 1.5
	t0=$(cb_now)
	j0=$(cpu01_jiffies)
	sleep 3
	t1=$(cb_now)
	read -r p_one rps_one cpu_one _ cmax n <<<"$(cb_stats "$t0" "$t1")"
	busy_one=$(cb_busy "$j0")
	[ "$cmax" = 1 ] || die "PARTIES moved web's CPU under a target no p99 reaches"
	echo "one CPU at $rate/s: p99 $p_one us, $rps_one requests/s, the server used $cpu_one CPU (CPUs 0-1 $busy_one busy; $n intervals; $SECONDS s)"
	if awk -v p="$p_one" -v t="$target_ms" 'BEGIN { exit !(p <= 1500 * t) }'; then
		cb_again "one CPU at $rate/s kept the p99 at $p_one us, not past 1.5 x the target: the machine gives more than when it was measured"
		continue
	fi
	# 5. the target that one CPU misses
	cb_ini parties 1 "$target_ms" >"$PT_TMP/parties.ini"
	kill -HUP "$PT_PARTIES"
	pt_until 10 grep -q "reloaded" "$PT_TMP/parties.err" ||
		{ cat "$PT_TMP/parties.err"; die "parties did not reload the target"; }
	t_up=$(pt_log_wait "r['t'] > $t1 and w['web']['target_us'] == $target_ms * 1000 and w['web']['action'] == 'up cores' and w['web']['cores'] == 2 and w['web']['p99_ebee_us'] > $target_ms * 1000" 15) ||
		{ tail -5 "$PT_TMP/log.jsonl"; die "web was not given the free CPU when its p99 passed $target_ms ms"; }
	echo "t=$t_up s: target $target_ms ms; PARTIES gave web the second CPU"
	pt_until 20 held_two ||
		die "the log's two cores never showed in web's cpuset: $(tail -3 "$PT_TMP/mismatch" 2>/dev/null | tr '\n' ';')"
	j0=$(cpu01_jiffies)
	if t_met=$(cb_wait_two "$t_up" "$rate" "$p_one" 20); then
		read -r p_two rps_two cpu_two _ _ _ <<<"$(cb_stats "$t_up" "$t_met")"
		echo "t=$t_met s: two CPUs at $rate/s: p99 at most 3/4 of the one-CPU $p_one us (medians since the upsize: p99 $p_two us, $rps_two requests/s, the server used $cpu_two CPU)"
		break
	fi
	tail -8 "$PT_TMP/log.jsonl"
	read -r p_two rps_two cpu_two cmin _ n <<<"$(cb_stats "$t_up" "$(cb_now)")"
	busy_two=$(cb_busy "$j0")
	what="two CPUs at $rate/s: median p99 $p_two us against the one-CPU $p_one us, $rps_two requests/s, the server used $cpu_two CPU against $cpu_one on one (CPUs 0-1 $busy_two busy; $n intervals, fewest cores $cmin)"
	# The machine withheld the second CPU's time (other programs took it: the server got
	# under 1.15 x its one-CPU CPU, or did not keep up with the rate that two CPUs held
	# when measured): this state cannot show what it does. The server got it, kept up, and
	# the p99 did not fall: FAIL.
	if awk -v a="$cpu_one" -v b="$cpu_two" -v d="$rps_two" -v r="$rate" 'BEGIN { exit !(b < 1.15 * a || d < 0.95 * r) }'; then
		cb_again "$what: the machine did not give the server the CPU two held when measured"
		continue
	fi
	die "$what"
done
# 6. The load falls to 50 requests/s (about 5% of one CPU: each interval's p99 a few ms,
# slack above 0.20). What PARTIES (paper flavour, as configured here) does then, by its
# own rules (controller/policies/parties.c): each decision (interval_ms = 500) downsizes
# the workload with the most slack above 0.20 by one unit, judged on the next decision (one
# sample) and undone if that one's slack is below 0.05, after which no downsize for
# cooldown_s (3 s). While the load ran it may already have downsized (two CPUs left slack)
# and undone it: a cool-down may still run when the load falls. So the window is that
# cool-down, the interval whose p99 still holds the loaded backlog, the decision and its
# judgement, one more undone try and its cool-down for a stray slow interval, and the 4
# decisions in a row that web must then stay on one CPU: 2 x cooldown_s + 8 intervals, in
# the daemon's time (its log's t), with at least that many decisions taken (a busy
# machine can stretch an interval). Web must be on one CPU for those 4 decisions, a 'down cores' taken after the two-CPU phase, with the load
# on: requests in each record (fresh p99, rps above 0), not an idle web (idle = release
# would release an idle one anyway).
# The low load starts before the high one stops: an interval with no request between the
# two would be idle, and idle = release downsizes an idle web (then undone when the load
# came back: seen with the low load started after).
build/loadgen --port "$port" --rate 50 --duration 120 --drain 0 --summary >"$PT_TMP/low.out" 2>&1 &
low=$!
PT_PIDS+=("$low")
kill -TERM "$lg" 2>/dev/null
wait "$lg"
lg=$low
grep -E "^sent|latency" "$PT_TMP/loadgen.out"
t_fall=$(cb_now)
n0=$(cat "$PT_TMP/count")
echo "web's p99 (ms)/cores each interval from the one-CPU measure until the load fell: $(cb_series "$t0" "$t_fall")"
window=$(awk -v c="$cool_s" -v i="$interval_ms" 'BEGIN { print 2 * c + 8 * i / 1000 }')
recs=$(awk -v c="$cool_s" -v i="$interval_ms" 'BEGIN { printf "%d", 2 * c * 1000 / i + 8 }')
if ! back=$(cb_wait_one "$t_met" "$t_fall" "$window" "$recs" 90); then
	kill -TERM "$lg" 2>/dev/null
	wait "$lg"
	cb_records "$t_fall"
	echo "the server counted $(($(cat "$PT_TMP/count") - n0)) requests since the load fell; loadgen: $(grep -E "^sent" "$PT_TMP/low.out")"
	die "web was not back on one CPU, with the load on, within $window s of PARTIES' time after the load fell (t=$t_fall s)"
fi
read -r t_back t_down down_state <<<"$back"
echo "t=$t_back s: the load fell at t=$t_fall s to 50/s; web on one CPU (down cores at t=$t_down s, $down_state) for 4 intervals with the load on, within the policy's window of $window s (try $try)"
kill -TERM "$lg" 2>/dev/null
wait "$lg"
pt_stop_restored TERM
pt_log_summary
echo "PASS"
