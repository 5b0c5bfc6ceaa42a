#!/bin/bash
# parties when a workload exits: it is reported in the log, its core returns to the free
# pool, and the other workload carries on and can take it. Bounded: about 10 s.
. "$(dirname "$0")/test_parties_lib.sh"
pt_require build/parties build/fixtures/cpr_server build/loadgen

port=$(free_port)
sleep 60 &
other=$!
PT_PIDS+=($other)
{
	pt_ini_controller
	cat <<INI
[resources]
smt = shared
cpus = 0-1
[policy parties]
first = cores
INI
	pt_ini_server web "$port" 4 5 4 "cpus = 0"
	cat <<INI
[workload batch]
pid = $other
target_ms = 10
cpus = 1
source = ebee
INI
} >"$PT_TMP/parties.ini"

pt_parties -c "$PT_TMP/parties.ini" --duration 30
pt_wait_started
pt_wait_port "$port" || die "cpr_server does not accept on $port"
build/loadgen --port "$port" --rate 150 --duration 6 >"$PT_TMP/lg.out" 2>&1 &
PT_PIDS+=($!)
# web violates, but the pool is empty and batch has no fresh latency: nothing moves
pt_log_wait 'w["web"]["cores"] == 1 and w["batch"]["cores"] == 1 and w["web"]["slack"] is not None and w["web"]["slack"] < 0' 15 >/dev/null ||
	die "web should violate on one core while batch holds the other"
kill -KILL "$other"
t=$(pt_log_wait 'r["event"] is not None and "batch" in r["event"] and "exited" in r["event"]' 3) ||
	die "the exit of batch was not reported"
echo "batch's exit reported at t=$t s"
pt_log_wait "r['t'] >= $t and w['web']['cores'] == 2 and not w['batch']['alive']" 3 >/dev/null ||
	die "web did not get batch's core after it exited"
pt_log_wait "r['t'] > $t" 2 >/dev/null || die "the loop stopped after a workload exited"
kill -0 "$PT_PARTIES" || die "parties stopped after a workload exited"
pt_stop_restored TERM
echo "PASS"
