#!/usr/bin/python3
"""metrics-check.py - the counters record --metrics gave each operator against what
tests/workloads/metrics_ops.py measured itself.

usage: metrics-check.py DLPROF RECORDING TRUTH

TRUTH: the workload's stdout (one JSON line per worker: its faults and context switches
per operator, from getrusage(RUSAGE_THREAD) around each call).  For each worker it reads
`dlprof report --metrics --sort line --tid T --format json` and sums the rows of each
operator's lines (the operator is the function of the innermost Python frame).  Checks,
printing what it compares:
  - each operator's page faults and context switches within 2% of its own; where it
    counted fewer than 250 (a sleeper's faults), within 5: the loop between the calls
    (the workload's getrusage and dict updates) is read with the next operator's first
    interval, a few events at most;
  - the whole recording (no filter): the rows and the "(after the last samples)" row add
    up to the counts read at the end, for every counter, and that row holds under 1% of
    the page faults (threads are read as they leave a cpu: only each one's last stint
    goes unread);
  - each worker's row of --sort thread has no fewer faults than its operators measured.
A recording whose counters were sampled each on its own (record --metrics-mode events:
the report's "mode" is "events") gives each sample's events to the line of its own stack:
an operator's count is then off by less than the counter's period a call (the events
before the first sample of a call and after its last go to the calls around it), plus
the 5 of the loop between the calls; the remainder row is "(short of a period)", what
each thread counted on each cpu after its last sample.  There the thread check is not
made: a thread's row is its samples times the period, and nothing gives the thread's own
count to hold it to.  Measured (period 16): the third worker's row was 29,968 to 30,032
for operators' 30,001-30,002 (its count read in a group: 30,006-30,007, every run).
Exit 1 when a check fails.
"""
import json
import subprocess
import sys

dlprof, data, truth_path = sys.argv[1:4]
bad = 0


def report(*args):
    out = subprocess.run([dlprof, "report", "-i", data, "--metrics", "--format", "json",
                          "--limit", "0", *args], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)


def check(ok, what):
    global bad
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        bad = 1


COUNTER = {"faults": "page-faults", "switches": "context-switches"}
whole = report("--sort", "line")
sampled = whole.get("mode") == "events"
periods = whole.get("periods", {})
print(f"mode {whole.get('mode')}, periods {periods}")


def close(got, want, k, calls):
    if sampled:
        return abs(got - want) <= periods[COUNTER[k]] * calls + 5
    return abs(got - want) <= (5 if want < 250 else 0.02 * want)


workers = [json.loads(line) for line in open(truth_path) if line.startswith("{")]
check(len(workers) == 3, f"{len(workers)} workers reported (a forked child, two threads)")
for w in workers:
    j = report("--sort", "line", "--tid", str(w["tid"]))
    got = {}
    for r in j["rows"]:
        fn = r["line"].split(" (")[0]
        g = got.setdefault(fn, {"faults": 0, "switches": 0})
        g["faults"] += r["page-faults"]
        g["switches"] += r["context-switches"]
    for op, t in sorted(w["ops"].items()):
        g = got.get(op, {"faults": 0, "switches": 0})
        for k in ("faults", "switches"):
            check(close(g[k], t[k], k, t["calls"]),
                  f"pid {w['pid']} tid {w['tid']} {op}: {k} {g[k]} for {t[k]} in {t['calls']} calls")

j = whole
totals = j["totals"]
for name in j["metrics"]:
    rows = sum(r[name] for r in j["rows"])
    check(rows == totals[name], f"{name}: the rows add up to {rows}, read at the end {totals[name]}")
rest_name = "(short of a period)" if sampled else "(after the last samples)"
rest = [r for r in j["rows"] if r["line"] == rest_name]
check(len(rest) == 1 and rest[0]["page-faults"] < 0.01 * totals["page-faults"],
      f"page faults {rest_name}: {rest[0]['page-faults'] if rest else None} "
      f"of {totals['page-faults']}")

th = {r["tid"]: r for r in report("--sort", "thread")["rows"] if r["tid"]}
for w in workers:
    own = sum(t["faults"] for t in w["ops"].values())
    got = th.get(w["tid"], {}).get("page-faults", 0)
    if sampled:
        print(f"(tid {w['tid']} in the thread table: {got} page faults, its operators {own})")
        continue
    check(got >= own, f"tid {w['tid']} in the thread table: {got} page faults, its operators {own}")
sys.exit(bad)
