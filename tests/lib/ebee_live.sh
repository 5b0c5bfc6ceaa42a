# shellcheck shell=bash
# ebee_wait_live PID ERRFILE: wait until the ebee process PID has printed its "probes live"
# line to ERRFILE (0), or has exited without it (1: a path or method refused, an error).
# Sourced by tests/lib/ebeetest.sh and by the scripts that start ebee themselves, with
# ebee_unsupported (tests/lib/ebee_unsupported.sh): whether ebee's stderr says the kernel
# cannot run what was asked (a SKIP), not some other error (a failure).
# The caller empties ERRFILE (: >FILE) before it starts ebee: a background job's `2>FILE`
# truncates only once the job runs, so a reused file can still show the previous ebee's
# line (test_ebee_cli's --path socket case traced nothing that way: its client ran before
# the second ebee was live).
#
# No fixed deadline stands for "soon": loading and attaching the syscall path's programs
# took over 3 s on a busy host (CI, test_ebee_drops) and more in an emulated guest. The
# 120 s are a hang guard only; how fast ebee goes live is test_ebee_cli's business, judged
# against its own CPU time.
ebee_wait_live() {
	local pid=$1 err=$2 end=$((SECONDS + 120))
	while [ $SECONDS -lt $end ]; do
		grep -qs "probes live" "$err" && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.02
	done
	grep -qs "probes live" "$err"
}
. "$(dirname "${BASH_SOURCE[0]}")/ebee_unsupported.sh"
