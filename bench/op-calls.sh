#!/bin/sh
# bench/op-calls.sh - what record --op-calls costs (issue 46): each operator call traps
# into the kernel, where a BPF program counts it.  Two workloads, each recorded without
# and with --op-calls, interleaved rounds: a loop of relu on a 4-element tensor (the
# dispatcher's cost alone: the worst case; the workload's own time per call) and
# examples/cnn_train.py (its own time for its steps); and, for scale, the same relu loop
# under torch.profiler without dlprof.  Medians; the ratio of the medians, with over
# without.
#   bench/op-calls.sh [-n ROUNDS] [-s STEPS]
set -e
cd "$(dirname "$0")/.."
DLPROF=${DLPROF:-$PWD/dlprof}
PY=${PY:-/usr/bin/python3}
rounds=5 steps=30
while [ $# -gt 0 ]; do
	case "$1" in
	-n) rounds=$2; shift 2 ;;
	-s) steps=$2; shift 2 ;;
	*) echo "usage: bench/op-calls.sh [-n ROUNDS] [-s STEPS]" >&2; exit 64 ;;
	esac
done
"$PY" -c 'import torch' 2>/dev/null || { echo "op-calls: no torch for $PY" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/tiny.py" <<'PY'
import sys, time, torch
x = torch.randn(4)
for _ in range(1000):
    torch.relu(x)
N = 100000
prof = None
if len(sys.argv) > 1:
    prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
    prof.__enter__()
t = time.perf_counter()
for _ in range(N):
    torch.relu(x)
us = (time.perf_counter() - t) / N * 1e6
if prof:
    prof.__exit__(None, None, None)
print("us %.4f" % us)
PY

tiny() {
	name=$1
	shift
	"$@" >"$tmp/out" 2>&1
	sed -n 's/^us //p' "$tmp/out" >>"$tmp/$name.t"
}
cnn() {
	name=$1
	shift
	"$DLPROF" record -q "$@" -o "$tmp/c.data" -- "$PY" examples/cnn_train.py \
		--steps "$steps" >"$tmp/out" 2>&1
	sed -n 's/.* steps in \([0-9.]*\) s,.*/\1/p' "$tmp/out" >>"$tmp/$name.s"
}
for r in $(seq "$rounds"); do
	tiny plain "$DLPROF" record -q -o "$tmp/t.data" -- "$PY" "$tmp/tiny.py"
	tiny calls "$DLPROF" record -q --op-calls -o "$tmp/t.data" -- "$PY" "$tmp/tiny.py"
	tiny profiler "$PY" "$tmp/tiny.py" profile
	cnn plain
	cnn calls --op-calls
done
med() { sort -g "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
printf 'medians of %s interleaved rounds\n' "$rounds"
printf '  relu of 4 floats, us a call: record %.3f, record --op-calls %.3f (x%.2f); torch.profiler alone %.3f\n' \
	"$(med "$tmp/plain.t")" "$(med "$tmp/calls.t")" \
	"$(echo "$(med "$tmp/calls.t") / $(med "$tmp/plain.t")" | bc -l)" "$(med "$tmp/profiler.t")"
printf '  cnn_train.py --steps %s, s: record %.3f, record --op-calls %.3f (x%.3f)\n' "$steps" \
	"$(med "$tmp/plain.s")" "$(med "$tmp/calls.s")" \
	"$(echo "$(med "$tmp/calls.s") / $(med "$tmp/plain.s")" | bc -l)"
