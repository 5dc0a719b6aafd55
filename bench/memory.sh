#!/bin/sh
# memory.sh - what record --memory costs on the CNN (tests/workloads/dl_torch_cnn.py, which
# trains for SECONDS and counts its steps: the speed), in interleaved rounds:
#   plain	dlprof record
#   mem		dlprof record --memory (a sample per 512 KiB on average)
# and with --heaptrack also
#   every	dlprof record --memory --mem-sample 1 (every allocation and free)
#   heaptrack	heaptrack (Debian's package) on the same command
# Prints each run (steps, wall seconds, file bytes, dlprof's own CPU) and the medians:
# steps against plain, file size against plain.  Run alone: no other timing on the machine.
#
#   bench/memory.sh [-n ROUNDS] [-s SECONDS] [--heaptrack]
cd "$(dirname "$0")/.." || exit 1
W=tests/workloads/dl_torch_cnn.py
ROUNDS=3 SECS=8 HT=
while [ $# -gt 0 ]; do
	case $1 in
	-n) ROUNDS=$2; shift 2 ;;
	-s) SECS=$2; shift 2 ;;
	--heaptrack) HT=1; shift ;;
	*) echo "usage: bench/memory.sh [-n ROUNDS] [-s SECONDS] [--heaptrack]" >&2; exit 64 ;;
	esac
done
if [ -n "$HT" ] && ! command -v heaptrack >/dev/null; then
	echo "memory.sh: heaptrack is not installed" >&2
	exit 1
fi
D=$(mktemp -d /tmp/dlprof-membench.XXXXXX)
MODES="plain mem"
[ -n "$HT" ] && MODES="$MODES every heaptrack"
for r in $(seq "$ROUNDS"); do
	for m in $MODES; do
		f=$D/$m.$r
		s=$(date +%s.%N)
		case $m in
		plain) ./dlprof record -q -o "$f.data" -- /usr/bin/python3 $W "$SECS" >"$f.out" 2>&1 ;;
		mem) ./dlprof record -q --memory -o "$f.data" -- /usr/bin/python3 $W "$SECS" >"$f.out" 2>&1 ;;
		every) ./dlprof record -q --memory --mem-sample 1 -o "$f.data" -- \
			/usr/bin/python3 $W "$SECS" >"$f.out" 2>&1 ;;
		heaptrack) heaptrack -o "$f.ht" /usr/bin/python3 $W "$SECS" >"$f.out" 2>&1 ;;
		esac
		e=$(date +%s.%N)
		steps=$(sed -n 's/^steps \([0-9]*\).*/\1/p' "$f.out" | tail -1)
		if [ $m = heaptrack ]; then
			size=$(stat -c %s "$f".ht* | head -1)
			cpu=-
		else
			size=$(stat -c %s "$f.data")
			cpu=$(build/tests/recdump "$f.data" | sed -n 's/^META record_cpu_ns=//p')
		fi
		echo "$m $r steps=$steps wall=$(echo "$e - $s" | bc) bytes=$size dlprof_cpu_ns=$cpu" |
			tee -a "$D/runs"
	done
done
/usr/bin/python3 - "$D/runs" <<'EOF'
import statistics, sys
runs = {}
for l in open(sys.argv[1]):
    f = l.split()
    kv = dict(x.split("=", 1) for x in f[2:])
    runs.setdefault(f[0], []).append(kv)
med = lambda m, k: statistics.median(float(r[k]) for r in runs[m])
p_steps, p_size = med("plain", "steps"), med("plain", "bytes")
print("medians of %d interleaved rounds" % len(runs["plain"]))
for m in runs:
    s, b, w = med(m, "steps"), med(m, "bytes"), med(m, "wall")
    print("  %-10s steps %6.0f (%+6.1f%% against plain)  wall %6.1f s  file %6.2f MB (%+6.1f%%)"
          % (m, s, 100.0 * (s - p_steps) / p_steps, w, b / 1e6, 100.0 * (b - p_size) / p_size))
EOF
echo "runs and files in $D"
