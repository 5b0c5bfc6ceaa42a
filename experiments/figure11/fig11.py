#!/usr/bin/env python3
"""Helpers for experiments/figure11/run.sh.

  fig11.py conf TEMPLATE OUT --feed-dir D --log L [--source client|ebee]
                [--only WL --static]         a parties config for one run or a calibration
  fig11.py now-t LOG                         parties' clock (the log's t) right now
  fig11.py summary OUTDIR                    summary.json + summary.txt from the two runs
  fig11.py plot OUTDIR PNG                   the figure (matplotlib)
"""
import json
import os
import re
import sys
import time

TARGET_US = {"hotel": 25000.0, "memcached": 1000.0}


# --- config -------------------------------------------------------------------------------
def conf(argv):
    import argparse

    ap = argparse.ArgumentParser(prog="fig11.py conf")
    ap.add_argument("template")
    ap.add_argument("out")
    ap.add_argument("--feed-dir", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--source", choices=["client", "ebee"], default="client")
    ap.add_argument("--only")
    ap.add_argument("--static", action="store_true")
    a = ap.parse_args(argv)
    out, section, skip = [], None, False
    maxq = {}
    lines = open(a.template).read().splitlines()
    # first pass: max_quota per workload (the calibration gives a workload its maximum)
    for ln in lines:
        m = re.match(r"\[workload (\S+)\]", ln)
        if m:
            section = m.group(1)
        m = re.match(r"\s*max_quota\s*=\s*(\S+)", ln)
        if m and section:
            maxq[section] = m.group(1)
    section = None
    for ln in lines:
        s = ln.strip()
        if s.startswith("["):
            m = re.match(r"\[workload (\S+)\]", s)
            section = m.group(1) if m else s
            skip = bool(m) and a.only is not None and m.group(1) != a.only
        if skip:
            continue
        m = re.match(r"\s*(\w+)\s*=\s*(.*)$", ln)
        key = m.group(1) if m and not s.startswith(";") else None
        if key == "log":
            ln = "log = " + a.log
        elif key == "policy" and a.static:
            ln = "policy = static"
        elif key == "ebee" and a.static:
            ln = "ebee = false"
        elif key == "quota" and a.only and section == a.only:
            ln = "quota = " + maxq.get(section, "0")
        elif key == "source":
            feed = os.path.join(a.feed_dir, section + ".feed")
            if a.source == "ebee":
                ln = "source = ebee\nfeed = " + feed
            else:
                ln = "source = client:" + feed
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


# --- reading a run ---------------------------------------------------------------------------
def load_run(outdir, feed):
    meta = json.load(open(os.path.join(outdir, "run-%s.meta.json" % feed)))
    recs, summ = [], None
    for ln in open(os.path.join(outdir, "run-%s.jsonl" % feed)):
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
            lg[wl] = json.load(open(os.path.join(outdir, "lg-%s-%s.json" % (wl, feed))))
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


def episodes(xs, ys, target, lo, hi):
    """violation episodes (start, end) of ys > target within [lo, hi]."""
    eps, start, prev = [], None, None
    for x, y in zip(xs, ys):
        if x < lo or x > hi:
            continue
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


def analyse(outdir, feed):
    meta, recs, summ, lg = load_run(outdir, feed)
    pts = meta["schedule"]
    lo, hi = 0.0, pts[-1][0]
    peak_start = next(t for t, r in pts if r == max(r for _, r in pts))
    peak_end = max(t for t, r in pts if r == max(r for _, r in pts))
    res = {"feed": feed, "scale": meta["scale"], "duration_s": hi}
    for wl in ("hotel", "memcached"):
        tgt = TARGET_US[wl]
        d = {}
        n_int = 0
        for key, name in (("p99_client_us", "client"), ("p99_ebee_us", "ebee")):
            xs, ys = series(meta, recs, wl, key)
            inwin = [(x, y) for x, y in zip(xs, ys) if lo <= x <= hi and y is not None]
            n_int = max(n_int, len([x for x in xs if lo <= x <= hi]))
            viol = [y for _, y in inwin if y > tgt]
            eps = episodes(xs, ys, tgt, lo, hi)
            d["viol_intervals_" + name] = len(viol)
            d["viol_frac_" + name] = round(len(viol) / len(inwin), 3) if inwin else None
            d["viol_episodes_" + name] = len(eps)
            d["longest_viol_s_" + name] = round(max((b - a for a, b in eps), default=0.0), 1)
            d["max_p99_ms_" + name] = round(max((y for _, y in inwin), default=0) / 1000, 2)
        d["intervals"] = n_int
        xs, qs = series(meta, recs, wl, "quota")
        q = [(x, y) for x, y in zip(xs, qs) if lo <= x <= hi and y is not None]
        if q:
            d["quota_start"] = q[0][1]
            d["quota_min"] = min(y for _, y in q)
            d["quota_max"] = max(y for _, y in q)
            d["quota_mean"] = round(sum(y for _, y in q) / len(q), 2)
            d["quota_end"] = q[-1][1]
        acts = [(o["t"] - meta["t0"], w["action"]) for o in recs for w in o["wl"]
                if w["name"] == wl and lo <= o["t"] - meta["t0"] <= hi
                and w.get("action") not in (None, "hold", "none")]
        d["actions"] = len(acts)
        d["upsizes"] = len([a for a in acts if a[1].startswith("up")])
        d["downsizes"] = len([a for a in acts if a[1].startswith("down")])
        d["reverts"] = len([a for a in acts if "revert" in a[1]])
        if wl == "hotel":
            # convergence on the way up: from the first client violation to the first
            # interval after which the client p99 stays within QoS for 5 s
            xs, ys = series(meta, recs, wl, "p99_client_us")
            pairs = [(x, y) for x, y in zip(xs, ys) if lo <= x <= hi]
            first_bad = next((x for x, y in pairs if y is not None and y > tgt), None)
            conv = None
            if first_bad is not None:
                for i, (x, y) in enumerate(pairs):
                    if x <= first_bad:
                        continue
                    window = [yy for xx, yy in pairs[i:] if xx <= x + 5.0]
                    if window and all(yy is not None and yy <= tgt for yy in window) \
                            and pairs[-1][0] >= x + 5.0:
                        conv = round(x - first_bad, 1)
                        break
            d["first_client_violation_s"] = first_bad
            d["converge_s_after_first_violation"] = conv
            # scale-down: the first hotel downsize after the peak ends
            downs = [t for t, a in acts if a.startswith("down") and t >= peak_end]
            d["first_downsize_after_peak_s"] = round(downs[0] - peak_end, 1) if downs else None
            d["peak_start_s"], d["peak_end_s"] = peak_start, peak_end
        if lg.get(wl):
            g = lg[wl]
            d["loadgen"] = {k: g.get(k) for k in ("offered_rps", "achieved_rps", "p99_us",
                                                  "p999_us", "errors", "late")}
        res[wl] = d
    freqs = [w.get("freq_mhz") for o in recs for w in o["wl"]]
    res["cpufreq"] = any(f is not None for f in freqs)
    if summ:
        res["controller"] = {k: summ.get(k) for k in ("intervals", "actions",
                                                      "loop_cpu_us_per_interval",
                                                      "loop_cpu_pct", "process_cpu_pct")}
    return res


def summary(argv):
    outdir = argv[0]
    feeds = [f for f in ("client", "ebee")
             if os.path.exists(os.path.join(outdir, "run-%s.meta.json" % f))]
    allres = {f: analyse(outdir, f) for f in feeds}
    cal = {}
    try:
        cal = json.load(open(os.path.join(outdir, "calibration.json")))
    except (OSError, ValueError):
        pass
    allres["calibration"] = cal
    json.dump(allres, open(os.path.join(outdir, "summary.json"), "w"), indent=1)
    L = []
    if cal:
        L.append("calibration: hotel max %s rps (p99 <= 25 ms), memcached max %s rps "
                 "(p99 <= 1 ms)%s" % (cal.get("hotel"), cal.get("memcached"),
                                     " [" + cal["note"] + "]" if cal.get("note") else ""))
    for f in feeds:
        r = allres[f]
        h, m = r["hotel"], r["memcached"]
        L.append("")
        L.append("feed=%s (scale %s, schedule %.0f s, %d intervals)" %
                 (f, r["scale"], r["duration_s"], h["intervals"]))
        L.append("  hotel: intervals over 25 ms: client %d (%.0f%%), ebee %d (%.0f%%); "
                 "longest client episode %.1f s; max p99 client %.1f ms, ebee %.1f ms" %
                 (h["viol_intervals_client"], 100 * (h["viol_frac_client"] or 0),
                  h["viol_intervals_ebee"], 100 * (h["viol_frac_ebee"] or 0),
                  h["longest_viol_s_client"], h["max_p99_ms_client"], h["max_p99_ms_ebee"]))
        L.append("  hotel: first client violation at %s s, QoS held for 5 s from %s s after it; "
                 "first downsize %s s after the peak ended" %
                 (h.get("first_client_violation_s"), h.get("converge_s_after_first_violation"),
                  h.get("first_downsize_after_peak_s")))
        L.append("  hotel quota: start %s, max %s, mean %s, end %s cores; %d up, %d down, %d reverts" %
                 (h.get("quota_start"), h.get("quota_max"), h.get("quota_mean"),
                  h.get("quota_end"), h["upsizes"], h["downsizes"], h["reverts"]))
        L.append("  memcached: intervals over 1 ms: client %d (%.0f%%), ebee %d (%.0f%%); "
                 "quota start %s, min %s, mean %s, end %s" %
                 (m["viol_intervals_client"], 100 * (m["viol_frac_client"] or 0),
                  m["viol_intervals_ebee"], 100 * (m["viol_frac_ebee"] or 0),
                  m.get("quota_start"), m.get("quota_min"), m.get("quota_mean"),
                  m.get("quota_end")))
        for wl in ("hotel", "memcached"):
            g = r[wl].get("loadgen")
            if g:
                L.append("  loadgen %s: offered %.0f achieved %.0f rps, p99 %.2f ms, "
                         "p99.9 %.2f ms, errors %d, late %d" %
                         (wl, g["offered_rps"], g["achieved_rps"], g["p99_us"] / 1000,
                          g["p999_us"] / 1000, g["errors"], g["late"]))
        if r.get("controller"):
            c = r["controller"]
            L.append("  controller: %s actions, %s us CPU per interval (%s%% of a core incl. ebee: %s%%)" %
                     (c["actions"], c["loop_cpu_us_per_interval"], c["loop_cpu_pct"],
                      c["process_cpu_pct"]))
        L.append("  cpufreq: %s" % ("yes" if r["cpufreq"] else "no cpufreq on this machine"))
    txt = "\n".join(L) + "\n"
    open(os.path.join(outdir, "summary.txt"), "w").write(txt)
    sys.stdout.write(txt)


# --- plot --------------------------------------------------------------------------------------
def plot(argv):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outdir, png = argv[0], argv[1]
    feeds = [f for f in ("client", "ebee")
             if os.path.exists(os.path.join(outdir, "run-%s.meta.json" % f))]
    fig, axes = plt.subplots(4, len(feeds), figsize=(6.2 * len(feeds), 9.5), sharex="col",
                             squeeze=False, gridspec_kw={"height_ratios": [1, 1.4, 1, 0.45]})
    title = {"client": "PARTIES fed by client p99 (loadgen feed)",
             "ebee": "PARTIES fed by ebee server-side p99"}
    for c, f in enumerate(feeds):
        meta, recs, summ, lg = load_run(outdir, f)
        end = meta["schedule"][-1][0]
        ax = axes[0][c]
        ts = [i * end / 400.0 for i in range(401)]
        ax.plot(ts, [offered(meta, t) for t in ts], color="tab:blue", lw=1.5,
                label="hotel offered")
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
        ax.set_ylim(0, meta["hotel_max"] * 1.15)
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, fontsize=7, loc="upper left", ncol=2)
        ax.set_title("%s\n(scale %s)" % (title[f], meta["scale"]), fontsize=10)

        ax = axes[1][c]
        for wl, col in (("hotel", "tab:blue"), ("memcached", "tab:orange")):
            for key, ls, lab in (("p99_client_us", "-", "client"), ("p99_ebee_us", "--", "ebee")):
                xs, ys = series(meta, recs, wl, key)
                ys = [None if y is None else y / 1000.0 for y in ys]
                drv = " (drives)" if (lab == f) else ""
                ax.plot(xs, [float("nan") if y is None else y for y in ys], ls, color=col,
                        lw=1.6 if lab == f else 0.9, label="%s %s%s" % (wl, lab, drv))
        ax.axhline(25, color="red", lw=1, label="hotel QoS 25 ms")
        ax.axhline(1, color="darkred", lw=0.8, ls=":", label="memcached QoS 1 ms")
        ax.set_yscale("log")
        ax.set_ylabel("p99 (ms)")
        ax.legend(fontsize=6.5, loc="upper left", ncol=2)

        ax = axes[2][c]
        for wl, col in (("hotel", "tab:blue"), ("memcached", "tab:orange")):
            xs, ys = series(meta, recs, wl, "quota")
            ax.step(xs, [float("nan") if y is None else y for y in ys], where="post",
                    color=col, label=wl)
        ax.set_ylabel("cpu quota (cores)")
        ax.set_ylim(0, 2.05)
        ax.legend(fontsize=7, loc="upper left")

        ax = axes[3][c]
        fr = [w.get("freq_mhz") for o in recs for w in o["wl"]]
        if any(v is not None for v in fr):
            for wl, col in (("hotel", "tab:blue"), ("memcached", "tab:orange")):
                xs, ys = series(meta, recs, wl, "freq_mhz")
                ax.step(xs, ys, where="post", color=col, label=wl)
            ax.set_ylabel("max freq (MHz)")
        else:
            ax.text(0.5, 0.5, "frequency: no cpufreq on this machine", ha="center",
                    va="center", transform=ax.transAxes, fontsize=9)
            ax.set_yticks([])
            ax.set_ylabel("freq")
        ax.set_xlabel("time since the hotel schedule started (s)")
        for r in range(4):
            axes[r][c].set_xlim(-2, end + 2)
            axes[r][c].grid(alpha=0.3)
    fig.suptitle("Figure 11 on 2 CPUs: hotel search 7%->100%->7% with memcached at a constant "
                 "low load; PARTIES moving CPU quota", fontsize=10)
    fig.tight_layout()
    fig.savefig(png, dpi=80)


if __name__ == "__main__":
    cmd, rest = sys.argv[1], sys.argv[2:]
    {"conf": conf, "now-t": now_t, "summary": summary, "plot": plot}[cmd](rest)
