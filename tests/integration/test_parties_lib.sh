# shellcheck shell=bash
# Helpers for the parties integration tests (sourced, not run: no exec bit).
#
# The tests' configs say `smt = shared`: they move cpus (`cpus = 0-1`, one workload on
# cpu 0), which on an SMT machine (the VM lane's 2x2x2 guest, where cpus 0-1 are one
# core's two threads) the default `smt = whole` refuses as a split core.
# test_parties_topology.sh tests whole cores.
#
# Every test: root, built binaries, a throwaway cgroup parent parties-test-<pid>,
# a temporary directory, and a cleanup trap that stops what it started, repairs
# the machine with `parties --cleanup` if a cgroup is left, and removes files.

cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
# shellcheck source=../lib/servers.sh
. tests/lib/servers.sh
# shellcheck source=../lib/ebee_unsupported.sh
. tests/lib/ebee_unsupported.sh

PT_PARENT=parties-test-$$
PT_TMP=$(mktemp -d /tmp/parties-test.XXXXXX)
PT_PIDS=()
PT_PARTIES=

skip() { echo "SKIP: $*"; exit 77; }
die() { echo "FAIL: $*"; exit 1; }

pt_require()
{
	[ "$(id -u)" -eq 0 ] || skip "needs root (cgroups, BPF)"
	local b
	for b in "$@"; do
		[ -x "$b" ] || command -v "$b" >/dev/null 2>&1 || skip "$b is not built/installed (make all)"
	done
	[ "$(nproc)" -ge 2 ] || skip "needs at least 2 CPUs"
	command -v python3 >/dev/null || skip "needs python3 to read the JSONL log"
}

pt_cgroups_left()
{
	# the parent, and the launched commands' own cgroups (<parent>.cmd)
	ls -d /sys/fs/cgroup/*/"$PT_PARENT" /sys/fs/cgroup/"$PT_PARENT" \
		/sys/fs/cgroup/*/"$PT_PARENT".cmd /sys/fs/cgroup/"$PT_PARENT".cmd 2>/dev/null
}

pt_cleanup()
{
	local p
	if [ -n "$PT_PARTIES" ] && kill -0 "$PT_PARTIES" 2>/dev/null; then
		kill -TERM "$PT_PARTIES" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$PT_PARTIES" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$PT_PARTIES" 2>/dev/null
		wait "$PT_PARTIES" 2>/dev/null
	fi
	for p in "${PT_PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${PT_PIDS[@]}"; do
		for _ in $(seq 30); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	if [ -n "$(pt_cgroups_left)" ] && [ -f "$PT_TMP/parties.ini" ]; then
		build/parties -c "$PT_TMP/parties.ini" --cleanup >/dev/null 2>&1
	fi
	# last resort: empty cgroups that are ours by name; a process SIGKILLed a moment ago
	# still holds its cgroup until it has exited, so a few tries
	local try
	for try in 1 2 3 4 5; do
		for p in /sys/fs/cgroup/*/"$PT_PARENT"/* /sys/fs/cgroup/*/"$PT_PARENT" \
			/sys/fs/cgroup/*/"$PT_PARENT".cmd/* /sys/fs/cgroup/*/"$PT_PARENT".cmd; do
			[ -d "$p" ] && rmdir "$p" 2>/dev/null
		done
		[ -z "$(pt_cgroups_left)" ] && break
		sleep 0.2
	done
	[ -n "${PT_KEEP:-}" ] && cp -r "$PT_TMP" /tmp/pt-keep; rm -rf "$PT_TMP"
}
trap pt_cleanup EXIT
trap 'exit 1' INT TERM

# pt_parties ARGS...: start the daemon in the background (stderr to $PT_TMP/parties.err).
# The file is emptied here, before the background job starts: the job's own redirection
# happens whenever it gets scheduled, and until then a wait for a line of the new daemon
# would find it in the previous daemon's output.
pt_parties()
{
	: >"$PT_TMP/parties.err"
	build/parties "$@" 2>>"$PT_TMP/parties.err" &
	PT_PARTIES=$!
}

# pt_feed_workload LINES P99_US: a workload of the test's own (a sleeping process, pid in
# $WEB; a dry run starts no command) and a client feed $PT_TMP/feed that a background writer
# fills with LINES samples of P99_US, one every 100 ms. The workload lives until the
# cleanup ends it, not for a fixed time: parties stops once every workload has exited, and
# under emulation a test can outlast any fixed lifetime (test_metrics_slowloris.sh took
# 35 s in the 6.12 guest, and its last scrapes found no daemon when a 30 s one ended).
pt_feed_workload()
{
	sleep 3600 &
	WEB=$!
	PT_PIDS+=($WEB)
	: >"$PT_TMP/feed"
	(for i in $(seq 1 "$1"); do echo "$((i * 100)) $2 100" >>"$PT_TMP/feed"; sleep 0.1; done) &
	PT_PIDS+=($!)
}

# pt_ini_feed_dry: write $PT_TMP/dry.ini, the workload of pt_feed_workload managed by quota
# with a 1 ms target and one core, decisions every 100 ms.
pt_ini_feed_dry()
{
	printf '[controller]\ninterval_ms = 100\ncgroup_parent = %s\nstate_dir = %s\n[resources]\nsmt = shared\ncpus = 0-1\nquota = true\n[workload web]\npid = %s\ntarget_ms = 1\ncores = 1\nsource = client:%s\n' \
		"$PT_PARENT" "$PT_TMP/state" "$WEB" "$PT_TMP/feed" >"$PT_TMP/dry.ini"
}

# pt_ini_controller [INTERVAL_MS]: print the [controller] section of a test config (300 ms;
# this test's cgroup parent, state directory and log).
pt_ini_controller()
{
	cat <<INI
[controller]
interval_ms = ${1:-300}
cgroup_parent = $PT_PARENT
state_dir = $PT_TMP/state
log = $PT_TMP/log.jsonl
INI
}

# pt_ini_quota TOTAL [LINE...]: print a [resources] section where CPU quota is the one
# moving resource, in 0.1-core steps, TOTAL cores in all, on cpus 0-1 (cores not managed);
# each LINE ("cfs_period_us = 10000") is added to the section.
pt_ini_quota()
{
	cat <<INI
[resources]
smt = shared
cpus = 0-1
cores = false
quota = true
quota_step = 0.1
quota_total = $1
INI
	shift
	[ $# -eq 0 ] || printf '%s\n' "$@"
}

# pt_ini_server NAME PORT THREADS DELAY_MS TARGET_MS [LINE...]: print a [workload NAME]
# section that launches cpr_server (each request sleeps DELAY_MS) and reads its p99 from
# ebee by connection; each LINE ("cores = 1") is added to the section.
pt_ini_server()
{
	local name=$1 port=$2 threads=$3 delay=$4 target=$5
	shift 5
	cat <<INI
[workload $name]
command = build/fixtures/cpr_server --port $port --threads $threads --delay-ms $delay --timeout 600
target_ms = $target
source = ebee
ebee_mode = conn
INI
	printf '%s\n' "$@"
}

# pt_wait_started: until the daemon reports it manages its workloads (10 s), or SKIP when
# the kernel has no path ebee can trace on (one of ebee's refusals in
# tests/lib/ebee_unsupported.re), or FAIL (any other reason ebee did not start included).
pt_wait_started()
{
	local why
	for _ in $(seq 100); do
		grep -q "managing" "$PT_TMP/parties.err" && return 0
		if ! kill -0 "$PT_PARTIES" 2>/dev/null; then
			if grep -q "cannot start ebee tracing" "$PT_TMP/parties.err" &&
				why=$(ebee_unsupported "$PT_TMP/parties.err"); then
				skip "ebee cannot trace on this kernel: $why"
			fi
			cat "$PT_TMP/parties.err"
			die "parties exited during start-up"
		fi
		sleep 0.1
	done
	cat "$PT_TMP/parties.err"
	die "parties did not start within 10 s"
}

# pt_stop_parties [SIG]: signal the daemon (TERM) and wait; its exit status in PT_RC.
pt_stop_parties()
{
	kill -"${1:-TERM}" "$PT_PARTIES"
	wait "$PT_PARTIES"
	PT_RC=$?
	PT_PARTIES=
}

# pt_stop_restored [SIG]: signal the daemon (TERM); FAIL unless it exits 0 and leaves no
# cgroup behind.
pt_stop_restored()
{
	local sig=${1:-TERM}
	pt_stop_parties "$sig"
	[ "$PT_RC" = 0 ] || { cat "$PT_TMP/parties.err"; die "parties exited $PT_RC after SIG$sig"; }
	[ -z "$(pt_cgroups_left)" ] || die "cgroups left after SIG$sig: $(pt_cgroups_left)"
}

# pt_log_summary: FAIL unless the log ends with the summary record.
pt_log_summary()
{
	tail -1 "$PT_TMP/log.jsonl" | grep -q '"summary":true' || die "no summary line in the log"
}

# pt_until TIMEOUT_S CMD...: poll CMD every 0.1 s until it succeeds (0) or TIMEOUT_S
# passes (1). For waiting on a condition instead of a fixed sleep: give a generous bound,
# it costs nothing when the condition comes quickly and absorbs a busy machine.
pt_until()
{
	local end=$((SECONDS + $1))
	shift
	while ! "$@"; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.1
	done
}

# pt_wait_port PORT: until something accepts on it (5 s).
pt_wait_port()
{
	for _ in $(seq 100); do
		port_accepts "$1" && return 0
		sleep 0.05
	done
	return 1
}

# pt_log_wait PY_EXPR TIMEOUT_S: until a record of the log satisfies the Python expression
# over `r` (the record) and `w` (dict name -> workload entry), e.g. 'w["web"]["cores"] == 2'.
pt_log_wait()
{
	local expr=$1 t=$2
	PYTHONPATH=tests/lib python3 - "$PT_TMP/log.jsonl" "$expr" "$t" <<'PY'
import sys
from ptlog import follow
path, expr, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
for r in follow(path, timeout):
    w = {x['name']: x for x in r['wl']}
    if eval(expr):
        print(r['t'])
        sys.exit(0)
sys.exit(1)
PY
}
