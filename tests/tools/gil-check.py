#!/usr/bin/python3
"""gil-check.py - the GIL waits dlprof found against those tests/workloads/gil_contend.py
measured itself.

usage: gil-check.py WORKLOAD TRUTH THREADS.json FOLD-PREFIX

TRUTH: the workload's stdout (TRUTH lines); THREADS.json: report --sort thread --format
json; FOLD-PREFIX: fold --off-cpu --tid T of each thread T is in FOLD-PREFIX.T.
Checks, printing what it compares:
  - each spinner's and the napper's GIL wait (gil_wait_ns) within 10% of its own
    (wall - CPU - naps asked for);
  - the idle thread (one long sleep, woken when no thread holds the GIL) waited for it
    only as it started (the main thread held it, starting the others): under 1 ms;
  - of each spinner's and the napper's off-CPU time in take_gil/drop_gil, 90% or more
    has the Python line it waited on: spin()'s loop for a spinner, the time.sleep()
    line for the napper.
Exit 1 on the first check that fails.
"""
import json
import re
import sys

# where drop_gil is not a wait for the GIL (share/families.rules: wait-gil's notstack)
GIVEN_UP = {"PyEval_SaveThread", "PyEval_ReleaseThread", "PyEval_ReleaseLock",
            "_PyThreadState_DeleteCurrent"}


def marker_line(path, mark):
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if mark in line:
                return n
    raise SystemExit("no %s in %s" % (mark, path))


def main():
    workload, truth_path, threads_path, fold_prefix = sys.argv[1:5]
    truth = [json.loads(l[6:]) for l in open(truth_path) if l.startswith("TRUTH ")]
    rows = {r["tid"]: r for r in json.load(open(threads_path))["rows"]}
    spin_line = marker_line(workload, "SPIN_LINE")
    nap_line = marker_line(workload, "NAP_LINE")
    want_lines = {"spin": [r"spin \(gil_contend\.py:(%d|%d)\)" % (spin_line, spin_line + 1)],
                  "napper": [r"napper \(gil_contend\.py:%d\)" % nap_line]}
    bad = 0
    for t in sorted(truth, key=lambda t: t["name"]):
        r = rows.get(t["tid"])
        if r is None:
            print("not ok: thread %s (tid %d) has no row" % (t["name"], t["tid"]))
            bad += 1
            continue
        got = r["gil_wait_ns"] / 1e6
        want = t["gil_wait_ms"]
        if t["name"] == "idle":
            # it takes the GIL as it starts (the main thread holds it, starting the
            # others: tens of microseconds), then never while another holds it.  Its own
            # measure is no truth here: it counts the wake-up from its sleep (2.3 ms once)
            good = got < 1.0
            print("%s %s: GIL wait %.3f ms, want under 1 ms (its own wall - CPU - sleep: "
                  "%.3f ms)" % ("ok" if good else "not ok", t["name"], got, want))
            bad += not good
            continue
        good = abs(got - want) <= 0.10 * want
        print("%s %s: GIL wait %.1f ms, its own %.1f ms (wall %.1f, CPU %.1f, naps %.1f)" %
              ("ok" if good else "not ok", t["name"], got, want, t["wall_ms"], t["cpu_ms"],
               t["slept_ms"]))
        bad += not good
        total = named = 0
        for line in open("%s.%d" % (fold_prefix, t["tid"])):
            stack, w = line.rsplit(" ", 1)
            frames = stack.split(";")
            if "take_gil" not in frames and "drop_gil" not in frames:
                continue
            if set(frames) & GIVEN_UP:
                continue    # giving it up before a blocking call: not a wait for it
            total += int(w)
            if any(re.search(p, stack) for p in want_lines[t["line"]]):
                named += int(w)
        share = 100.0 * named / total if total else 0
        good = share >= 90
        print("%s %s: %.1f%% of %.1f ms in take_gil/drop_gil on its line (%s)" %
              ("ok" if good else "not ok", t["name"], share, total / 1e3,
               " or ".join(want_lines[t["line"]])))
        bad += not good
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
