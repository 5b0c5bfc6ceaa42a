# Shared by the VM lane's scripts (sourced, not run). See tests/vm/README.md.

# The repository being tested: the checkout these scripts live in.
VM_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
VM_DIR=${VM_DIR:-$VM_REPO/build/vm}

vm_log() { echo "vm: $*" >&2; }
vm_die() {
	echo "vm: FAIL: $*" >&2
	exit 1
}

# retry N CMD...: runs CMD up to N times, 10 s apart (mirrors and the dpkg lock are flaky).
vm_retry() {
	local n=$1 i
	shift
	for ((i = 1; i <= n; i++)); do
		"$@" && return 0
		[ "$i" -lt "$n" ] && vm_log "attempt $i/$n failed: $*; retrying in 10 s" && sleep 10
	done
	return 1
}

# The host's Debian mirror for a suite (bookworm, bookworm-security), from its apt sources:
# CI reaches only that mirror, so the lane never names another host.
vm_mirror() {
	local suite=$1 f uri
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -r "$f" ] || continue
		# deb822 stanzas: blank-line separated; the URIs of the one that lists the suite
		uri=$(awk -v s="$suite" 'BEGIN { RS = ""; FS = "\n" }
			{ u = ""; ok = 0
			  for (i = 1; i <= NF; i++) {
				if ($i ~ /^URIs:/) { sub(/^URIs:[ \t]*/, "", $i); split($i, a, /[ \t]+/); u = a[1] }
				if ($i ~ /^Suites:/) { n = split($i, b, /[ \t]+/); for (j = 2; j <= n; j++) if (b[j] == s) ok = 1 }
			  }
			  if (ok && u != "") { print u; exit } }' "$f")
		[ -n "$uri" ] && echo "$uri" && return 0
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -r "$f" ] || continue
		uri=$(awk -v s="$suite" '$1 == "deb" { i = 2; if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
			if ($(i + 1) == s) { print $i; exit } }' "$f")
		[ -n "$uri" ] && echo "$uri" && return 0
	done
	return 1
}

# Host tools the lane needs, from the Debian mirror when missing.
VM_HOST_PKGS="qemu-system-x86 debootstrap e2fsprogs"
vm_host_deps() {
	local p missing=
	for p in $VM_HOST_PKGS; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	vm_log "installing$missing"
	vm_retry 3 apt-get update -qq || return 1
	DEBIAN_FRONTEND=noninteractive vm_retry 3 apt-get install -y -qq --no-install-recommends \
		$missing >/dev/null
}
