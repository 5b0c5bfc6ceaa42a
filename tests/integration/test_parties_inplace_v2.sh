#!/bin/bash
# The cgroup v2 counterpart of test_parties_inplace.sh: a real systemd unit (systemd-run,
# a sleeping service) managed in place with `unit = NAME.service`. The unit asks systemd
# for cpuset and cpu (AllowedCPUs=, CPUQuota=), so systemd enables them on its path, as
# parties(8) tells users to. While parties runs, the unit's own cpuset.cpus and cpu.max
# carry parties' values and its process stays in the unit's cgroup; after SIGTERM, and
# after SIGKILL + --cleanup, both files read exactly as found and no cgroup.subtree_control
# on the way (root, system.slice) has changed. Runs under the unit's capability set.
. "$(dirname "$0")/test_parties_lib.sh"
pt_require build/parties setpriv systemd-run systemctl
[ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ] || skip "needs cgroup v2 at /sys/fs/cgroup (this is the v2 in-place test)"
grep -qw cpuset /sys/fs/cgroup/cgroup.controllers || skip "the v2 hierarchy has no cpuset controller"
[ -d /run/systemd/system ] || skip "needs systemd as init"
ncpu=$(nproc)
[ "$ncpu" -ge 2 ] || skip "needs 2 cpus"

caps=$(sed -n 's/^CapabilityBoundingSet=//p' systemd/parties.service.in)
bset="-all"
for c in $caps; do bset="$bset,+$(echo "${c#CAP_}" | tr 'A-Z' 'a-z')"; done

UNIT=pt-inplace-$$.service
unit_cleanup()
{
	[ -n "$feeder" ] && kill "$feeder" 2>/dev/null && wait "$feeder" 2>/dev/null
	pt_cleanup
	systemctl stop "$UNIT" 2>/dev/null
}
trap unit_cleanup EXIT

systemd-run --quiet --unit="$UNIT" -p AllowedCPUs=0-$((ncpu - 1)) -p CPUQuota=$((ncpu * 100 - 50))% \
	sleep 300 || die "systemd-run failed"
CGP=$(systemctl show -p ControlGroup --value "$UNIT")
CG=/sys/fs/cgroup$CGP
for _ in $(seq 50); do [ -f "$CG/cpu.max" ] && [ -s "$CG/cgroup.procs" ] && break; sleep 0.1; done
[ -f "$CG/cpuset.cpus" ] && [ -f "$CG/cpu.max" ] || die "systemd gave $CG no cpuset.cpus/cpu.max"
MAINPID=$(systemctl show -p MainPID --value "$UNIT")
snap() { echo "cpus=$(cat "$CG/cpuset.cpus") max=$(cat "$CG/cpu.max")"; }
paths() { for d in /sys/fs/cgroup $(dirname "$CG"); do echo "$d: $(cat "$d/cgroup.subtree_control")"; done; }
found=$(snap)
found_cpus=$(cat "$CG/cpuset.cpus")
found_max=$(cat "$CG/cpu.max")
found_sc=$(paths)
echo "found: $UNIT at $CGP: $found"
echo "$found_sc"

: >"$PT_TMP/feed"
(while :; do echo "0 5000 100" >>"$PT_TMP/feed"; sleep 0.1; done) &
feeder=$!
{
	pt_ini_controller 200
	cat <<INI
ebee = false
[resources]
smt = shared
cpus = 0-$((ncpu - 1))
cores = true
quota = true
[workload svc]
unit = $UNIT
target_ms = 1
source = client:$PT_TMP/feed
cores = 1
max_cores = $((ncpu - 1))
quota = 0.5
INI
} >"$PT_TMP/parties.ini"

run()
{
	# emptied first: the job's redirection waits until it is scheduled, and the second
	# run's wait could find the first daemon's "managing" (test_parties_move_caps.sh)
	: >"$PT_TMP/parties.err"
	setpriv --bounding-set "$bset" --inh-caps -all build/parties -c "$PT_TMP/parties.ini" \
		--duration 60 2>>"$PT_TMP/parties.err" &
	PT_PARTIES=$!
	pt_wait_started
	pt_log_wait 'w["svc"]["cores"] >= 1' 10 >/dev/null || die "no decision for svc"
	sleep 1
	now=$(snap)
	# both files carry parties' values (at most ncpu-1 cores: never the unit's 0-N)
	[ "$(cat "$CG/cpuset.cpus")" != "${found_cpus}" ] || die "parties runs but cpuset.cpus is still $found_cpus"
	[ "$(cat "$CG/cpu.max")" != "${found_max}" ] || die "parties runs but cpu.max is still $found_max"
	grep -qx "$MAINPID" "$CG/cgroup.procs" || die "the unit's process left its cgroup"
	[ -d "/sys/fs/cgroup/$PT_PARENT/svc" ] && die "a parties child cgroup was made for an in-place unit"
	echo "running: $now"
}

run
pt_stop_restored TERM
[ "$(snap)" = "$found" ] || die "after SIGTERM: $(snap), found $found"
[ "$(paths)" = "$found_sc" ] || die "after SIGTERM subtree_control: $(paths)"
echo "ok: SIGTERM: $(snap)"

run
kill -KILL "$PT_PARTIES"; wait "$PT_PARTIES" 2>/dev/null; PT_PARTIES=
[ "$(snap)" != "$found" ] || die "after SIGKILL the unit reads as found: the test shows nothing"
setpriv --bounding-set "$bset" --inh-caps -all build/parties -c "$PT_TMP/parties.ini" --cleanup \
	2>>"$PT_TMP/parties.err" >/dev/null
[ "$(snap)" = "$found" ] || die "after SIGKILL + --cleanup: $(snap), found $found"
[ "$(paths)" = "$found_sc" ] || die "after --cleanup subtree_control: $(paths)"
systemctl is-active --quiet "$UNIT" || die "the unit is no longer active"
echo "ok: SIGKILL + --cleanup: $(snap); the unit still active"
echo PASS
