#!/bin/bash
# parties on a machine with SMT siblings or NUMA nodes (issue 19; the VM lane's
# 2 nodes x 2 cores x 2 threads guest): the topology parties prints is what sysfs says,
# read here independently; with smt = whole every workload's cpuset holds whole cores
# (each sibling of each of its cpus), on one node while it fits, and on more than one
# memory node its cpuset.mems are the nodes of its cpus; at exit everything is restored.
# Where cpusets cannot be written (cpuset not usable on this cgroup layout) the same
# checks run on what --dry-run prints. SKIPs on a machine with neither SMT nor NUMA.
. "$(dirname "$0")/test_parties_lib.sh"
pt_require build/parties

sys=/sys/devices/system
smt=0
for f in "$sys"/cpu/cpu[0-9]*/topology/thread_siblings_list; do
	[ -r "$f" ] && grep -q '[,-]' "$f" && smt=1
done
nodes=$(ls -d "$sys"/node/node[0-9]* 2>/dev/null | wc -l)
[ "$smt" = 1 ] || [ "$nodes" -gt 1 ] ||
	skip "this machine has no SMT siblings and ${nodes} NUMA node(s) ($(nproc) cpus): nothing topology-aware to check"

# 1. --show-topology against sysfs: every group is some cpu's thread_siblings_list, on
#    the node whose cpulist has it
build/parties --show-topology >"$PT_TMP/topo.out" || die "--show-topology failed"
echo "parties --show-topology:"
sed 's/^/  /' "$PT_TMP/topo.out"
python3 - "$PT_TMP/topo.out" <<'PY' || die "--show-topology disagrees with sysfs"
import glob, re, sys
def cpus(s):
    out = set()
    for part in s.strip().split(','):
        if part:
            a, _, b = part.partition('-')
            out |= set(range(int(a), int(b or a) + 1))
    return out
sysfs = '/sys/devices/system'
online = cpus(open(f'{sysfs}/cpu/online').read())
node_of = {}
for d in glob.glob(f'{sysfs}/node/node[0-9]*'):
    for c in cpus(open(f'{d}/cpulist').read()):
        node_of[c] = int(d.rsplit('node', 1)[1])
seen = set()
for line in open(sys.argv[1]).read().splitlines()[1:]:
    m = re.match(r'node(\d+):(.*?)( \(no memory\))?$', line)
    assert m, line
    for g in re.findall(r'\[([0-9,]+)\]', m.group(2)):
        group = cpus(g)
        for c in group:
            sib = cpus(open(f'{sysfs}/cpu/cpu{c}/topology/thread_siblings_list').read()) & online
            assert sib == group, f'cpu {c}: sysfs siblings {sorted(sib)}, parties {sorted(group)}'
            assert node_of.get(c, 0) == int(m.group(1)), f'cpu {c} on node {node_of.get(c)}'
        seen |= group
assert seen == online, f'cpus shown {sorted(seen)}, online {sorted(online)}'
PY

# 2. under smt = whole, managed cpus that cut a core in half are refused before anything
#    is touched, naming the sibling (where there is SMT)
if [ "$smt" = 1 ]; then
	for f in "$sys"/cpu/cpu[0-9]*/topology/thread_siblings_list; do
		grep -q '[,-]' "$f" && break
	done
	half=${f#"$sys"/cpu/cpu}
	half=${half%%/*}
	sleep 30 &
	PT_PIDS+=($!)
	printf '[controller]\ncgroup_parent = %s\nstate_dir = %s\n[resources]\ncpus = %s\n[workload a]\npid = %s\ntarget_ms = 1\n' \
		"$PT_PARENT" "$PT_TMP/state" "$half" "$!" >"$PT_TMP/half.ini"
	build/parties --check-config "$PT_TMP/half.ini" >"$PT_TMP/half.out" 2>&1
	rc=$?
	[ $rc = 2 ] && grep -q "has cpu $half but not its SMT sibling" "$PT_TMP/half.out" ||
		{ cat "$PT_TMP/half.out"; die "cpus = $half (half a core) under smt = whole: exit $rc, want 2 naming the sibling"; }
	echo "half a core refused: $(cat "$PT_TMP/half.out")"
	sed -i 's/^\[resources\]$/[resources]\nsmt = shared/' "$PT_TMP/half.ini"
	build/parties --check-config "$PT_TMP/half.ini" >"$PT_TMP/half.out" 2>&1 ||
		{ cat "$PT_TMP/half.out"; die "cpus = $half under smt = shared was refused"; }
fi

# 3. two workloads with one whole core each
sleep 60 &
A=$!
sleep 60 &
B=$!
PT_PIDS+=("$A" "$B")
{
	pt_ini_controller 200
	cat <<INI
policy = static
[resources]
smt = whole
[workload a]
pid = $A
target_ms = 1
cores = 1
[workload b]
pid = $B
target_ms = 1
cores = 1
INI
} >"$PT_TMP/parties.ini"

mode=real
pt_parties -c "$PT_TMP/parties.ini" --duration 30
for _ in $(seq 100); do
	grep -q managing "$PT_TMP/parties.err" && break
	kill -0 "$PT_PARTIES" 2>/dev/null || break
	sleep 0.1
done
if ! grep -q managing "$PT_TMP/parties.err"; then
	grep -q 'cpuset' "$PT_TMP/parties.err" ||
		{ cat "$PT_TMP/parties.err"; die "parties did not start"; }
	echo "cpusets cannot be written here ($(grep -m1 cpuset "$PT_TMP/parties.err")): checking --dry-run's allocation"
	pt_stop_parties TERM 2>/dev/null
	mode=dry-run
	pt_parties -c "$PT_TMP/parties.ini" --dry-run --duration 1
	wait "$PT_PARTIES"
	PT_PARTIES=
fi
echo "allocation printed ($mode):"
grep -E 'parties: (topology|workload [ab]):' "$PT_TMP/parties.err" | sed 's/^/  /'
[ "$(grep -cE 'parties: workload [ab]: 1 core' "$PT_TMP/parties.err")" = 2 ] ||
	{ cat "$PT_TMP/parties.err"; die "no allocation line for both workloads"; }

# the printed groups, and in a real run the cgroups' files: whole cores, one node each,
# different nodes when there are two, mems = the nodes
python3 - "$PT_TMP/parties.err" "$mode" "$PT_PARENT" "$nodes" <<'PY' || die "allocation is not whole cores on one node"
import glob, os, re, sys
err, mode, parent, nnodes = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def cpus(s):
    out = set()
    for part in s.strip().split(','):
        if part:
            a, _, b = part.partition('-')
            out |= set(range(int(a), int(b or a) + 1))
    return out
sysfs = '/sys/devices/system'
def sib(c):
    return cpus(open(f'{sysfs}/cpu/cpu{c}/topology/thread_siblings_list').read())
node_of = {}
for d in glob.glob(f'{sysfs}/node/node[0-9]*'):
    for c in cpus(open(f'{d}/cpulist').read()):
        node_of[c] = int(d.rsplit('node', 1)[1])
got = {}
for line in open(err):
    m = re.match(r'parties: workload (\w+): \d+ cores?, \d+ threads?: (.*) \((.*)\)$', line.strip())
    if m:
        got[m.group(1)] = (set().union(*[cpus(g) for g in re.findall(r'\[([0-9,]+)\]', m.group(2))]), m.group(3))
assert set(got) == {'a', 'b'}, got
homes = []
for name, (cs, mems) in got.items():
    for c in cs:
        assert sib(c) <= cs, f'{name}: cpu {c} without its siblings {sorted(sib(c))}'
    ns = {node_of.get(c, 0) for c in cs}
    assert len(ns) == 1, f'{name}: cores on nodes {ns}'
    homes.append(ns.pop())
    if mode == 'real':
        for base in (f'/sys/fs/cgroup/cpuset/{parent}/{name}', f'/sys/fs/cgroup/{parent}/{name}'):
            if os.path.exists(f'{base}/cpuset.cpus'):
                break
        else:
            raise AssertionError(f'{name}: no cgroup')
        real = cpus(open(f'{base}/cpuset.cpus').read())
        assert real == cs, f'{name}: cgroup has {sorted(real)}, printed {sorted(cs)}'
        if nnodes > 1:
            mem = cpus(open(f'{base}/cpuset.mems').read())
            want = {node_of[c] for c in cs}
            assert mem == want, f'{name}: cpuset.mems {sorted(mem)}, nodes of its cpus {sorted(want)}'
            print(f'  {name}: cgroup cpuset.cpus {sorted(real)}, cpuset.mems {sorted(mem)}')
if nnodes > 1:
    assert homes[0] != homes[1], f'both workloads on node {homes[0]}: the second has a free node'
PY

if [ "$mode" = real ]; then
	pt_stop_restored TERM
fi
echo "PASS"
