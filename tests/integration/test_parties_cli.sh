#!/bin/bash
# parties command line: --help tells the truth and exits 0; bad configs stop start-up with
# file:line and exit 2 before anything is changed; --dry-run changes nothing.
. "$(dirname "$0")/test_parties_lib.sh"
pt_require build/parties

build/parties --help >"$PT_TMP/help" || die "--help exited non-zero"
for w in --dry-run --duration --log --cleanup configs/example.ini parties static; do
	grep -q -- "$w" "$PT_TMP/help" || die "--help does not mention $w"
done
build/parties >/dev/null 2>&1
[ $? = 2 ] || die "no -c: want exit 2"
for d in 0 -1 inf nan 1e30 5x; do
	build/parties -c configs/example.ini --duration "$d" >/dev/null 2>&1
	[ $? = 2 ] || die "--duration $d: want exit 2"
done

bad()
{
	local want=$1
	build/parties -c "$PT_TMP/bad.ini" --duration 1 2>"$PT_TMP/bad.err"
	local rc=$?
	[ "$rc" = 2 ] || { cat "$PT_TMP/bad.err"; die "bad config: exit $rc, want 2"; }
	grep -qF "$want" "$PT_TMP/bad.err" || { cat "$PT_TMP/bad.err"; die "want '$want'"; }
	[ -z "$(pt_cgroups_left)" ] || die "a bad config changed the machine: $(pt_cgroups_left)"
}
printf '[controller]\ncgroup_parent = %s\n[workload a]\npid = %d\ntarget_ms = 0\n' \
	"$PT_PARENT" $$ >"$PT_TMP/bad.ini"
bad "$PT_TMP/bad.ini:5: target_ms must be > 0, not 0"
printf '[controller]\ncgroup_parent = %s\n[workload a]\npid = %d\ntarget_ms = 1\n[policy parties]\nslack_up = 0.5\n' \
	"$PT_PARENT" $$ >"$PT_TMP/bad.ini"
bad "policy parties: slack_up (0.5) must be below slack_down (0.2)"
printf '[controller]\ncgroup_parent = %s\n[workload a]\ntarget_ms = 1\nsource = client:%s/nope\ncommand = sleep 5\n' \
	"$PT_PARENT" "$PT_TMP" >"$PT_TMP/bad.ini"
bad "$PT_TMP/bad.ini:5: workload a: feed file $PT_TMP/nope does not exist"

# dry run: a client-fed workload, no cgroup appears, exit 0; a command workload is not
# started (and said to be unobserved), the config's log is not written
: >"$PT_TMP/feed"
sleep 30 &
PT_PIDS+=($!)
printf '[controller]\ninterval_ms = 100\ncgroup_parent = %s\nstate_dir = %s\nlog = %s\n[resources]\nsmt = shared\ncpus = 0-1\nquota = true\n[workload a]\npid = %d\ntarget_ms = 1\ncores = 1\nsource = client:%s\n[workload b]\ncommand = touch %s\ntarget_ms = 1\n' \
	"$PT_PARENT" "$PT_TMP/state" "$PT_TMP/cfg.jsonl" "$!" "$PT_TMP/feed" "$PT_TMP/launched" >"$PT_TMP/dry.ini"
# The feed lasts the dry run, however long parties takes to start: the 1.5 s of
# --duration count from its first interval, and a feed of a fixed 1.5 s, started before
# it, was stale by then under emulation (the feed's age is its file's mtime).
(for i in $(seq 1 600); do echo "$((i * 100)) 5000 100" >>"$PT_TMP/feed"; sleep 0.1; done) &
feeder=$!
PT_PIDS+=($feeder)
build/parties -c "$PT_TMP/dry.ini" --dry-run --duration 1.5 --log "$PT_TMP/dry.jsonl" 2>"$PT_TMP/dry.err" ||
	{ cat "$PT_TMP/dry.err"; die "dry run failed"; }
kill $feeder 2>/dev/null
[ -z "$(pt_cgroups_left)" ] || die "--dry-run created cgroups: $(pt_cgroups_left)"
grep -q '"action":"up cores"' "$PT_TMP/dry.jsonl" || die "dry run: no upsize logged for a violating workload"
grep -q '"p99_client_us":5000.0' "$PT_TMP/dry.jsonl" || die "dry run: client p99 not logged"
grep -q "would write\|would set" "$PT_TMP/dry.err" || die "dry run: no 'would write/set' in its output"
[ ! -e "$PT_TMP/launched" ] || die "dry run: started a workload command"
[ ! -e "$PT_TMP/cfg.jsonl" ] || die "dry run: wrote the config's log"
[ ! -e "$PT_TMP/state" ] || die "dry run: created the state directory"
grep -q "workload b not started.*not observed" "$PT_TMP/dry.err" || die "dry run: does not say b is unobserved"
echo "PASS"
