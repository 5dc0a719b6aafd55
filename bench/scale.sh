#!/bin/bash
# scale.sh - report at scale: time and peak memory of `dlprof report` on 100k, 1M and 10M
# frame-pointer samples (linear growth, the 10M goal: under 10 s and 300 MB), on 1M
# dwarf samples recorded by dlprof, and `dlprof report` against `perf report` on the same
# perf.data of dwarf samples.
#
#   make && make build/examples/demo build/tests/rec-repeat
#   bench/scale.sh [--keep DIR]
#
# The long recordings are made from one run of the demo (build/examples/demo, ~28k
# samples) by repeating its samples, each round later in time than the last
# (build/tests/rec-repeat for dlprof files, bench/perfdata-repeat.py for perf.data): the
# stacks, threads and processes of a workload that ran 4, 36, 357 times as long.
# Repeated samples are the same stacks again: after the first round both tools' caches
# hit, so the long files measure reading and adding up more than fresh unwinding (the
# one-run file's row is the fresh cost).  Each perf.data is read once before it is timed
# (page cache).  Peak memory: max RSS from /usr/bin/time; a mapped file's pages count.
# Not part of make check: the whole run takes a few minutes and writes ~10 GB.
set -e
TOP=$(cd "$(dirname "$0")/.." && pwd)
DLPROF=${DLPROF:-$TOP/dlprof}
PERF=${PERF:-perf}
REPEAT=$TOP/build/tests/rec-repeat
DEMO=$TOP/build/examples/demo
KEEP=
while [ $# -gt 0 ]; do
	case $1 in
	--keep) KEEP=$2; shift 2 ;;
	*) echo "usage: $0 [--keep DIR]" >&2; exit 64 ;;
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
	for k in 1 4 36; do
		f=perf-dw.data
		[ $k = 1 ] || f=perf-dw-$k.data
		[ -f $f ] || python3 "$TOP/bench/perfdata-repeat.py" perf-dw.data $k $f
		cat $f >/dev/null	# both read it from the page cache, neither from disk
		measure "$((np * k)) dwarf samples, perf.data ($(du -m $f | cut -f1) MB): dlprof" \
			"$DLPROF" report -i $f
		measure "$((np * k)) dwarf samples, perf.data: perf report" \
			"$PERF" report -i $f --stdio
	done
fi
