# Helpers shared by the benchmarks' scripts (tests/bench/bench_*.sh); source it.
# shellcheck shell=bash

# median: the median of the numbers on stdin, one a line ("-" for none).
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "-"; else print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
# quartiles: the first and third of the numbers on stdin (linear between ranks), "- -" for none.
quartiles() { sort -g | awk '{ a[NR] = $1 } function q(p, h, l) { h = (NR - 1) * p + 1; l = int(h); return l >= NR ? a[NR] : a[l] + (h - l) * (a[l + 1] - a[l]) } END { if (NR == 0) print "- -"; else printf "%.3f %.3f", q(0.25), q(0.75) }'; }

# The servers run in a cgroup v2 of their own, as a service unit or a container would have
# them, their clients where the bench runs: ebee's framing program attaches to the cgroups
# of the traced server's sockets (docs/design.md 4.9, "Scope"), so the clients' packets, a
# neighbour's, do not run it. BENCH_SRV_CGROUP=0: the servers in the bench's own cgroup (on
# a host whose processes are all in the root, the framing program then runs for every
# packet of the host).
# bench_srv_cgroup NAME: makes the cgroup (its path in $srvcg, empty if none) and says where
# the servers and clients are. Remove it with bench_srv_cgroup_remove once they have gone.
bench_srv_cgroup() {
	local cg2
	srvcg=
	cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	if [ "${BENCH_SRV_CGROUP:-1}" = 1 ] && [ -n "$cg2" ] && mkdir "$cg2/$1" 2>/dev/null; then
		srvcg=$cg2/$1
		echo "note: the servers in cgroup ${srvcg#"$cg2"}, their clients in $(sed -n 's/^0:://p' /proc/self/cgroup)"
	else
		echo "note: the servers in the bench's own cgroup$([ -n "$cg2" ] || echo " (no cgroup v2 mounted)")"
	fi
}
# in_srvcg CMD...: CMD in the servers' cgroup (this shell stays where it is: call it in a
# subshell, `( in_srvcg ... ) &` or `$(in_srvcg ...)`).
in_srvcg() {
	[ -z "${srvcg:-}" ] || echo "$BASHPID" >"$srvcg/cgroup.procs" || return 1
	"$@"
}
# bench_srv_cgroup_remove: removes $srvcg, waiting a little for its processes to exit.
bench_srv_cgroup_remove() {
	[ -n "${srvcg:-}" ] || return 0
	for _ in $(seq 50); do rmdir "$srvcg" 2>/dev/null && return 0; sleep 0.1; done
}
