#!/bin/bash
# parties closes the loop on a CPU-bound server: 1 ms of CPU per request, 8 threads,
# p99 target 10 ms, on 1 of 2 managed CPUs. At 1200 requests/s (1.2 CPUs of work) one CPU
# is overloaded (ebee's p99 goes past the target and keeps growing); PARTIES gives it the
# free CPU, and with two (or the 1.5 left by a neighbour spinning on one) the
# p99 falls to at most 3/4 of what the same run measured on one CPU under the same load,
# while the load goes on: the core did the work, not the passing of time (on one CPU the
# queue only grows; with a neighbour spinning, 1.4 CPUs for 1.2 of work gave 0.57 of it,
# so half was too strict a line). When the load
# falls to 50 requests/s the CPU is given back. The comparison is with this run's own
# one-CPU p99, not with the target: on a machine other programs keep busy, two shared
# CPUs need not bring a CPU-bound server under an absolute 10 ms, but they still do
# bring it well below what one gave. Waits poll the log with generous bounds. If the p99 is not
# brought down
# although web's cpuset has both CPUs, and the server got less than 0.9 of a CPU of the 1.2
# offered, or got more than one CPU but too little above the 1.2 offered to drain its
# backlog while CPUs 0-1 were all but fully busy, neighbours took the machine: SKIP, with
# the figures (a missing second CPU is a FAIL: the cpuset is read from the cgroup; so is
# a server that left an idle machine's CPU unused). Bounded: about 45 s.
. "$(dirname "$0")/test_parties_lib.sh"
pt_require build/parties build/fixtures/cpr_server build/loadgen

port=$(free_port)
{
	pt_ini_controller 500
	cat <<INI
[resources]
smt = shared
cpus = 0-1
[policy parties]
first = cores
idle = release
cooldown_s = 3
[workload web]
command = build/fixtures/cpr_server --port $port --threads 8 --work-us 1000 --timeout 600
target_ms = 10
cores = 1
source = ebee
ebee_mode = conn
; the server's own time: on a shared 2-CPU machine the accept-queue wait that
; sojourn adds swings with the neighbours, and this test is about the loop
ebee_latency = service
INI
} >"$PT_TMP/parties.ini"

pt_parties -c "$PT_TMP/parties.ini" --duration 70
pt_wait_started
>/dev/null pt_wait_port "$port" || die "cpr_server does not accept on $port"
pt_log_wait 'w["web"]["cores"] == 1' 30 >/dev/null || die "web did not start on one core"

build/loadgen --port "$port" --schedule 0:1200,20:1200,20.5:50,40:50 --summary >"$PT_TMP/loadgen.out" 2>&1 &
PT_PIDS+=($!)
# The record of an action carries the observation that caused it and the allocation
# after it.
t_up=$(pt_log_wait 'w["web"]["action"] == "up cores" and w["web"]["cores"] == 2 and w["web"]["p99_ebee_us"] > 10000' 20) ||
	{ tail -5 "$PT_TMP/log.jsonl"; die "web was not given the free CPU when its p99 passed 10 ms"; }
# what one CPU gave under this load, in this run: the worst p99 up to the upsize, whose
# record carries the one-CPU observation that caused it (before the load, p99 is small)
p_one=$(python3 - "$PT_TMP/log.jsonl" "$t_up" <<'PY'
import json, sys
worst = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get('summary') or r['t'] > float(sys.argv[2]):
        continue
    w = {x['name']: x for x in r['wl']}['web']
    if w.get('p99_ebee_us') is not None:
        worst = max(worst, w['p99_ebee_us'])
print(worst)
PY
)
echo "t=$t_up s: one CPU at 1200 req/s put p99 past 10 ms (worst $p_one us); PARTIES gave web the second CPU"
awk -v p="$p_one" 'BEGIN { exit !(p > 10000) }' || die "no one-CPU p99 above the target in the log (got $p_one)"
# The second CPU is really there, not only in the log. Read while the log's latest record
# says web holds two: by the time this runs the cool-down (3 s) may have passed and
# PARTIES tried a downsize (a busy machine makes the steps above slow), and then one CPU
# is right. The log's cores read before and after the cpuset bracket it (a downsize and
# an upsize inside one bracket would take two intervals and a cool-down).
cg=/sys/fs/cgroup/cpuset/$PT_PARENT/web
[ -d "$cg" ] || cg=/sys/fs/cgroup/$PT_PARENT/web
last_web_cores()
{
	tail -n 3 "$PT_TMP/log.jsonl" | python3 -c '
import json, sys
recs = [json.loads(l) for l in sys.stdin if l.endswith("}\n")]
recs = [r for r in recs if not r.get("summary")]
print({x["name"]: x for x in recs[-1]["wl"]}["web"]["cores"] if recs else "")'
}
held_two()
{
	local before cpus after
	before=$(last_web_cores)
	cpus=$(cat "$cg/cpuset.cpus")
	after=$(last_web_cores)
	[ "$before" = 2 ] && [ "$after" = 2 ] || return 1
	[ "$cpus" = 0-1 ] && return 0
	echo "the log says 2 cores before and after, web's cpuset says $cpus" >>"$PT_TMP/mismatch"
	return 1
}
pt_until 20 held_two ||
	die "the log's two cores never showed in web's cpuset: $(tail -3 "$PT_TMP/mismatch" 2>/dev/null | tr '\n' ';')"
# How busy the whole machine is while web holds two CPUs: CPUs 0-1's busy jiffies over
# the wait below (all but idle and iowait; steal is time the host gave another guest;
# guest time is already counted in user).
cpu01_jiffies()
{
	awk '$1 == "cpu0" || $1 == "cpu1" { for (i = 2; i <= 9; i++) t += $i; b += $2 + $3 + $4 + $7 + $8 + $9 }
		END { print b, t }' /proc/stat
}
j_before=$(cpu01_jiffies)
if ! t_met=$(pt_log_wait "r['t'] > $t_up and w['web']['cores'] == 2 and w['web']['rps'] > 900 and w['web']['p99_ebee_us'] <= $p_one * 3 / 4" 20); then
	tail -8 "$PT_TMP/log.jsonl"
	# Whether the machine let the server run: its cpuset had both CPUs (checked above) and
	# 1.2 CPUs of work were offered, so unless neighbours took the machine it used more
	# than 0.9 of a CPU for most of the time it held two. If it did not (the median
	# interval, not the best one: a burst of 1.4 CPUs in one interval says nothing of a
	# backlog that the other intervals could not drain), this run cannot show what the
	# second CPU does.
	got=$(python3 - "$PT_TMP/log.jsonl" "$t_up" <<'PY'
import json, statistics, sys
used = []
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get('summary') or r['t'] <= float(sys.argv[2]):
        continue
    w = {x['name']: x for x in r['wl']}['web']
    if w.get('cores') == 2 and w.get('cpu_used') is not None:
        used.append(w['cpu_used'])
print('%.3f %.3f' % (statistics.median(used), max(used)) if used else '0 0')
PY
)
	med=${got% *}
	awk -v g="$med" 'BEGIN { exit !(g < 0.9) }' &&
		skip "the machine gave the server a median $med CPUs (best ${got#* }) on its two (1.2 offered): too busy to show what the second CPU does"
	# The backlog one CPU built drains only at what the server gets above the 1.2 it is
	# offered. A median under 1.3 leaves under 0.1 CPU for that; if at the same time the
	# machine's two CPUs were nearly all busy, the rest went to other programs (the VM
	# lane's qemu, say): the second CPU was given and used (more than one CPU's worth),
	# but this machine had too little of it to spare. If the machine had time to spare,
	# the server should have taken it: FAIL below.
	busy=$(echo "$j_before $(cpu01_jiffies)" | awk '{ if ($4 > $2) printf "%.2f", 2 * ($3 - $1) / ($4 - $2); else print 0 }')
	awk -v g="$med" -v b="$busy" 'BEGIN { exit !(g >= 1.0 && g < 1.3 && b >= 1.8) }' &&
		skip "web used a median $med CPUs (best ${got#* }) of its two, 1.2 offered, while CPUs 0-1 were $busy of 2 busy: other programs took the CPU the one-CPU backlog needed to drain"
	# Both CPUs busy the whole time: the work of 1200 requests/s is more than two of this
	# machine's CPUs hold (a guest's emulated CPUs: 1.95 used, 680 requests/s done), so
	# the queue grows with two as with one. The second CPU was given and used; what it
	# does to the p99 cannot show here.
	awk -v g="$med" 'BEGIN { exit !(g >= 1.8) }' &&
		skip "web used a median $med of its 2 CPUs (best ${got#* }): 1200 requests/s of 1 ms are more than two of these CPUs do (emulated or slow), so the p99 cannot fall"
	die "two CPUs under the same load did not bring p99 to 3/4 of the one-CPU $p_one us (the server used a median $med CPUs, at most ${got#* }; CPUs 0-1 were $busy of 2 busy)"
fi
echo "t=$t_met s: two CPUs under the same load, p99 at most 3/4 of the one-CPU $p_one us"
# The load falls at about t=22 s (daemon time). PARTIES may already have tried a
# downsize while loaded (and reverted it): what matters is that, at low load, web is
# back on one CPU.
t_back=$(pt_log_wait "r['t'] > $t_met and w['web']['cores'] == 1 and 0 < w['web']['rps'] < 200" 40) ||
	{ tail -5 "$PT_TMP/log.jsonl"; die "web kept the second CPU after the load fell"; }
pt_log_wait "r['t'] > $t_met and w['web']['action'] == 'down cores'" 1 >/dev/null ||
	die "no downsize logged after the load fell"
echo "t=$t_back s: load fell, web is back on one CPU"
wait "${PT_PIDS[0]}"
grep -E "^sent|latency" "$PT_TMP/loadgen.out"
pt_stop_restored TERM
pt_log_summary
echo "PASS"
