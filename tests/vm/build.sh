#!/bin/bash
# Builds the guests' root filesystem, kernels and base image into build/vm (cached):
#
#   tests/vm/build.sh      -> build/vm/base.img, build/vm/boot/{vmlinuz,initrd}-{6.1,6.12}
#
# A Debian 12 minbase rootfs by debootstrap from the host's mirror with systemd as init and
# the project's run-time packages, then Debian's two kernels installed inside it by apt in a
# chroot (initramfs-tools makes their initrds there; nothing is installed on the host but
# qemu, debootstrap and e2fsprogs), then an ext4 image by `mkfs.ext4 -d` (no loop mount).
# Reused while build/vm/stamp matches the package list and the hash of tests/vm/*: a
# second run costs nothing. Every apt/debootstrap step is tried 3 times.
set -u
. "$(dirname "$0")/lib.sh"

# What the integration suite calls in the guest (read from tests/integration/*: servers,
# loadgen's peers, test_install's compiler and pkg-config, test_prometheus's scraper).
GUEST_PKGS="systemd-sysv udev kmod dbus iproute2 procps util-linux psmisc python3 bpftool
	memcached nginx-light libmemcached-tools curl time ca-certificates
	libbpf1 libelf1 libcgroup2 libcpupower1 libinih1 libmicrohttpd12 libsystemd0
	libgrpc++1.51 libprotobuf32 liburing2 libcmocka0 zlib1g
	gcc libc6-dev libstdc++-12-dev binutils make pkg-config libbpf-dev libelf-dev zlib1g-dev
	man-db bash-completion prometheus initramfs-tools
	redis-server redis-tools dnsmasq-base dnsperf nghttp2-client python3-grpcio openssl strace"
KERNEL_61=linux-image-amd64

stamp_want() {
	{
		echo "$GUEST_PKGS $KERNEL_61"
		cat "$(dirname "$0")/build.sh"
	} | sha256sum | cut -d' ' -f1
}

rootfs=$VM_DIR/rootfs
mounts=()
# Every mount under the rootfs, deepest first, whoever made it: this script's binds, and
# any a killed run, debootstrap or a package script left (a stale proc there made
# mkfs.ext4 -d copy /proc, and a bound /dev must never meet the rm -rf below).
unmount_rootfs() {
	local m
	awk -v r="$rootfs" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/mounts |
		sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
}
cleanup() {
	local i
	for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[i]}" 2>/dev/null; done
	mounts=()
	unmount_rootfs
}
trap cleanup EXIT
trap 'exit 130' INT TERM

want=$(stamp_want)
if [ -f "$VM_DIR/stamp" ] && [ "$(cat "$VM_DIR/stamp")" = "$want" ] && [ -f "$VM_DIR/base.img" ]; then
	vm_log "base image up to date ($VM_DIR/base.img)"
	exit 0
fi
[ "$(id -u)" -eq 0 ] || vm_die "building the guest image needs root (debootstrap, chroot)"
vm_host_deps || vm_die "cannot install$VM_HOST_PKGS from the host's mirror"
main=$(vm_mirror bookworm) || vm_die "no bookworm mirror in the host's apt sources"
sec=$(vm_mirror bookworm-security) || sec=
mkdir -p "$VM_DIR"
rm -f "$VM_DIR/stamp"
t0=$SECONDS

# --- rootfs
vm_log "debootstrap bookworm from $main into $rootfs"
boot_strap() {
	unmount_rootfs
	rm -rf --one-file-system "$rootfs"
	debootstrap --variant=minbase --include="$(echo $GUEST_PKGS | tr ' ' ,)" \
		bookworm "$rootfs" "$main" >"$VM_DIR/debootstrap.log" 2>&1 && return 0
	tail -5 "$VM_DIR/debootstrap.log" >&2
	return 1
}
vm_retry 3 boot_strap || vm_die "debootstrap failed 3 times (log: $VM_DIR/debootstrap.log)"
vm_log "rootfs in $((SECONDS - t0)) s"

# --- kernels, by apt inside the rootfs
{
	echo "deb $main bookworm main"
	echo "deb $main bookworm-updates main"
	[ -n "$sec" ] && echo "deb $sec bookworm-security main"
} >"$rootfs/etc/apt/sources.list"
printf '#!/bin/sh\nexit 101\n' >"$rootfs/usr/sbin/policy-rc.d" # no daemons start in the chroot
# The rootfs is only the source of an image: no fsync per file as dpkg unpacks the kernels'
# modules (thousands of files each).
echo force-unsafe-io >"$rootfs/etc/dpkg/dpkg.cfg.d/vm-unsafe-io"
# Initrds with only what mounts the root (virtio's PCI transport and disk, ext4; the rest
# loads from the root once mounted): MODULES=most copied and compressed every driver, 36 MB
# and about a minute and a half per kernel here, now 6 MB in 6 s.
sed -i 's/^MODULES=.*/MODULES=list/' "$rootfs/etc/initramfs-tools/initramfs.conf"
printf 'virtio_pci\nvirtio_blk\next4\n' >>"$rootfs/etc/initramfs-tools/modules"
chmod 755 "$rootfs/usr/sbin/policy-rc.d"
for m in proc sys dev dev/pts; do
	mount --bind "/$m" "$rootfs/$m" || vm_die "cannot bind /$m into the chroot"
	mounts+=("$rootfs/$m")
done
inchroot() { chroot "$rootfs" env DEBIAN_FRONTEND=noninteractive LC_ALL=C "$@"; }
vm_retry 3 inchroot apt-get update -qq || vm_die "apt-get update in the chroot failed 3 times"
# bookworm-security's newest 6.12: the signed image if there is one, else -unsigned
k612=$(inchroot apt-cache search --names-only '^linux-image-6\.12\.[0-9.]+\+deb12-amd64' |
	awk '{ print $1 }' | grep -E '^linux-image-6\.12\.[0-9.]+\+deb12-amd64(-unsigned)?$' |
	sed 's/-unsigned$//' | sort -uV | tail -1)
[ -n "$k612" ] || vm_die "no linux-image-6.12.*+deb12-amd64 in bookworm-security"
# The unsigned image can be published before its signed one: then the signed name is only a
# reference (apt-cache show says nothing and still exits 0), and the unsigned is taken.
inchroot apt-cache show --no-all-versions "$k612" 2>/dev/null | grep -q '^Package:' ||
	k612=$k612-unsigned
vm_log "kernels: $KERNEL_61 and $k612"
vm_retry 3 inchroot apt-get install -y -qq --no-install-recommends $KERNEL_61 "$k612" \
	>"$VM_DIR/kernels.log" 2>&1 || vm_die "installing the kernels failed (log: $VM_DIR/kernels.log)"
inchroot apt-get clean
vm_log "kernels installed, their initrds made: $((SECONDS - t0)) s"
cleanup
rm -f "$rootfs/usr/sbin/policy-rc.d" "$rootfs/etc/dpkg/dpkg.cfg.d/vm-unsafe-io"

# --- guest configuration: a batch machine that runs one job and powers off
echo vm >"$rootfs/etc/hostname"
printf '127.0.0.1 localhost\n127.0.1.1 vm\n::1 localhost\n' >"$rootfs/etc/hosts"
echo '/dev/vda / ext4 rw,relatime 0 1' >"$rootfs/etc/fstab"
passwd -R "$rootfs" -d root >/dev/null 2>&1 || true
# The job itself comes on the 9p share (tests/vm/guest-run.sh, copied per run), so changing
# it does not rebuild the image; the image only knows how to fetch it.
cat >"$rootfs/usr/local/sbin/vm-guest-run" <<'STUB'
#!/bin/sh
mkdir -p /mnt/vmshare
# without udev settling, the virtio-9p device may not be bound yet: try for a minute
modprobe 9pnet_virtio 2>/dev/null
i=0
until mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 vmshare /mnt/vmshare 2>/dev/null; do
	i=$((i + 1))
	[ $i -ge 60 ] && { echo "vm-guest: cannot mount the 9p share"; exit 1; }
	sleep 1
done
exec /bin/bash /mnt/vmshare/guest-run.sh
STUB
chmod 755 "$rootfs/usr/local/sbin/vm-guest-run"
# (no systemd-udev-settle, which costs a minute or more under TCG: the disks are in devtmpfs
# from the kernel's probe, and the stub retries the 9p mount until its device is bound)
cat >"$rootfs/etc/systemd/system/vm-job.service" <<'UNIT'
[Unit]
Description=Run the VM lane's job from the 9p share, then power off
After=basic.target network.target

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/vm-guest-run
StandardOutput=journal+console
StandardError=journal+console
TimeoutStartSec=infinity
SuccessAction=poweroff-force
FailureAction=poweroff-force

[Install]
WantedBy=multi-user.target
UNIT
ln -sf /etc/systemd/system/vm-job.service "$rootfs/etc/systemd/system/multi-user.target.wants/vm-job.service"
# Tests start their own servers on loopback; the packaged ones would hold their ports.
for u in memcached.service nginx.service prometheus.service redis-server.service apt-daily.timer \
	apt-daily-upgrade.timer man-db.timer e2scrub_all.timer fstrim.timer \
	getty@tty1.service serial-getty@ttyS0.service; do
	ln -sf /dev/null "$rootfs/etc/systemd/system/$u"
done

# --- kernels and initrds out of the rootfs's /boot
mkdir -p "$VM_DIR/boot"
for k in "$rootfs"/boot/vmlinuz-*; do
	v=${k##*/vmlinuz-}
	case $v in 6.1.*) n=6.1 ;; 6.12.*) n=6.12 ;; *) continue ;; esac
	[ -f "$rootfs/boot/initrd.img-$v" ] || vm_die "no initrd for $v in the rootfs"
	cp "$k" "$VM_DIR/boot/vmlinuz-$n"
	cp "$rootfs/boot/initrd.img-$v" "$VM_DIR/boot/initrd-$n"
	echo "$v" >"$VM_DIR/boot/version-$n"
done
for n in 6.1 6.12; do [ -f "$VM_DIR/boot/vmlinuz-$n" ] || vm_die "no $n kernel in the rootfs"; done

# --- image (size: the tree plus room for the tests' files; writes go to a snapshot)
mb=$(($(du -sm "$rootfs" | cut -f1) + 1536))
rm -f "$VM_DIR/base.img"
mkfs.ext4 -q -F -L vmroot -d "$rootfs" "$VM_DIR/base.img" "${mb}M" >/dev/null ||
	vm_die "mkfs.ext4 -d failed"
echo "$want" >"$VM_DIR/stamp"
vm_log "base image built in $((SECONDS - t0)) s: $VM_DIR/base.img (${mb} MB), kernels $(cat "$VM_DIR"/boot/version-* | tr '\n' ' ')"
