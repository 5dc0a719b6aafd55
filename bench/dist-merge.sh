#!/bin/bash
# dist-merge.sh - the cost of reading a job's recordings together: records a 2-rank and a
# 4-rank DDP job (tests/workloads/ddp_train.py over gloo, rank 1 the straggler, one
# `dlprof record -o prof-%r.data` per rank inside tests/tools/launch-ranks.sh), then
# times `dlprof report FILES...` on each job's recordings merged against the sum of
# `dlprof report FILE` for each of them.  Goal: merged <= sum of singles (ratio <= 1):
# reading N recordings at once must cost no more than reading them one by one.
#
#   make dlprof
#   bench/dist-merge.sh [-n ROUNDS] [--steps N] [--keep DIR] [-- REPORT-ARGS...]
#
# Each round times, one after the other (interleaved, so a slow phase of the machine
# hits both), the merged report and then each single report; the rows are medians over
# the rounds (default 5).  REPORT-ARGS go to every report (e.g. `-- --sort rank`, or
# `-- --by-input`, which only the merged run can give: the singles then run without).
# Output is discarded; the recordings are read from the page cache (one untimed report
# first).  Environment: DLPROF (the binary), PY (python with torch, /usr/bin/python3).
# Not part of make check: about a minute (the 4 ranks share 2 cores while recording).
set -e
TOP=$(cd "$(dirname "$0")/.." && pwd)
DLPROF=${DLPROF:-$TOP/dlprof}
PY=${PY:-/usr/bin/python3}
LAUNCH=$TOP/tests/tools/launch-ranks.sh
DDP=$TOP/tests/workloads/ddp_train.py
ROUNDS=5 STEPS=30 KEEP=
while [ $# -gt 0 ]; do
	case $1 in
	-n) ROUNDS=$2; shift 2 ;;
	--steps) STEPS=$2; shift 2 ;;
	--keep) KEEP=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "usage: $0 [-n ROUNDS] [--steps N] [--keep DIR] [-- REPORT-ARGS...]" >&2; exit 64 ;;
	esac
done
REPORT_ARGS=("$@")
SINGLE_ARGS=()
for a in "$@"; do [ "$a" = --by-input ] || SINGLE_ARGS+=("$a"); done
[ -x "$DLPROF" ] || { echo "dist-merge.sh: no $DLPROF (make dlprof)" >&2; exit 1; }
$PY -c 'import torch.distributed' 2>/dev/null || { echo "dist-merge.sh: $PY has no torch" >&2; exit 1; }
DIR=${KEEP:-$(mktemp -d)}
mkdir -p "$DIR"
[ -n "$KEEP" ] || trap 'rm -rf "$DIR"' EXIT
cd "$DIR"
unset RANK WORLD_SIZE MASTER_ADDR MASTER_PORT

# now_ns; run_ns CMD...: the wall time of CMD in ns, its output discarded
run_ns() {
	local t0
	t0=$(date +%s%N)
	"$@" >/dev/null 2>&1 || { echo "dist-merge.sh: failed: $*" >&2; "$@" >/dev/null; exit 1; }
	echo $(($(date +%s%N) - t0))
}

median() {
	sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) printf "%d\n", v[(NR + 1) / 2]; else printf "%d\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cpus; $ROUNDS rounds; report ${REPORT_ARGS[*]}"
for n in 2 4; do
	mkdir -p job$n
	if ! ls job$n/prof-*.data >/dev/null 2>&1; then
		"$LAUNCH" $n -- "$DLPROF" record -q -o job$n/prof-%r.data -- \
			$PY "$DDP" --steps "$STEPS" --extra-ms 1:60 >job$n/truth.txt 2>job$n/err.txt ||
			{ cat job$n/err.txt >&2; exit 1; }
	fi
done

printf "\n%-8s %9s %9s %12s %14s %7s\n" job samples "MB" "merged (s)" "sum single (s)" ratio
for n in 2 4; do
	files=(job$n/prof-*.data)
	"$DLPROF" report "${REPORT_ARGS[@]}" "${files[@]}" >/dev/null 2>&1 || true	# page cache
	: >merged.$n
	: >singles.$n
	for ((r = 0; r < ROUNDS; r++)); do
		run_ns "$DLPROF" report "${REPORT_ARGS[@]}" "${files[@]}" >>merged.$n
		sum=0
		for f in "${files[@]}"; do
			t=$(run_ns "$DLPROF" report "${SINGLE_ARGS[@]}" "$f")
			sum=$((sum + t))
		done
		echo $sum >>singles.$n
	done
	m=$(median <merged.$n)
	s=$(median <singles.$n)
	samples=$("$DLPROF" report --limit 1 --no-findings "${files[@]}" | sed -n 's/^# samples: \([0-9]*\) .*/\1/p')
	mb=$(du -cm "${files[@]}" | tail -n 1 | cut -f1)
	printf "%-8s %9s %9s %12.3f %14.3f %7.3f\n" "$n ranks" "$samples" "$mb" \
		"$(echo "$m / 1000000000" | bc -l)" "$(echo "$s / 1000000000" | bc -l)" "$(echo "$m / $s" | bc -l)"
done
echo "# ratio = merged / sum of singles (goal: <= 1)"
