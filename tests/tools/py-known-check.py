#!/usr/bin/python3
"""py-known-check.py - check dlprof's folded stacks of tests/workloads/py_known.py against
the workload's own accounting (OUT.json: CPU time per function, the line of each hot call).

usage: py-known-check.py shares|lines FOLD JSON
  shares  each function's share of the samples within 3 points of its measured share
  lines   the innermost Python frame of a sample in native code names its hot call line
          (at most 2% elsewhere); recursion shows its 5 levels; generator, coroutine and
          plain calls sit under <module>;main in order
Exit status 0 when the check holds."""
import collections
import json
import re
import sys

what, fold, out = sys.argv[1:4]
d = json.load(open(out))
fns = ["work_a", "work_b", "chunks", "rec", "coro"]
stacks = []
for line in open(fold):
    stack, n = line.rsplit(" ", 1)
    stacks.append((stack.split(";"), int(n)))

if what == "shares":
    truth = {f: d["cpu_ns"][f] for f in fns}
    cnt = collections.Counter()
    for frames, n in stacks:
        for f in fns:
            if any(x.startswith(f + " (py_known.py:") for x in frames):
                cnt[f] += n
    tt, dt = sum(truth.values()), sum(cnt.values())
    assert dt > 1000, cnt
    worst = 0
    for f in fns:
        t, s = 100.0 * truth[f] / tt, 100.0 * cnt[f] / dt
        print("%-7s measured %5.1f%%  dlprof %5.1f%%" % (f, t, s))
        worst = max(worst, abs(t - s))
    print("worst: %.1f points" % worst)
    sys.exit(0 if worst <= 3.0 else 1)

lines = d["lines"]
seen, bad, rec_depth = collections.Counter(), collections.Counter(), collections.Counter()
order_ok = order_all = 0
for frames, n in stacks:
    py = [f for f in frames if re.search(r" \(py_known\.py:\d+\)$", f)]
    if not py:
        continue
    fn, ln = re.match(r"(\S+) \(py_known\.py:(\d+)\)$", py[-1]).groups()
    if fn in lines and frames.index(py[-1]) + 1 < len(frames):
        # the innermost Python frame of a sample in native code: its hot call
        (seen if int(ln) == lines[fn] else bad)[fn] += n
    if fn == "rec":
        rec_depth[sum(1 for f in py if f.startswith("rec ("))] += n
    if fn in ("chunks", "coro", "work_a"):
        order_all += n
        want = {"chunks": ["main", "work_gen", "chunks"], "coro": ["main", "coro"],
                "work_a": ["main", "work_a"]}[fn]
        names = [f.split(" ")[0] for f in py]
        it = iter(names)
        order_ok += n * (names[0] == "<module>" and all(w in it for w in want))
print("hot lines:", dict(seen), "elsewhere:", dict(bad), "rec depths:", dict(rec_depth))
ok = (sum(bad.values()) <= 0.02 * sum(seen.values()) and
      set(seen) >= {"work_a", "work_b", "chunks", "rec", "coro"} and
      rec_depth[5] >= 0.95 * sum(rec_depth.values()) and order_ok >= 0.98 * order_all)
print("in order: %d of %d" % (order_ok, order_all))
sys.exit(0 if ok else 1)
