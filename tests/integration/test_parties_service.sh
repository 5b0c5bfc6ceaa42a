#!/bin/bash
# parties under systemd as shipped: systemd/parties.service.in made into a unit (paths to
# this build and a test config; the unit's capabilities, sandboxing, Type=notify,
# watchdog and ExecStopPost= untouched), started with systemctl. Two workloads that are
# root's own processes (every capability) get cores moved between them: a violates its
# target and takes a core from b. Then `systemctl kill -s KILL` (systemd runs
# ExecStopPost=--cleanup and restarts the unit, whose new daemon repairs first) and
# `systemctl stop`: nothing of parties' is left and, on cgroup v2, the root's
# cgroup.subtree_control reads as it did before the unit started.
. "$(dirname "$0")/test_parties_lib.sh"
pt_require build/parties systemctl python3
[ -d /run/systemd/system ] || skip "needs systemd as init"
ncpu=$(nproc)
[ "$ncpu" -ge 3 ] || skip "needs 3 cpus to move a core between two workloads (have $ncpu)"

UNIT=pt-service-$$
# the unit has PrivateTmp=yes: everything it reads or writes lives outside /tmp; its
# state_dir is its RuntimeDirectory=, as in the shipped unit (kept across a restart)
D=/run/$UNIT-files
mkdir -p "$D"
v2=false
[ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ] && v2=true
root_sc() { $v2 && cat /sys/fs/cgroup/cgroup.subtree_control; }
before=$(root_sc)

svc_cleanup()
{
	systemctl stop "$UNIT" 2>/dev/null
	rm -f "/run/systemd/system/$UNIT.service"
	systemctl daemon-reload
	pt_cleanup
	rm -rf "$D" "/var/lib/$UNIT-bin"
}
trap svc_cleanup EXIT

for w in a b; do
	sleep 300 &
	PT_PIDS+=($!)
	eval "PID_$w=$!"
	echo 1000 >"$D/p99_$w"
	: >"$D/feed_$w"
done
(i=0; while :; do
	i=$((i + 1))
	for w in a b; do echo "$((i * 100)) $(cat "$D/p99_$w") 100" >>"$D/feed_$w"; done
	sleep 0.1
done) &
PT_PIDS+=($!)

cat >"$D/parties.ini" <<INI
[controller]
interval_ms = 200
cgroup_parent = $PT_PARENT
state_dir = /run/$UNIT
log = $D/log.jsonl
ebee = false
[resources]
smt = shared
cpus = 0-$((ncpu - 1))
[policy parties]
first = cores
[workload a]
pid = $PID_a
target_ms = 10
cores = 1
source = client:$D/feed_a
[workload b]
pid = $PID_b
target_ms = 10
cores = $((ncpu - 1))
source = client:$D/feed_b
INI
# The binary: a checkout under /tmp or /var/tmp is hidden from the unit by its
# PrivateTmp=yes ("Failed to locate executable /tmp/.../build/parties", 203/EXEC), so it
# runs a copy then, from /var/lib (not $D: /run is mounted noexec).
sbin=$PWD/build
case $PWD/ in
/tmp/* | /var/tmp/*)
	sbin=/var/lib/$UNIT-bin
	mkdir -p "$sbin" && install -m 755 build/parties "$sbin/parties" ||
		die "cannot copy build/parties to $sbin"
	;;
esac
sed -e "s|@SBINDIR@|$sbin|g" -e "s|@SYSCONFDIR@/parties/parties.ini|$D/parties.ini|g" -e "s|@SYSCONFDIR@|/etc|g" \
	-e "s|^RuntimeDirectory=.*|RuntimeDirectory=$UNIT|" systemd/parties.service.in \
	>"/run/systemd/system/$UNIT.service"
grep -q '@' "/run/systemd/system/$UNIT.service" && die "unsubstituted @...@ in the unit"
systemctl daemon-reload
systemctl start "$UNIT" || { journalctl -u "$UNIT" --no-pager | tail -20; die "systemctl start failed"; }
echo "started: $(systemctl show -p ActiveState,SubState,StatusText --value "$UNIT" | tr '\n' ' ')"
echo "bounding set: $(grep CapBnd "/proc/$(systemctl show -p MainPID --value "$UNIT")/status")"

wait_log()
{
	local expr=$1 t=$2
	PT_TMP=$D pt_log_wait "$expr" "$t"
}
cpus_now() { grep '"wl"' "$D/log.jsonl" | tail -1 | python3 -c 'import json,sys; r=json.load(sys.stdin); print(" ".join(w["name"] + "=" + str(w["cpus"]) for w in r["wl"]))'; }
wait_log 'w["a"]["cores"] == 1' 15 >/dev/null || { journalctl -u "$UNIT" --no-pager | tail; die "no decision"; }
echo "start: $(cpus_now); root subtree_control '$(root_sc)' (was '$before')"
echo 30000 >"$D/p99_a"
t=$(wait_log "w['a']['cores'] >= 2 and w['a']['cores'] + w['b']['cores'] == $ncpu" 20) ||
	{ tail -3 "$D/log.jsonl"; die "a got no core from b within 20 s"; }
echo "ok: a took a core from b at t=$t s: $(cpus_now)"
grep -q "/$PT_PARENT/a" "/proc/$PID_a/cgroup" || die "a is in $(cat "/proc/$PID_a/cgroup")"

pid1=$(systemctl show -p MainPID --value "$UNIT")
systemctl kill -s KILL "$UNIT"
for _ in $(seq 100); do
	pid2=$(systemctl show -p MainPID --value "$UNIT")
	[ "$pid2" != 0 ] && [ "$pid2" != "$pid1" ] && systemctl is-active --quiet "$UNIT" && break
	sleep 0.2
done
[ "$pid2" != "$pid1" ] && [ "$pid2" != 0 ] || die "the unit was not restarted after SIGKILL"
echo "ok: SIGKILL: restarted (pid $pid1 -> $pid2)"
systemctl stop "$UNIT"
journalctl -u "$UNIT" --no-pager | grep -q "earlier instance\|putting back" ||
	echo "(journal does not show the repair; ExecStopPost may have done it)"
[ -z "$(pt_cgroups_left)" ] || die "cgroups left after systemctl stop: $(pt_cgroups_left)"
grep -q "$PT_PARENT" "/proc/$PID_a/cgroup" && die "a is still in $(cat "/proc/$PID_a/cgroup")"
[ "$(root_sc)" = "$before" ] || die "root subtree_control '$(root_sc)', was '$before'"
$v2 && echo "ok: v2 root cgroup.subtree_control as found: '$before'"
echo PASS
