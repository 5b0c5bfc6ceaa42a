#!/usr/bin/env python3
"""The simulated Figure 11 study (experiments/figure11/sim.sh runs it).

  sim.py run   [--config INI] [--out DIR] [--seeds 1,2,3] [--policies parties,util,static]
               [--feeds client,service,sojourn] [--scale F] [--jobs N] [--parties BIN]
  sim.py summary DIR       summary.txt / summary.json from the logs in DIR
  sim.py plot DIR          DIR/figure11-sim-POLICY.{png,pdf}, one column per feed (seed 1)

Every run is `parties -c CONF --simulate --seed N --log LOG` on a copy of the config in
which both workloads' `source` is the feed: client (the modelled clients' p99), service
(source = ebee, ebee_latency = service) or sojourn (source = ebee, ebee_latency = sojourn).
static never moves anything, so it runs once per seed (client feed) and stands for every
feed in the tables.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FEEDS = ["client", "service", "sojourn"]


# --- configs ----------------------------------------------------------------------------
def make_conf(template, feed, policy, scale, sets=None):
    """The template with the policy and the feed (each workload's source), its
    schedules stretched by scale. sets (policy-bench: a variant's settings, maybe
    none) is appended as [policy POLICY], and then the template may have no
    [policy] section of its own; None keeps the template's."""
    out, section = [], None
    for ln in open(template).read().splitlines():
        s = ln.strip()
        m = re.match(r"\[(workload (\S+)|[^\]]+)\]", s)
        if m:
            section = m.group(1)
            if sets is not None and section.startswith("policy "):
                raise SystemExit("%s: a scenario has no [policy] section (the bench adds it)" % template)
        m = re.match(r"(\w+)\s*=\s*(.*)$", s)
        key = m.group(1) if m and not s.startswith((";", "#")) else None
        if key in ("source", "ebee_latency") and section.startswith("workload"):
            continue
        if key == "policy" and section == "controller":
            ln = "policy = " + policy
        if key == "sim_load" and scale != 1:
            pts = []
            for p in m.group(2).split(","):
                t, v = p.strip().split(":")
                pts.append("%g:%s" % (float(t) * scale, v))
            ln = "sim_load = " + ", ".join(pts)
        if key == "duration_s" and scale != 1:
            ln = "duration_s = %g" % (float(m.group(2)) * scale)
        out.append(ln)
        if m is None and s.startswith("[workload"):
            if feed == "client":
                out.append("source = client")
            else:
                out.append("source = ebee")
                out.append("ebee_latency = " + feed)
    if sets:
        out += ["", "[policy %s]" % policy] + ["%s = %s" % kv for kv in sets]
    return "\n".join(out) + "\n"


def simulate(parties, conf, seed, log, prefix=()):
    """One parties --simulate run (under prefix, e.g. nice): its stderr, whose
    last line is the summary (exits the study, with parties' message, when the
    run fails)."""
    r = subprocess.run(list(prefix) + [parties, "-c", conf, "--simulate", "--seed", str(seed),
                                       "--log", log], capture_output=True, text=True)
    if r.returncode:
        raise SystemExit("parties failed (%s): %s" % (conf, r.stderr.strip()))
    return r.stderr


def schedule(template, scale):
    """Per workload: [(t_s, value, is_pct)], max_rps and target_ms, from the config."""
    wl, section = {}, None
    for ln in open(template).read().splitlines():
        s = ln.split(";")[0].strip()
        m = re.match(r"\[workload (\S+)\]", s)
        if m:
            section = m.group(1)
            wl[section] = {"max": None, "load": [], "target_ms": None}
            continue
        if s.startswith("["):
            section = None
        m = re.match(r"(\w+)\s*=\s*(.*)$", s)
        if not (m and section):
            continue
        k, v = m.group(1), m.group(2)
        if k == "sim_max_rps":
            wl[section]["max"] = float(v)
        elif k == "target_ms":
            wl[section]["target_ms"] = float(v)
        elif k == "sim_load":
            for p in v.split(","):
                t, r = p.strip().split(":")
                wl[section]["load"].append((float(t) * scale, float(r.rstrip("%")), r.endswith("%")))
    for w in wl.values():
        w["rps"] = [(t, v / 100 * w["max"] if pct else v) for t, v, pct in w["load"]]
    return wl


def decrease(sched):
    """(workload, start, end) of the first load decrease of the workload whose load
    varies most."""
    best = None
    for name, w in sched.items():
        pts = w["rps"]
        for k in range(len(pts) - 1):
            if pts[k + 1][1] < pts[k][1]:
                span = max(r for _, r in pts) - min(r for _, r in pts)
                if best is None or span > best[3]:
                    best = (name, pts[k][0], pts[k + 1][0], span)
                break
    return best[:3] if best else (None, None, None)


# --- running ----------------------------------------------------------------------------
def run(argv):
    ap = argparse.ArgumentParser(prog="sim.py run")
    ap.add_argument("--config", default=os.path.join(ROOT, "configs/figure11-sim.ini"))
    ap.add_argument("--out", default="/tmp/figure11-sim")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--policies", default="parties,util,static")
    ap.add_argument("--feeds", default=",".join(FEEDS))
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--parties", default=os.path.join(ROOT, "build/parties"))
    a = ap.parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    seeds = [int(s) for s in a.seeds.split(",")]
    feeds = a.feeds.split(",")
    jobs = []
    for pol in a.policies.split(","):
        for feed in feeds if pol != "static" else feeds[:1]:
            conf = os.path.join(a.out, "%s-%s.ini" % (pol, feed))
            with open(conf, "w") as f:
                f.write(make_conf(a.config, feed, pol, a.scale))
            for seed in seeds:
                jobs.append((pol, feed, seed, conf))
    meta = {"config": os.path.abspath(a.config), "scale": a.scale, "seeds": seeds,
            "feeds": feeds, "policies": a.policies.split(","), "runs": []}
    t0 = time.time()

    def one(job):
        pol, feed, seed, conf = job
        log = os.path.join(a.out, "%s-%s-s%d.jsonl" % (pol, feed, seed))
        line = simulate(a.parties, conf, seed, log).strip().splitlines()[-1]
        print(line, flush=True)
        m = re.search(r"in ([\d.]+) s wall, ([\d.]+) s CPU: (\d+) requests, (\d+) events", line)
        return {"policy": pol, "feed": feed, "seed": seed, "log": os.path.basename(log),
                "wall_s": float(m.group(1)), "cpu_s": float(m.group(2)),
                "requests": int(m.group(3)), "events": int(m.group(4))}

    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        meta["runs"] = list(ex.map(one, jobs))
    meta["study_wall_s"] = time.time() - t0
    with open(os.path.join(a.out, "runs.json"), "w") as f:
        json.dump(meta, f, indent=1)
    summary([a.out])
    plot([a.out])
    print("study: %d runs in %.1f s wall (%d jobs at once)" % (len(jobs), meta["study_wall_s"], a.jobs))


# --- analysis ---------------------------------------------------------------------------
def load_log(path):
    recs, summ = [], None
    for ln in open(path):
        r = json.loads(ln)
        if r.get("summary"):
            summ = r
        else:
            recs.append(r)
    return recs, summ


def metrics(recs, summ, interval_s, dec_wl, dec_t, dec_end):
    names = [w["name"] for w in recs[0]["wl"]]
    met = 0
    core_s = ghz_core_s = 0.0
    first_down = None
    prev = None
    changed = 0
    down_core_s = 0.0
    for r in recs:
        ok = True
        for w in r["wl"]:
            p = w.get("p99_client_us")
            if p is None or p > w["target_us"]:
                ok = False
            core_s += w["cores"] * interval_s
            ghz_core_s += w["cores"] * (w["freq_mhz"] or 0) / 1000.0 * interval_s
        met += ok
        if dec_t <= r["t"] < dec_end:
            down_core_s += [w for w in r["wl"] if w["name"] == dec_wl][0]["cores"] * interval_s
        cur = {w["name"]: (w["cores"], w["freq_mhz"]) for w in r["wl"]}
        if prev and cur != prev:
            changed += 1
        if prev and first_down is None and r["t"] >= dec_t:
            n = dec_wl  # the workload whose load falls: its cores or its frequency
            if cur[n][0] < prev[n][0] or (cur[n][1] or 0) < (prev[n][1] or 0):
                first_down = r["t"] - dec_t
        prev = cur
    return {"qos_frac": met / len(recs), "core_s": core_s, "ghz_core_s": ghz_core_s,
            "down_after_s": first_down, "down_core_s": down_core_s, "actions": summ["actions"] if summ else changed}


def agg(vals):
    v = [x for x in vals if x is not None]
    if not v:
        return None
    return {"mean": sum(v) / len(v), "min": min(v), "max": max(v), "n": len(v), "of": len(vals)}


def fmt(a, f="%.1f", scale=1.0):
    if a is None:
        return "never"
    s = (f + " [" + f + ", " + f + "]") % (a["mean"] * scale, a["min"] * scale, a["max"] * scale)
    if a["n"] < a["of"]:
        s += " (%d of %d runs; never in the others)" % (a["n"], a["of"])
    return s


def summary(argv):
    out = argv[0]
    meta = json.load(open(os.path.join(out, "runs.json")))
    sched = schedule(meta["config"], meta["scale"])
    dec_wl, dec_t, dec_end = decrease(sched)
    res = {}
    for run_ in meta["runs"]:
        recs, summ = load_log(os.path.join(out, run_["log"]))
        interval = recs[1]["t"] - recs[0]["t"]
        m = metrics(recs, summ, interval, dec_wl, dec_t, dec_end)
        res.setdefault((run_["policy"], run_["feed"]), []).append(m)
    lines = ["simulated Figure 11 (%s, scale %g, seeds %s); QoS = client p99 of every workload "
             "within its target in the interval; decrease = %s's load falls from %g s to %g s; first decrease = of its cores or "
             "frequency; ramp-down core-s = its cores over the decrease"
             % (os.path.basename(meta["config"]), meta["scale"],
                ",".join(map(str, meta["seeds"])), dec_wl, dec_t, dec_end),
             "values: mean [min, max] over seeds", ""]
    js = {}
    for feed in meta["feeds"]:
        lines.append("feed = %s" % feed)
        lines.append("  %-8s %-20s %-21s %-21s %-24s %-21s %s" % (
            "policy", "QoS met (%)", "core-seconds", "GHz x core-s",
            "first decrease after s", "ramp-down core-s", "actions"))
        for pol in meta["policies"]:
            key = (pol, feed) if pol != "static" else (pol, meta["feeds"][0])
            if key not in res:
                continue
            ms = res[key]
            row = {k: agg([m[k] for m in ms]) for k in ms[0]}
            js["%s/%s" % (pol, feed)] = row
            lines.append("  %-8s %-20s %-21s %-21s %-24s %-21s %s" % (
                pol + ("*" if pol == "static" else ""), fmt(row["qos_frac"], "%.1f", 100),
                fmt(row["core_s"], "%.0f"), fmt(row["ghz_core_s"], "%.0f"),
                fmt(row["down_after_s"], "%.1f"), fmt(row["down_core_s"], "%.0f"),
                fmt(row["actions"], "%.0f")))
        lines.append("")
    if "static" in meta["policies"]:
        lines.append("* static never moves: one run per seed, the same for every feed")
    runs = meta["runs"]
    cpu = sum(r["cpu_s"] for r in runs)
    ev = sum(r["events"] for r in runs)
    full = [r for r in runs]
    lines.append("timing: %d runs, study wall %.1f s; per run %.1f-%.1f s CPU, %.2f M events/s "
                 "(%.1f M requests, %.1f M events per run on average)"
                 % (len(runs), meta.get("study_wall_s", float("nan")),
                    min(r["cpu_s"] for r in full), max(r["cpu_s"] for r in full),
                    ev / cpu / 1e6 if cpu else 0, sum(r["requests"] for r in runs) / len(runs) / 1e6,
                    ev / len(runs) / 1e6))
    text = "\n".join(lines) + "\n"
    open(os.path.join(out, "summary.txt"), "w").write(text)
    json.dump(js, open(os.path.join(out, "summary.json"), "w"), indent=1)
    sys.stdout.write(text)


def plot(argv):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = argv[0]
    meta = json.load(open(os.path.join(out, "runs.json")))
    sched = schedule(meta["config"], meta["scale"])
    seed = meta["seeds"][0]
    colors = {"hotel": "tab:blue", "memcached": "tab:orange"}
    for pol in meta["policies"]:
        feeds = meta["feeds"] if pol != "static" else meta["feeds"][:1]
        fig, ax = plt.subplots(4, len(feeds), figsize=(5.2 * len(feeds), 11), sharex=True,
                               squeeze=False)
        for c, feed in enumerate(feeds):
            path = os.path.join(out, "%s-%s-s%d.jsonl" % (pol, feed, seed))
            if not os.path.exists(path):
                continue
            recs, _ = load_log(path)
            t = [r["t"] for r in recs]
            names = [w["name"] for w in recs[0]["wl"]]
            for n in names:
                i = names.index(n)
                col = colors.get(n)
                w = [r["wl"][i] for r in recs]
                mx = sched[n]["max"] or max(v for _, v in sched[n]["rps"])
                ax[0][c].plot(t, [100 * (x["rps"] or 0) / mx for x in w], color=col, lw=1,
                              label="%s (%% of %g rps)" % (n, mx))
                ax[1][c].plot(t, [(x.get("p99_client_us") or math.nan) / 1000 for x in w],
                              color=col, lw=1.4, label="%s client" % n)
                srv = "p99_sojourn_us" if feed == "sojourn" else "p99_service_us"
                ax[1][c].plot(t, [(x.get(srv) or math.nan) / 1000 for x in w], color=col,
                              lw=1, ls="--", label="%s server (%s)" % (n, srv[4:11]))
                ax[2][c].step(t, [x["cores"] for x in w], where="post", color=col, label=n)
                ax[3][c].step(t, [(x["freq_mhz"] or math.nan) / 1000 for x in w], where="post",
                              color=col, label=n)
            for n in names:
                ax[1][c].axhline(sched[n]["target_ms"], color=colors.get(n), lw=0.8, ls=":")
            ax[0][c].set_title("%s, fed by %s p99 (seed %d)" % (pol, feed, seed))
            ax[1][c].set_yscale("log")
            ax[0][c].set_ylabel("load (% of max)")
            ax[1][c].set_ylabel("p99 (ms); dotted: QoS 25 / 1 ms")
            ax[2][c].set_ylabel("cores")
            ax[3][c].set_ylabel("frequency (GHz)")
            ax[3][c].set_xlabel("time (s)")
            for r_ in range(4):
                ax[r_][c].grid(alpha=0.3)
            ax[1][c].legend(fontsize=7, loc="upper left")
            ax[0][c].legend(fontsize=7, loc="upper left")
            ax[2][c].legend(fontsize=7, loc="upper left")
        fig.tight_layout()
        for ext in ("png", "pdf"):
            fig.savefig(os.path.join(out, "figure11-sim-%s.%s" % (pol, ext)), dpi=110)
        plt.close(fig)
        print("plot: %s" % os.path.join(out, "figure11-sim-%s.png" % pol))


if __name__ == "__main__":
    cmds = {"run": run, "summary": summary, "plot": plot}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.stderr.write(__doc__)
        sys.exit(2)
    cmds[sys.argv[1]](sys.argv[2:])
