# shellcheck shell=bash
# Common start of the Figure 11 study's tests (sourced with the test's NAME):
#
#	. "$(dirname "$0")/../lib/fig11.sh" NAME
#
# The repository as working directory; skip and die; SKIP unless the study can run here
# (root, 2 CPUs, the built programs, memcached, ip, tc, taskset, matplotlib, network
# namespaces, no study running) and FAIL unless fig11.py's selftest passes; a new
# directory $OUT (/tmp/fig11-NAME.XXXXXX, copied to /tmp/fig11-NAME-keep at exit when
# FIG11_KEEP is set); $RUN, the pid of a run.sh the test started (empty when none runs);
# and an EXIT trap that stops that run.sh and removes what it would have removed, had it
# been killed hard: the namespace, the link, the cgroups of every config it wrote.
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
skip() { echo "SKIP: $*"; exit 77; }
die() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, cgroups, BPF)"
[ "$(getconf _NPROCESSORS_ONLN)" -ge 2 ] || skip "needs at least 2 CPUs"
for b in build/parties build/loadgen build/hotel build/ebee; do
	[ -x "$b" ] || skip "$b is not built (make all)"
done
for c in memcached ip tc taskset; do
	command -v $c >/dev/null || skip "$c is not installed (make deps; the study's servers and link need it)"
done
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null || skip "python3-matplotlib is not installed (make deps)"
ip netns list 2>/dev/null | grep -qw ebee-fig11 && skip "a Figure 11 study is running (netns ebee-fig11 exists)"
ip netns add ebee-fig11-probe 2>/dev/null || skip "cannot create network namespaces here"
ip netns del ebee-fig11-probe

/usr/bin/python3 experiments/figure11/fig11.py selftest || die "fig11.py selftest"

FIG11_NAME=$1
OUT=$(mktemp -d "/tmp/fig11-$FIG11_NAME.XXXXXX")
RUN=
fig11_cleanup() {
	if [ -n "$RUN" ] && kill -0 "$RUN" 2>/dev/null; then
		kill -TERM "$RUN" 2>/dev/null
		for _ in $(seq 100); do kill -0 "$RUN" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$RUN" 2>/dev/null
	fi
	wait 2>/dev/null
	ip netns del ebee-fig11 2>/dev/null
	ip link del f11srv 2>/dev/null
	for c in "$OUT"/runs/*/conf.ini "$OUT"/calibration/*.ini; do
		[ -f "$c" ] && build/parties -c "$c" --cleanup >/dev/null 2>&1
	done
	[ -n "${FIG11_KEEP:-}" ] && cp -r "$OUT" "/tmp/fig11-$FIG11_NAME-keep"
	rm -rf "$OUT"
}
trap fig11_cleanup EXIT

# fig11_outputs FILE...: FAIL unless each FILE (below $OUT) is there and not empty, and
# figure11.pdf and figure11.png are a PDF and a PNG.
fig11_outputs() {
	local f
	for f in "$@"; do
		[ -s "$OUT/$f" ] || die "$f missing or empty"
	done
	head -c 4 "$OUT/figure11.pdf" | grep -q '%PDF' || die "figure11.pdf is not a PDF"
	head -c 8 "$OUT/figure11.png" | grep -q 'PNG' || die "figure11.png is not a PNG"
}

# fig11_watch SECONDS CHECK: while the run.sh $RUN runs, for up to SECONDS, run the
# function CHECK every 0.1 s (in this shell: what it sets stays set); FAIL if run.sh
# still runs then. Its exit status goes to rc, and RUN is emptied.
fig11_watch() {
	local limit=$1 check=$2
	for _ in $(seq $((limit * 10))); do
		kill -0 "$RUN" 2>/dev/null || break
		"$check"
		sleep 0.1
	done
	kill -0 "$RUN" 2>/dev/null && die "run.sh still running after $limit s"
	wait "$RUN"
	rc=$?
	RUN=
}
