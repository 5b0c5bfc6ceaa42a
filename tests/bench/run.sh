#!/bin/bash
# Runs every benchmark in turn, each under a header, and prints what they print.
#
#   tests/bench/run.sh            (what `make bench` calls, after building them)
#
# Benchmarks: the programs build/tests/bench/bench_* (from tests/bench/bench_*.c)
# and the scripts tests/bench/bench_*.sh. Each is bounded in time (BENCH_TIMEOUT
# seconds, default 900: bench_ebee_overhead.sh took 450 s on a quiet host, and
# bench_ebee_machine.sh 12 minutes on a host that other work kept fully busy). A
# benchmark that exits non-zero is listed at the end and makes this script fail;
# exit code 77 means skipped (print "SKIP: reason").
set -u
cd "$(dirname "$0")/../.."
timeout_s=${BENCH_TIMEOUT:-900}
failed=() skipped=() n=0

benches=()
for b in build/tests/bench/bench_* tests/bench/bench_*.sh; do
	case $b in *.d | *.o) continue ;; esac
	[ -f "$b" ] && [ -x "$b" ] && benches+=("$b")
done
if [ ${#benches[@]} -eq 0 ]; then
	echo "no benchmarks found (build them with: make tests-build)"
	exit 1
fi

for b in "${benches[@]}"; do
	name=$(basename "$b")
	n=$((n + 1))
	echo "================================================================ $name"
	start=$EPOCHREALTIME
	timeout -k 10 "$timeout_s" "$b"
	rc=$?
	secs=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
	case $rc in
	0) echo "--- $name: done in ${secs}s" ;;
	77) echo "--- $name: skipped"; skipped+=("$name") ;;
	124) echo "--- $name: timed out after ${timeout_s}s"; failed+=("$name") ;;
	*) echo "--- $name: failed (exit $rc)"; failed+=("$name") ;;
	esac
	echo
done

echo "$n benchmarks: $((n - ${#failed[@]} - ${#skipped[@]})) ran, ${#failed[@]} failed, ${#skipped[@]} skipped"
[ ${#failed[@]} -gt 0 ] && echo "failed: ${failed[*]}"
[ ${#failed[@]} -eq 0 ]
