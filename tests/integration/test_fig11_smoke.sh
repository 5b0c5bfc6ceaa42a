#!/bin/bash
# The Figure 11 study at a small scale (about 60-90 s): experiments/figure11/run.sh with a
# 12 s schedule, one rep of the client-fed and the ebee-fed run, the calibration given.
# Shows: the network namespace and the rate-limited veth (htb, 3 Mbit/s for hotel,
# 20 for memcached) exist while it runs and are gone
# after; both load generators ran on CPU 0 only and inside the namespace, the servers on
# CPU 1 only, parties (and so ebee's consumer thread) on CPU 0; the study manifest, the
# per-run manifests, the summary, the PNG and the PDF exist; each log has both workloads;
# a run stopped by SIGTERM mid-way still removes the namespace, link, cgroups and processes.
# shellcheck source=../lib/fig11.sh
. "$(dirname "$0")/../lib/fig11.sh" smoke

experiments/figure11/run.sh --scale 0.05 --reps 1 --feeds client,ebee \
	--skip-calibration 300,5000,300 --link-mbit 3,20 --out "$OUT" >"$OUT/run.out" 2>&1 &
RUN=$!
seen_ns=0 seen_link=0 seen_qdisc=0
seen() {
	ip netns list 2>/dev/null | grep -qw ebee-fig11 && seen_ns=1
	ip -n ebee-fig11 link show f11lg >/dev/null 2>&1 && ip link show f11srv >/dev/null 2>&1 && seen_link=1
	tc class show dev f11srv 2>/dev/null | grep -q 'htb 1:10 .*rate 3Mbit' &&
		tc -n ebee-fig11 class show dev f11lg 2>/dev/null | grep -q 'htb 1:20 .*rate 20Mbit' && seen_qdisc=1
}
fig11_watch 120 seen
[ $rc -eq 0 ] || { tail -20 "$OUT/run.out"; die "run.sh exited $rc"; }
echo "run.sh: ok; namespace seen $seen_ns, veth pair seen $seen_link, htb 3/20 Mbit/s seen $seen_qdisc"
[ $seen_ns -eq 1 ] || die "the network namespace ebee-fig11 never existed during the run"
[ $seen_link -eq 1 ] || die "the veth pair f11srv/f11lg never existed during the run"
[ $seen_qdisc -eq 1 ] || die "no htb classes at 3 and 20 Mbit/s on the veth during the run"
ip netns list 2>/dev/null | grep -qw ebee-fig11 && die "the namespace is still there after the run"
ip link show f11srv >/dev/null 2>&1 && die "the veth f11srv is still there after the run"
grep -q "network namespace ebee-fig11 and link f11srv removed" "$OUT/run.out" || die "run.sh did not report the teardown"
grep -q '^  \[client rep 1/1\] t=' "$OUT/run.out" || die "no progress lines in the output"

fig11_outputs manifest.json study.json summary.txt summary.json figure11.png figure11.pdf
/usr/bin/python3 - "$OUT" <<'PY' || die "placement, manifest or logs wrong"
import json, os, sys
out = sys.argv[1]
m = json.load(open(os.path.join(out, "manifest.json")))
for k in ("commit", "kernel", "cpu_model", "cgroups", "packages", "command"):
    assert m.get(k), "study manifest lacks %s" % k
assert "--scale 0.05" in m["command"], m["command"]
for feed in ("client", "ebee"):
    d = os.path.join(out, "runs", feed + "-r1")
    rm = json.load(open(os.path.join(d, "manifest.json")))
    assert rm["feed"] == feed and rm["rep"] == 1 and rm["config"], "run manifest of " + feed
    p = json.load(open(os.path.join(d, "placement.json")))
    for lg in ("loadgen_hotel", "loadgen_memcached"):
        assert p[lg]["cpus"] == ["0"], (feed, lg, p[lg])
        assert p[lg]["host_netns"] is False, (feed, lg, "not in its own namespace")
    assert p["parties"]["cpus"] == ["0"], (feed, "parties", p["parties"])
    assert p["parties"]["threads"] >= (2 if feed == "ebee" else 1), p["parties"]
    for wl in ("hotel", "memcached"):
        assert p[wl]["cpus"] == ["1"], (feed, wl, p[wl])
        assert p[wl]["host_netns"] is True, (feed, wl)
    names = set()
    n = 0
    for ln in open(os.path.join(d, "log.jsonl")):
        o = json.loads(ln)
        if "wl" in o:
            n += 1
            names |= {w["name"] for w in o["wl"] if w.get("p99_client_us") is not None}
    assert n >= 10, (feed, "records", n)
    assert names == {"hotel", "memcached"}, (feed, "workloads with a client p99", names)
s = json.load(open(os.path.join(out, "summary.json")))
assert set(s["feeds"]) == {"client", "ebee"}, s["feeds"].keys()
for f, v in s["feeds"].items():
    q = v["runs"][0]["qos_met_frac_client"]["both"]
    assert q is not None and 0 <= q <= 1, (f, q)
print("placement: loadgens and parties on CPU 0, servers on CPU 1; manifests, summary, figures ok")
PY
grep -q "QoS met (client p99, both workloads)" "$OUT/summary.txt" || die "summary.txt lacks the QoS line"
experiments/figure11/run.sh --reps 1 --skip-calibration 300,5000,300 --link-mbit 3,20 --out "$OUT" \
	>/dev/null 2>&1 && die "run.sh reused a directory that already holds runs"

# Interrupted mid-run: the trap still removes the namespace, the link, the processes.
experiments/figure11/run.sh --scale 0.05 --reps 1 --feeds ebee --skip-calibration 300,5000,300 \
	--link-mbit 3,20 --out "$OUT/int" >"$OUT/int.out" 2>&1 &
RUN=$!
for _ in $(seq 300); do
	grep -q '^  \[ebee rep 1/1\] t=' "$OUT/int.out" 2>/dev/null && break
	kill -0 "$RUN" 2>/dev/null || break
	sleep 0.1
done
ip netns list | grep -qw ebee-fig11 || { cat "$OUT/int.out"; die "second run: no namespace mid-run"; }
kill -TERM "$RUN"
wait "$RUN"
RUN=
grep -q "run.sh: interrupted" "$OUT/int.out" || die "run.sh did not see the SIGTERM"
ip netns list | grep -qw ebee-fig11 && die "namespace left after SIGTERM"
ip link show f11srv >/dev/null 2>&1 && die "veth left after SIGTERM"
for _ in $(seq 100); do ls -d /sys/fs/cgroup/*/parties-fig11* >/dev/null 2>&1 || break; sleep 0.1; done
ls -d /sys/fs/cgroup/*/parties-fig11* >/dev/null 2>&1 && die "cgroups left 10 s after SIGTERM"
pgrep -f "build/loadgen --host 10.211.0.1" >/dev/null && die "load generators left after SIGTERM"
echo "interrupted run: namespace, link, cgroups and load generators gone"
echo "PASS"
