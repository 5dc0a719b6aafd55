#!/bin/sh
# bench/unwind.sh - what unwinding while recording costs and saves: the same workload
# plain, under `dlprof record --no-unwind` (stack copies kept, unwound by report) and
# under `dlprof record` (copies unwound while recording, stacks stored once), in
# interleaved rounds (both without the off-CPU event, so the samples are the same kind).
# Medians of: the workload's own time, bytes per sample, dlprof's
# own CPU time per sample (all its threads, META record_cpu_ns; of it, from the workload's
# start to its end without the kernel symbols' load, record_run_cpu_ns) and the unwinding
# thread's (META record_unwind), report time per sample, the share of stacks unwound
# while recording (and of them, by the draining thread itself, from the ring) and, of the
# walks, how many joined their thread's last walk (and the share of frames they took
# from it).
#
#   bench/unwind.sh [-n ROUNDS] [--no-python] [--long STEPS] [--demo | -- COMMAND...]
# Default workload: examples/cnn_train.py --steps 40 (torch, 2 threads); --demo: the
# bundled oneDNN/OpenBLAS demo.  --long STEPS (the CNN): each round also records the CNN
# for STEPS steps, and the CPU per sample past the first 40 steps is given: what a sample
# costs once the one-time work (torch's import: its libraries' CFI, the first walks of
# each code path, its Python code objects; ~35 ms on a 2-core guest) is done, as in a
# long training run.  Goals (issue 10): at most 60 bytes per sample on the
# CNN, recorder CPU at most 5 us per sample, slowdown not above --no-unwind's.
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
DLPROF=${DLPROF:-$TOP/dlprof}
RECDUMP=${RECDUMP:-$TOP/build/tests/recdump}
ROUNDS=3
PY=""
LONG=0
set -- "$@" --
CMD=""
while [ $# -gt 0 ]; do
	case "$1" in
	-n) ROUNDS=$2; shift 2 ;;
	--no-python) PY=--no-python; shift ;;
	--long) LONG=$2; shift 2 ;;
	--demo) CMD="$TOP/build/examples/demo"; shift ;;
	--) shift; [ $# -gt 0 ] && [ "$1" != "--" ] && CMD="$*"; break ;;
	*) echo "usage: bench/unwind.sh [-n ROUNDS] [--no-python] [--long STEPS] [--demo | -- COMMAND...]" >&2; exit 2 ;;
	esac
done
if [ "$LONG" != 0 ] && [ -n "$CMD" ]; then
	echo "bench/unwind.sh: --long is for the CNN (its --steps)" >&2; exit 2
fi
CMD=${CMD:-/usr/bin/python3 $TOP/examples/cnn_train.py --steps 40}
test -x "$RECDUMP" || make -C "$TOP" -s "build/tests/recdump"
D=$(mktemp -d "${TMPDIR:-/tmp}/dlprof-unwbench.XXXXXX")
trap 'rm -rf "$D"' EXIT

own() { sed -n 's/.* in \([0-9.]*\) s.*/\1/p' "$1" | tail -1; }

# the two modes in turn, the first of a round alternating (ABBA: a run's place in its
# round moved the CPU figures by several percent on 2-core guests)
run_copy() { "$DLPROF" record $PY --no-off-cpu --no-unwind -o "$D/copy.$r.data" -- $CMD >"$D/copy.$r" 2>&1; }
run_unw() { "$DLPROF" record $PY --no-off-cpu -o "$D/unw.$r.data" -- $CMD >"$D/unw.$r" 2>&1; }
for r in $(seq "$ROUNDS"); do
	$CMD >"$D/plain.$r" 2>&1
	if [ $((r % 2)) = 1 ]; then run_copy; run_unw; else run_unw; run_copy; fi
	if [ "$LONG" != 0 ]; then
		"$DLPROF" record $PY --no-off-cpu -o "$D/long.$r.data" -- /usr/bin/python3 \
			"$TOP/examples/cnn_train.py" --steps "$LONG" >"$D/long.$r" 2>&1
		"$RECDUMP" "$D/long.$r.data" | grep "^META record_\|^STATS" >"$D/long.$r.meta"
		rm -f "$D/long.$r.data"
	fi
	for k in copy unw; do
		s=$(date +%s.%N)
		"$DLPROF" report -i "$D/$k.$r.data" >/dev/null 2>&1
		e=$(date +%s.%N)
		echo "$s $e" >"$D/$k.$r.rep"
		"$RECDUMP" "$D/$k.$r.data" | grep "^META record_\|^STATS" >"$D/$k.$r.meta"
	done
	echo "round $r: plain $(own "$D/plain.$r") s, --no-unwind $(own "$D/copy.$r") s," \
	     "unwinding $(own "$D/unw.$r") s" >&2
done

/usr/bin/python3 - "$D" "$ROUNDS" "$LONG" <<'PY'
import os, re, statistics, sys
d, rounds, long_steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def own(path):
    m = re.findall(r" in ([0-9.]+) s", open(path).read())
    return float(m[-1]) if m else float("nan")
def meta(path):
    out = {}
    for line in open(path):
        m = re.match(r"META (record_\w+)=(.*)", line)
        if m:
            out[m.group(1)] = [int(x) for x in m.group(2).split()]
        m = re.match(r"STATS samples=(\d+) lost=(\d+)", line)
        if m:
            out["samples"], out["lost"] = int(m.group(1)), int(m.group(2))
    return out
med = statistics.median
rows = []
res = {}
for k in ("copy", "unw"):
    t, size, cpu, run, thr, rep, share, lost = [], [], [], [], [], [], [], 0
    joined, reused, inl = [], [], []
    for r in range(1, rounds + 1):
        m = meta(f"{d}/{k}.{r}.meta")
        n = m["samples"]
        lost += m["lost"]
        t.append(own(f"{d}/{k}.{r}"))
        size.append(os.path.getsize(f"{d}/{k}.{r}.data") / n)
        cpu.append(m["record_cpu_ns"][0] / n / 1000)
        if "record_run_cpu_ns" in m:
            run.append(m["record_run_cpu_ns"][0] / n / 1000)
        if "record_unwind" in m:
            u = m["record_unwind"]
            thr.append(u[5] / n / 1000)
            share.append(100.0 * u[1] / u[0])
            if len(u) >= 11 and u[0] and u[8]:
                joined.append(100.0 * u[9] / u[0])
                reused.append(100.0 * u[10] / u[8])
            if len(u) >= 13 and u[0]:
                inl.append(100.0 * u[11] / u[0])
        s, e = map(float, open(f"{d}/{k}.{r}.rep").read().split())
        rep.append((e - s) / n * 1e6)
    res[k] = dict(t=med(t), size=med(size), cpu=med(cpu), run=med(run) if run else 0,
                  thr=med(thr) if thr else 0,
                  rep=med(rep), share=med(share) if share else 0, lost=lost,
                  joined=med(joined) if joined else 0, reused=med(reused) if reused else 0,
                  inl=med(inl) if inl else 0)
plain = med([own(f"{d}/plain.{r}") for r in range(1, rounds + 1)])
print(f"medians of {rounds} interleaved rounds           --no-unwind    unwinding")
c, u = res["copy"], res["unw"]
print(f"    workload time (x plain, plain {plain:.2f} s)   {c['t'] / plain:10.3f} {u['t'] / plain:12.3f}")
print(f"    file bytes per sample                 {c['size']:10.0f} {u['size']:12.0f}")
print(f"    dlprof CPU us per sample (all threads) {c['cpu']:9.1f} {u['cpu']:12.1f}")
print(f"      of it while the workload ran          {c['run']:9.1f} {u['run']:12.1f}")
if long_steps:
    # per round: (CPU of the long run - the short one's) / (its samples - the short one's)
    marg, runl = [], []
    for r in range(1, rounds + 1):
        a, b = meta(f"{d}/unw.{r}.meta"), meta(f"{d}/long.{r}.meta")
        ca, cb = a["record_run_cpu_ns"][0], b["record_run_cpu_ns"][0]
        runl.append(cb / b["samples"] / 1000)
        if b["samples"] > a["samples"]:
            marg.append((cb - ca) / (b["samples"] - a["samples"]) / 1000)
    print(f"      the same over {long_steps} steps                {'-':>4} {med(runl):12.1f}")
    print(f"      each sample past the first 40 steps  {'-':>5} {med(marg):12.1f}")
print(f"    unwinding thread CPU us per sample    {'-':>10} {u['thr']:12.1f}")
print(f"    stacks unwound while recording (%)    {'-':>10} {u['share']:12.1f}")
print(f"      by the drain itself, from the ring (%) {'-':>7} {u['inl']:12.1f}")
print(f"      walks that joined the thread's last (%) {'-':>6} {u['joined']:12.1f}")
print(f"      frames taken from it (%)            {'-':>10} {u['reused']:12.1f}")
print(f"    report us per sample                  {c['rep']:10.1f} {u['rep']:12.1f}")
print(f"    lost samples (all rounds)             {c['lost']:10d} {u['lost']:12d}")
PY
