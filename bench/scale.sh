#!/bin/bash
# scale.sh - report at scale: time and peak memory of `dlprof report` on 100k, 1M and 10M
# frame-pointer samples (linear growth, the 10M goal: under 10 s and 300 MB), on 1M
# dwarf samples recorded by dlprof, and `dlprof report` against `perf report` on the same
# perf.data of dwarf samples.
#
#   make && make build/examples/demo build/tests/rec-repeat
#   bench/scale.sh [--keep DIR] [--perf-samples N]
#
# The long recordings are made from one run of the demo (build/examples/demo, ~28k
# samples) by repeating its samples, each round later in time than the last
# (build/tests/rec-repeat for dlprof files, bench/perfdata-repeat.py for perf.data): the
# stacks, threads and processes of a workload that ran 4, 36, 357 times as long.
# perf report on dwarf samples costs ~1-2 ms a sample, so its row is measured on
# --perf-samples (default 100000) samples and dlprof's on the same file, plus dlprof alone
# on 1M; the per-sample figures say what 1M costs perf.  Peak memory: max RSS from
# /usr/bin/time.  Not part of make check: the whole run takes several minutes.
set -e
TOP=$(cd "$(dirname "$0")/.." && pwd)
DLPROF=${DLPROF:-$TOP/dlprof}
PERF=${PERF:-perf}
REPEAT=$TOP/build/tests/rec-repeat
DEMO=$TOP/build/examples/demo
KEEP= PERF_N=100000
while [ $# -gt 0 ]; do
	case $1 in
	--keep) KEEP=$2; shift 2 ;;
	--perf-samples) PERF_N=$2; shift 2 ;;
	*) echo "usage: $0 [--keep DIR] [--perf-samples N]" >&2; exit 64 ;;
	esac
done
for f in "$DLPROF" "$REPEAT" "$DEMO"; do
	[ -x "$f" ] || { echo "scale.sh: no $f (make && make build/examples/demo build/tests/rec-repeat)" >&2; exit 1; }
done
DIR=${KEEP:-$(mktemp -d)}
mkdir -p "$DIR"
[ -n "$KEEP" ] || trap 'rm -rf "$DIR"' EXIT
cd "$DIR"

# measure LABEL CMD...: "LABEL  seconds  peak-MB", the command's output discarded
measure() {
	local label=$1
	shift
	/usr/bin/time -f "%e %M" -o t.out "$@" >/dev/null 2>t.err || { cat t.err >&2; return 1; }
	read -r secs kb <t.out
	printf "%-44s %9.2f s %8.1f MB\n" "$label" "$secs" "$(echo "$kb / 1024" | bc -l)"
}

samples_in() {
	"$DLPROF" report -i "$1" --limit 1 --no-findings | sed -n 's/^# samples: \([0-9]*\) .*/\1/p'
}

echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cpus"
[ -f fp.data ] || "$DLPROF" record -q -g -o fp.data -- "$DEMO" >/dev/null
[ -f dw.data ] || "$DLPROF" record -q -o dw.data -- "$DEMO" >/dev/null
n=$(samples_in fp.data)
echo "# one demo run: $n fp samples; dwarf run: $(samples_in dw.data) samples"
echo
printf "%-44s %11s %11s\n" "report of" "time" "peak RSS"
for want in 100000 1000000 10000000; do
	k=$(( (want + n / 2) / n ))
	[ -f fp-$k.data ] || "$REPEAT" fp.data $k fp-$k.data 2>/dev/null
	measure "$(samples_in fp-$k.data) fp samples ($(du -m fp-$k.data | cut -f1) MB file)" \
		"$DLPROF" report -i fp-$k.data
done
nd=$(samples_in dw.data)
k=$(( (1000000 + nd / 2) / nd ))
[ -f dw-$k.data ] || "$REPEAT" dw.data $k dw-$k.data 2>/dev/null
measure "$(samples_in dw-$k.data) dwarf samples, dlprof's file ($(du -m dw-$k.data | cut -f1) MB)" \
	"$DLPROF" report -i dw-$k.data

if command -v "$PERF" >/dev/null; then
	[ -f perf-dw.data ] || "$PERF" record -q -F 999 --call-graph dwarf -o perf-dw.data -- "$DEMO" >/dev/null 2>&1
	np=$(samples_in perf-dw.data)
	for want in $PERF_N 1000000; do
		k=$(( (want + np / 2) / np ))
		[ -f perf-dw-$k.data ] || python3 "$TOP/bench/perfdata-repeat.py" perf-dw.data $k perf-dw-$k.data
		measure "$((np * k)) dwarf samples, perf.data ($(du -m perf-dw-$k.data | cut -f1) MB): dlprof" \
			"$DLPROF" report -i perf-dw-$k.data
		[ "$want" = 1000000 ] && [ "$PERF_N" != 1000000 ] && continue
		measure "$((np * k)) dwarf samples, perf.data: perf report" \
			"$PERF" report -i perf-dw-$k.data --stdio
	done
fi
