#!/bin/bash
# Fuzz of the configuration parser and the live checks through the real binary:
# a fixed-seed generator mutates a few valid configs into FUZZ_N (default 400) files
# and runs `parties --check-config` on each. Every run must end (5 s), exit 0 or 2
# (never a crash or a signal), every refusal must carry file:line, and nothing on the
# machine may change: no cgroup, no state directory, no log, no command started.
# PARTIES=build/asan/parties runs it against the sanitizer build (make asan does).
. "$(dirname "$0")/test_parties_lib.sh"
pt_require "${PARTIES:=build/parties}"
sleep 60 &
PT_PIDS+=($!)
: >"$PT_TMP/feed"
mkfifo "$PT_TMP/fifo"
ln -s /etc/hostname "$PT_TMP/link"
python3 - "$PT_TMP" "$PT_PARENT" "$!" "${FUZZ_N:-400}" "${FUZZ_SEED:-1}" <<'PY' || die "generator failed"
import os, random, sys
tmp, parent, pid, n, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
rnd = random.Random(seed)
head = f"""[controller]
interval_ms = 100
cgroup_parent = {parent}
state_dir = {tmp}/state
log = {tmp}/log.jsonl
ebee = auto
"""
bases = [
    head + f"""[resources]
cpus = 0-1
quota = true
[workload a]
pid = {pid}
target_ms = 5
cores = 1
source = client:{tmp}/feed
[workload b]
command = touch {tmp}/launched
target_ms = 10
max_cores = 1
""",
    head + f"""[workload web]
command = touch {tmp}/launched
target_ms = 2
source = ebee
ebee_mode = conn
user = nobody
[policy parties]
slack_up = 0.05
slack_down = 0.2
""",
    head + f"""[workload x]
pidfile = {tmp}/pidfile
target_ms = 1
feed = {tmp}/feed
min_quota = 0.1
max_quota = 1
""",
]
open(f"{tmp}/pidfile", "w").write(pid + "\n")
values = ["", "0", "1", "-1", "2", "1e309", "nan", "inf", "0x10", "99999999999999999999", "1.5",
          "0-1", "0-4095", "1-0", "a/b", "tasks", "cgroup.procs", "x" * 300, "true", "maybe",
          f"client:{tmp}/fifo", f"client:{tmp}/link", f"{tmp}/fifo", f"{tmp}/link", "/dev/zero",
          "grpc", "io", "static", "nobody", "no-such-user", "root", str(os.getpid()), "auto",
          f"{tmp}/nowhere/x", "/", "=", "[", "]", ";", "#", "\\", "\t", "\x01\x7f\xff"]
keys = ["pid", "pidfile", "command", "target_ms", "min_cores", "max_cores", "cores", "cpus",
        "quota", "min_quota", "max_quota", "freq_mhz", "source", "feed", "ebee_mode", "user",
        "group", "interval_ms", "policy", "seed", "log", "cgroup_parent", "state_dir", "ebee",
        "slack_up", "nokey", "freq", "quota_step", "quota_total"]
sections = ["[workload a]", "[workload tasks]", "[workload cpuset.cpus]", "[resources]",
            "[controller]", "[policy parties]", "[policy nope]", "[", "[workload]", "[]"]
def mutate(lines):
    k = rnd.randrange(8)
    i = rnd.randrange(len(lines) + 1)
    if k == 0 and lines:
        del lines[min(i, len(lines) - 1)]
    elif k == 1 and lines:
        lines.insert(i, rnd.choice(lines))
    elif k == 2:
        lines.insert(i, f"{rnd.choice(keys)} = {rnd.choice(values)}")
    elif k == 3:
        lines.insert(i, rnd.choice(sections))
    elif k == 4 and lines:
        j = min(i, len(lines) - 1)
        if "=" in lines[j]:
            lines[j] = lines[j].split("=")[0] + "= " + rnd.choice(values)
    elif k == 5 and lines:
        j = min(i, len(lines) - 1)
        lines[j] = lines[j][: rnd.randrange(len(lines[j]) + 1)]
    elif k == 6:
        lines.insert(i, "".join(chr(rnd.randrange(1, 256)) for _ in range(rnd.randrange(1, 40))))
    elif k == 7 and len(lines) > 1:
        j = rnd.randrange(len(lines))
        lines[min(i, len(lines) - 1)], lines[j] = lines[j], lines[min(i, len(lines) - 1)]
os.makedirs(f"{tmp}/cases")
for c in range(n):
    lines = rnd.choice(bases).splitlines()
    for _ in range(rnd.randrange(1, 5)):
        mutate(lines)
    with open(f"{tmp}/cases/{c:04d}.ini", "w", encoding="latin-1") as f:
        f.write("\n".join(lines) + "\n")
PY
ok=0 refused=0 bad=0
for f in "$PT_TMP"/cases/*.ini; do
	timeout 5 "$PARTIES" --check-config "$f" >/dev/null 2>"$PT_TMP/err"
	rc=$?
	case $rc in
	0) ok=$((ok + 1)) ;;
	2)
		# the first line of the message: "parties: FILE:LINE: ..."
		if head -1 "$PT_TMP/err" | grep -qE "^parties: $f:[0-9]+: "; then
			refused=$((refused + 1))
		else
			echo "FAIL: refusal without file:line for $f:"
			head -3 "$PT_TMP/err"
			bad=$((bad + 1))
		fi
		;;
	*)
		echo "FAIL: exit $rc (124: hung) on $f:"
		cat "$f"
		head -5 "$PT_TMP/err"
		bad=$((bad + 1))
		;;
	esac
	grep -q "runtime error\|AddressSanitizer\|LeakSanitizer" "$PT_TMP/err" &&
		{ echo "FAIL: sanitizer report on $f"; cat "$PT_TMP/err"; bad=$((bad + 1)); }
done
echo "$((ok + refused + bad)) configs: $ok accepted, $refused refused with file:line, $bad bad"
[ -z "$(pt_cgroups_left)" ] || die "the fuzz changed the machine: $(pt_cgroups_left)"
[ ! -e "$PT_TMP/state" ] || die "the fuzz created a state directory"
[ ! -e "$PT_TMP/log.jsonl" ] || die "the fuzz created a log"
[ ! -e "$PT_TMP/launched" ] || die "the fuzz started a workload command"
[ "$bad" = 0 ] || die "$bad bad runs"
[ "$ok" -gt 0 ] && [ "$refused" -gt 0 ] || die "the generator is off: want both accepted and refused configs"
echo PASS
