#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The policy bench: every registered policy and published variant (`parties
--list-policies`) over every scenario in scenarios/ (or --scenarios), fed by each
latency feed (client, ebee sojourn, ebee service), for each seed, in `parties
--simulate`; then one leaderboard. See README.md.

  bench.py [--out DIR] [--seeds 1,2,3] [--scenario-dir D] [--scenarios a,b] [--policies P,P V]
           [--feeds client,sojourn,service] [--scale F] [--jobs N]
  bench.py summary DIR [DIR2 ...]   (re-print the leaderboard of a finished bench; a
                                    later DIR's policies replace the earlier's runs of
                                    them: rerun one policy with --policies and merge)

Nothing on the machine is touched (no root). New policies need no change here: the
bench runs whatever --list-policies prints.
"""
import argparse
import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FEEDS = ["client", "sojourn", "service"]

# The sim study's schedule parser and "first load decrease" rule, so both benches
# measure scale-down the same way.
_spec = importlib.util.spec_from_file_location("fig11sim", os.path.join(ROOT, "experiments/figure11/sim.py"))
fig11sim = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fig11sim)

# Power model (an assumption, stated in README.md and in every leaderboard): a core
# allocated to a workload is awake and draws P_STATIC; it draws P_DYN more for the
# fraction of the interval it was busy (cpu_used / cores), scaled by (f / f_max)^3
# (dynamic power ~ C V^2 f with V ~ f); a core allocated to nobody is power-gated
# (0 W). 1.5 + 5.0 W at full speed and load is about the per-core share of a 145 W,
# 22-core Xeon E5-2699 v4 (the class of the PARTIES paper's server); not calibrated.
P_STATIC_W = 1.5
P_DYN_W = 5.0


def list_policies(parties):
    """[(label, policy, [(key, value)])] from parties --list-policies."""
    r = subprocess.run([parties, "--list-policies"], capture_output=True, text=True, check=True)
    out = []
    for ln in r.stdout.splitlines():
        parts = ln.split()
        if not parts:
            continue
        sets = [tuple(p.split("=", 1)) for p in parts[1:]]
        label = " ".join([parts[0]] + [v for _, v in sets])
        out.append((label, parts[0], sets))
    return out


def make_conf(template, feed, policy, sets, scale):
    """The scenario with the policy, its variant's settings and the feed."""
    return fig11sim.make_conf(template, feed, policy, scale, sets=list(sets))


def freq_max_mhz(template):
    m = re.search(r"^freq_max_mhz\s*=\s*(\d+)", open(template).read(), re.M)
    return float(m.group(1)) if m else 2300.0


def run_metrics(recs, sched, fmax):
    """QoS met, core-seconds, energy, scale-down time and allocation changes of one log."""
    dec_wl, dec_t, _ = fig11sim.decrease(sched)
    met = 0.0
    span = 0.0
    core_s = energy = 0.0
    changes = 0
    first_down = None
    prev = None
    prev_t = None
    for r in recs:
        dt = r["t"] - prev_t if prev_t is not None else (recs[1]["t"] - recs[0]["t"])
        prev_t = r["t"]
        ok = True
        for w in r["wl"]:
            p = w.get("p99_client_us")
            if p is None or p > w["target_us"]:
                ok = False
            cores = w.get("cores") or 0
            f = (w.get("freq_mhz") or fmax) / fmax
            busy = w.get("cpu_used") or 0.0
            core_s += cores * dt
            energy += (cores * P_STATIC_W + min(busy, cores) * P_DYN_W * f ** 3) * dt
        met += dt if ok else 0.0
        span += dt
        cur = {w["name"]: (w.get("cores"), w.get("freq_mhz"), w.get("quota")) for w in r["wl"]}
        if prev is not None and cur != prev:
            changes += 1
        if prev is not None and first_down is None and dec_wl and r["t"] >= dec_t:
            c, p = cur[dec_wl], prev[dec_wl]
            if (c[0] or 0) < (p[0] or 0) or (c[1] or 0) < (p[1] or 0) or (c[2] or 0) < (p[2] or 0):
                first_down = r["t"] - dec_t
        prev = cur
    return {"qos": met / span if span else 0.0, "core_s": core_s, "energy_kj": energy / 1e3,
            "down_s": first_down, "changes": changes, "intervals": len(recs)}


def load_log(path):
    return [r for r in map(json.loads, open(path)) if not r.get("summary")]


def run(argv):
    ap = argparse.ArgumentParser(prog="bench.py")
    ap.add_argument("--out", default="/tmp/policy-bench")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--scenario-dir", default=os.path.join(HERE, "scenarios"),
                    help="where the scenarios are: every NAME.ini in it (default: scenarios/)")
    ap.add_argument("--scenarios", default=None, help="names in the scenario dir (default: all)")
    ap.add_argument("--policies", default=None,
                    help="labels from --list-policies, comma-separated (default: all)")
    ap.add_argument("--feeds", default=",".join(FEEDS))
    ap.add_argument("--scale", type=float, default=1.0, help="time scale of every schedule")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--parties", default=os.path.join(ROOT, "build/parties"))
    a = ap.parse_args(argv)
    sdir = os.path.abspath(a.scenario_dir)
    names = a.scenarios.split(",") if a.scenarios else sorted(
        f[:-4] for f in os.listdir(sdir) if f.endswith(".ini"))
    pols = list_policies(a.parties)
    if a.policies:
        want = a.policies.split(",")
        unknown = [w for w in want if w not in [p[0] for p in pols]]
        if unknown:
            raise SystemExit("unknown policy %s (parties --list-policies: %s)"
                             % (unknown, ", ".join(p[0] for p in pols)))
        pols = [p for p in pols if p[0] in want]
    feeds = a.feeds.split(",")
    seeds = [int(s) for s in a.seeds.split(",")]
    os.makedirs(a.out, exist_ok=True)
    jobs = []
    for sc in names:
        tmpl = os.path.join(sdir, sc + ".ini")
        if not os.path.exists(tmpl):
            raise SystemExit("no scenario %s (%s)" % (sc, tmpl))
        for label, pol, sets in pols:
            # static never moves and reads no latency: one run per seed serves every feed
            for feed in (feeds[:1] if pol == "static" else feeds):
                tag = "%s__%s__%s" % (sc, label.replace(" ", "-"), feed)
                conf = os.path.join(a.out, tag + ".ini")
                with open(conf, "w") as f:
                    f.write(make_conf(tmpl, feed, pol, sets, a.scale))
                for seed in seeds:
                    jobs.append({"scenario": sc, "policy": label, "feed": feed, "seed": seed,
                                 "conf": conf, "log": os.path.join(a.out, "%s__s%d.jsonl" % (tag, seed))})
    t0 = time.time()
    print("policy bench: %d policies x %d scenarios x %d feeds x %d seeds: %d runs, %d at once"
          % (len(pols), len(names), len(feeds), len(seeds), len(jobs), a.jobs), flush=True)

    def one(j):
        err = fig11sim.simulate(a.parties, j["conf"], j["seed"], j["log"])
        line = err.strip().splitlines()[-1]
        m = re.search(r"([\d.]+) s CPU: (\d+) requests", line)
        j = dict(j, cpu_s=float(m.group(1)), requests=int(m.group(2)))
        j["note"] = [ln for ln in err.splitlines() if ln.startswith("parties: policy ")]
        return j

    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        runs = list(ex.map(one, jobs))
    meta = {"scenario_dir": sdir, "scenarios": names, "policies": [p[0] for p in pols], "feeds": feeds, "seeds": seeds,
            "scale": a.scale, "wall_s": time.time() - t0, "runs": runs,
            "power": {"static_w": P_STATIC_W, "dyn_w": P_DYN_W}}
    with open(os.path.join(a.out, "runs.json"), "w") as f:
        json.dump(meta, f, indent=1)
    summary([a.out])


def agg_runs(rs):
    downs = [r["down_s"] for r in rs if r["down_s"] is not None]
    return {"qos": 100 * statistics.mean(r["qos"] for r in rs),
            "qos_min": 100 * min(r["qos"] for r in rs), "qos_max": 100 * max(r["qos"] for r in rs),
            "core_s": statistics.mean(r["core_s"] for r in rs),
            "energy_kj": statistics.mean(r["energy_kj"] for r in rs),
            "down_s": statistics.median(downs) if downs else None, "never": len(rs) - len(downs),
            "changes": statistics.mean(r["changes"] for r in rs), "n": len(rs)}


def load_meta(dirs):
    """runs.json of dirs[0], with each later dir's runs replacing those of its policies."""
    meta = json.load(open(os.path.join(dirs[0], "runs.json")))
    meta["merged"] = []
    for d in dirs[1:]:
        m = json.load(open(os.path.join(d, "runs.json")))
        if m["scenarios"] != meta["scenarios"] or m["feeds"] != meta["feeds"] or \
                m["seeds"] != meta["seeds"] or m["scale"] != meta["scale"]:
            raise SystemExit("%s: not the same scenarios, feeds, seeds and scale as %s" % (d, dirs[0]))
        meta["runs"] = [j for j in meta["runs"] if j["policy"] not in m["policies"]] + m["runs"]
        meta["policies"] += [p for p in m["policies"] if p not in meta["policies"]]
        meta["wall_s"] += m["wall_s"]
        meta["merged"].append("%s (%s)" % (d, ", ".join(m["policies"])))
    return meta


def summary(argv):
    out = argv[0]
    meta = load_meta(argv)
    sdir = meta["scenario_dir"]
    scheds, fmax = {}, {}
    for sc in meta["scenarios"]:
        tmpl = os.path.join(sdir, sc + ".ini")
        scheds[sc] = fig11sim.schedule(tmpl, meta["scale"])
        fmax[sc] = freq_max_mhz(tmpl)
    res = []
    for j in meta["runs"]:
        m = run_metrics(load_log(j["log"]), scheds[j["scenario"]], fmax[j["scenario"]])
        feeds = meta["feeds"] if j["policy"] == "static" else [j["feed"]]
        for feed in feeds:  # static's one run per seed stands for every feed
            res.append(dict(m, scenario=j["scenario"], policy=j["policy"], feed=feed, seed=j["seed"]))
    board = {p: agg_runs([r for r in res if r["policy"] == p]) for p in meta["policies"]}
    order = sorted(meta["policies"], key=lambda p: (-round(board[p]["qos"], 1), board[p]["energy_kj"]))
    L = []
    L.append("policy bench: %d policies x %d scenarios (%s) x %d feeds (%s) x %d seeds (%s), scale %g"
             % (len(meta["policies"]), len(meta["scenarios"]), ", ".join(meta["scenarios"]),
                len(meta["feeds"]), ", ".join(meta["feeds"]), len(meta["seeds"]),
                ",".join(map(str, meta["seeds"])), meta["scale"]))
    L.append("QoS met = share of time in which every workload's client p99 was within its target "
             "(whatever fed the policy)")
    L.append("energy: %.1f W per allocated core + %.1f W x busy fraction x (f / f_max)^3; "
             "unallocated cores 0 W (an assumed model, README.md)"
             % (meta["power"]["static_w"], meta["power"]["dyn_w"]))
    L.append("scale-down = from the start of the first load decrease of the workload whose load "
             "varies most to its first cut of cores, frequency or quota (median over runs; "
             "'never' = runs without one)")
    L.append("ranked by QoS met (higher first), then energy (lower first); per run: mean over "
             "every scenario, feed and seed [min, max of QoS over runs]")
    L.append("")
    L.append("%-4s %-22s %-20s %12s %11s %20s %10s" % (
        "rank", "policy", "QoS met %", "core-s/run", "energy kJ", "scale-down s", "changes"))
    for k, p in enumerate(order, 1):
        b = board[p]
        down = "%.1f" % b["down_s"] if b["down_s"] is not None else "never"
        if b["never"]:
            down += " (never %d/%d)" % (b["never"], b["n"])
        L.append("%-4d %-22s %-20s %12.0f %11.2f %20s %10.0f" % (
            k, p, "%.1f [%.0f, %.0f]" % (b["qos"], b["qos_min"], b["qos_max"]), b["core_s"],
            b["energy_kj"], down, b["changes"]))
    for dim, vals in (("scenario", meta["scenarios"]), ("feed", meta["feeds"])):
        L.append("")
        L.append("QoS met %% / energy kJ by %s (mean over the other dimensions)" % dim)
        L.append("%-22s " % "policy" + " ".join("%-16s" % v for v in vals))
        for p in order:
            cells = []
            for v in vals:
                rs = [r for r in res if r["policy"] == p and r[dim] == v]
                b = agg_runs(rs)
                cells.append("%-16s" % ("%.1f / %.2f" % (b["qos"], b["energy_kj"])))
            L.append("%-22s " % p + " ".join(cells))
    runs = meta["runs"]
    notes = sorted({n for j in runs for n in j.get("note", [])})
    L.append("")
    for n in notes:
        L.append("note: " + n[len("parties: "):])
    L.append("static: one run per scenario and seed, counted for every feed (it reads no latency)")
    for m in meta["merged"]:
        L.append("merged: the runs of %s" % m)
    L.append("timing: %d runs in %.1f s wall, %.1f s CPU in parties (%.1f M requests per run on average)"
             % (len(runs), meta["wall_s"], sum(j["cpu_s"] for j in runs),
                sum(j["requests"] for j in runs) / len(runs) / 1e6))
    text = "\n".join(L) + "\n"
    open(os.path.join(out, "leaderboard.txt"), "w").write(text)
    json.dump({"leaderboard": [dict(board[p], policy=p, rank=k) for k, p in enumerate(order, 1)],
               "runs": res}, open(os.path.join(out, "leaderboard.json"), "w"), indent=1)
    sys.stdout.write(text)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "summary":
        summary(sys.argv[2:])
    else:
        run(sys.argv[1:])
