#!/bin/bash
# The whole suite, what `make test` (so CI) runs: the host's sanitizer pass and suite in the
# foreground and, beside them (at nice VM_NICE, default 0), the VM lane (tests/vm/run.sh:
# Debian 12's 6.1 and bookworm's 6.12 guests under qemu, cgroup v2 under systemd, the
# integration suite inside them). The guests share the CPUs with the host tests, which see
# a busy machine, as they are written to pass on (make test-busy). At the end: the lane's
# lines (per guest: kernel, time, counts, what passed only on a retry, the SKIP lines of
# tests that passed) and one closing line summing the host and the guests, "N passed, N
# failed, N skipped", with "; SKIP lines in passing tests: N" and "; passed only on a
# retry: NAME (vm-K), ..." when there are any (tests/lib/summary.sh). Exit 0 iff nothing
# failed anywhere.
#
#   tests/suite.sh [--no-vm]
#
# With the lane, the host tests whose claim is what CPUs do (tests/quiet.list: more CPU
# lowers a CPU-bound server's p99, the de-confounded Figure 11 study's calibration) run after
# the guests have stopped, on CPUs the two qemu threads no longer take: beside them, the
# server once got a median 0.99 of the 2 CPUs it was given, both CPUs busy.
#
# --no-vm (or VM_LANE=0): the host alone, as `make test-host`. The lane's own output is
# in build/test-logs/vm-lane.log while it runs; each guest's logs in build/test-logs/vm-K/.
set -u
cd "$(dirname "$0")/.."
. tests/lib/summary.sh
lane=${VM_LANE:-1}
case ${1:-} in
--no-vm) lane=0 ;;
"") ;;
*) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
esac
logs=build/test-logs
mkdir -p "$logs"
t0=$SECONDS

lpid=
stop_lane() { # on every exit path: the lane (and through its own trap, its guests) ends
	[ -n "$lpid" ] && kill -TERM "$lpid" 2>/dev/null && wait "$lpid" 2>/dev/null
	lpid=
}
trap stop_lane EXIT
trap 'exit 130' INT TERM

if [ "$lane" = 1 ]; then
	# The host's closing line is only known at the end: the lane reports alone, and the
	# sum is made here.
	# Beside the host suite a guest runs slower than alone (1176 s alone for 6.12 at the
	# last quiet run): its bound, a stall guard only, is 45 minutes here.
	# At the host suite's own priority (VM_NICE, default 0): the two guests are single
	# threads of emulation, about 76 % busy alone, and the host suite keeps about one CPU
	# busy. At nice 19 the guests got only what it left, half a CPU each, and finished
	# about 1 000 s after it (run 27: host 1 004 s, lane 2 024 s); at equal weights each of
	# the three gets about two thirds of a CPU. Above it (VM_NICE=-5, run 31) the lane took
	# the same time (1 422 s against 1 413 s): the guests lose about a fifth of their pace
	# beside the host suite whatever their priority (tests/vm/README.md).
	VM_TIMEOUT=${VM_TIMEOUT:-2700} nice -n "${VM_NICE:-0}" tests/vm/run.sh >"$logs/vm-lane.log" 2>&1 &
	lpid=$!
	echo "suite: the VM lane runs beside the host suite at nice ${VM_NICE:-0} (pid $lpid, $logs/vm-lane.log)"
fi

hrc=0
make --no-print-directory asan || hrc=1
quiet=
[ "$lane" = 1 ] && quiet=$(sed 's/#.*//' tests/quiet.list | xargs)
TEST_EXCLUDE=$quiet tests/run.sh all || hrc=1
host=$(tail -1 "$logs/summary" 2>/dev/null)
echo "suite: host done in $((SECONDS - t0)) s${quiet:+ (but for $quiet, after the lane)}"

P=0 F=0 S=0 K=0 R=
nfailed() { [[ "$1" =~ ([0-9]+)\ failed ]] && echo "${BASH_REMATCH[1]}" || echo 0; }
add() { # the counts of a closing line, or a failure when there is none
	if summary_parse "$1"; then
		P=$((P + SUM_P)) F=$((F + SUM_F)) S=$((S + SUM_S)) K=$((K + SUM_K))
		R=$(summary_join "$R" "$SUM_RETRIED")
	else
		echo "suite: FAIL: $2 gave no closing line"
		F=$((F + 1))
	fi
}
add "$host" "the host suite"
# the sanitizer pass has no counts of its own: a failure with none counted is one
[ "$hrc" = 0 ] || [ "$(nfailed "$host")" -gt 0 ] || F=$((F + 1))

if [ "$lane" = 1 ]; then
	echo "suite: waiting for the VM lane"
	wait "$lpid"
	lrc=$?
	lpid=
	echo
	echo "--- VM lane ($logs/vm-lane.log)"
	grep -E '^(vm[-: ]|vm lane:)' "$logs/vm-lane.log"
	lline=$(summary_last "$logs/vm-lane.log")
	add "$lline" "the VM lane"
	# a lane that exits non-zero with no failure counted still failed
	[ "$lrc" = 0 ] || [ -z "$lline" ] || [ "$(nfailed "$lline")" -gt 0 ] || F=$((F + 1))
	if [ -n "$quiet" ]; then
		echo
		echo "--- host, after the lane: $quiet"
		t1=$SECONDS
		qrc=0
		# shellcheck disable=SC2086 # the list's names, one word each
		tests/run.sh integration $quiet || qrc=1
		qline=$(tail -1 "$logs/summary" 2>/dev/null)
		echo "suite: after the lane, $((SECONDS - t1)) s: $qline"
		add "$qline" "the host's tests after the lane"
		[ "$qrc" = 0 ] || [ "$(nfailed "$qline")" -gt 0 ] || F=$((F + 1))
		host="$host; after the lane: $qline"
	fi
	echo "host: $host"
	echo "suite: $((SECONDS - t0)) s in all"
fi
summary_line "$P" "$F" "$S" "$K" "$R"
[ "$F" -eq 0 ]
