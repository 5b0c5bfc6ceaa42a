#!/bin/bash
# Runs the test programs and prints one closing line: "N passed, N failed, N skipped", then
# when there are any "; SKIP lines in passing tests: N" and "; passed only on a retry:
# NAME, ..." (tests/lib/summary.sh).
#
#   tests/run.sh unit|integration|all [NAME...]
#
# NAMEs (test_x, test_y.sh) run only those programs. TEST_SKIP_LIST names a file of
# "NAME reason..." lines: those programs are not run and count as skipped with that reason
# (the VM lane uses it for what emulation cannot afford), never silently. TEST_EXCLUDE
# names programs this run leaves to another (tests/suite.sh runs those after the guests
# stop competing for the CPUs): not run, not counted.
#
# Unit tests: the programs built from tests/unit/test_*.c (the core) and
# tests/experiments/test_*.c (the experiments' code), cmocka, no root. Found from their
# sources, so a program left in build/ by a test that moved or went is not run.
# Integration: build/tests/integration/test_* (cmocka) and tests/integration/test_*.sh,
# run as root. Each program is bounded in time (TEST_TIMEOUT seconds, default 300).
# cmocka programs are counted per test case from their output; shell tests by exit
# code: 0 pass, 77 skip (they print "SKIP: reason"), anything else fail. A test that passed
# but printed SKIP lines (a case it left out: a path the kernel refuses, a tool missing) has
# them counted and listed before the closing line; for cmocka, those inside cases that passed.
set -u
cd "$(dirname "$0")/.."
. tests/lib/summary.sh
what=${1:-all}
[ $# -gt 0 ] && shift
only=" $* "
timeout_s=${TEST_TIMEOUT:-300}
export CMOCKA_MESSAGE_OUTPUT=stdout
# A failed ebee script prints the end of its ebee logs and keeps its files (tests/lib/ebeetest.sh).
export EBEE_TEST_KEEP=${EBEE_TEST_KEEP:-1}
pass=0 fail=0 skip=0 inner=0
failed_names=()
inner_lines=() # "NAME: SKIP..." of the tests that passed, once each
logdir=build/test-logs
mkdir -p "$logdir"

# TEST_RETRY=1 (the VM lane's guests, where emulation stretches every time bound): a
# program that fails runs once more at once and the second run's counts are the ones
# counted; the first run's log is kept as NAME.log.first and the closing lines say which
# programs passed only on a retry. The host suite never retries.
retried=() passed_retry=()
# inner_skips LOG cmocka|shell: the SKIP lines of a test that passed: for a cmocka program,
# those printed inside the cases that passed ([ RUN ] to [ OK ]), for a shell test all.
inner_skips() {
	if [ "$2" = cmocka ]; then
		awk '/^\[       OK \]/ { for (i = 0; i < n; i++) print l[i]; n = 0; next }
		     /^\[/ { n = 0; next }
		     /^SKIP/ { l[n++] = $0 }' "$1"
	else
		grep '^SKIP' "$1"
	fi
}
run_one() {
	local prog=$1 again=${2:-} name log rc p f s why t l k=0 lines=
	local p0=$pass f0=$fail s0=$skip i0=$inner n0=${#inner_lines[@]}
	name=$(basename "$prog")
	log=$logdir/$name.log
	[ "$only" = "  " ] || [[ "$only" == *" $name "* ]] || return 0
	[[ " ${TEST_EXCLUDE:-} " != *" $name "* ]] || return 0
	echo "=== $name${again:+ (retry)}"
	if [ -n "${TEST_SKIP_LIST:-}" ] && why=$(awk -v n="$name" '$1 == n { $1 = ""; print substr($0, 2); f = 1 } END { exit !f }' "$TEST_SKIP_LIST"); then
		echo "SKIP: $why (not run)" | tee "$log"
		skip=$((skip + 1))
		return 0
	fi
	t=$SECONDS
	timeout -k 10 "$timeout_s" "$prog" >"$log" 2>&1
	rc=$?
	# As root, a stray "-o /dev/null" to a linker or a rename onto it replaces the null
	# device with a file, and every later test reading it breaks (seen once on this host,
	# its cause not found): say which test did it, and put the device back.
	if [ ! -c /dev/null ]; then
		echo "FAIL: /dev/null is no longer the null device after $name: restored" >>"$log"
		rm -f /dev/null && mknod -m 666 /dev/null c 1 3
		rc=1
	fi
	cat "$log"
	echo "--- $name: $((SECONDS - t)) s"
	if grep -q '^\[==========\]' "$log"; then
		p=$(grep -c '^\[       OK \]' "$log")
		# cmocka names each failed/skipped test twice (inline, then in a list)
		f=$(grep -E '^\[  FAILED  \] ' "$log" | grep -v ' test(s)' | sort -u | wc -l)
		s=$(grep -E '^\[  SKIPPED \] ' "$log" | grep -v ' test(s)' | sort -u | wc -l)
		if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
		pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
		[ "$f" -gt 0 ] && failed_names+=("$name")
		lines=$(inner_skips "$log" cmocka)
	elif [ "$rc" -eq 0 ]; then
		pass=$((pass + 1))
		lines=$(inner_skips "$log" shell)
	elif [ "$rc" -eq 77 ]; then
		skip=$((skip + 1))
	else
		[ "$rc" -eq 124 ] && echo "$name: timed out after ${timeout_s}s"
		fail=$((fail + 1))
		failed_names+=("$name")
	fi
	if [ -n "$lines" ]; then
		k=$(echo "$lines" | wc -l)
		inner=$((inner + k))
		echo "--- $name: passed with $k SKIP line(s)"
		# each once, with how often (a cmocka group runs once per path)
		while read -r l; do
			inner_lines+=("$name: $l")
		done < <(echo "$lines" | sort | uniq -c |
			awk '{ c = $1; sub(/^ *[0-9]+ /, ""); print $0 (c > 1 ? " (x" c ")" : "") }')
	fi
	if [ "$fail" -gt "$f0" ] && [ "${TEST_RETRY:-0}" = 1 ] && [ -z "$again" ]; then
		pass=$p0 fail=$f0 skip=$s0 inner=$i0
		inner_lines=("${inner_lines[@]:0:n0}")
		unset 'failed_names[-1]'
		mv "$log" "$log.first"
		echo "RETRY: $name failed; once more (the first run's log: $log.first)"
		run_one "$prog" again
		if [ "$fail" -gt "$f0" ]; then
			retried+=("$name (failed again)")
		else
			retried+=("$name (passed on the retry)")
			passed_retry+=("$name")
		fi
	fi
}

progs=()
if [ "$what" = unit ] || [ "$what" = all ]; then
	# TEST_BUILD: another build tree (make asan runs build/asan's unit tests)
	for src in tests/unit/test_*.c tests/experiments/test_*.c; do
		t=${TEST_BUILD:-build}/${src%.c}
		[ -x "$t" ] && progs+=("$t")
	done
fi
if [ "$what" = integration ] || [ "$what" = all ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "SKIP: integration tests need root"
		skip=$((skip + 1))
	else
		for t in build/tests/integration/test_* tests/integration/test_*.sh; do
			[ -x "$t" ] && progs+=("$t")
		done
	fi
fi
# cgroup v2: the root's subtree_control must read the same after the tests as before
root_sc=
# The test parents (not parties.service's): v1 below each hierarchy, v2 below the one root.
test_cgroups() {
	ls -d /sys/fs/cgroup/*/ebee-test* /sys/fs/cgroup/*/parties-* /sys/fs/cgroup/ebee-test* \
		/sys/fs/cgroup/parties-* 2>/dev/null | sort
}
cg_before=$(test_cgroups)
[ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ] && root_sc=$(cat /sys/fs/cgroup/cgroup.subtree_control)
for t in "${progs[@]}"; do run_one "$t"; done
# a NAME that matches no program is a mistake, not a pass
for n in $only; do
	found=0
	for t in "${progs[@]}"; do [ "$(basename "$t")" = "$n" ] && found=1; done
	if [ "$found" -eq 0 ]; then
		echo "FAIL: no test program named $n"
		fail=$((fail + 1))
		failed_names+=("$n")
	fi
done

# Leftovers are failures too: every test must clean up after itself.
if [ "$(id -u)" -eq 0 ] && [ "$what" != unit ]; then
	# The machine may be shared: a test group of another checkout's run that is under way
	# now goes away within its test, one of this run stays. So a group counts when it is
	# still there after 30 s, and was not there before this run began (then it is an
	# earlier run's, reported, not counted).
	left=$(test_cgroups)
	for _ in $(seq 15); do
		[ -z "$left" ] && break
		sleep 2
		left=$(comm -12 <(echo "$left") <(test_cgroups))
	done
	old_left=$(comm -12 <(echo "$left") <(echo "$cg_before"))
	left=$(comm -23 <(echo "$left") <(echo "$cg_before"))
	[ -n "$old_left" ] && echo "WARN: test cgroups there before this run began, not counted:" $old_left
	if [ -n "$left" ]; then
		echo "FAIL: cgroups left behind: $left"
		fail=$((fail + 1))
		failed_names+=("leftover-cgroups")
	fi
	if [ -n "$root_sc" ] && [ "$(cat /sys/fs/cgroup/cgroup.subtree_control)" != "$root_sc" ]; then
		echo "FAIL: the root's cgroup.subtree_control was '$root_sc', is '$(cat /sys/fs/cgroup/cgroup.subtree_control)'"
		fail=$((fail + 1))
		failed_names+=("leftover-subtree_control")
	fi
	# ebee's programs (by name) still loaded, or test servers still running. The machine
	# may be shared: a program or process is this run's unless everything that holds it
	# runs from another directory (another checkout's tests, a user's ebee); one nobody
	# holds (a pinned or leaked link) counts.
	# The kernel frees a program in deferred work after its last holder exits: on a busy
	# machine that took over 0.5 s (2 counted after test_parties_cpu_bound.sh beside
	# BUSY_PROFILE=heavy, none a moment later), so the count is taken again, up to 5 s.
	for _ in $(seq 10); do
		sleep 0.5
		progs=$(bpftool prog show -j 2>/dev/null | python3 -c '
import glob, json, os, sys
names = {"exit_accept4", "enter_close", "on_proc_fork", "grpc_stream_new"}
ids = {p["id"] for p in json.load(sys.stdin) if p.get("name") in names}
holders = {}
for f in glob.glob("/proc/[0-9]*/fdinfo/*"):
    try:
        for line in open(f):
            if line.startswith("prog_id:") and int(line.split()[1]) in ids:
                holders.setdefault(int(line.split()[1]), set()).add(f.split("/")[2])
    except (OSError, ValueError):
        pass
def cwd(pid):
    try:
        return os.readlink("/proc/%s/cwd" % pid)
    except OSError:
        return None
here = os.getcwd()
print(sum(1 for i in ids if not holders.get(i) or any(cwd(p) == here for p in holders[i])))
' 2>/dev/null)
		[ "${progs:-0}" -gt 0 ] || break
	done
	if [ "${progs:-0}" -gt 0 ]; then
		echo "FAIL: $progs ebee BPF programs left loaded"
		fail=$((fail + 1))
		failed_names+=("leftover-bpf")
	fi
	procs=$(for p in $(pgrep -f 'build/fixtures/|/tmp/ebee-test|parties-test|build/loadgen'); do
		[ "$p" != $$ ] && [ "$(readlink "/proc/$p/cwd" 2>/dev/null)" = "$PWD" ] &&
			ps -o pid=,args= -p "$p"
	done)
	if [ -n "$procs" ]; then
		echo "FAIL: test processes left running:"
		echo "$procs"
		fail=$((fail + 1))
		failed_names+=("leftover-processes")
	fi
fi

echo
[ ${#failed_names[@]} -gt 0 ] && echo "failed: ${failed_names[*]}"
[ ${#retried[@]} -gt 0 ] && echo "retried: $(printf '%s; ' "${retried[@]}" | sed 's/; $//')"
if [ ${#inner_lines[@]} -gt 0 ]; then
	echo "SKIP lines in passing tests ($inner):"
	printf '  %s\n' "${inner_lines[@]}"
fi
# kept for `make test`, whose closing line adds the VM lane's guests to it
summary_line "$pass" "$fail" "$skip" "$inner" \
	"$(printf '%s, ' "${passed_retry[@]}" | sed 's/, $//')" | tee "$logdir/summary"
[ "$fail" -eq 0 ]
