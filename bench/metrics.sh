#!/bin/sh
# bench/metrics.sh - what record --metrics costs (issue 46): examples/cnn_train.py recorded
# without counters, with `--metrics faults,sched` read with each sample (a group, Linux
# 6.12 and later), and with them sampled each on its own (--metrics-mode events, the
# default before 6.12), interleaved rounds.  Per run: the workload's
# own time for its steps (it prints it), and the file's bytes per sample (the sample
# count from report's header).  Medians; the ratio of the medians, with over without.
#   bench/metrics.sh [-n ROUNDS] [-s STEPS]
set -e
cd "$(dirname "$0")/.."
DLPROF=${DLPROF:-$PWD/dlprof}
PY=${PY:-/usr/bin/python3}
rounds=5 steps=30
while [ $# -gt 0 ]; do
	case "$1" in
	-n) rounds=$2; shift 2 ;;
	-s) steps=$2; shift 2 ;;
	*) echo "usage: bench/metrics.sh [-n ROUNDS] [-s STEPS]" >&2; exit 64 ;;
	esac
done
"$PY" -c 'import torch' 2>/dev/null || { echo "metrics: no torch for $PY" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run NAME [RECORD OPTIONS]: one recorded run; its seconds and bytes per sample
run() {
	name=$1
	shift
	"$DLPROF" record -q "$@" -o "$tmp/$name.data" -- "$PY" examples/cnn_train.py \
		--steps "$steps" >"$tmp/out" 2>&1
	sed -n 's/.* steps in \([0-9.]*\) s,.*/\1/p' "$tmp/out" >>"$tmp/$name.s"
	n=$("$DLPROF" report -i "$tmp/$name.data" -n 1 2>/dev/null |
		sed -n 's/^# samples: \([0-9]*\) .*/\1/p')
	echo "$(stat -c %s "$tmp/$name.data") / $n" | bc -l >>"$tmp/$name.b"
}
for r in $(seq "$rounds"); do
	run plain
	run metrics --metrics faults,sched
	run events --metrics faults,sched --metrics-mode events
done
med() { sort -g "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
printf 'examples/cnn_train.py --steps %s, medians of %s interleaved rounds\n' "$steps" "$rounds"
printf '                                  steps time   bytes/sample\n'
printf '  record                            %6.3f s   %6.1f\n' "$(med "$tmp/plain.s")" "$(med "$tmp/plain.b")"
printf '  record --metrics faults,sched     %6.3f s   %6.1f\n' "$(med "$tmp/metrics.s")" "$(med "$tmp/metrics.b")"
printf '    ratio                           %6.3f     %6.2f\n' \
	"$(echo "$(med "$tmp/metrics.s") / $(med "$tmp/plain.s")" | bc -l)" \
	"$(echo "$(med "$tmp/metrics.b") / $(med "$tmp/plain.b")" | bc -l)"
printf '  ... --metrics-mode events         %6.3f s   %6.1f\n' "$(med "$tmp/events.s")" "$(med "$tmp/events.b")"
printf '    ratio                           %6.3f     %6.2f\n' \
	"$(echo "$(med "$tmp/events.s") / $(med "$tmp/plain.s")" | bc -l)" \
	"$(echo "$(med "$tmp/events.b") / $(med "$tmp/plain.b")" | bc -l)"
