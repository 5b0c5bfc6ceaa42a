# shellcheck shell=bash
# The suite's closing line: written by tests/run.sh, summed per guest by tests/vm/run.sh and
# for the host and the lane by tests/suite.sh (sourced by the three):
#
#   N passed, N failed, N skipped[; SKIP lines in passing tests: N][; passed only on a retry: NAME, ...]
#
# "skipped" counts what skipped as a whole: a shell test that exited 77, a cmocka case that
# skipped, a program of TEST_SKIP_LIST. A test that passed may still have left cases out
# (a path the kernel refuses, a tool missing here): each "SKIP..." line it printed (for
# cmocka, inside a case that passed) is counted after them, so a pass that ran less than it
# could is visible. A program that failed and passed on its retry (TEST_RETRY=1, the VM
# lane's guests) is named: a finding to fix, not a pass to forget.
SUMMARY_RE='^([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped(; SKIP lines in passing tests: ([0-9]+))?(; passed only on a retry: (.+))?$'

# summary_line P F S K RETRIED: the closing line; RETRIED the names, ", " between them, or "".
summary_line() {
	local l="$1 passed, $2 failed, $3 skipped"
	[ "$4" -gt 0 ] && l="$l; SKIP lines in passing tests: $4"
	[ -n "$5" ] && l="$l; passed only on a retry: $5"
	echo "$l"
}

# summary_parse LINE: 0 with SUM_P SUM_F SUM_S SUM_K SUM_RETRIED set if LINE is a closing
# line, else 1.
summary_parse() {
	[[ $1 =~ $SUMMARY_RE ]] || return 1
	# shellcheck disable=SC2034 # the caller's
	SUM_P=${BASH_REMATCH[1]} SUM_F=${BASH_REMATCH[2]} SUM_S=${BASH_REMATCH[3]} \
		SUM_K=${BASH_REMATCH[5]:-0} SUM_RETRIED=${BASH_REMATCH[7]}
}

# summary_last FILE: the last closing line in FILE (nothing if there is none).
summary_last() { grep -E "$SUMMARY_RE" "$1" 2>/dev/null | tail -1; }

# summary_join A B: the two ", " lists as one.
summary_join() { if [ -n "$1" ] && [ -n "$2" ]; then echo "$1, $2"; else echo "$1$2"; fi; }
