#!/bin/bash
# Boots Debian 12 guests under qemu and runs this checkout's build inside them.
#
#   tests/vm/run.sh [--kernel 6.1|6.12|all] [--cmd 'CMD' | --tests 'NAME...']
#                   [--timeout S] [--host-summary FILE] [--keep]
#
# Default: both guests run the integration suite (tests/run.sh integration, minus what
# tests/vm/skip.list says emulation cannot afford, reported as SKIP). --tests runs only the
# named integration programs; --cmd runs a shell command from the checkout's root as root.
# Per guest one line "vm-K: kernel ..., T s: N passed, N failed, N skipped[; ...]" (the
# guest's closing line, tests/lib/summary.sh), then its failed, retried and SKIP-in-passing
# lines; the last line is the sum (plus --host-summary's closing line), in the same form:
# "N passed, N failed, N skipped[; SKIP lines in passing tests: N][; passed only on a retry:
# NAME (vm-K), ...]".
# Logs: build/test-logs/vm-K/ (per-test logs, out.log, console.log). Exit 0 iff nothing
# failed (for --cmd: iff the command exited 0 in every guest).
#
# Guests: 6.1 (Debian 12's linux-image-amd64): 4 vCPUs, one node; 6.12 (bookworm-security):
# 8 vCPUs as 2 NUMA nodes x 2 cores x 2 threads. cgroup v2 only, systemd as init, no network
# but loopback. VM_CACHE=DIR boots a base image built elsewhere (build/vm of another
# checkout) as is; VM_ACCEL=kvm|tcg overrides the detection; VM_TCG_THREAD=multi|single: a TCG
# guest's vCPUs in a host thread each, or all in one (default single: under multi-threaded
# TCG the 6.12 guest's kernel died of its own text patching, an "Oops: int3" where another
# vCPU ran the breakpoint after it was removed, in 2 of 4 full runs; the two guests run side
# by side on a 2-CPU host, so one thread each costs little); VM_PARALLEL=0 boots one guest at
# a time; VM_APPEND adds to the guests' kernel command line; VM_SMP_61 sets the 6.1 guest's
# vCPUs (default 4); VM_TEST_TIMEOUT bounds each test program in a guest (default 600 s,
# twice the host's: test_ebee_grpc, 131 s in one 6.1 guest, ran past 300 s in another
# while the host suite ran beside it). A program that fails in a guest runs once more
# there and the retry's result is the one counted; the guest's lines name what passed
# only on the retry (VM_TEST_RETRY=0: no retry). See tests/vm/README.md.
set -u
. "$(dirname "$0")/lib.sh"
# shellcheck source=../lib/summary.sh
. "$(dirname "$0")/../lib/summary.sh"

kernels="6.1 6.12" mode=tests tests="" cmd="" timeout_s="" host_summary="" keep=0
usage() {
	sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case $1 in
	--kernel) case $2 in all) kernels="6.1 6.12" ;; 6.1 | 6.12) kernels=$2 ;; *) usage ;; esac; shift ;;
	--cmd) mode=cmd cmd=$2; shift ;;
	--tests) tests=$2; shift ;;
	--timeout) timeout_s=$2; shift ;;
	--host-summary) host_summary=$2; shift ;;
	--keep) keep=1 ;;
	-h | --help) usage ;;
	*) usage ;;
	esac
	shift || usage
done
# bounds: the suite in a guest, a command in a guest (boot included)
[ -n "$timeout_s" ] || { [ $mode = cmd ] && timeout_s=900 || timeout_s=${VM_TIMEOUT:-1500}; }

t_lane=$SECONDS
runs=()
qpids=()
cleanup() {
	local p
	# each boot runs timeout (its own process group) under a subshell: TERM to timeout
	# reaches qemu
	for p in "${qpids[@]}"; do
		pkill -TERM -P "$p" 2>/dev/null
		kill "$p" 2>/dev/null
	done
	wait 2>/dev/null
	[ "$keep" -eq 1 ] || for r in "${runs[@]}"; do rm -rf "$r"; done
	rm -rf "$VM_DIR/payload" "$VM_DIR/payload.img.$$"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# counts: sum of every guest's closing line (and the host's); R: what passed only on a retry
P=0 F=0 S=0 K=0 R=
add_line() { # add_line FILE [GUEST]: its closing line added, GUEST after each retried name
	local n out=
	summary_parse "$(summary_last "$1")" || return 1
	P=$((P + SUM_P)) F=$((F + SUM_F)) S=$((S + SUM_S)) K=$((K + SUM_K))
	if [ -n "$SUM_RETRIED" ]; then
		[ -z "${2:-}" ] || while read -r n; do
			out=$(summary_join "$out" "$n ($2)")
		done < <(echo "$SUM_RETRIED" | sed 's/, /\n/g')
		R=$(summary_join "$R" "${out:-$SUM_RETRIED}")
	fi
}
finish() {
	if [ -n "$host_summary" ]; then
		if add_line "$host_summary"; then
			echo "host: $(tail -1 "$host_summary")"
		else
			echo "host: FAIL: no closing line in $host_summary"
			F=$((F + 1))
		fi
	fi
	echo "vm lane: $((SECONDS - t_lane)) s"
	summary_line "$P" "$F" "$S" "$K" "$R"
	[ "$F" -eq 0 ]
	exit
}
lane_fail() { # a lane that cannot build counts each guest it could not run as a failure
	echo "vm: FAIL: $*"
	for k in $kernels; do echo "vm-$k: FAIL: not booted ($*)"; done
	F=$((F + $(echo $kernels | wc -w)))
	finish
}

if [ "$(id -u)" -ne 0 ]; then # like the suite's integration half: counted, never silent
	for k in $kernels; do echo "vm-$k: SKIP: the VM lane needs root (debootstrap, chroot, 9p as root)"; done
	S=$((S + $(echo $kernels | wc -w)))
	finish
fi

# one lane per checkout at a time: the run folders and the checkout disk are per checkout
mkdir -p "$VM_DIR"
exec 9>"$VM_DIR/lock"
flock -n 9 || { vm_log "another VM run holds $VM_DIR/lock; waiting"; flock 9; }

# --- the base image (cached) and the host tools
if [ -n "${VM_CACHE:-}" ]; then
	cache=$VM_CACHE
	[ -f "$cache/base.img" ] || lane_fail "VM_CACHE=$cache has no base.img"
	vm_host_deps || lane_fail "cannot install$VM_HOST_PKGS"
else
	cache=$VM_DIR
	# At normal priority even when the lane runs niced beside the host suite (tests/suite.sh):
	# the image is on the lane's critical path, the host suite is not (it ends long before
	# the guests). Not what makes it slow, though: 347 s at nice 19 and 318 s at normal
	# priority on the same day, 142-170 s on others; its time is debootstrap's and the two
	# kernels' download and install from the mirror (about 2.5 minutes each that day).
	nice -n "$((-$(nice)))" "$(dirname "$0")/build.sh" ||
		lane_fail "the guest image did not build (see above; logs in $VM_DIR)"
fi

# --- this checkout's build, as a second disk: the tree (tests/, build/ without build/vm) and
# the installed pieces (make install DESTDIR=.vm-destdir) that the guest copies into /
t0=$SECONDS
pl=$VM_DIR/payload
rm -rf "$pl"
mkdir -p "$pl"
# (install first: make must not see the copy's build/*.d files under build/vm)
make -C "$VM_REPO" -s --no-print-directory install DESTDIR="$pl/.vm-destdir" >"$VM_DIR/install.log" 2>&1 ||
	{ cat "$VM_DIR/install.log"; lane_fail "make install DESTDIR= failed"; }
tar -C "$VM_REPO" --exclude=./.git --exclude=./build/vm --exclude=./build/asan \
	--exclude=./build/test-logs -cf - . | tar -C "$pl" -xf - ||
	lane_fail "cannot copy the checkout"
mb=$(($(du -sm "$pl" | cut -f1) + 1024))
mkfs.ext4 -q -F -L vmrepo -d "$pl" "$VM_DIR/payload.img.$$" "${mb}M" >/dev/null || lane_fail "mkfs.ext4 -d of the checkout failed"
mv "$VM_DIR/payload.img.$$" "$VM_DIR/payload.img"
rm -rf "$pl"
vm_log "checkout disk ${mb} MB in $((SECONDS - t0)) s"

# --- acceleration: KVM only where the CPU can virtualise (it cannot on this machine kind)
accel=${VM_ACCEL:-}
if [ -z "$accel" ]; then
	if [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then accel=kvm; else accel=tcg; fi
fi

boot() { # boot K ACCEL: one guest, bounded by timeout; its results land in its share
	local k=$1 acc=$2 run=$VM_DIR/run-$1 share topo mem
	share=$run/share
	case $k in
	6.1) topo=(-smp "${VM_SMP_61:-4}") mem=2G ;;
	6.12)
		topo=(-smp 8,sockets=2,cores=2,threads=2
			-object memory-backend-ram,id=m0,size=1536M -object memory-backend-ram,id=m1,size=1536M
			-numa node,nodeid=0,cpus=0-3,memdev=m0 -numa node,nodeid=1,cpus=4-7,memdev=m1)
		mem=3G
		;;
	esac
	case $acc in
	kvm) acc=(-accel kvm -cpu host) ;;
	*) acc=(-accel "tcg,thread=${VM_TCG_THREAD:-single}" -cpu max) ;;
	esac
	timeout -k 10 "$timeout_s" qemu-system-x86_64 -name "vm-$k" -nodefaults -no-user-config \
		"${acc[@]}" -m "$mem" "${topo[@]}" \
		-kernel "$cache/boot/vmlinuz-$k" -initrd "$cache/boot/initrd-$k" \
		-append "root=/dev/vda rw console=ttyS0 panic=-1 loglevel=4 cgroup_no_v1=all systemd.unified_cgroup_hierarchy=1 systemd.show_status=0 net.ifnames=0 ${VM_APPEND:-}" \
		-drive "file=$cache/base.img,if=virtio,format=raw,snapshot=on" \
		-drive "file=$VM_DIR/payload.img,if=virtio,format=raw,snapshot=on" \
		-virtfs "local,path=$share,mount_tag=vmshare,security_model=none,id=vmshare" \
		-device virtio-rng-pci -nic none -display none -monitor none \
		-serial "file:$run/console.log" -no-reboot >"$run/qemu.log" 2>&1
	echo $? >"$run/qemu.rc"
	date +%s >"$run/t1"
}

start() { # start K: fresh run folder and share, then the guest in the background
	local k=$1 run=$VM_DIR/run-$1
	rm -rf "$run"
	mkdir -p "$run/share"
	runs+=("$run")
	cp "$(dirname "$0")/guest-run.sh" "$run/share/guest-run.sh"
	{
		printf 'VM_REPO_PATH=%q\n' "$VM_REPO"
		printf 'VM_MODE=%q\n' "$mode"
		printf 'VM_CMD=%q\n' "$cmd"
		printf 'VM_TESTS=%q\n' "$tests"
		printf 'VM_TEST_TIMEOUT=%q\n' "${VM_TEST_TIMEOUT:-600}"
		printf 'VM_TEST_RETRY=%q\n' "${VM_TEST_RETRY:-1}"
	} >"$run/share/job.env"
	# what emulation cannot afford, unless the caller named the tests itself
	# (a NAME@K line is guest K's alone)
	[ $mode = tests ] && [ -z "$tests" ] &&
		awk -v k="$k" '/^#/ { next } $1 ~ /@/ { n = split($1, a, "@"); if (a[n] != k) next; $1 = a[1] } { print }' \
			"$(dirname "$0")/skip.list" >"$run/share/skip.list"
	date +%s >"$run/t0"
	boot "$k" "$accel" &
	qpids+=($!)
}

report() { # report K: one line, the logs kept in build/test-logs/vm-K, counts added
	local k=$1 run=$VM_DIR/run-$1 logs=$VM_REPO/build/test-logs/vm-$1 secs ver rc
	secs=$(($(cat "$run/t1" 2>/dev/null || date +%s) - $(cat "$run/t0")))
	rm -rf "$logs"
	mkdir -p "$logs"
	[ -d "$run/share/test-logs" ] && cp -a "$run/share/test-logs/." "$logs/"
	cp "$run/console.log" "$logs/console.log" 2>/dev/null
	cp "$run/share/out.log" "$logs/out.log" 2>/dev/null
	ver=$(grep -o 'kernel [^,]*' "$run/share/out.log" 2>/dev/null | head -1)
	ver=${ver:-kernel $(cat "$cache/boot/version-$k" 2>/dev/null)}
	if [ ! -f "$run/share/rc" ]; then
		local qrc
		qrc=$(cat "$run/qemu.rc" 2>/dev/null)
		echo "vm-$k: FAIL: $ver: no result after ${secs} s (qemu exit ${qrc:-?}$([ "$qrc" = 124 ] && echo ", timed out after ${timeout_s} s")); console: $logs/console.log"
		tail -n 15 "$run/console.log" 2>/dev/null | sed "s/^/vm-$k console: /"
		cat "$run/qemu.log" 2>/dev/null | sed "s/^/vm-$k qemu: /"
		F=$((F + 1))
		return
	fi
	rc=$(cat "$run/share/rc")
	if [ $mode = cmd ]; then
		sed -n '/^vm-guest: up/,$p' "$run/share/out.log" | sed "s/^/vm-$k| /"
		if [ "$rc" = 0 ]; then P=$((P + 1)); else F=$((F + 1)); fi
		echo "vm-$k: $ver: command exited $rc, ${secs} s"
		return
	fi
	if add_line "$run/share/out.log" "vm-$k"; then
		echo "vm-$k: $ver, $(grep -o '[0-9]* CPUs, [0-9]* NUMA nodes' "$run/share/out.log" | head -1)," \
			"${secs} s: $(summary_last "$run/share/out.log")"
		grep -E '^(failed|retried): ' "$run/share/out.log" | tail -2 | sed "s/^/vm-$k: /"
		# the closing line's "SKIP lines in passing tests", one by one
		awk '/^SKIP lines in passing tests \(/ { on = 1 } on && !/^  / && !/^SKIP lines/ { on = 0 }
		     on' "$run/share/out.log" | sed "s/^/vm-$k: /"
	else
		echo "vm-$k: FAIL: $ver: the suite printed no closing line (rc $rc, ${secs} s); see $logs/out.log"
		F=$((F + 1))
	fi
}

vm_log "booting $kernels ($accel, timeout ${timeout_s} s each)"
if [ "${VM_PARALLEL:-1}" = 1 ]; then
	for k in $kernels; do start "$k"; done
	wait
else
	for k in $kernels; do
		start "$k"
		wait
	done
fi
qpids=()
# KVM detected but the guest never came up: the same guest again under TCG
if [ "$accel" = kvm ]; then
	again=
	for k in $kernels; do grep -q '^vm-guest: up' "$VM_DIR/run-$k/share/out.log" 2>/dev/null || again="$again $k"; done
	if [ -n "$again" ]; then
		vm_log "KVM guests did not boot:$again; again under TCG"
		accel=tcg
		for k in $again; do start "$k"; done
		wait
	fi
fi
for k in $kernels; do report "$k"; done
[ $mode = cmd ] && { summary_line "$P" "$F" "$S" 0 ""; [ "$F" -eq 0 ]; exit; }
finish
