#!/bin/sh
# bench/dnnl-hook.sh - what the oneDNN primitive interposer (lib/inject/dnnl-hook.c)
# costs the CNN: `dlprof record` of examples/cnn_train.py with it and without it
# (DLPROF_NO_DNNL_HOOK=1), interleaved rounds; the workload's own training time and
# record's wall time, then the medians.  Goal (issue 38): at most 1% slower.
#   bench/dnnl-hook.sh [-n ROUNDS] [-s STEPS]
set -e
cd "$(dirname "$0")/.."
DLPROF=${DLPROF:-$PWD/dlprof}
rounds=5 steps=20
while [ $# -gt 0 ]; do
	case "$1" in
	-n) rounds=$2; shift 2 ;;
	-s) steps=$2; shift 2 ;;
	*) echo "usage: bench/dnnl-hook.sh [-n ROUNDS] [-s STEPS]" >&2; exit 64 ;;
	esac
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
i=0
while [ $i -lt "$rounds" ]; do
	i=$((i + 1))
	# the order alternates, so that neither setting always runs second
	if [ $((i % 2)) = 1 ]; then order="on off"; else order="off on"; fi
	for mode in $order; do
		if [ $mode = off ]; then off=1; else off=; fi
		s=$(date +%s.%N)
		DLPROF_NO_DNNL_HOOK=$off "$DLPROF" record -q -o "$tmp/b.data" -- /usr/bin/python3 \
			examples/cnn_train.py --steps "$steps" >"$tmp/out" 2>&1
		e=$(date +%s.%N)
		t=$(sed -n 's/.* steps in \([0-9.]*\) s.*/\1/p' "$tmp/out")
		echo "$mode $i train_s=$t wall_s=$(echo "$e - $s" | bc) load=$(cut -d' ' -f1 /proc/loadavg)"
	done
done | tee "$tmp/res"
python3 - "$tmp/res" <<'PY'
import statistics, sys
r = {"on": [], "off": []}
w = {"on": [], "off": []}
for line in open(sys.argv[1]):
    f = line.split()
    kv = dict(x.split("=") for x in f[2:])
    r[f[0]].append(float(kv["train_s"]))
    w[f[0]].append(float(kv["wall_s"]))
on, off = statistics.median(r["on"]), statistics.median(r["off"])
print("training median: hook on %.3f s, off %.3f s: %+.1f%%" % (on, off, 100 * (on - off) / off))
on, off = statistics.median(w["on"]), statistics.median(w["off"])
print("record wall median: hook on %.3f s, off %.3f s: %+.1f%%" % (on, off, 100 * (on - off) / off))
PY
