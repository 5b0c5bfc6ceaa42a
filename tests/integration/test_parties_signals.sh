#!/bin/bash
# parties and signals: SIGTERM mid-run restores everything (cgroups removed, the workload
# back in the cgroups it came from, still running); SIGKILL leaves the machine changed, and
# the next start with the same config cleans up first. Bounded: about 15 s.
. "$(dirname "$0")/test_parties_lib.sh"
pt_require build/parties build/fixtures/cpr_server

port=$(free_port)
build/fixtures/cpr_server --port "$port" --threads 2 --timeout 600 >/dev/null 2>&1 &
srv=$!
PT_PIDS+=($srv)
pt_wait_port "$port" || die "cpr_server does not accept on $port"
orig=$(grep -E '^[0-9]+:cpuset:' /proc/$srv/cgroup)

{
	pt_ini_controller 200
	cat <<INI
[resources]
smt = shared
cpus = 0-1
quota = true
[workload web]
pid = $srv
target_ms = 5
cores = 1
quota = 0.5
source = ebee
INI
} >"$PT_TMP/parties.ini"

in_ours() { grep -q "$PT_PARENT" /proc/"$srv"/cgroup; }

# --- SIGTERM mid-run
pt_parties -c "$PT_TMP/parties.ini" --duration 30
pt_wait_started
pt_until 10 in_ours || die "the workload was not moved into $PT_PARENT"
pt_stop_restored TERM
kill -0 "$srv" || die "the workload (pid given in the config) was killed"
in_ours && die "the workload is still in $PT_PARENT after SIGTERM"
[ "$(grep -E '^[0-9]+:cpuset:' /proc/$srv/cgroup)" = "$orig" ] ||
	die "cpuset cgroup not restored: $(grep cpuset /proc/$srv/cgroup), was $orig"
grep -q '"end":"signal"' "$PT_TMP/log.jsonl" || die "no summary after SIGTERM"
echo "SIGTERM: restored"

# --- SIGINT too
pt_parties -c "$PT_TMP/parties.ini" --duration 30
pt_wait_started
sleep 0.5
pt_stop_restored INT
echo "SIGINT: restored"

# --- SIGKILL, then a restart cleans up
pt_parties -c "$PT_TMP/parties.ini" --duration 30
pt_wait_started
sleep 0.5
pt_stop_parties KILL
[ -n "$(pt_cgroups_left)" ] || die "nothing left after SIGKILL (the test cannot show the repair)"
in_ours || die "the workload left $PT_PARENT although the daemon was killed"
: >"$PT_TMP/parties.err"
pt_parties -c "$PT_TMP/parties.ini" --duration 1.5
pt_wait_started
wait "$PT_PARTIES"
PT_RC=$?
PT_PARTIES=
[ "$PT_RC" = 0 ] || { cat "$PT_TMP/parties.err"; die "restarted parties exited $PT_RC"; }
[ -z "$(pt_cgroups_left)" ] || die "cgroups left after restart: $(pt_cgroups_left)"
in_ours && die "the workload is still in $PT_PARENT after the restart"
kill -0 "$srv" || die "the workload died"
echo "SIGKILL + restart: cleaned up"

# --- --cleanup alone
pt_parties -c "$PT_TMP/parties.ini" --duration 30
pt_wait_started
pt_stop_parties KILL
build/parties -c "$PT_TMP/parties.ini" --cleanup 2>"$PT_TMP/cleanup.err" ||
	{ cat "$PT_TMP/cleanup.err"; die "parties --cleanup failed"; }
[ -z "$(pt_cgroups_left)" ] || die "cgroups left after --cleanup: $(pt_cgroups_left)"
in_ours && die "the workload is still in $PT_PARENT after --cleanup"
echo "SIGKILL + --cleanup: cleaned up"
echo "PASS"
