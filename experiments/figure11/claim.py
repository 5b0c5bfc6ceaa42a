#!/usr/bin/env python3
"""The Figure 11 claim mapped in simulation (experiments/figure11/claim.sh runs it).

The paper's claim: "with eBeeMetrics, PARTIES detects reduced latency sooner and scales
down more aggressively, while the client-fed baseline still sees network queueing". This
study sweeps, one factor at a time around a base point (configs/figure11-sim.ini as it
is), the conditions the claim depends on, and runs PARTIES fed by each feed (client, ebee
sojourn, ebee service) on every point, 3 seeds each:

  link=U   the bottleneck link's utilisation at hotel's peak, U% (by its rate)
  prop=D   its propagation delay, D us each way
  peak=P   hotel's peak, P% of its saturation (the rate that fills the cores left
           after memcached's mean CPU need, at the top frequency)
  lag=L    the client feed's reporting lag, L ms (sim_client_lag_ms, both workloads)

  claim.py run     [--config INI] [--out DIR] [--work DIR] [--points base,link=95,...]
                   [--seeds 1,2,3] [--feeds client,sojourn,service] [--scale F]
                   [--jobs N] [--keep-logs] [--fresh]

Each run's figures are saved in the work directory as it ends (m-POINT-FEED-sSEED.json,
with the config they came from); a later run of the study reuses those whose config is
unchanged, so a study cut short resumes (--fresh: run everything again).
  claim.py summary DIR     claim.csv, summary.txt, summary.json from DIR/runs.json
  claim.py plot DIR        DIR/claim-lead.png (and .pdf)

Definitions (README.md, "The claim mapped"): the load falls at the start of the schedule's
first decrease of hotel's load (360 s); hotel's allocation is its cores x frequency (GHz);
its plateau level is the lowest allocation it held over the last 60 s of the peak
plateau; the scale-down time of a run is the time from the fall to the first interval
whose allocation is below that level; the lead of a feed is the client-fed run's
scale-down time minus the feed's, paired by seed (positive: the feed scales down sooner).
QoS is judged by what clients saw (the sim_clients line when the client feed lags).
Energy: see POWER below.
"""
import argparse
import csv
import json
import math
import os
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import sim  # noqa: E402  (make_conf, schedule, decrease, load_log, simulate)

FEEDS = ["client", "sojourn", "service"]
# in the order they run (the most telling first, so a study cut short still maps the
# claim); tables and plots sort them by factor and value
DEFAULT_POINTS = ("base,link=95,lag=1000,peak=130,link=50,prop=400,link=75,link=25,"
                  "peak=100,lag=3000,prop=100")
FACTORS = {"link": "link utilisation at hotel's peak (%)", "prop": "propagation delay (us each way)",
           "peak": "hotel's peak (% of its saturation)", "lag": "client feed's reporting lag (ms)"}
# Power model, per core, W: an allocated core draws STATIC_W (it is awake, ready for its
# workload's requests) and DYN_W * u * (f / f_max)^3 while busy a fraction u of the time
# (dynamic power C V^2 f with V roughly proportional to f in the DVFS range: the cube law
# of Yao, Demers and Shenker, FOCS 1995); an unallocated core is asleep (0 W). About
# 8 W per busy core at the top frequency: 16 of them ~130 W, a 16-core server part's
# power budget. Uncore and memory are the same for every feed and left out.
STATIC_W = 2.0
DYN_W = 6.0
LEVEL_S = 60.0  # the plateau level: lowest allocation over the plateau's last 60 s


# --- configs ----------------------------------------------------------------------------
def parse_ini(text):
    """{section: {key: value}} of an INI text (comments dropped)."""
    out, sec = {}, None
    for ln in text.splitlines():
        s = ln.split(";")[0].split("#")[0].strip()
        m = re.match(r"\[(.+)\]$", s)
        if m:
            sec = m.group(1).strip()
            out.setdefault(sec, {})
            continue
        m = re.match(r"(\w+)\s*=\s*(.*)$", s)
        if m and sec:
            out[sec][m.group(1)] = m.group(2).strip()
    return out


def set_key(text, section, key, value):
    """text with key = value in [section] (replaced, or added after its header)."""
    lines, sec, done, hdr = text.splitlines(), None, False, None
    for i, ln in enumerate(lines):
        s = ln.strip()
        m = re.match(r"\[(.+)\]$", s)
        if m:
            sec = m.group(1).strip()
            if sec == section:
                hdr = i
            continue
        if sec == section and re.match(r"%s\s*=" % key, s):
            lines[i] = "%s = %s" % (key, value)
            done = True
    if not done:
        if hdr is None:
            raise SystemExit("no [%s] in the config" % section)
        lines.insert(hdr + 1, "%s = %s" % (key, value))
    return "\n".join(lines) + "\n"


def rate_at(pts, t):
    """A piecewise-linear schedule [(t, rps)] at t (held after the last point)."""
    if t <= pts[0][0]:
        return pts[0][1]
    for (t0, r0), (t1, r1) in zip(pts, pts[1:]):
        if t0 <= t < t1:
            return r0 + (r1 - r0) * (t - t0) / (t1 - t0)
    return pts[-1][1]


def describe(text):
    """What a config (already scaled) gives at hotel's peak: link utilisation (busier
    direction), hotel's peak as % of its saturation, the propagation delay and the lag."""
    tmp = os.path.join(os.environ.get("TMPDIR", "/tmp"), "claim-describe-%d.ini" % os.getpid())
    with open(tmp, "w") as f:
        f.write(text)
    try:
        sched = sim.schedule(tmp, 1.0)
    finally:
        os.unlink(tmp)
    ini = parse_ini(text)
    hot, t_fall, t_end = sim.decrease(sched)
    pts = sched[hot]["rps"]
    peak = max(r for _, r in pts)
    t_peak = [t for t, r in pts if r == peak][0]
    up = down = 0.0
    need = 0.0  # other workloads' mean CPU (cores) at the top frequency
    for name, w in sched.items():
        sec = ini["workload " + name]
        r = rate_at(w["rps"], t_peak)
        up += r * float(sec.get("sim_request_bytes", 100))
        down += r * float(sec.get("sim_response_bytes", 1000))
        if name != hot:
            need += r * float(sec.get("sim_service_us", 1000)) / 1e6
    simsec = ini["simulation"]
    gbps = float(simsec.get("link_gbps", 10))
    cores = int(float(simsec.get("cores", 16)))
    svc = float(ini["workload " + hot].get("sim_service_us", 1000)) / 1e6
    sat = (cores - need) / svc
    plateau = [t for t, r in pts if r == peak]
    return {"hotel": hot, "t_fall": t_fall, "t_end": t_end, "plateau": (plateau[0], plateau[-1]),
            "peak_rps": peak, "sat_rps": sat, "peak_pct": 100 * peak / sat,
            "bits_per_s": 8 * max(up, down), "link_gbps": gbps,
            "link_util": 100 * 8 * max(up, down) / (gbps * 1e9) if gbps > 0 else 0.0,
            "prop_us": float(simsec.get("prop_delay_us", 25)),
            "lag_ms": float(ini["workload " + hot].get("sim_client_lag_ms", 0)),
            "cores": cores, "freq_max_mhz": float(simsec.get("freq_max_mhz", 2300))}


def point_conf(template, spec, feed, scale):
    """The config of one point (spec: base or FACTOR=VALUE) fed by feed."""
    text = sim.make_conf(template, feed, "parties", scale)
    if spec == "base":
        return text
    m = re.match(r"(\w+)=([\d.]+)$", spec)
    if not m or m.group(1) not in FACTORS:
        raise SystemExit("bad point '%s': base or %s=VALUE" % (spec, "|".join(FACTORS)))
    k, v = m.group(1), float(m.group(2))
    d = describe(text)
    if k == "link":
        text = set_key(text, "simulation", "link_gbps", "%.6g" % (d["bits_per_s"] / (v / 100) / 1e9))
    elif k == "prop":
        text = set_key(text, "simulation", "prop_delay_us", "%g" % v)
    elif k == "peak":
        # the schedule peaks at 100% of sim_max_rps
        text = set_key(text, "workload " + d["hotel"], "sim_max_rps", "%.6g" % (v / 100 * d["sat_rps"]))
    elif k == "lag":
        for sec in parse_ini(text):
            if sec.startswith("workload "):
                text = set_key(text, sec, "sim_client_lag_ms", "%g" % v)
    return text


# --- metrics ----------------------------------------------------------------------------
def run_metrics(path, d):
    """Per-run figures (module docstring) from one log."""
    recs, clients, summ = [], {}, None
    for ln in open(path):
        r = json.loads(ln)
        if r.get("summary"):
            summ = r
        elif "sim_clients" in r:
            clients[r["t"]] = {c["name"]: c["p99_client_us"] for c in r["sim_clients"]}
        else:
            recs.append(r)
    dt = recs[1]["t"] - recs[0]["t"]
    hot, fmax = d["hotel"], d["freq_max_mhz"]
    t_fall, t_end = d["t_fall"], d["t_end"]
    lvl_from = max(d["plateau"][0], d["plateau"][1] - LEVEL_S * d["scale"])
    met = 0
    core_s = energy = 0.0
    cap = []  # (t, hotel's cores x GHz)
    gap = {}  # workload -> [client - sojourn p99 over the ramp-down, us]
    for r in recs:
        ok = True
        seen = clients.get(r["t"])
        for w in r["wl"]:
            p = seen[w["name"]] if seen is not None else w.get("p99_client_us")
            if p is None or p > w["target_us"]:
                ok = False
            f = w["freq_mhz"] or fmax
            u = w.get("cpu_used") or 0.0
            core_s += w["cores"] * dt
            energy += (w["cores"] * STATIC_W + min(u, w["cores"]) * DYN_W * (f / fmax) ** 3) * dt
            if w["name"] == hot:
                cap.append((r["t"], w["cores"] * f / 1000.0))
            if t_fall <= r["t"] < t_end and p is not None and w.get("p99_sojourn_us") is not None:
                gap.setdefault(w["name"], []).append(p - w["p99_sojourn_us"])
        met += ok
    level = min(c for t, c in cap if lvl_from <= t <= d["plateau"][1])
    down = next((t - t_fall for t, c in cap if t >= t_fall and c < level - 1e-9), None)
    ramp = sum(c for t, c in cap if t_fall <= t < t_end) * dt
    out = {"qos_pct": 100.0 * met / len(recs), "core_s": core_s, "energy_kj": energy / 1e3,
           "plateau_ghz_cores": level, "down_s": down, "ramp_ghz_core_s": ramp,
           "actions": summ["actions"] if summ else None}
    for name, g in gap.items():
        out["net_gap_ms_" + name] = sum(g) / len(g) / 1e3
    return out


# --- running ----------------------------------------------------------------------------
def run(argv):
    ap = argparse.ArgumentParser(prog="claim.py run")
    ap.add_argument("--config", default=os.path.join(ROOT, "configs/figure11-sim.ini"))
    ap.add_argument("--out", default=os.path.join(HERE, "results/claim"))
    ap.add_argument("--work", default="/tmp/figure11-claim")
    ap.add_argument("--points", default=DEFAULT_POINTS)
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--feeds", default=",".join(FEEDS))
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--keep-logs", action="store_true")
    ap.add_argument("--fresh", action="store_true")
    ap.add_argument("--parties", default=os.path.join(ROOT, "build/parties"))
    a = ap.parse_args(argv)
    feeds = a.feeds.split(",")
    if feeds[0] != "client":
        raise SystemExit("--feeds must start with client (the lead is against it)")
    points = a.points.split(",")
    seeds = [int(s) for s in a.seeds.split(",")]
    os.makedirs(a.out, exist_ok=True)
    os.makedirs(a.work, exist_ok=True)
    jobs, pts = [], {}
    for p in points:
        for feed in feeds:
            text = point_conf(a.config, p, feed, a.scale)
            conf = os.path.join(a.work, "%s-%s.ini" % (p.replace("=", ""), feed))
            with open(conf, "w") as f:
                f.write(text)
            d = describe(text)
            d["scale"] = a.scale
            pts[p] = d
            for s in seeds:
                jobs.append((p, feed, s, conf))
    t0 = time.time()

    def one(job):
        p, feed, seed, conf = job
        log = os.path.join(a.work, "%s-%s-s%d.jsonl" % (p.replace("=", ""), feed, seed))
        saved = os.path.join(a.work, "m-%s-%s-s%d.json" % (p.replace("=", ""), feed, seed))
        text = open(conf).read()
        if not a.fresh and os.path.exists(saved):
            old = json.load(open(saved))
            if old.get("conf") == text and old.get("scale") == a.scale:
                return old["res"]
        err = sim.simulate(a.parties, conf, seed, log, prefix=("nice", "-n", "10"))
        line = err.strip().splitlines()[-1]
        m = re.search(r"([\d.]+) s CPU", line)
        res = {"point": p, "feed": feed, "seed": seed, "cpu_s": float(m.group(1))}
        res.update(run_metrics(log, pts[p]))
        if not a.keep_logs:
            os.unlink(log)
        with open(saved + ".tmp", "w") as f:
            json.dump({"conf": text, "scale": a.scale, "res": res}, f)
        os.replace(saved + ".tmp", saved)
        print("%-9s %-8s seed %d: scale-down after %s s, QoS %.1f%%, %.1f s CPU"
              % (p, feed, seed, "never" if res["down_s"] is None else "%.1f" % res["down_s"],
                 res["qos_pct"], res["cpu_s"]), flush=True)
        return res

    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        runs = list(ex.map(one, jobs))
    meta = {"config": os.path.relpath(os.path.abspath(a.config), ROOT), "scale": a.scale,
            "seeds": seeds, "feeds": feeds, "points": points, "describe": pts,
            "power": {"static_w": STATIC_W, "dyn_w_at_fmax": DYN_W, "law": "f^3"},
            "study_wall_s": time.time() - t0, "runs": runs}
    with open(os.path.join(a.out, "runs.json"), "w") as f:
        json.dump(meta, f, indent=1)
    summary([a.out])
    plot([a.out])
    print("study: %d runs, %.0f s wall, %.0f s CPU (%d at once)"
          % (len(runs), meta["study_wall_s"], sum(r["cpu_s"] for r in runs), a.jobs))


# --- analysis ---------------------------------------------------------------------------
def agg(v):
    v = [x for x in v if x is not None]
    return None if not v else {"mean": sum(v) / len(v), "min": min(v), "max": max(v), "n": len(v)}


def fmt(a, f="%.1f", of=None):
    if a is None:
        return "never"
    s = (f + " [" + f + ", " + f + "]") % (a["mean"], a["min"], a["max"])
    if of and a["n"] < of:
        s += " (%d/%d)" % (a["n"], of)
    return s


def order(points):
    """base first, then by factor (FACTORS' order) and value."""
    def key(p):
        if p == "base":
            return (-1, 0)
        k, v = p.split("=")
        return (list(FACTORS).index(k), float(v))
    return sorted(points, key=key)


def table(meta):
    """{point: {feed: {metric: agg}}} with the lead paired by seed."""
    by = {}
    for r in meta["runs"]:
        by.setdefault(r["point"], {}).setdefault(r["feed"], {})[r["seed"]] = r
    out = {}
    for p in meta["points"]:
        out[p] = {}
        cl = by[p]["client"]
        for feed in meta["feeds"]:
            rs = by[p][feed]
            row = {k: agg([rs[s].get(k) for s in rs]) for k in
                   ("down_s", "qos_pct", "core_s", "energy_kj", "ramp_ghz_core_s", "actions",
                    "plateau_ghz_cores", "net_gap_ms_hotel", "net_gap_ms_memcached")}
            leads = []
            for s in rs:
                a_, b_ = cl[s]["down_s"], rs[s]["down_s"]
                leads.append(None if a_ is None or b_ is None else a_ - b_)
            row["lead_s"] = agg(leads)
            row["runs"] = len(rs)
            out[p][feed] = row
    return out


def summary(argv):
    out = argv[0]
    meta = json.load(open(os.path.join(out, "runs.json")))
    tab = table(meta)
    lines = ["The Figure 11 claim mapped (%s, scale %g, seeds %s): PARTIES (flavour = paper) "
             "fed by each feed; one factor at a time around the base point"
             % (meta["config"], meta["scale"], ",".join(map(str, meta["seeds"]))),
             "scale-down = s from hotel's load falling to its allocation (cores x GHz) going "
             "below its plateau level; lead = client's scale-down - the feed's, by seed; "
             "QoS = %% of intervals with both workloads' client p99 within target; energy: "
             "%.1f W per allocated core + %.1f W x busy x (f/fmax)^3; gap = clients' - "
             "sojourn p99 over the ramp-down (ms); ramp-down GHz x core-s = hotel's cores x GHz "
             "summed over the load's fall" % (meta["power"]["static_w"],
                                                        meta["power"]["dyn_w_at_fmax"]),
             "values: mean [min, max] over seeds; (n/3): runs that scaled down at all", ""]
    csvrows = []
    for p in order(meta["points"]):
        d = meta["describe"][p]
        lines.append("point %s: link %.3g Gbit/s = %.1f%% busy at hotel's peak, %g us each "
                     "way, hotel's peak %.0f rps = %.0f%% of its saturation (%.0f rps), client "
                     "lag %g ms" % (p, d["link_gbps"], d["link_util"], d["prop_us"],
                                    d["peak_rps"], d["peak_pct"], d["sat_rps"], d["lag_ms"]))
        lines.append("  %-8s %-22s %-22s %-19s %-19s %-19s %-22s %-19s %s" % (
            "feed", "scale-down after (s)", "lead (s)", "QoS met (%)", "core-s", "energy (kJ)",
            "ramp-down GHz x core-s", "gap hotel (ms)", "gap memcached (ms)"))
        for feed in meta["feeds"]:
            r = tab[p][feed]
            lines.append("  %-8s %-22s %-22s %-19s %-19s %-19s %-22s %-19s %s" % (
                feed, fmt(r["down_s"], of=r["runs"]),
                "-" if feed == "client" else fmt(r["lead_s"], of=r["runs"]),
                fmt(r["qos_pct"]), fmt(r["core_s"], "%.0f"), fmt(r["energy_kj"], "%.1f"),
                fmt(r["ramp_ghz_core_s"], "%.0f"), fmt(r["net_gap_ms_hotel"], "%.2f"),
                fmt(r["net_gap_ms_memcached"], "%.2f")))
            row = {"point": p, "feed": feed, "link_util_pct": round(d["link_util"], 2),
                   "link_gbps": round(d["link_gbps"], 4), "prop_us": d["prop_us"],
                   "peak_pct_of_saturation": round(d["peak_pct"], 1), "lag_ms": d["lag_ms"]}
            for k in ("down_s", "lead_s", "qos_pct", "core_s", "energy_kj", "ramp_ghz_core_s",
                      "actions", "net_gap_ms_hotel", "net_gap_ms_memcached"):
                for st in ("mean", "min", "max"):
                    row["%s_%s" % (k, st)] = (None if r[k] is None else round(r[k][st], 3))
                row[k + "_n"] = 0 if r[k] is None else r[k]["n"]
            csvrows.append(row)
        lines.append("")
    md = ["| point | link busy at peak | prop (us) | hotel peak / saturation | client lag (ms) | "
          "feed | scale-down after (s) | lead (s) | QoS met (%) | core-s | energy (kJ) |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
    for p in order(meta["points"]):
        d = meta["describe"][p]
        for i, feed in enumerate(meta["feeds"]):
            r = tab[p][feed]
            head = ("| %s | %.1f%% | %g | %.0f%% | %g " % (p, d["link_util"], d["prop_us"],
                                                           d["peak_pct"], d["lag_ms"])
                    if i == 0 else "| | | | | ")
            md.append(head + "| %s | %s | %s | %s | %s | %s |" % (
                feed, fmt(r["down_s"], of=r["runs"]),
                "-" if feed == "client" else fmt(r["lead_s"], of=r["runs"]),
                fmt(r["qos_pct"]), fmt(r["core_s"], "%.0f"), fmt(r["energy_kj"], "%.1f")))
    open(os.path.join(out, "claim-map.md"), "w").write("\n".join(md) + "\n")
    cpu = sum(r["cpu_s"] for r in meta["runs"])
    lines.append("timing: %d runs, %.0f s CPU in all (%.1f-%.1f s per run); the last "
                 "invocation took %.0f s wall (runs it reused take none)"
                 % (len(meta["runs"]), cpu, min(r["cpu_s"] for r in meta["runs"]),
                    max(r["cpu_s"] for r in meta["runs"]), meta["study_wall_s"]))
    text = "\n".join(lines) + "\n"
    open(os.path.join(out, "summary.txt"), "w").write(text)
    json.dump(tab, open(os.path.join(out, "summary.json"), "w"), indent=1)
    with open(os.path.join(out, "claim.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(csvrows[0]))
        w.writeheader()
        w.writerows(csvrows)
    sys.stdout.write(text)


def plot(argv):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = argv[0]
    meta = json.load(open(os.path.join(out, "runs.json")))
    tab = table(meta)
    base = "base" if "base" in meta["points"] else None
    colors = {"client": "tab:gray", "sojourn": "tab:blue", "service": "tab:orange"}
    axes_of = [k for k in FACTORS if any(p.startswith(k + "=") for p in meta["points"])]
    fig, ax = plt.subplots(2, len(axes_of), figsize=(4.6 * len(axes_of), 7.5), squeeze=False)
    keyof = {"link": "link_util", "prop": "prop_us", "peak": "peak_pct", "lag": "lag_ms"}
    for c, k in enumerate(axes_of):
        pts = [p for p in meta["points"] if p.startswith(k + "=")] + ([base] if base else [])
        pts.sort(key=lambda p: meta["describe"][p][keyof[k]])
        xs = [meta["describe"][p][keyof[k]] for p in pts]
        for feed in meta["feeds"]:
            for r_, (metric, lab) in enumerate((("lead_s", "lead over client-fed (s)"),
                                                ("down_s", "scale-down after the fall (s)"))):
                if metric == "lead_s" and feed == "client":
                    continue
                m = [tab[p][feed][metric] for p in pts]
                x = [xv for xv, a in zip(xs, m) if a]
                y = [a["mean"] for a in m if a]
                lo = [a["mean"] - a["min"] for a in m if a]
                hi = [a["max"] - a["mean"] for a in m if a]
                ax[r_][c].errorbar(x, y, yerr=[lo, hi], marker="o", capsize=3,
                                   color=colors.get(feed), label=feed)
                ax[r_][c].set_ylabel(lab)
        ax[0][c].axhline(0, color="k", lw=0.7)
        ax[0][c].set_title(FACTORS[k], fontsize=10)
        for r_ in range(2):
            ax[r_][c].set_xlabel(FACTORS[k])
            ax[r_][c].grid(alpha=0.3)
            if k == "prop":
                ax[r_][c].set_xscale("log")
        ax[0][c].legend(fontsize=8)
        ax[1][c].legend(fontsize=8)
    fig.suptitle("PARTIES (paper) fed by client / ebee sojourn / ebee service p99: scale-down "
                 "after hotel's load falls (mean, min-max of %d seeds; others at the base point)"
                 % len(meta["seeds"]), fontsize=10)
    fig.tight_layout()
    for ext in ("png", "pdf"):
        fig.savefig(os.path.join(out, "claim-lead.%s" % ext), dpi=110)
    plt.close(fig)
    print("plot: %s" % os.path.join(out, "claim-lead.png"))


if __name__ == "__main__":
    cmds = {"run": run, "summary": summary, "plot": plot}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.stderr.write(__doc__)
        sys.exit(2)
    cmds[sys.argv[1]](sys.argv[2:])
