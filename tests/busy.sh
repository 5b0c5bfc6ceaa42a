#!/bin/bash
# Runs a command (default: tests/run.sh all) on a machine kept busy, the way a CI runner
# or a developer's laptop is, to show the suite does not depend on an idle machine
# (`make test-busy`). The exact load, for the whole run, in one of two profiles
# (BUSY_PROFILE=light, the default, or heavy):
#
#   CPU   light: one `sh -c 'while :; do :; done'` at normal priority (nice 0, no pinning,
#         no cgroup): one CPU's worth of work, which the scheduler moves between the CPUs;
#         heavy: six of them, so each CPU of a 2-CPU machine is shared three or four ways
#         (a runner that a CI host oversubscribes, a laptop building beside the tests);
#   disk  (both) one python3 writer: 1 MiB writes of zeros to build/busy/disk.dat, fsync
#         after every 8 MiB, the file truncated to 0 once it reaches 256 MiB (so at most
#         256 MiB of disk), continuously.
#
# All are started with PR_SET_PDEATHSIG=SIGKILL (setpriv --pdeathsig), so they die with
# this script on every exit path, SIGKILL included, and are also killed by the EXIT trap.
# If any stopped during the run, the run does not count: the exit status is 1.
#
#   [BUSY_PROFILE=light|heavy] tests/busy.sh [COMMAND ARGS...]
set -u
cd "$(dirname "$0")/.."
command -v setpriv >/dev/null || { echo "busy: needs setpriv (util-linux)"; exit 1; }
command -v python3 >/dev/null || { echo "busy: needs python3"; exit 1; }
profile=${BUSY_PROFILE:-light}
case $profile in
light) spinners=1 ;;
heavy) spinners=6 ;;
*) echo "busy: BUSY_PROFILE is light or heavy, not '$profile'"; exit 2 ;;
esac
[ $# -gt 0 ] || set -- tests/run.sh all
mkdir -p build/busy
load=()
stop_load() {
	local p
	for p in "${load[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for p in "${load[@]}"; do wait "$p" 2>/dev/null; done
	load=()
	rm -f build/busy/disk.dat
}
trap stop_load EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

for _ in $(seq "$spinners"); do
	setpriv --pdeathsig KILL -- sh -c 'while :; do :; done' &
	load+=($!)
done
setpriv --pdeathsig KILL -- python3 -c '
import os, sys
buf = bytes(1 << 20)
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
n = 0
while True:
    os.write(fd, buf)
    n += 1
    if n % 8 == 0:
        os.fsync(fd)
    if n == 256:
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        n = 0
' build/busy/disk.dat &
load+=($!)
what="$spinners CPU-bound process$([ "$spinners" -gt 1 ] && echo es) at nice 0, one writer with fsync every 8 MiB"
echo "busy: $profile load running (cpu pids ${load[*]:0:spinners}, disk pid ${load[spinners]}): $*"

"$@"
rc=$?
for p in "${load[@]}"; do
	kill -0 "$p" 2>/dev/null || { echo "busy: the load (pid $p) stopped during the run: it does not count"; rc=1; }
done
echo "busy: done, exit $rc ($profile load: $what)"
exit $rc
