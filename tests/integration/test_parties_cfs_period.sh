#!/bin/bash
# [resources] cfs_period_us lands in the cgroup: with cfs_period_us = 10000 the workload's
# group holds a 10 ms period (v1 cpu.cfs_period_us, v2 the second field of cpu.max) and
# every quota parties writes is in that period (0.3 cores = 3000 us, and after the policy
# upsizes it, quota x 10000); without the key the period is the kernel's 100 ms, as before
# the key existed; a SIGHUP that changes it is refused (it needs a restart). At exit the
# group is restored. Bounded: about 10 s.
#
# The workload is a sleeping process of the test's own whose client feed reports 5 ms
# against a 1 ms target, so PARTIES upsizes its quota from the free pool.
. "$(dirname "$0")/test_parties_lib.sh"
pt_require build/parties

# cg_period_quota NAME: "PERIOD QUOTA" of the workload's group (quota -1 = unlimited)
cg_period_quota()
{
	local d
	for d in /sys/fs/cgroup/cpu/$PT_PARENT/$1 /sys/fs/cgroup/cpu,cpuacct/$PT_PARENT/$1 \
		/sys/fs/cgroup/$PT_PARENT/$1 /sys/fs/cgroup/unified/$PT_PARENT/$1; do
		if [ -f "$d/cpu.cfs_period_us" ]; then
			echo "$(cat "$d/cpu.cfs_period_us") $(cat "$d/cpu.cfs_quota_us")"
			return 0
		fi
		if [ -f "$d/cpu.max" ]; then
			read -r q p <"$d/cpu.max"
			[ "$q" = max ] && q=-1
			echo "$p $q"
			return 0
		fi
	done
	return 1
}

# run PERIOD_LINE: start parties on a fresh feed workload, with PERIOD_LINE in [resources]
run()
{
	pt_feed_workload 600 5000
	{
		pt_ini_controller 200
		pt_ini_quota 1 "$1"
		cat <<INI
[workload web]
pid = $WEB
target_ms = 1
quota = 0.3
source = client:$PT_TMP/feed
INI
	} >"$PT_TMP/parties.ini"
	rm -f "$PT_TMP/log.jsonl"
	# stopped by the test (SIGTERM); the duration only bounds a test that dies midway. A
	# run that ended by itself would have restored the group before it was read (in the
	# 6.12 guest this test took 97 s, past a 30 s duration: the group read empty).
	pt_parties -c "$PT_TMP/parties.ini" --duration 600
	pt_wait_started
}

# --- 1. cfs_period_us = 10000 --------------------------------------------------------------
run "cfs_period_us = 10000"
pt_until 5 cg_period_quota web >/dev/null || die "no cpu group for web under $PT_PARENT"
read -r per quo <<<"$(cg_period_quota web)"
echo "with cfs_period_us = 10000: period $per us, quota $quo us"
[ "$per" = 10000 ] || die "cfs_period_us = 10000 but the group's period is $per us"
# the first record may already carry an upsize: the quota is the log's, in 10 ms
t=$(pt_log_wait 'w["web"]["quota"] >= 0.5' 10) ||
	{ tail -3 "$PT_TMP/log.jsonl"; die "web's quota never grew past 0.5 (feed 5 ms > 1 ms)"; }
# The log's last record first, then the group: the group can then be at most one decision
# ahead (within one step, 1000 us). While upsizes go on a busy machine can let several
# decisions pass between the two reads, so they are read again until they agree (10 s).
log_quota() {
	python3 -c "
import json
r = [json.loads(l) for l in open('$PT_TMP/log.jsonl') if l.endswith('}\n')][-1]
print(round([w for w in r['wl'] if w['name'] == 'web'][0]['quota'] * 10000))"
}
agree() {
	want=$(log_quota)
	read -r per quo <<<"$(cg_period_quota web)"
	[ "$quo" -ge $((want - 1000)) ] && [ "$quo" -le $((want + 1000)) ]
}
agreed=1
pt_until 30 agree || agreed=0
kill -0 "$PT_PARTIES" 2>/dev/null || { cat "$PT_TMP/parties.err"; die "parties ended before its group was read"; }
echo "after upsizes (t=$t s): period $per us, quota $quo us, the log's last quota x 10 ms = $want us"
[ "$per" = 10000 ] || die "after an upsize the period is $per us, not 10000"
[ "$agreed" = 1 ] ||
	die "the group's quota $quo us is not the log's quota in a 10 ms period ($want us)"
[ "$quo" -ge 5000 ] || die "quota $quo us per 10 ms is below 0.5 cores"
# a new period needs a restart (every group would have to be rewritten): SIGHUP refuses it
sed -i 's/^cfs_period_us = 10000$/cfs_period_us = 20000/' "$PT_TMP/parties.ini"
kill -HUP "$PT_PARTIES"
pt_until 5 grep -q "\[resources\] changed: that needs a restart" "$PT_TMP/parties.err" ||
	{ cat "$PT_TMP/parties.err"; die "a changed cfs_period_us was not refused on SIGHUP"; }
read -r per quo <<<"$(cg_period_quota web)"
[ "$per" = 10000 ] || die "after a refused reload the period is $per us, not 10000"
echo "SIGHUP with cfs_period_us = 20000: refused (needs a restart), the period stays 10000 us"
pt_stop_restored TERM
kill "$WEB" 2>/dev/null

# --- 2. no key: the kernel's default period, as before ------------------------------------
run ""
pt_until 5 cg_period_quota web >/dev/null || die "no cpu group for web under $PT_PARENT"
read -r per quo <<<"$(cg_period_quota web)"
echo "without cfs_period_us: period $per us, quota $quo us"
[ "$per" = 100000 ] || die "without cfs_period_us the period is $per us, not 100000"
[ "$quo" -ge 30000 ] || die "quota $quo us per 100 ms is below the initial 0.3 cores"
pt_stop_restored TERM

# --- 3. out of the kernel's range: refused at parse, nothing created ----------------------
printf '[controller]\ncgroup_parent = %s\n[resources]\nquota = true\ncfs_period_us = 500\n[workload a]\npid = %s\ntarget_ms = 1\n' \
	"$PT_PARENT" $$ >"$PT_TMP/bad.ini"
out=$(build/parties --check-config "$PT_TMP/bad.ini" 2>&1)
rc=$?
[ $rc -ne 0 ] || die "cfs_period_us = 500 accepted: $out"
grep -q "cfs_period_us: '500' is not a whole number in 1000..1000000" <<<"$out" ||
	die "unexpected message for cfs_period_us = 500: $out"
[ -z "$(pt_cgroups_left)" ] || die "a refused config left cgroups: $(pt_cgroups_left)"
echo "PASS"
