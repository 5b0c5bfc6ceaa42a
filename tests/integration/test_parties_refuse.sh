#!/bin/bash
# parties refuses, before anything starts and with file:line, every configuration that
# would make it manage what it must not (pid 1, itself, its ancestors, kernel threads,
# another workload's process), read from something that is not a regular file (a FIFO
# would stall the loop), write through a symlink or into a directory others can write,
# or that the machine cannot honour (cpus it does not have, an ebee mode not built).
# Every case runs the real binary with --dry-run (and --check-config when it exists)
# under a 10 s timeout: a hang is a failure, and nothing on the machine may change.
. "$(dirname "$0")/test_parties_lib.sh"
pt_require build/parties

sleep 60 &
PT_PIDS+=($!)
other=$!
cases=0 fails=0

# refuse WANT [ARGS...]: $PT_TMP/t.ini must be refused with exit 2 and WANT in the message
refuse()
{
	local want=$1 rc
	shift
	timeout 10 build/parties -c "$PT_TMP/t.ini" --dry-run --duration 0.5 "$@" \
		>"$PT_TMP/out" 2>"$PT_TMP/err"
	rc=$?
	cases=$((cases + 1))
	if [ "$rc" = 124 ]; then
		echo "FAIL: hung (killed after 10 s); want '$want'"
		fails=$((fails + 1))
	elif [ "$rc" != 2 ] || ! grep -qF -- "$want" "$PT_TMP/err"; then
		echo "FAIL: exit $rc, want 2 and '$want'; got:"
		tail -3 "$PT_TMP/err"
		fails=$((fails + 1))
	fi
	[ -z "$(pt_cgroups_left)" ] || die "a refused config changed the machine: $(pt_cgroups_left)"
	[ ! -e "$PT_TMP/state" ] || die "a refused config created its state directory"
}

# wl LINES...: a config whose [workload a] has the given lines after target_ms (line 6 on)
wl()
{
	{
		printf '[controller]\ncgroup_parent = %s\nstate_dir = %s/state\n' "$PT_PARENT" "$PT_TMP"
		printf '[workload a]\ntarget_ms = 1\n'
		printf '%s\n' "$@"
	} >"$PT_TMP/t.ini"
	chmod 0644 "$PT_TMP/t.ini"
}

wl "pid = 1"
refuse "t.ini:6: workload a: pid 1 is init"
wl "pid = $$"
refuse "t.ini:6: workload a: pid $$ is an ancestor of parties"
wl "pid = 2"
refuse "t.ini:6: workload a: pid 2 is a kernel thread"
echo 1 >"$PT_TMP/pidfile"
wl "pidfile = $PT_TMP/pidfile"
refuse "t.ini:6: workload a: pid 1 is init"
echo "$other" >"$PT_TMP/pidfile"
wl "pid = $other" "[workload b]" "target_ms = 1" "pidfile = $PT_TMP/pidfile"
refuse "t.ini:9: workload b: pid $other is already managed by workload a"

# not a regular file: a FIFO must be refused, not opened (it would block)
mkfifo "$PT_TMP/fifo"
wl "pid = $other" "source = client:$PT_TMP/fifo"
refuse "t.ini:7: workload a: feed $PT_TMP/fifo is not a regular file"
wl "pid = $other" "feed = $PT_TMP/fifo"
refuse "t.ini:7: workload a: feed $PT_TMP/fifo is not a regular file"
wl "pidfile = $PT_TMP/fifo"
refuse "t.ini:6: workload a: pidfile $PT_TMP/fifo is not a regular file"
wl "pid = $other"
sed -i "3a log = $PT_TMP/fifo" "$PT_TMP/t.ini"
refuse "t.ini:4: log $PT_TMP/fifo is not a regular file"
wl "pid = $other"
refuse "log $PT_TMP/fifo is not a regular file" --log "$PT_TMP/fifo"

# symlinks and directories others can write
ln -s /etc/hostname "$PT_TMP/link.jsonl"
wl "pid = $other"
refuse "log $PT_TMP/link.jsonl is a symbolic link" --log "$PT_TMP/link.jsonl"
mkdir -m 0777 "$PT_TMP/open"
wl "pid = $other"
sed -i "3a log = $PT_TMP/open/log.jsonl" "$PT_TMP/t.ini"
refuse "t.ini:4: log directory $PT_TMP/open is writable by other users"
wl "pid = $other"
sed -i "s|^state_dir = .*|state_dir = $PT_TMP/open/state|" "$PT_TMP/t.ini"
refuse "t.ini:3: state_dir: $PT_TMP/open is writable by other users"
[ ! -e "$PT_TMP/open/state" ] || die "state_dir was created in a world-writable directory"

# the config file itself: a FIFO, or writable by others, is refused
wl "pid = $other"
chmod 0666 "$PT_TMP/t.ini"
refuse "t.ini: writable by users other than root"
rm -f "$PT_TMP/t.ini"
mkfifo "$PT_TMP/t.ini"
refuse "t.ini: not a regular file"
rm -f "$PT_TMP/t.ini"

# what the machine cannot honour, and names that are cgroup files
wl "pid = $other"
printf '[resources]\nsmt = shared\ncpus = 0-%d\n' "$(nproc)" >>"$PT_TMP/t.ini"
refuse "t.ini:9: cpus: cpu $(nproc) is not online"
wl "pid = $other" "ebee_mode = grpc" "source = ebee"
refuse "t.ini:7: workload a: ebee_mode grpc, but process $other (and its descendants) maps no libgrpc"
for n in tasks notify_on_release release_agent cgroup.procs cpuset.cpus; do
	wl "pid = $other"
	sed -i "s/^\[workload a\]/[workload $n]/" "$PT_TMP/t.ini"
	refuse "t.ini:4: [workload $n]: workload name '$n'"
done
printf '[controller]\ncgroup_parent = %s\n\n; nothing else\n' "$PT_PARENT" >"$PT_TMP/t.ini"
refuse "t.ini:4: no [workload NAME] section"
wl "command = sleep 5" "user = no-such-user-here"
refuse "t.ini:7: workload a: user 'no-such-user-here' does not exist"
[ "$fails" = 0 ] || die "$fails of $cases refusals wrong"
echo "PASS ($cases refusals)"
