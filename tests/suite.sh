#!/bin/bash
# The whole suite, what `make test` (so CI) runs: the host's sanitizer pass and suite in the
# foreground and, beside them (at nice VM_NICE, default 0), the VM lane (tests/vm/run.sh:
# Debian 12's 6.1 and bookworm's 6.12 guests under qemu, cgroup v2 under systemd, the
# integration suite inside them). The guests share the CPUs with the host tests, which see
# a busy machine, as they are written to pass on (make test-busy). At the end: the lane's
# lines (per guest: kernel, counts, what passed only on a retry, time) and one closing
# line summing the host and the guests, "N passed, N failed, N skipped". Exit 0 iff
# nothing failed anywhere.
#
#   tests/suite.sh [--no-vm]
#
# --no-vm (or VM_LANE=0): the host alone, as `make test-host`. The lane's own output is
# in build/test-logs/vm-lane.log while it runs; each guest's logs in build/test-logs/vm-K/.
set -u
cd "$(dirname "$0")/.."
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
tests/run.sh all || hrc=1
host=$(tail -1 "$logs/summary" 2>/dev/null)
echo "suite: host done in $((SECONDS - t0)) s"

P=0 F=0 S=0
nfailed() { [[ "$1" =~ ([0-9]+)\ failed ]] && echo "${BASH_REMATCH[1]}" || echo 0; }
add() { # "N passed, N failed, N skipped" from a line, or a failure when there is none
	if [[ "$1" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed,\ ([0-9]+)\ skipped$ ]]; then
		P=$((P + BASH_REMATCH[1])) F=$((F + BASH_REMATCH[2])) S=$((S + BASH_REMATCH[3]))
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
	lline=$(grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$logs/vm-lane.log" | tail -1)
	add "$lline" "the VM lane"
	# a lane that exits non-zero with no failure counted still failed
	[ "$lrc" = 0 ] || [ -z "$lline" ] || [ "$(nfailed "$lline")" -gt 0 ] || F=$((F + 1))
	echo "host: $host"
	echo "suite: $((SECONDS - t0)) s in all"
fi
echo "$P passed, $F failed, $S skipped"
[ "$F" -eq 0 ]
