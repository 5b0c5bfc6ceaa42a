# Runs inside the guest (bash, as root, from vm-job.service), from the 9p share at
# /mnt/vmshare, which tests/vm/run.sh filled: job.env says what to run. Results go back to
# the share: out.log (the job's output), rc, test-logs/. The unit powers off when this ends.
S=/mnt/vmshare
. $S/job.env # VM_REPO_PATH, VM_MODE (cmd|tests), VM_CMD, VM_TESTS, VM_TEST_TIMEOUT
exec > >(tee $S/out.log) 2>&1
echo "vm-guest: up after $(cut -d' ' -f1 /proc/uptime) s: kernel $(uname -r)," \
	"$(nproc) CPUs, $(ls -d /sys/devices/system/node/node* 2>/dev/null | wc -l) NUMA nodes," \
	"cgroup $(stat -fc %T /sys/fs/cgroup)"
fin() {
	echo "$1" >$S/rc
	sync
	# The disks are snapshots and the results are on the share: power off at once rather
	# than through a shutdown that can wait on the share or on a test's leftover.
	echo 1 >/proc/sys/kernel/sysrq
	echo o >/proc/sysrq-trigger
	sleep 30
	exit 0
}
# The host's checkout (tests/, build/, fixtures) at the same path as on the host, from the
# second disk; the installed pieces (make install DESTDIR=) into /.
mkdir -p "$VM_REPO_PATH"
mount /dev/vdb "$VM_REPO_PATH" || { echo "vm-guest: cannot mount the checkout disk"; fin 125; }
cp -a "$VM_REPO_PATH/.vm-destdir/." / || { echo "vm-guest: cannot install the build"; fin 125; }
ldconfig
systemctl daemon-reload
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
cd "$VM_REPO_PATH" || fin 125
export TEST_TIMEOUT=${VM_TEST_TIMEOUT:-300}
# A failed program runs once more (tests/run.sh, TEST_RETRY): emulation stretches time
# bounds past what any host sees; what passes only on the retry is named in the result.
export TEST_RETRY=${VM_TEST_RETRY:-1}
t0=$(cut -d' ' -f1 /proc/uptime)
case $VM_MODE in
cmd) bash -c "$VM_CMD" ;;
tests)
	[ -s $S/skip.list ] && export TEST_SKIP_LIST=$S/skip.list
	# shellcheck disable=SC2086
	tests/run.sh integration $VM_TESTS
	;;
esac
rc=$?
t1=$(cut -d' ' -f1 /proc/uptime)
echo "vm-guest: job ended rc=$rc after $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", b - a }') s"
mkdir -p $S/test-logs
[ -d build/test-logs ] && cp -a build/test-logs/. $S/test-logs/
fin $rc
