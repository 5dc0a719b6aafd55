#!/usr/bin/python3
"""check-layers.py [ROOT] - the arrows between dlprof's stages only run down.

lib/ holds one folder per stage, in the order the Makefile's STAGES gives (a stage may
use the stages before it); cmd/ is above them all, lib/inject/ (what record loads into
workloads) beside cmd/.  A header in include/ belongs to the stage of the file that
implements it (include/X.h: lib/STAGE/X.c), or to the one HEADER_STAGE below names; a
header beside its files (lib/STAGE/x.h) is private to that stage.  Fails, one line per
problem, when a file includes a header of a later stage or another stage's private
header, when two files depend on each other (a cycle of #includes between the files
that implement the headers), or when a header's stage is unknown.
"""
import os
import re
import sys

# headers no lib/STAGE/NAME.c implements: what they declare belongs here
HEADER_STAGE = {
    "frame.h": "util",        # the resolved frame: a type every stage after util passes
    "version.h": "util",
    "memevent.h": "util",     # the allocation sampler's events: an ABI shared with inject
    "itt-format.h": "util",   # the ITT collector's file: an ABI shared with inject
    "family-rules.h": "attribute",
    "isa.h": "isa",
    "output.h": "views",
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def stages_of(root):
    with open(os.path.join(root, "Makefile")) as f:
        m = re.search(r"^STAGES\s*:=\s*(.+)$", f.read(), re.M)
    if not m:
        sys.exit("check-layers: no STAGES in the Makefile")
    return m.group(1).split()


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    stages = stages_of(root)
    rank = {s: i for i, s in enumerate(stages)}
    rank["cmd"] = rank["inject"] = len(stages)
    files = []      # (path relative to root, stage)
    impl = {}       # header base name -> (stage, implementing .c)
    for s in stages + ["inject"]:
        d = os.path.join(root, "lib", s)
        for n in sorted(os.listdir(d)):
            if n.endswith((".c", ".h")):
                files.append((os.path.join("lib", s, n), s))
                if n.endswith(".c"):
                    impl[n[:-2] + ".h"] = (s, os.path.join("lib", s, n))
    for n in sorted(os.listdir(os.path.join(root, "cmd"))):
        if n.endswith(".c"):
            files.append((os.path.join("cmd", n), "cmd"))
    problems = []

    def header(path, inc):
        """(stage, private, implementing file or None) of an included header"""
        here = os.path.normpath(os.path.join(os.path.dirname(path), inc))
        if os.path.exists(os.path.join(root, here)):
            if here.startswith("lib" + os.sep):
                st = here.split(os.sep)[1]
                c = here[:-2] + ".c"
                return st, True, c if os.path.exists(os.path.join(root, c)) else None
        if os.path.exists(os.path.join(root, "include", inc)):
            if inc in HEADER_STAGE:
                return HEADER_STAGE[inc], False, None
            if inc in impl:
                return impl[inc][0], False, impl[inc][1]
            problems.append("include/%s: no stage (no lib/STAGE/%s.c; name it in "
                            "HEADER_STAGE)" % (inc, inc[:-2]))
            return None, False, None
        return None, False, None    # a system header in quotes, or a missing one

    deps = {}
    for path, st in files:
        with open(os.path.join(root, path), errors="replace") as f:
            text = f.read()
        for inc in INCLUDE.findall(text):
            hs, private, c = header(path, inc)
            if hs is None:
                continue
            if private and hs != st:
                problems.append("%s: includes %s, private to lib/%s/"
                                % (path, os.path.basename(inc), hs))
            elif rank[hs] > rank[st]:
                problems.append("%s (%s): includes %s of the later stage %s"
                                % (path, st, inc, hs))
            if c and c != path and path.endswith(".c"):
                deps.setdefault(path, set()).add(c)

    # files that depend on each other: strongly connected components (Tarjan)
    index, low, onstack, stack, comps = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        onstack.add(v)
        for w in sorted(deps.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in onstack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                onstack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(deps):
        if v not in index:
            visit(v)
    for comp in comps:
        problems.append("depend on each other: " + ", ".join(comp))

    counts = {}
    for path, st in files:
        counts[st] = counts.get(st, 0) + 1
    print("stages: " + " < ".join(stages) + " < cmd, inject")
    print("files:  " + ", ".join("%s %d" % (s, counts.get(s, 0))
                                 for s in stages + ["inject", "cmd"]))
    for p in problems:
        print("check-layers: " + p)
    print("%d problems" % len(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
