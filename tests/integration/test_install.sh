#!/bin/bash
# make install / uninstall as a packager runs them: PREFIX and DESTDIR honoured, the exact
# file list, a 10-line program built with `pkg-config --cflags --libs ebee` against the
# installed tree traces a server and counts its requests, libebee.so and libebee.a export only
# the ebee.h API (a static program with its own procfs_stat() links and traces), every man page renders without warnings, the completions load, the unit passes
# `systemd-analyze verify`, --version on both programs, and uninstall leaves nothing.
set -u
cd "$(dirname "$0")/../.."
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (the installed program traces a server)"; exit 77; }
for b in pkg-config man nm cc; do
	command -v $b >/dev/null || { echo "SKIP: $b is not installed (make deps)"; exit 77; }
done
[ -x build/fixtures/cpr_server ] || { echo "FAIL: build first (make all)"; exit 1; }

d=$(mktemp -d /tmp/ebee-test-install.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$d"
	# put build/'s generated files back to the default paths
	make -s --no-print-directory build/ebee.pc build/parties.service >/dev/null 2>&1
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
P=/opt/ebee-test
root=$d/root
make -s --no-print-directory install DESTDIR="$root" PREFIX=$P >"$d/make.out" 2>&1 ||
	{ cat "$d/make.out"; fail "make install"; }

(cd "$root" && find . \( -type f -o -type l \) | sed 's|^\.||' | sort) >"$d/got"
sort >"$d/want" <<LIST
$P/include/ebee.h
$P/lib/libebee.a
$P/lib/libebee.so
$P/lib/libebee.so.0
$P/lib/pkgconfig/ebee.pc
$P/lib/systemd/system/parties.service
$P/sbin/ebee
$P/sbin/parties
$P/share/bash-completion/completions/ebee
$P/share/bash-completion/completions/parties
$P/share/man/man5/parties.ini.5
$P/share/man/man8/ebee.8
$P/share/man/man8/parties.8
/etc/parties/example.ini
LIST
diff -u "$d/want" "$d/got" || fail "installed file list differs (above)"
echo "ok: file list (14 files under DESTDIR, PREFIX=$P)"

v=$(sed -n 's/^VERSION *:= *//p' Makefile)
[ "$("$root$P/sbin/ebee" --version)" = "ebee $v" ] || fail "ebee --version"
[ "$("$root$P/sbin/parties" --version)" = "parties $v" ] || fail "parties --version"
echo "ok: --version says $v"

# Exported symbols = the functions ebee.h declares.
grep -o '^[a-z].*\bebee_[a-z_]*(' metrics/include/ebee.h | grep -o 'ebee_[a-z_]*' | sort >"$d/api"
nm -D --defined-only "$root$P/lib/libebee.so.0" | awk '$2 == "T" { sub(/@.*/, "", $3); print $3 }' |
	sort >"$d/syms"
diff -u "$d/api" "$d/syms" || fail "libebee.so exports differ from ebee.h (above)"
echo "ok: nm -D lists only the $(wc -l <"$d/api") API functions"

# A program built the way a user would, against the installed tree only.
cat >"$d/p.c" <<'C'
#include <ebee.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
	struct ebee *eb = ebee_open(NULL, NULL, 0); struct ebee_stats st = { .sz = sizeof(st) };
	if (!eb || ebee_start_tracing(eb, atoi(argv[1]), NULL)) return 1;
	puts("live"); fflush(stdout); sleep(atoi(argv[2])); ebee_flush(eb);
	ebee_get_stats(eb, atoi(argv[1]), &st); printf("requests %llu\n", (unsigned long long)st.requests);
	ebee_close(eb); return 0; }
C
[ "$(grep -c '' "$d/p.c")" -le 10 ] || fail "the example program is longer than 10 lines"
flags=$(PKG_CONFIG_PATH="$root$P/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$root" \
	pkg-config --cflags --libs ebee) || fail "pkg-config ebee"
cc -o "$d/p" "$d/p.c" $flags -Wl,-rpath,"$root$P/lib" || fail "cc $flags"
ldd "$d/p" | grep -q "$root$P/lib/libebee.so.0" || fail "not linked to the installed libebee.so.0"
build/fixtures/cpr_server --ready-file "$d/ready" --timeout 600 >/dev/null 2>&1 &
srv=$!
pids+=($srv)
for _ in $(seq 100); do [ -s "$d/ready" ] && break; sleep 0.05; done
# traced_count PROG N: PROG traces the server for 3 s while a client sends N requests; it
# must exit 0 and print "requests N".
traced_count() {
	"$1" $srv 3 >"$1.out" 2>&1 &
	pids+=($!)
	for _ in $(seq 100); do grep -qs live "$1.out" && break; sleep 0.05; done
	build/fixtures/http_client --port "$(cat "$d/ready")" --requests "$2" >/dev/null || fail "client"
	wait "${pids[-1]}" || { cat "$1.out"; fail "$1 failed"; }
	grep -qx "requests $2" "$1.out" || { cat "$1.out"; fail "$1 counted wrong"; }
}
traced_count "$d/p" 77
echo "ok: cc \$(pkg-config --cflags --libs ebee) program traced 77 requests"

# The static library has the same global symbols, so a program linking it statically may
# define names libebee uses inside (its /proc reader, its window) without a clash.
nm -g --defined-only "$root$P/lib/libebee.a" | awk 'NF == 3 { print $3 }' | sort >"$d/ssyms"
diff -u "$d/api" "$d/ssyms" || fail "libebee.a's global symbols differ from ebee.h (above)"
printf 'int procfs_stat(void) { return 7; }\nint ebee_window_new(void) { return 8; }\n' >"$d/own.c"
cc -o "$d/ps" "$d/p.c" "$d/own.c" -I"$root$P/include" "$root$P/lib/libebee.a" -lbpf -lelf -lz \
	-lpthread -lm -lstdc++ || fail "static link of a program with its own procfs_stat()"
traced_count "$d/ps" 55
echo "ok: libebee.a exports only the API; a static program with its own procfs_stat() traced 55 requests"

for m in man8/ebee.8 man8/parties.8 man5/parties.ini.5; do
	MANWIDTH=80 man --warnings -l "$root$P/share/man/$m" >"$d/man.out" 2>"$d/man.err" ||
		fail "man -l $m"
	[ -s "$d/man.err" ] && { cat "$d/man.err"; fail "man -l $m: warnings"; }
	[ "$(wc -l <"$d/man.out")" -gt 20 ] || fail "man -l $m: too short"
done
# the pages agree with --help and the example config
for o in $(build/ebee --help | grep -o -- '--[a-z-]*' | sort -u); do
	grep -q -- "$(echo "$o" | sed 's/-/\\\\-/g')" man/ebee.8.in || fail "ebee(8) lacks $o"
done
for o in $(build/parties --help | grep -o -- '--[a-z-]*' | sort -u); do
	grep -q -- "$(echo "$o" | sed 's/-/\\\\-/g')" man/parties.8.in || fail "parties(8) lacks $o"
done
for k in $(sed -n 's/^;\?\([a-z_][a-z0-9_]*\) *=.*/\1/p' configs/example.ini | sort -u); do
	grep -q "^\\\\fB$k\\\\fR" "$root$P/share/man/man5/parties.ini.5" || fail "parties.ini(5) lacks $k"
done
echo "ok: man -l renders ebee(8), parties(8), parties.ini(5) without warnings; options and keys agree"

bash -c ". '$root$P/share/bash-completion/completions/ebee';
	. '$root$P/share/bash-completion/completions/parties'; complete -p ebee parties" >/dev/null ||
	fail "completions do not load"
echo "ok: bash completions load"

if command -v systemd-analyze >/dev/null; then
	# verify checks that ExecStart= binaries exist: point the unit at the DESTDIR copies
	sed "s|$P/sbin|$root$P/sbin|g" "$root$P/lib/systemd/system/parties.service" >"$d/parties.service"
	grep -q '^Type=notify' "$d/parties.service" || fail "unit is not Type=notify"
	if systemd-analyze verify --man=no "$d/parties.service" >"$d/verify" 2>&1; then
		echo "ok: systemd-analyze verify parties.service"
	else
		cat "$d/verify"
		fail "systemd-analyze verify"
	fi
else
	echo "note: systemd-analyze not installed; unit not verified"
fi

make -s --no-print-directory uninstall DESTDIR="$root" PREFIX=$P || fail "make uninstall"
left=$(cd "$root" && find . -mindepth 1)
[ -z "$left" ] || fail "uninstall left: $left"
echo "ok: make uninstall left nothing"
echo PASS
