# shellcheck shell=bash
# Common start of the ebee integration scripts (sourced): the repository as working
# directory, root and a built tree required, a temporary directory $tmp, processes to stop
# in the array pids, and fail MSG. The EXIT trap stops those processes and removes $tmp.
# start_cpr (a test server) and ebee_on/ebee_off (the tracer) are below.
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
[ -x build/ebee ] && [ -x build/fixtures/cpr_server ] || { echo "FAIL: build first (make all)"; exit 1; }
tmp=$(mktemp -d /tmp/ebee-test.XXXXXX)
pids=()
# EBEE_TEST_KEEP=1 (tests/run.sh sets it): a failed test leaves $tmp (ebee's JSON and
# stderr, the clients' output), says where, and prints the end of each ebee's stderr and
# its last JSON line, so that a failure in a guest or in CI can be read from the log alone.
ebeetest_cleanup() {
	local rc=$? f
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	if [ "${EBEE_TEST_KEEP:-0}" = 1 ] && [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
		for f in "$tmp"/*.err; do
			[ -s "$f" ] && { echo "--- $f (last 15 lines)"; tail -15 "$f"; }
		done
		for f in "$tmp"/*.json; do
			[ -s "$f" ] && { echo "--- $f (last line)"; tail -1 "$f"; }
		done
		echo "kept: $tmp"
		return
	fi
	rm -rf "$tmp"
}
trap ebeetest_cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
. tests/lib/ebee_live.sh

# start_cpr NAME [CPR_SERVER ARGS...]: a cpr_server in the background, stopped on exit;
# sets NAME_pid and NAME_port (empty if it did not start within 5 s). Its own timeout is
# only a net for a killed test: 60 s ended the upstream of test_ebee_frame_tls.sh's later
# cases when the test ran 82 s in a guest (every POST a 502).
start_cpr() {
	local name=$1
	shift
	build/fixtures/cpr_server --ready-file "$tmp/$name.ready" --timeout 900 "$@" >/dev/null 2>&1 &
	pids+=($!)
	eval "${name}_pid=$!"
	for _ in $(seq 100); do [ -s "$tmp/$name.ready" ] && break; sleep 0.05; done
	eval "${name}_port=$(cat "$tmp/$name.ready" 2>/dev/null)"
}

# ebee_on NAME PID [ARGS...]: ebee traces PID (build/ebee trace --json ARGS) into
# $tmp/NAME.json, its stderr in NAME.err, once its probes are live; ebee_off NAME stops it
# (SIGINT: its last JSON line is the whole run) and fails on a non-zero exit.
ebee_on() {
	local name=$1 pid=$2
	shift 2
	: >"$tmp/$name.err"
	build/ebee trace --pid "$pid" --json "$@" >"$tmp/$name.json" 2>"$tmp/$name.err" &
	epid=$!
	pids+=("$epid")
	ebee_wait_live "$epid" "$tmp/$name.err" || fail "ebee did not start: $(cat "$tmp/$name.err")"
}
ebee_off() {
	sleep 0.3 # the last records reach ebee's consumer
	kill -INT "$epid"
	wait "$epid" || fail "ebee exited non-zero: $(cat "$tmp/$1.err")"
}
