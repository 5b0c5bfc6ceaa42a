#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The include-layer check: no file includes across a layer it may not.

    tests/lint/layers.py [--plant FILE:HEADER] BUILD LAYER=ALLOWED...

The Makefile holds the one table (LAYERS, MAY_<layer>) and runs this with it
(`make check-layers`); each layer's -I flags are derived from the same table,
so the compiler refuses an include it cannot find, and this check refuses what
the -I flags cannot see: a relative path into another layer
("../metrics/src/window.h"), or a header of an allowed folder that a narrower
rule forbids (policies may include policy.h and cfg_key.h of controller/, not
the rest of it).

Every C file of a layer is a translation unit: its includes are followed, as
the compiler would (the including file's folder first, then the layer's -I
folders), through every header they reach, and each file reached must be the
unit's own folder or named by ALLOWED (a folder, with everything below it, or
one file). BUILD stands for generated headers (skeletons, vmlinux.h): a layer
that may use them lists BUILD. A file in no layer (tests/) is not checked.

--plant FILE:HEADER checks the tree as if FILE also included "HEADER", and
inverts the verdict: it passes only when the check refuses the plant, so the
check is shown able to fail on every run.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def norm(p):
    return os.path.normpath(p)


def under(path, entry):
    return path == entry or path.startswith(entry + "/")


def layer_of(path, layers):
    best = None
    for l in layers:
        if under(os.path.dirname(path), l) and (best is None or len(l) > len(best)):
            best = l
    return best


def includes(path, plant):
    try:
        text = open(path, encoding="utf-8", errors="replace").read()
    except OSError:
        return []
    out = []
    for m in INCLUDE.finditer(text):
        out.append((text.count("\n", 0, m.start()) + 1, m.group(1)))
    if plant and plant[0] == path:
        out.append((0, plant[1]))
    return out


def check_unit(unit, layer, allowed, build, plant):
    """Errors for one translation unit (a .c, or a header checked alone)."""
    dirs = []  # the -I folders the Makefile derives from ALLOWED
    for a in allowed:
        d = a if a == "BUILD" or os.path.isdir(a) else os.path.dirname(a)
        if d not in dirs:
            dirs.append(d)
    own = os.path.dirname(unit)
    errs, seen, todo = [], set(), [unit]
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        for line, name in includes(f, plant):
            where = "%s:%d" % (f, line) if line else "%s (planted)" % f
            found = None
            for d in [os.path.dirname(f)] + dirs:
                if d == "BUILD":
                    if os.path.basename(name) == "vmlinux.h" or name.endswith(".skel.h"):
                        found = "BUILD"
                        break
                    continue
                cand = norm(os.path.join(d, name))
                if os.path.isfile(cand):
                    found = cand
                    break
            if found is None:
                elsewhere = sorted(norm(os.path.join(r, n)) for r, _, fs in os.walk(".")
                                   if not r.startswith(("./build", "./.git"))
                                   for n in fs if n == os.path.basename(name))
                errs.append('%s: "%s" is in none of the folders layer %s may use (%s)%s%s'
                            % (where, name, layer, " ".join(allowed),
                               " but in %s" % " ".join(elsewhere) if elsewhere else "",
                               "" if f == unit else " [reached from %s]" % unit))
                continue
            if found == "BUILD":
                continue
            if not (under(found, own) or any(under(found, a) for a in allowed if a != "BUILD")):
                errs.append("%s: includes %s: layer %s may include only %s, %s"
                            % (where, found, layer, own + "/", " ".join(allowed))
                            + ("" if f == unit else " [reached from %s]" % unit))
                continue
            todo.append(found)
    return errs


def main(argv):
    plant = None
    if len(argv) > 1 and argv[1] == "--plant":
        f, _, h = argv[2].partition(":")
        plant = (norm(f), h)
        argv = argv[:1] + argv[3:]
    if len(argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    build = argv[1]
    table = {}
    for arg in argv[2:]:
        l, _, allowed = arg.partition("=")
        table[norm(l)] = [a if a == "BUILD" else norm(a) for a in allowed.split()]
    errs, units = [], 0
    for l in sorted(table):
        for root, dirnames, files in os.walk(l):
            dirnames.sort()
            for name in sorted(files):
                path = norm(os.path.join(root, name))
                if not name.endswith((".c", ".h")) or layer_of(path, table) != l:
                    continue
                units += 1
                errs += check_unit(path, l, table[l], build, plant)
    if plant:
        hit = [e for e in errs if "(planted)" in e]
        for e in hit:
            print(e)
        if hit:
            print("layers: the planted include was refused, as it must be")
            return 0
        print("layers: FAIL: the planted include %s in %s was not refused" % (plant[1], plant[0]))
        return 1
    for e in errs:
        print(e)
    if errs:
        print("layers: FAIL: %d include(s) across a layer, in %d files checked "
              "(the table: LAYERS and MAY_* in the Makefile; README.md, Layout)" % (len(errs), units))
        return 1
    print("layers: %d files, every include within its layer" % units)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
