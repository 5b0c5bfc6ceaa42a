#!/bin/bash
# What an ebee start costs: CPU (user + system) of `ebee trace --pid $$ --mode io
# --duration 0.01`, which opens ebee (feature check, load and verify the BPF objects, attach),
# traces for 10 ms and closes. Under emulation (the VM lane) starts are most of ebee's
# tests' time, and every user pays one per start of ebee or parties.
# Interleaved, side by side in one run (median of per-round ratios):
#   heap:  as built: the open's BTF buffers served from the heap (metrics/src/open.c,
#          open_heap_begin);
#   mmap:  the same binary with glibc's thresholds set through GLIBC_TUNABLES, which ebee
#          leaves alone: each buffer a fresh mmap, as before;
#   base:  BENCH_BASE_EBEE, another build's ebee, if set.
# Environment: BENCH_STARTS (rounds, default 15).
set -u
cd "$(dirname "$0")/../.." || exit 1
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
[ -x build/ebee ] || { echo "build first (build/ebee missing)"; exit 1; }
n=${BENCH_STARTS:-15}
tmp=$(mktemp -d /tmp/ebee-start.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
[ "$(systemd-detect-virt 2>/dev/null)" = qemu ] &&
	echo "note: measured under emulation (qemu TCG, kernel $(uname -r)): absolute figures are meaningless, ratios are rough"

# start CONFIG: prints "cpu_s maxrss_kb" of one start.
start() {
	local bin=build/ebee env=()
	case $1 in
	mmap) env=(GLIBC_TUNABLES=glibc.malloc.mmap_threshold=131072) ;;
	base) bin=$BENCH_BASE_EBEE ;;
	esac
	env "${env[@]}" /usr/bin/time -f '%U %S %M' -o "$tmp/time" \
		"$bin" trace --pid $$ --mode io --duration 0.01 >/dev/null 2>"$tmp/err" ||
		{ echo "ebee ($1) failed: $(head -3 "$tmp/err")" >&2; exit 1; }
	awk '{ printf "%.3f %d\n", $1 + $2, $3 }' "$tmp/time"
}
median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

configs=(heap mmap)
[ -n "${BENCH_BASE_EBEE:-}" ] && configs+=(base)
echo "ebee start (trace --duration 0.01), CPU s per start, $n interleaved rounds"
printf "%-6s %-6s %8s %10s %12s\n" round config cpu_s maxrss_kb cpu/mmap
declare -A cpu rss # this round's, by config
for i in $(seq "$n"); do
	order=("${configs[@]}")
	[ $((i % 2)) -eq 0 ] && mapfile -t order < <(printf '%s\n' "${configs[@]}" | tac)
	for c in "${order[@]}"; do read -r cpu[$c] rss[$c] < <(start "$c") || exit 1; done
	for c in "${configs[@]}"; do
		r=$(awk -v a="${cpu[$c]}" -v b="${cpu[mmap]}" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')
		printf "%-6s %-6s %8s %10s %12s\n" "$i" "$c" "${cpu[$c]}" "${rss[$c]}" "$r"
		echo "$c ${cpu[$c]} ${rss[$c]} $r" >>"$tmp/all"
	done
done
for c in "${configs[@]}"; do
	printf "  %-5s median CPU per start %s s, peak RSS %s KB, per-round ratio to mmap %s\n" "$c" \
		"$(awk -v c="$c" '$1 == c { print $2 }' "$tmp/all" | median)" \
		"$(awk -v c="$c" '$1 == c { print $3 }' "$tmp/all" | median)" \
		"$(awk -v c="$c" '$1 == c { print $4 }' "$tmp/all" | median)"
done
