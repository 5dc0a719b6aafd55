#!/bin/sh
# bench/python.sh - what reading Python frames costs: the same Python workload plain,
# under `dlprof record --no-python` and under `dlprof record` (Python frames), in
# interleaved rounds; medians of the workload's own time, samples, lost and file size.
#
#   bench/python.sh [-n ROUNDS] [--torch [--steps N] | -- COMMAND...]
# Default workload: bench/py_work.py 30000 (pure Python, deep and fast-changing stacks);
# --torch: examples/cnn_train.py --steps 160, ~12 s (N: 40 steps are a 3 s loop after
# ~1 s of imports, where most code objects are met).  Goal (issue 9): slowdown beyond
# --no-python at most 2%, nothing lost, file at most 10% larger.  The stacks are read in
# the kernel where it runs dlprof's BPF reader; DLPROF_NO_BPF=1 bench/python.sh measures
# the reads from outside (a wake-up per sample) instead.
# Sizes are given three ways: the files, bytes per on-CPU sample (the off-CPU samples, a
# switch each, vary from run to run with the scheduler), and the Python records' own
# bytes (recdump --sizes: PYCODE, PYCHAIN, PYSTACK), which are mostly a cost per code
# object and per distinct Python stack, not per sample.
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
DLPROF=${DLPROF:-$TOP/dlprof}
RECDUMP=${RECDUMP:-$TOP/build/tests/recdump}
ROUNDS=3
STEPS=160
TORCH=0
set -- "$@" --
CMD=""
while [ $# -gt 0 ]; do
	case "$1" in
	-n) ROUNDS=$2; shift 2 ;;
	--torch) TORCH=1; shift ;;
	--steps) STEPS=$2; shift 2 ;;
	--) shift; [ $# -gt 0 ] && [ "$1" != "--" ] && CMD="$*"; break ;;
	*) echo "usage: bench/python.sh [-n ROUNDS] [--torch [--steps N] | -- COMMAND...]" >&2
	   exit 2 ;;
	esac
done
[ "$TORCH" = 1 ] && CMD="/usr/bin/python3 $TOP/examples/cnn_train.py --steps $STEPS"
CMD=${CMD:-/usr/bin/python3 $TOP/bench/py_work.py 30000}
test -x "$RECDUMP" || make -C "$TOP" -s "build/tests/recdump"
# without address space randomization: the initial stack's random offset (up to 8 KiB)
# changes the size of every dwarf stack copy of the main thread from run to run, which
# would drown what the Python records cost in the file
NORAND="setarch $(uname -m) -R"
D=$(mktemp -d "${TMPDIR:-/tmp}/dlprof-pybench.XXXXXX")
trap 'rm -rf "$D"' EXIT

# the workload's own time: the last "in X s" it prints
own() { sed -n 's/.* in \([0-9.]*\) s.*/\1/p' "$1" | tail -1; }

# the two modes in turn, the first of a round alternating (ABBA: a run's place in its
# round moved the CPU figures by several percent on these 2-core guests)
run_np() { $NORAND "$DLPROF" record --no-python -o "$D/np.$r.data" -- $CMD >"$D/np.$r" 2>&1; }
run_py() { $NORAND "$DLPROF" record -o "$D/py.$r.data" -- $CMD >"$D/py.$r" 2>&1; }
for r in $(seq "$ROUNDS"); do
	$NORAND $CMD >"$D/plain.$r" 2>&1
	if [ $((r % 2)) = 1 ]; then run_np; run_py; else run_py; run_np; fi
	"$RECDUMP" --sizes "$D/np.$r.data" >"$D/np.$r.sizes"
	"$RECDUMP" --sizes "$D/py.$r.data" >"$D/py.$r.sizes"
	echo "round $r: plain $(own "$D/plain.$r") s, --no-python $(own "$D/np.$r") s, python $(own "$D/py.$r") s" >&2
done

/usr/bin/python3 - "$D" "$ROUNDS" <<'PY'
import os, re, statistics, sys
d, rounds = sys.argv[1], int(sys.argv[2])
def sizes(path):
    """(on-CPU samples, bytes of the Python records) from recdump --sizes"""
    oncpu = pybytes = 0
    for line in open(path):
        m = re.match(r"(\S+)(?: (\S+))? count=(\d+) raw=\d+ deflated=(\d+)", line)
        if not m:
            continue
        kind, ev, count, defl = m.group(1), m.group(2), int(m.group(3)), int(m.group(4))
        if kind in ("USAMPLE", "SAMPLE") and ev and ev != "context-switches":
            oncpu += count
        elif kind in ("PYCODE", "PYCHAIN", "PYSTACK"):
            pybytes += defl
    return oncpu, pybytes
def own(path):
    m = re.findall(r" in ([0-9.]+) s", open(path).read())
    return float(m[-1])
def summary(path):
    m = re.search(r"dlprof: (\d+) samples, (\d+) lost", open(path).read())
    return int(m.group(1)), int(m.group(2))
rows = {"plain": [], "np": [], "py": [], "np_size": [], "py_size": [], "np_s": [], "py_s": [],
        "lost": [], "np_cpu": [], "py_cpu": [], "np_pyb": [], "py_pyb": []}
for r in range(1, rounds + 1):
    rows["plain"].append(own(f"{d}/plain.{r}"))
    for k in ("np", "py"):
        rows[k].append(own(f"{d}/{k}.{r}"))
        s, lost = summary(f"{d}/{k}.{r}")
        rows[k + "_s"].append(s)
        rows["lost"].append(lost)
        rows[k + "_size"].append(os.path.getsize(f"{d}/{k}.{r}.data"))
        oncpu, pyb = sizes(f"{d}/{k}.{r}.sizes")
        rows[k + "_cpu"].append(oncpu)
        rows[k + "_pyb"].append(pyb)
med = {k: statistics.median(v) for k, v in rows.items()}
pyline = [l for l in open(f"{d}/py.{rounds}") if l.startswith("dlprof: python:")]
print("measure                         --no-python       python    python/no")
print("workload time (s)              %11.3f  %11.3f  %11.3f" % (med["np"], med["py"], med["py"] / med["np"]))
print("slowdown (x plain %.3f s)       %11.3f  %11.3f" % (med["plain"], med["np"] / med["plain"], med["py"] / med["plain"]))
# each round's own python/--no-python, the median of them: the two runs of a round are
# neighbours in time, where the host's slow and fast spells (whole runs 10-15% apart on
# these guests, in either mode) fall on both more often than across rounds
print("workload time, round by round                         %11.3f" %
      statistics.median(p / n for p, n in zip(rows["py"], rows["np"])))
print("samples                        %11d  %11d" % (med["np_s"], med["py_s"]))
print("file size (bytes)              %11d  %11d  %11.3f" % (med["np_size"], med["py_size"], med["py_size"] / med["np_size"]))
# a run that took longer has more samples and a larger file: per sample too, each run's
# own ratio, the median of them
bps = {k: statistics.median(sz / n for sz, n in zip(rows[k + "_size"], rows[k + "_s"]))
       for k in ("np", "py")}
print("bytes per sample               %11.1f  %11.1f  %11.3f" % (bps["np"], bps["py"], bps["py"] / bps["np"]))
# (recdump --sizes counts the samples of compact batches, USAMPLES, by kind, not by
# event: none is counted as on-CPU then)
bpc = {k: [sz / n for sz, n in zip(rows[k + "_size"], rows[k + "_cpu"]) if n]
       for k in ("np", "py")}
if bpc["np"] and bpc["py"]:
    bpc = {k: statistics.median(v) for k, v in bpc.items()}
    print("bytes per on-CPU sample        %11.1f  %11.1f  %11.3f" % (bpc["np"], bpc["py"], bpc["py"] / bpc["np"]))
else:
    print("bytes per on-CPU sample                  -            -  (samples in compact batches)")
print("Python records (bytes)         %11d  %11d  %11.3f of the --no-python file" %
      (med["np_pyb"], med["py_pyb"], med["py_pyb"] / med["np_size"]))
print("lost samples (all runs)        %11d" % sum(rows["lost"]))
if pyline:
    print(pyline[0].strip())
PY
