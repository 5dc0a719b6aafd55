#!/bin/sh
# bench/kstack.sh - native stacks walked in the kernel (the default, DLPROF_KSTACK=1 for
# its end line; issue 48) against the stack copies unwound by record (DLPROF_KSTACK=0),
# on the same workload in interleaved rounds (ABBA), both without the off-CPU event.  The
# kernel's tables are kept by build-id (an untimed run first fills a cache of this
# bench's own, as a second run of a job finds it).  Medians of: the workload's own time,
# dlprof's CPU per sample (all its threads, META record_cpu_ns; while the workload ran,
# record_run_cpu_ns), of it the kernel walk's tables' (made or read: META
# record_table_cpu_ns) and the unwinding thread's, the BPF program's time per run in
# the kernel (kernel.bpf_stats:
# the Python reader's alone in the copy mode), bytes read from the rings per sample
# (META record_rings), file bytes per sample, and the share of samples walked in place
# of their copy.
#
#   bench/kstack.sh [-n ROUNDS] [-r RECORD_OPTIONS] [--demo | -- COMMAND...]
# RECORD_OPTIONS: record's options in both (default --no-off-cpu; "" for record's defaults,
# the switch-outs with them).
# Default workload: examples/cnn_train.py --steps 40 (torch, 2 threads).
# Goals (issue 48): recorder CPU <= 4 us a sample on the CNN, kernel time <= 8 us a
# sample, <= 1 KiB a sample through the rings, file bytes unchanged or fewer.
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
DLPROF=${DLPROF:-$TOP/dlprof}
RECDUMP=${RECDUMP:-$TOP/build/tests/recdump}
ROUNDS=3
ROPTS=--no-off-cpu
set -- "$@" --
CMD=""
while [ $# -gt 0 ]; do
	case "$1" in
	-n) ROUNDS=$2; shift 2 ;;
	-r) ROPTS=$2; shift 2 ;;
	--demo) CMD="$TOP/build/examples/demo"; shift ;;
	--) shift
	    # (the command, less the "--" put after it above)
	    while [ $# -gt 1 ]; do CMD="$CMD${CMD:+ }$1"; shift; done
	    break ;;
	*) echo "usage: bench/kstack.sh [-n ROUNDS] [-r RECORD_OPTIONS] [--demo | -- COMMAND...]" >&2
	   exit 2 ;;
	esac
done
CMD=${CMD:-/usr/bin/python3 $TOP/examples/cnn_train.py --steps 40}
test -x "$RECDUMP" || make -C "$TOP" -s "build/tests/recdump"
D=$(mktemp -d "${TMPDIR:-/tmp}/dlprof-kstack.XXXXXX")
trap 'rm -rf "$D"' EXIT
export DLPROF_BUILDID_DIR="$D/build-id"

run_copy() { DLPROF_KSTACK=0 DLPROF_BPF_STATS=1 "$DLPROF" record $ROPTS -o "$D/copy.$r.data" -- $CMD >"$D/copy.$r" 2>&1; }
run_kern() { DLPROF_KSTACK=1 "$DLPROF" record $ROPTS -o "$D/kern.$r.data" -- $CMD >"$D/kern.$r" 2>&1; }
r=0
run_kern	# the tables kept
for r in $(seq "$ROUNDS"); do
	if [ $((r % 2)) = 1 ]; then run_copy; run_kern; else run_kern; run_copy; fi
	for k in copy kern; do
		"$RECDUMP" "$D/$k.$r.data" | grep "^META record_\|^STATS" >"$D/$k.$r.meta"
	done
	echo "round $r done" >&2
done

/usr/bin/python3 - "$D" "$ROUNDS" <<'PY'
import os, re, statistics, sys
d, rounds = sys.argv[1], int(sys.argv[2])
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
def grab(path, pat):
    m = re.findall(pat, open(path).read())
    return float(m[-1]) if m else float("nan")
med = statistics.median
res = {}
for k in ("copy", "kern"):
    cols = {x: [] for x in ("t", "cpu", "run", "tab", "thr", "bpf", "ring", "file", "inst",
                            "n", "lost")}
    for r in range(1, rounds + 1):
        m, n = meta(f"{d}/{k}.{r}.meta"), None
        n = m["samples"]
        cols["n"].append(n)
        cols["lost"].append(m["lost"])
        cols["t"].append(grab(f"{d}/{k}.{r}", r" in ([0-9.]+) s"))
        cols["cpu"].append(m["record_cpu_ns"][0] / n / 1000)
        cols["run"].append(m.get("record_run_cpu_ns", [0])[0] / n / 1000)
        cols["tab"].append(m.get("record_table_cpu_ns", [0])[0] / n / 1000)
        cols["thr"].append(m["record_unwind"][5] / n / 1000)
        cols["bpf"].append(grab(f"{d}/{k}.{r}", r"BPF program: \d+ runs, ([0-9.]+) us"))
        rings = m.get("record_rings", [0, 0])
        cols["ring"].append((rings[0] + rings[1]) / n)
        cols["file"].append(os.path.getsize(f"{d}/{k}.{r}.data") / n)
        i = re.findall(r"(\d+) of (\d+) samples in place", open(f"{d}/{k}.{r}").read())
        cols["inst"].append(100.0 * int(i[-1][0]) / int(i[-1][1]) if i else 0.0)
    res[k] = {x: med(v) for x, v in cols.items()}
    res[k]["lost"] = sum(cols["lost"])
c, k = res["copy"], res["kern"]
print(f"medians of {rounds} interleaved rounds              copies   kernel walk")
print(f"    workload time, s                          {c['t']:8.2f} {k['t']:12.2f}")
print(f"    samples                                   {c['n']:8.0f} {k['n']:12.0f}")
print(f"    samples lost, all rounds                  {c['lost']:8d} {k['lost']:12d}")
print(f"    dlprof CPU us per sample (all threads)    {c['cpu']:8.1f} {k['cpu']:12.1f}")
print(f"      of it while the workload ran            {c['run']:8.1f} {k['run']:12.1f}")
print(f"      of it the kernel walk's tables          {c['tab']:8.1f} {k['tab']:12.1f}")
print(f"      the unwinding thread's                  {c['thr']:8.1f} {k['thr']:12.1f}")
print(f"    BPF program us per run in the kernel      {c['bpf']:8.2f} {k['bpf']:12.2f}")
print(f"    bytes read from the rings per sample      {c['ring']:8.0f} {k['ring']:12.0f}")
print(f"    file bytes per sample                     {c['file']:8.1f} {k['file']:12.1f}")
print(f"    samples walked in place of their copy, %  {c['inst']:8.1f} {k['inst']:12.1f}")
PY
