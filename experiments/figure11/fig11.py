#!/usr/bin/env python3
"""Helpers for experiments/figure11/run.sh (one responsibility each; run.sh drives them).

  fig11.py conf TEMPLATE OUT --feed SPEC ...   a parties config for one run or a calibration
  fig11.py now-t LOG                           parties' clock (the log's t) right now
  fig11.py step-result JSON RATE TARGET_US     "pass|fail p99_us achieved" of a calibration step
  fig11.py knee CURVE_JSON                     "RATE P99_US": the knee of a load-latency curve
  fig11.py link-rate CAL HOTEL_RPS MC_RPS U MC_U  "HOTEL_KBIT MC_KBIT": each share's rate
  fig11.py progress LOG LABEL T0               one progress line from the tail of a run's log
  fig11.py placement OUT.json NAME=PID ...     where processes may run (CPUs) and their netns
  fig11.py manifest OUT.json KEY=VALUE ...     provenance: commit, kernel, CPU, cgroups, packages
  fig11.py summary OUTDIR                      summary.json + summary.txt over every run and rep
  fig11.py plot OUTDIR                         figure11.png + figure11.pdf (rep 1 of each feed)
  fig11.py selftest                            check the pure helpers (knee, aggregation)

A feed SPEC is the latency that drives PARTIES plus optional modifiers:
  client         the load generators' p99 (source = client:FEED)
  ebee           ebee's server-side p99 (source = ebee)
  ebee-sojourn   ebee with `ebee_latency = sojourn` (needs the socket-layer work)
  ...+fallback   [policy parties] downsize_fallback = on
  ...+code       [policy parties] flavour = code (100 ms interval)
"""
import glob
import json
import math
import os
import platform
import re
import subprocess
import sys
import time

HOTEL_TARGET_US = 25000.0
BASES = ("client", "ebee", "ebee-sojourn")
MODS = ("fallback", "code")


def parse_spec(spec):
    parts = spec.split("+")
    base, mods = parts[0], parts[1:]
    if base not in BASES or any(m not in MODS for m in mods) or len(set(mods)) != len(mods):
        raise SystemExit("fig11.py: bad feed '%s': give one of %s, optionally +%s"
                         % (spec, ", ".join(BASES), " +".join(MODS)))
    return base, mods


# --- config -----------------------------------------------------------------------------------
def conf(argv):
    import argparse

    ap = argparse.ArgumentParser(prog="fig11.py conf")
    ap.add_argument("template")
    ap.add_argument("out")
    ap.add_argument("--feed-dir", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--feed", default="client", help="feed SPEC (see the module doc)")
    ap.add_argument("--bind", required=True, help="address the servers listen on")
    ap.add_argument("--srv-cpus", required=True, help="cpu list for the servers (taskset)")
    ap.add_argument("--srv-cores", type=float, required=True, help="quota_total in cores")
    ap.add_argument("--window-ms", type=int, required=True)
    ap.add_argument("--settle-ms", type=int, required=True)
    ap.add_argument("--mc-target-us", type=float, required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only")
    ap.add_argument("--static", action="store_true")
    ap.add_argument("--cfs-period-us", type=int, help="[resources] cfs_period_us")
    a = ap.parse_args(argv)
    base, mods = parse_spec(a.feed)
    step = 0.1
    # quota: the servers' CPUs are shared in 0.1-core steps; each workload keeps 0.1
    total = round(a.srv_cores, 1)
    maxq = round(total - step, 1)
    init = round(math.floor(total / 2 / step) * step, 1)
    out, section, skip = [], None, False
    for ln in open(a.template).read().splitlines():
        s = ln.strip()
        if s.startswith("["):
            m = re.match(r"\[workload (\S+)\]", s)
            section = m.group(1) if m else s
            skip = bool(m) and a.only is not None and m.group(1) != a.only
        if skip:
            continue
        m = re.match(r"\s*(\w+)\s*=\s*(.*)$", ln)
        key = m.group(1) if m and not s.startswith(";") else None
        val = m.group(2) if key else None
        wl = section if section and not section.startswith("[") else None
        if key == "log":
            ln = "log = " + a.log
        elif key == "seed":
            ln = "seed = %d" % a.seed
        elif key == "policy" and a.static:
            ln = "policy = static"
        elif key == "ebee" and a.static:
            ln = "ebee = false"
        elif key == "interval_ms" and "code" in mods:
            ln = "interval_ms = 100"
        elif key == "ebee_window_ms":
            ln = "ebee_window_ms = %d" % a.window_ms
        elif key == "quota_total":
            ln = "quota_total = %g" % total
            if a.cfs_period_us:
                ln += "\ncfs_period_us = %d" % a.cfs_period_us
        elif key == "quota" and wl:
            ln = "quota = %g" % (maxq if a.only else init)
        elif key == "max_quota" and wl:
            ln = "max_quota = %g" % maxq
        elif key == "min_quota" and wl:
            ln = "min_quota = %g" % step
        elif key == "flavour" and "code" in mods:
            ln = "flavour = code"
        elif key == "settle_ms":
            ln = "settle_ms = %d" % a.settle_ms
        elif key == "downsize_fallback":
            ln = "downsize_fallback = " + ("on" if "fallback" in mods else "off")
        elif key == "target_ms" and wl == "memcached":
            ln = "target_ms = %g" % (a.mc_target_us / 1000.0)
        elif key == "command" and wl:
            # the servers listen where the load generators reach them (hotel's own rate
            # cache stays on loopback, inside the workload)
            cmd = val.replace("--addr 127.0.0.1", "--addr " + a.bind)
            if wl == "memcached":
                cmd = cmd.replace("-l 127.0.0.1", "-l " + a.bind)
            # the servers run on the servers' CPUs only, whatever parties' own affinity
            # (parties runs "exec COMMAND"; each exec keeps the pid parties watches)
            if not cmd.startswith("exec ") and "&" not in cmd:
                cmd = "exec " + cmd
            ln = "command = taskset -c %s sh -c '%s'" % (a.srv_cpus, cmd.replace("'", "'\\''"))
        elif key == "source" and wl:
            feed = os.path.join(a.feed_dir, wl + ".feed")
            if base == "client":
                ln = "source = client:" + feed
            else:
                # say which latency: parties' default is sojourn, so the plain ebee
                # feed names service explicitly (its label says service time)
                ln = "source = ebee\nfeed = " + feed + "\nebee_latency = " + (
                    "sojourn" if base == "ebee-sojourn" else "service")
        elif key == "cgroup_parent" and a.static:
            ln = m.group(0) + "-calib"
        out.append(ln)
    open(a.out, "w").write("\n".join(out) + "\n")


def now_t(argv):
    p = argv[0]
    last = None
    for ln in open(p):
        try:
            o = json.loads(ln)
        except ValueError:
            continue
        if "t" in o:
            last = o["t"]
    if last is None:
        print("nan")
        return
    print("%.3f" % (last + time.time() - os.stat(p).st_mtime))


# --- calibration --------------------------------------------------------------------------------
def step_result(argv):
    o = json.load(open(argv[0]))
    rate, tgt = float(argv[1]), float(argv[2])
    ok = o["p99_us"] <= tgt and o["achieved_rps"] >= 0.98 * rate and o["errors"] == 0
    print("pass" if ok else "fail", "%.0f" % o["p99_us"], "%.0f" % o["achieved_rps"])


def monotone(points):
    """[(rate, p99, achieved)] sorted by rate, each p99 lowered to the smallest p99 seen at
    that rate or above: latency does not fall as load rises, so a p99 above a later one is
    noise (on a shared machine, a scheduling hiccup of the client), not the curve."""
    pts = sorted(points)
    out, low = [], float("inf")
    for x, y, a in reversed(pts):
        low = min(low, y)
        out.append((x, low, a))
    return out[::-1]


def knee_of(points):
    """The knee of a load-latency curve [(rate, p99_us, achieved_rps), ...]: on the monotone
    curve, the point of largest distance below the chord from the first to the last point,
    rate and log p99 both normalised (Kneedle, for a convex increasing curve). Only points
    whose achieved rate kept up (>= 98% of offered) can be the knee; the others still shape
    the chord. Log p99 because latency spans decades near saturation; but on a busy machine
    the low rates' p99 can climb steeply and flatten before the real rise (CI's host beside
    the VM lane: 850 us at 1000 rps, 1495 at 2000, 2938 at 32000, 7159 at 40000), a curve
    concave in log p99 that has no point below its chord. Such a curve is taken again on
    linear p99, where the rise past 32000 is the bend. None when the curve does not bend
    either way (too few points, flat)."""
    pts = monotone(points)
    if len(pts) < 3:
        return None
    for scale in (lambda y: math.log(max(y, 1)), float):
        k = _kneedle(pts, [scale(p[1]) for p in pts])
        if k is not None:
            return k
    return None


def _kneedle(pts, ys):
    """The kept-up point of pts farthest below the chord of (rate, ys), both normalised."""
    x0, x1 = pts[0][0], pts[-1][0]
    y0, y1 = ys[0], ys[-1]
    if x1 <= x0 or y1 <= y0:
        return None
    best, bi = 0.0, None
    for i, (x, y, ach) in enumerate(pts):
        if ach < 0.98 * x:
            continue
        d = (x - x0) / (x1 - x0) - (ys[i] - y0) / (y1 - y0)
        if d > best:
            best, bi = d, i
    return pts[bi] if bi is not None else None


def knee(argv):
    curve = json.load(open(argv[0]))
    k = knee_of([tuple(p) for p in curve])
    if not k:
        raise SystemExit("fig11.py knee: cannot find a knee in %s" % argv[0])
    # the target: p99 at the knee, rounded up to 10 us
    print("%d %d" % (k[0], int(math.ceil(k[1] / 10.0) * 10)))


def link_rate(argv):
    cal = json.load(open(argv[0]))
    hotel, mc, util, mc_util = (float(x) for x in argv[1:5])
    b = cal["bytes_per_request"]
    # per direction (down = servers to clients, up = clients to servers) the busier one
    # sets the rate: hotel's share so that its peak fills `util` of it, memcached's so that
    # its constant load fills `mc_util`
    h = max(hotel * b["hotel"][i] for i in (0, 1)) * 8 / 1000.0 / util
    m = max(mc * b["memcached"][i] for i in (0, 1)) * 8 / 1000.0 / mc_util
    print("%d %d" % (math.ceil(h), math.ceil(m)))


# --- progress, placement, provenance ------------------------------------------------------------
def progress(argv):
    log, label, t0 = argv[0], argv[1], float(argv[2])
    last = None
    try:
        with open(log, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 16384))
            for ln in f.read().decode(errors="replace").splitlines():
                try:
                    o = json.loads(ln)
                except ValueError:
                    continue
                if "wl" in o:
                    last = o
    except OSError:
        pass
    if not last:
        print("  [%s] waiting for the first decision" % label, flush=True)
        return
    parts = []
    for w in last["wl"]:
        c = w.get("p99_client_us")
        e = w.get("p99_ebee_us")
        parts.append("%s q=%s p99 client %s ebee %s %s" % (
            w["name"], w.get("quota"),
            "-" if c is None else "%.2fms" % (c / 1000), "-" if e is None else "%.2fms" % (e / 1000),
            w.get("action")))
    print("  [%s] t=%.0f s | %s" % (label, last["t"] - t0, " | ".join(parts)), flush=True)


def placement(argv):
    out, res = argv[0], {}
    host_ns = os.readlink("/proc/self/ns/net")  # run.sh runs in the host namespace
    for arg in argv[1:]:
        name, pid = arg.split("=", 1)
        tasks = {}
        for st in glob.glob("/proc/%s/task/*/status" % pid):
            try:
                txt = open(st).read()
            except OSError:
                continue
            m = re.search(r"^Cpus_allowed_list:\s*(\S+)", txt, re.M)
            tasks[st.split("/")[4]] = m.group(1) if m else None
        try:
            ns = os.readlink("/proc/%s/ns/net" % pid)
        except OSError:
            ns = None
        res[name] = {"pid": int(pid), "cpus": sorted(set(v for v in tasks.values() if v)),
                     "threads": len(tasks), "netns": ns, "host_netns": ns == host_ns}
    json.dump(res, open(out, "w"), indent=1)


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True,
                              timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def manifest(argv):
    out, m = argv[0], {}
    for kv in argv[1:]:
        k, v = kv.split("=", 1)
        try:
            m[k] = json.loads(v)
        except ValueError:
            m[k] = v
    cpu = None
    for ln in open("/proc/cpuinfo"):
        if ln.startswith("model name"):
            cpu = ln.split(":", 1)[1].strip()
            break
    mounts = open("/proc/mounts").read()
    cg = []
    if re.search(r" cgroup2 ", mounts):
        cg.append("v2 at " + " ".join(re.findall(r"^\S+ (\S+) cgroup2 ", mounts, re.M)))
    v1 = re.findall(r"^\S+ (\S+) cgroup ", mounts, re.M)
    if v1:
        cg.append("v1: " + " ".join(v1))
    pk = {}
    for p in ("memcached", "iproute2", "libbpf1", "python3-matplotlib", "linux-image-amd64",
              "libcgroup2", "clang", "gcc"):
        v = sh("dpkg-query -W -f='${Version}' %s 2>/dev/null" % p)
        pk[p] = v or None
    m.update({
        "commit": sh("git rev-parse HEAD"),
        "dirty": bool(sh("git status --porcelain --untracked-files=no")),
        "kernel": platform.release(),
        "kernel_version": platform.version(),
        "cpu_model": cpu,
        "ncpus": os.cpu_count(),
        "cgroups": cg,
        "packages": pk,
        "python": platform.python_version(),
        "hostname": platform.node(),
        "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    })
    json.dump(m, open(out, "w"), indent=1, sort_keys=True)


# --- reading a run ------------------------------------------------------------------------------
def run_dirs(outdir):
    """{spec: [rundir, ...]} ordered by rep, in the study's feed order."""
    meta = [json.load(open(p)) | {"dir": os.path.dirname(p)}
            for p in glob.glob(os.path.join(outdir, "runs", "*", "meta.json"))]
    order = []
    for m in sorted(meta, key=lambda m: (m.get("order", 0), m["rep"])):
        if m["feed"] not in order:
            order.append(m["feed"])
    return {f: [m["dir"] for m in sorted(meta, key=lambda m: m["rep"]) if m["feed"] == f]
            for f in order}


def load_run(d):
    meta = json.load(open(os.path.join(d, "meta.json")))
    recs, summ = [], None
    for ln in open(os.path.join(d, "log.jsonl")):
        try:
            o = json.loads(ln)
        except ValueError:
            continue
        if o.get("summary"):
            summ = o
        elif "wl" in o:
            recs.append(o)
    lg = {}
    for wl in ("hotel", "memcached"):
        try:
            lg[wl] = json.load(open(os.path.join(d, "lg-%s.json" % wl)))
        except (OSError, ValueError):
            lg[wl] = None
    return meta, recs, summ, lg


def series(meta, recs, wl, key):
    t0 = meta["t0"]
    xs, ys = [], []
    for o in recs:
        for w in o["wl"]:
            if w["name"] == wl:
                xs.append(o["t"] - t0)
                ys.append(w.get(key))
    return xs, ys


def offered(meta, t):
    """hotel offered rps at schedule time t (piecewise linear in % of max)."""
    pts = meta["schedule"]
    if t < pts[0][0] or t > pts[-1][0]:
        return None
    for (t1, r1), (t2, r2) in zip(pts, pts[1:]):
        if t1 <= t <= t2:
            r = r1 if t2 == t1 else r1 + (r2 - r1) * (t - t1) / (t2 - t1)
            return r * meta["hotel_max"] / 100.0
    return None


def episodes(pairs, target):
    eps, start, prev = [], None, None
    for x, y in pairs:
        bad = y is not None and y > target
        if bad and start is None:
            start = x
        if not bad and start is not None:
            eps.append((start, x))
            start = None
        prev = x
    if start is not None:
        eps.append((start, prev))
    return eps


def scale_down(recs, t0, plateau, wl="hotel"):
    """Seconds from the end of the peak plateau (t0-relative (start, end)) to the first
    record whose WL quota is below its plateau level, the lowest quota WL held over the
    plateau's second half (the lowest, so a probe-and-revert at the peak is not counted as
    a scale-down after it; as claim.py's run_metrics). None: never in the run."""
    start, end = plateau
    mid = (start + end) / 2.0
    q = [(o["t"] - t0, w.get("quota")) for o in recs for w in o["wl"] if w["name"] == wl]
    level = [y for x, y in q if mid <= x <= end and y is not None]
    if not level:
        return None
    low = min(level)
    for x, y in q:
        if x > end and y is not None and y < low - 1e-9:
            return round(x - end, 1)
    return None


def leads(base, other):
    """Per rep: base's scale-down time minus other's (positive: other scales down sooner).
    A run that never scales down counts as later than any that does (its lead is None,
    reported apart), both never: None."""
    out = []
    for rep in sorted(set(base) & set(other)):
        b, o = base[rep], other[rep]
        out.append({"rep": rep, "base_s": b, "other_s": o,
                    "lead_s": round(b - o, 1) if b is not None and o is not None else None,
                    "sooner": (o is not None and (b is None or o < b)),
                    "later": (b is not None and (o is None or o > b))})
    return out


def analyse(d):
    meta, recs, summ, lg = load_run(d)
    pts = meta["schedule"]
    lo, hi = 0.0, pts[-1][0]
    top = max(r for _, r in pts)
    peak_end = max(t for t, r in pts if r == top)
    target = {"hotel": HOTEL_TARGET_US, "memcached": meta["mc_target_us"]}
    win = [o for o in recs if lo <= o["t"] - meta["t0"] <= hi]
    res = {"feed": meta["feed"], "rep": meta["rep"], "dir": d, "scale": meta["scale"],
           "duration_s": hi, "intervals": len(win)}
    # QoS met by the clients' p99 (the only latency that matters to users), per interval
    met = {"hotel": 0, "memcached": 0, "both": 0}
    seen = 0
    for o in win:
        w = {x["name"]: x for x in o["wl"]}
        ok = {}
        for wl in ("hotel", "memcached"):
            c = w.get(wl, {}).get("p99_client_us")
            ok[wl] = c is not None and c <= target[wl]
            met[wl] += ok[wl]
        seen += 1
        met["both"] += ok["hotel"] and ok["memcached"]
    res["qos_met_frac_client"] = {k: round(v / seen, 3) if seen else None for k, v in met.items()}
    # allocation changes, from consecutive records (what was in force, not what was said)
    changes, first_dec, first_dec_wl = 0, None, {}
    ups = {"hotel": 0, "memcached": 0}
    downs = {"hotel": 0, "memcached": 0}
    prev = None
    for o in recs:
        t = o["t"] - meta["t0"]
        alloc = {w["name"]: (w.get("quota"), w.get("cores"), w.get("freq_mhz")) for w in o["wl"]}
        if prev is not None and lo <= t <= hi:
            changed = False
            for name, a in alloc.items():
                b = prev.get(name)
                if b is None:
                    continue
                for x, y in zip(a, b):
                    if x is None or y is None or x == y:
                        continue
                    changed = True
                    if x > y:
                        ups[name] = ups.get(name, 0) + 1
                    else:
                        downs[name] = downs.get(name, 0) + 1
                        if t >= peak_end and first_dec is None:
                            first_dec = t
                        if t >= peak_end and name not in first_dec_wl:
                            first_dec_wl[name] = t
            changes += changed
        prev = alloc
    res["allocation_changes"] = changes
    plateau_start = min(t for t, r in pts if r == top)
    res["hotel_scale_down_s"] = scale_down(recs, meta["t0"], (plateau_start, peak_end))
    res["first_decrease_after_load_falls_s"] = (round(first_dec - peak_end, 1)
                                                if first_dec is not None else None)
    res["load_falls_at_s"] = peak_end
    res["first_decrease_after_load_falls_s_by_wl"] = {
        k: round(v - peak_end, 1) for k, v in first_dec_wl.items()}
    for wl in ("hotel", "memcached"):
        dd = {"target_us": target[wl], "increases": ups.get(wl, 0),
              "decreases": downs.get(wl, 0)}
        for key, name in (("p99_client_us", "client"), ("p99_ebee_us", "ebee")):
            xs, ys = series(meta, recs, wl, key)
            pairs = [(x, y) for x, y in zip(xs, ys) if lo <= x <= hi]
            vals = [y for _, y in pairs if y is not None]
            dd["viol_frac_" + name] = (round(len([y for y in vals if y > target[wl]]) / len(vals), 3)
                                       if vals else None)
            eps = episodes(pairs, target[wl])
            dd["longest_viol_s_" + name] = round(max((b - a for a, b in eps), default=0.0), 1)
            dd["max_p99_ms_" + name] = round(max(vals, default=0) / 1000, 2)
        xs, qs = series(meta, recs, wl, "quota")
        q = [y for x, y in zip(xs, qs) if lo <= x <= hi and y is not None]
        if q:
            dd.update(quota_start=q[0], quota_min=min(q), quota_max=max(q),
                      quota_mean=round(sum(q) / len(q), 2), quota_end=q[-1])
        dd["reverts"] = len([1 for o in win for w in o["wl"]
                             if w["name"] == wl and w.get("action") == "revert"])
        if lg.get(wl):
            g = lg[wl]
            dd["loadgen"] = {k: g.get(k) for k in ("offered_rps", "achieved_rps", "p99_us",
                                                   "p999_us", "errors", "late")}
        res[wl] = dd
    if summ:
        res["controller"] = {k: summ.get(k) for k in ("intervals", "actions",
                                                      "loop_cpu_us_per_interval",
                                                      "loop_cpu_pct", "process_cpu_pct")}
    return res


# --- summary ------------------------------------------------------------------------------------
def agg(vals):
    v = [x for x in vals if x is not None]
    if not v:
        return None
    return {"mean": round(sum(v) / len(v), 3), "min": min(v), "max": max(v), "n": len(v),
            "of": len(vals)}


def fmt(a, unit="", pct=False):
    if a is None:
        return "n/a"
    f = (lambda x: "%.0f%%" % (100 * x)) if pct else (lambda x: "%g%s" % (round(x, 2), unit))
    s = f(a["mean"]) if a["n"] > 1 else f(a["min"])
    if a["n"] > 1:
        s += " [%s..%s]" % (f(a["min"]), f(a["max"]))
    if a["n"] < a["of"]:
        s += " (%d of %d runs; the rest: none)" % (a["n"], a["of"])
    return s


METRICS = [
    ("QoS met (client p99, both workloads)", lambda r: r["qos_met_frac_client"]["both"], "", True),
    ("QoS met (client p99), hotel", lambda r: r["qos_met_frac_client"]["hotel"], "", True),
    ("QoS met (client p99), memcached", lambda r: r["qos_met_frac_client"]["memcached"], "", True),
    ("hotel over target by ebee p99", lambda r: r["hotel"]["viol_frac_ebee"], "", True),
    ("memcached over target by ebee p99", lambda r: r["memcached"]["viol_frac_ebee"], "", True),
    ("longest hotel violation (client)", lambda r: r["hotel"]["longest_viol_s_client"], " s", False),
    ("load falls -> first allocation decrease", lambda r: r["first_decrease_after_load_falls_s"],
     " s", False),
    ("load falls -> hotel's first decrease", lambda r: r[
        "first_decrease_after_load_falls_s_by_wl"].get("hotel"), " s", False),
    ("load falls -> hotel below its plateau quota", lambda r: r.get("hotel_scale_down_s"),
     " s", False),
    ("allocation changes", lambda r: r["allocation_changes"], "", False),
    ("hotel quota mean (cores)", lambda r: r["hotel"].get("quota_mean"), "", False),
    ("memcached quota mean (cores)", lambda r: r["memcached"].get("quota_mean"), "", False),
    ("reverts", lambda r: r["hotel"]["reverts"] + r["memcached"]["reverts"], "", False),
    ("hotel loadgen p99", lambda r: (r["hotel"].get("loadgen") or {}).get("p99_us", 0) / 1000,
     " ms", False),
    ("memcached loadgen p99", lambda r: (r["memcached"].get("loadgen") or {}).get("p99_us", 0) / 1000,
     " ms", False),
    ("late sends (hotel+memcached)", lambda r: sum((r[w].get("loadgen") or {}).get("late", 0) or 0
                                                   for w in ("hotel", "memcached")), "", False),
    ("controller CPU per interval", lambda r: (r.get("controller") or {}).get(
        "loop_cpu_us_per_interval"), " us", False),
]


def summary(argv):
    outdir = argv[0]
    feeds = run_dirs(outdir)
    st = {}
    try:
        st = json.load(open(os.path.join(outdir, "study.json")))
    except (OSError, ValueError):
        pass
    cal = st.get("calibration", {})
    allres = {"study": st, "feeds": {}}
    L = []
    if st:
        L.append("study: %s" % st.get("description", ""))
        L.append("calibration%s: hotel 100%% = %s rps (p99 <= 25 ms); memcached knee %s rps at "
                 "p99 %s us -> target %s us%s" % (
                     " over the unshaped veth (sizes the link; the targets and 100%s are the "
                     "shaped calibration's, below)" if cal.get("shaped") else "",
                     cal.get("hotel"), cal.get("memcached"), cal.get("mc_knee_p99_us"),
                     st.get("mc_target_us"),
                     " (%gx the knee, a sensitivity run)" % st["mc_target_mult"]
                     if st.get("mc_target_mult", 1) != 1 else ""))
        L.append("link: %s" % st.get("link_desc"))
        L.append("cpus: %s" % st.get("cpu_desc"))
        L.append("window: p99 over the trailing %s ms in both feeds; an action is judged "
                 "%s ms after it (settle_ms)" % (st.get("window_ms"), st.get("settle_ms")))
        L.append("cfs period: %s" % (("%s us ([resources] cfs_period_us)" % st["cfs_period_us"])
                                     if st.get("cfs_period_us") else "the kernel's 100 ms"))
        if st.get("targets_desc"):
            L.append("targets: %s" % st["targets_desc"])
        if st.get("peak_desc"):
            L.append("hotel's peak: %s" % st["peak_desc"])
        sh_ = cal.get("shaped")
        if sh_:
            L.append("calibration through the shaped link: hotel 100%% = %s rps (p99 at %s rps "
                     "%s us; alone at its %s%% peak: %s); memcached knee %s rps at p99 %s us "
                     "(lowest p99 %s us)" % (
                         sh_["hotel"], sh_.get("hotel_floor_rps", 100), sh_["hotel_floor_p99_us"],
                         sh_["peak_pct"],
                         sh_["hotel_peak_alone"], sh_["memcached"], sh_["mc_knee_p99_us"],
                         sh_["mc_floor_p99_us"]))
    try:
        for ln in open(os.path.join(outdir, "uptime.txt")):
            L.append("load (uptime) " + ln.strip())
    except OSError:
        pass
    for f, dirs in feeds.items():
        runs = [analyse(d) for d in dirs]
        a = {name: agg([fn(r) for r in runs]) for name, fn, _, _ in METRICS}
        allres["feeds"][f] = {"runs": runs, "aggregate": a}
        L.append("")
        L.append("feed=%s: %d rep(s), scale %s, schedule %.0f s; mean [min..max] over reps"
                 % (f, len(runs), runs[0]["scale"], runs[0]["duration_s"]))
        for name, _, unit, pct in METRICS:
            L.append("  %-42s %s" % (name + ":", fmt(a[name], unit, pct)))
    L += compare(allres["feeds"])
    json.dump(allres, open(os.path.join(outdir, "summary.json"), "w"), indent=1)
    txt = "\n".join(L) + "\n"
    open(os.path.join(outdir, "summary.txt"), "w").write(txt)
    sys.stdout.write(txt)


def compare(feeds):
    """The question of the de-confounded study: does an ebee-fed run scale hotel down
    sooner than the client-fed run of the same modifiers, and by how much (paired by rep,
    which is also the load generators' seed)?"""
    L = []
    for f, fr in feeds.items():
        base, mods = parse_spec(f)
        cf = "+".join(["client"] + mods)
        if base == "client" or cf not in feeds:
            continue
        sd = lambda k: {r["rep"]: r.get("hotel_scale_down_s") for r in feeds[k]["runs"]}
        ls = leads(sd(cf), sd(f))
        fr["lead_vs_client"] = ls
        n = len(ls)
        sooner = sum(x["sooner"] for x in ls)
        later = sum(x["later"] for x in ls)
        a = agg([x["lead_s"] for x in ls])
        L.append("")
        L.append("%s vs %s: hotel's scale-down (quota below its plateau level) after the load "
                 "falls, paired by rep" % (f, cf))
        sv = lambda v: "never" if v is None else "%g s" % v
        L.append("  by rep: %s %s; %s %s" % (cf, ", ".join(sv(x["base_s"]) for x in ls), f,
                                             ", ".join(sv(x["other_s"]) for x in ls)))
        L.append("  lead (%s minus %s; positive = %s sooner): %s" % (cf, f, f, fmt(a, " s")))
        neither = sum(x["base_s"] is None and x["other_s"] is None for x in ls)
        L.append("  %s scaled down sooner in %d of %d reps, later in %d, at the same time in %d; "
                 "neither scaled down in %d" % (f, sooner, n, later, n - sooner - later - neither,
                                                neither))
        if a is None:
            verdict = ("no rep where both scaled down, so no lead in seconds; sooner in %d "
                       "(the other never did), later in %d" % (sooner, later))
        elif sooner == n and a["min"] > 0:
            verdict = "sooner in every rep, by %s" % fmt(a, " s")
        elif later == n and a["max"] < 0:
            verdict = "later in every rep, by %s" % fmt({**a, "mean": -a["mean"], "min": -a["max"],
                                                        "max": -a["min"]}, " s")
        else:
            verdict = "not consistently sooner: the reps disagree (range spans zero)"
        L.append("  => %s: %s" % (f, verdict))
    return L


# --- plot ---------------------------------------------------------------------------------------
def plot(argv):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outdir = argv[0]
    feeds = run_dirs(outdir)
    st = json.load(open(os.path.join(outdir, "study.json")))
    cols = list(feeds)
    fig, axes = plt.subplots(4, len(cols), figsize=(6.2 * len(cols), 10), sharex="col",
                             squeeze=False, gridspec_kw={"height_ratios": [1, 1.4, 1, 0.6]})
    title = {"client": "PARTIES fed by client p99 (load generators)",
             "ebee": "PARTIES fed by ebee server-side p99 (service time)",
             "ebee-sojourn": "PARTIES fed by ebee server-side p99 (sojourn)"}
    mct = st["mc_target_us"] / 1000.0
    for c, f in enumerate(cols):
        base, mods = parse_spec(f)
        meta, recs, summ, lg = load_run(feeds[f][0])
        end = meta["schedule"][-1][0]
        ax = axes[0][c]
        ts = [i * end / 400.0 for i in range(401)]
        ax.plot(ts, [offered(meta, t) for t in ts], color="tab:blue", lw=1.5, label="hotel offered")
        xs, ys = series(meta, recs, "hotel", "rps")
        ax.plot(xs, ys, color="tab:blue", lw=0.7, alpha=0.5, label="hotel achieved")
        ax.set_ylabel("hotel rps")
        ax2 = ax.twinx()
        ax2.plot([0, end], [meta["mc_rate"]] * 2, color="tab:orange", lw=1.5,
                 label="memcached offered")
        xs, ys = series(meta, recs, "memcached", "rps")
        ax2.plot(xs, ys, color="tab:orange", lw=0.7, alpha=0.5, label="memcached achieved")
        ax2.set_ylabel("memcached rps", color="tab:orange")
        ax2.set_ylim(0, meta["mc_rate"] * 2.5)
        ax.set_ylim(0, meta["hotel_max"] * max(r for _, r in meta["schedule"]) / 100.0 * 1.15)
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, fontsize=7, loc="upper left", ncol=2)
        extra = " + ".join({"fallback": "downsize_fallback on", "code": "flavour = code"}[m]
                           for m in mods)
        ax.set_title("%s%s\n(rep 1 of %d, scale %s)" % (title[base], "\n" + extra if extra else "",
                                                         len(feeds[f]), meta["scale"]), fontsize=9)

        ax = axes[1][c]
        drive = "client" if base == "client" else "ebee"
        for wl, col in (("hotel", "tab:blue"), ("memcached", "tab:orange")):
            for key, ls, lab in (("p99_client_us", "-", "client"), ("p99_ebee_us", "--", "ebee")):
                xs, ys = series(meta, recs, wl, key)
                ys = [float("nan") if y is None else y / 1000.0 for y in ys]
                ax.plot(xs, ys, ls, color=col, lw=1.6 if lab == drive else 0.9,
                        label="%s %s%s" % (wl, lab, " (drives)" if lab == drive else ""))
        ax.axhline(25, color="red", lw=1, label="hotel target 25 ms")
        ax.axhline(mct, color="darkred", lw=0.8, ls=":",
                   label="memcached target %.2f ms (knee%s)" % (
                       mct, " x%g" % st["mc_target_mult"] if st.get("mc_target_mult", 1) != 1 else ""))
        ax.set_yscale("log")
        ax.set_ylabel("p99 over trailing %.1f s (ms)" % (st["window_ms"] / 1000.0))
        ax.legend(fontsize=6.5, loc="upper left", ncol=2)

        ax = axes[2][c]
        for wl, col in (("hotel", "tab:blue"), ("memcached", "tab:orange")):
            xs, ys = series(meta, recs, wl, "quota")
            ax.step(xs, [float("nan") if y is None else y for y in ys], where="post",
                    color=col, label=wl)
        ax.set_ylabel("cpu quota (cores)")
        ax.set_ylim(0, st["srv_cores"] * 1.05)
        ax.legend(fontsize=7, loc="upper left")

        ax = axes[3][c]
        run = analyse(feeds[f][0])
        txt = ("QoS met by client p99: both %.0f%%, hotel %.0f%%, memcached %.0f%%\n"
               "allocation changes %d; load falls -> first decrease: %s s (hotel's: %s s)\n"
               "frequency: %s" % (
                   100 * (run["qos_met_frac_client"]["both"] or 0),
                   100 * (run["qos_met_frac_client"]["hotel"] or 0),
                   100 * (run["qos_met_frac_client"]["memcached"] or 0),
                   run["allocation_changes"], run["first_decrease_after_load_falls_s"],
                   run["first_decrease_after_load_falls_s_by_wl"].get("hotel"),
                   "managed" if any(w.get("freq_mhz") is not None for o in recs for w in o["wl"])
                   else "no cpufreq on this machine"))
        ax.text(0.02, 0.5, txt, ha="left", va="center", transform=ax.transAxes, fontsize=8)
        ax.set_yticks([])
        ax.set_xlabel("time since the hotel schedule started (s)")
        for r in range(4):
            axes[r][c].set_xlim(-2, end + 2)
            axes[r][c].grid(alpha=0.3)
    fig.suptitle("Figure 11: hotel search 7%%->%g%%->7%% next to memcached at %g%% of its max; "
                 "PARTIES moving CPU quota (0.1-core steps%s)\n%s; p99 over the same trailing "
                 "%.1f s in every feed\n%s"
                 % (st.get("peak_pct", 100), st["mc_pct"],
                    ", cfs period %g ms" % (st["cfs_period_us"] / 1000.0)
                    if st.get("cfs_period_us") else "",
                    st["cpu_desc"], st["window_ms"] / 1000.0, st["link_desc"]),
                 fontsize=8.5)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    for ext in ("png", "pdf"):
        fig.savefig(os.path.join(outdir, "figure11." + ext), dpi=80)


def selftest(argv):
    """The pure helpers against known answers (the smoke test runs this first)."""
    # a flat curve that bends up: the knee is the last point before the rise
    pts = [(2000, 80, 2000), (4000, 90, 4000), (8000, 110, 8000), (16000, 200, 15900),
           (20000, 400, 19800), (24000, 3000, 23000), (28000, 20000, 22000),
           (32000, 50000, 20000)]
    assert knee_of(pts)[0] == 20000, knee_of(pts)
    # a point that did not keep up is never the knee
    assert knee_of([(1, 10, 1), (2, 11, 2), (3, 1000, 1)])[0] == 2
    assert knee_of([(1, 10, 1)]) is None
    # noise at low load (a p99 above a later one) does not move the knee
    noisy = [(2000, 1800, 2000), (4000, 90, 4000)] + pts[2:]
    assert monotone(noisy)[0][1] == 90, monotone(noisy)
    assert knee_of(noisy)[0] == 20000, knee_of(noisy)
    # concave in log p99 (busy machine: steep at low rates, then flat, then the rise): no
    # point below the log chord, so the knee comes from linear p99 (CI's curve, 2026-12-03)
    busy = [(1000, 850, 1021), (2000, 1826, 1966), (4000, 1495, 4067), (8000, 1871, 8127),
            (16000, 2605, 16098), (32000, 2938, 31986), (64000, 9745, 63543),
            (40000, 7159, 39936), (48000, 10231, 47940), (56000, 8884, 56185)]
    assert knee_of(busy)[0] == 32000, knee_of(busy)
    # a curve that never bends has no knee
    assert knee_of([(1, 10, 1), (2, 10, 2), (3, 10, 3)]) is None
    a = agg([1, 2, None, 3])
    assert (a["mean"], a["min"], a["max"], a["n"], a["of"]) == (2, 1, 3, 3, 4), a
    assert fmt(a, " s") == "2 s [1 s..3 s] (3 of 4 runs; the rest: none)", fmt(a, " s")
    assert fmt(agg([0.5]), pct=True) == "50%"
    assert parse_spec("ebee+fallback") == ("ebee", ["fallback"])
    for bad in ("foo", "client+foo", "ebee+code+code"):
        try:
            parse_spec(bad)
        except SystemExit:
            continue
        raise AssertionError("accepted " + bad)
    assert episodes([(0, 1), (1, 30), (2, 40), (3, 1), (4, 30)], 25) == [(1, 3), (4, 4)]
    # scale-down: below the lowest quota of the plateau's second half, after its end
    rr = [{"t": 100 + t, "wl": [{"name": "hotel", "quota": q}]}
          for t, q in ((0, .5), (10, .9), (15, .7), (18, .9), (20, .9), (21, .8), (22, .6))]
    assert scale_down(rr, 100, (10, 20)) == 2.0, scale_down(rr, 100, (10, 20))
    assert scale_down(rr[:6], 100, (10, 20)) is None
    ls = leads({1: 5.0, 2: None, 3: 2.0}, {1: 3.0, 2: 4.0, 3: 2.5})
    assert [x["lead_s"] for x in ls] == [2.0, None, -0.5], ls
    assert [(x["sooner"], x["later"]) for x in ls] == [(True, False), (True, False),
                                                       (False, True)], ls
    print("fig11.py selftest: ok")


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0)
    cmd, rest = sys.argv[1], sys.argv[2:]
    cmds = {"conf": conf, "now-t": now_t, "step-result": step_result, "knee": knee,
            "link-rate": link_rate, "progress": progress, "placement": placement,
            "manifest": manifest, "summary": summary, "plot": plot, "selftest": selftest}
    if cmd not in cmds:
        raise SystemExit("fig11.py: unknown command %s (see --help)" % cmd)
    cmds[cmd](rest)
