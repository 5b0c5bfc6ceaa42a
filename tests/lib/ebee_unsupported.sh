# shellcheck shell=bash
# ebee_unsupported FILE: prints the line of FILE (ebee's or parties' stderr) in which ebee
# says this kernel cannot run the path or attach method asked for, and returns 0; returns 1
# when FILE has none. Only those refusals (tests/lib/ebee_unsupported.re) make a test SKIP:
# any other error of ebee's is a failure. Sourced by tests/lib/ebee_live.sh (so by every
# ebee script) and tests/integration/test_parties_lib.sh.
ebee_unsupported() {
	local re
	re=$(dirname "${BASH_SOURCE[0]}")/ebee_unsupported.re
	[ -r "$re" ] || { echo "FAIL: cannot read $re"; return 1; }
	grep -E -m1 -f <(grep -v -E '^(#|$)' "$re") "$1"
}
