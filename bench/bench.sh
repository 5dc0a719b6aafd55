#!/bin/bash
# bench.sh - dlprof against perf on the same workload: overhead, file size, report time.
#
#   bench/bench.sh [-n ROUNDS] [-F HZ] [--dwarf] [--torch] [--keep DIR] [-- COMMAND ARGS...]
#
# Each round runs the workload three times, interleaved: plain, under
# `perf record -F HZ -g`, and under `dlprof record -F HZ -g` (with --dwarf:
# `--call-graph dwarf` for both), then times `perf report --stdio` and `dlprof report` on
# the two recordings, and `dlprof report` on perf's own file (the same input for both).
# The table shows medians over the rounds, perf's value, dlprof's
# value and the ratio dlprof/perf (below 1 is dlprof doing better on every row).
#
# The workload's own time is the number in its last "... in X s" line (both bundled
# workloads print one), else the wall time.  Default workload: build/examples/demo;
# --torch: examples/cnn_train.py with a fixed step count.  Run `make` and
# `make build/examples/demo` first.  Not part of make check: it takes minutes.
set -euo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
DLPROF=${DLPROF:-$TOP/dlprof}
PERF=${PERF:-perf}
ROUNDS=3
FREQ=999
DWARF=0
TORCH=0
KEEP=
CMD=()

usage() {
	sed -n '3,4p' "$0" | sed 's/^# *//' >&2
	exit 64
}

while [ $# -gt 0 ]; do
	case $1 in
	-n) ROUNDS=${2:?}; shift 2 ;;
	-F) FREQ=${2:?}; shift 2 ;;
	--dwarf) DWARF=1; shift ;;
	--torch) TORCH=1; shift ;;
	--keep) KEEP=${2:?}; shift 2 ;;
	--) shift; CMD=("$@"); break ;;
	-h|--help) usage ;;
	*) echo "bench: unknown option '$1'" >&2; usage ;;
	esac
done
case $ROUNDS in ''|*[!0-9]*|0) echo "bench: bad round count '$ROUNDS'" >&2; exit 64 ;; esac

if [ ${#CMD[@]} = 0 ]; then
	if [ "$TORCH" = 1 ]; then
		CMD=(/usr/bin/python3 "$TOP/examples/cnn_train.py" --steps 40 --threads 2)
		NAME="cnn_train.py --steps 40"
	else
		CMD=("$TOP/build/examples/demo")
		NAME="demo"
	fi
else
	NAME="${CMD[*]}"
fi

[ -x "$DLPROF" ] || { echo "bench: no dlprof at '$DLPROF' (run make)" >&2; exit 2; }
command -v "$PERF" >/dev/null || { echo "bench: perf not found (apt-get install linux-perf)" >&2; exit 2; }
command -v "${CMD[0]}" >/dev/null || [ -x "${CMD[0]}" ] ||
	{ echo "bench: workload '${CMD[0]}' not found (make build/examples/demo?)" >&2; exit 2; }

if [ "$DWARF" = 1 ]; then
	CG=(--call-graph dwarf)
	CGNAME="--call-graph dwarf"
else
	CG=(-g)
	CGNAME="-g"
fi

if [ -n "$KEEP" ]; then
	mkdir -p "$KEEP"
	W=$(cd "$KEEP" && pwd)
else
	W=$(mktemp -d "${TMPDIR:-/tmp}/dlprof-bench.XXXXXX")
	trap 'rm -rf "$W"' EXIT
fi
RES=$W/results.tsv
: >"$RES"

now() { date +%s.%N; }

# workload_time FILE WALL: the last "in X s" figure the workload printed, else WALL
workload_time() {
	local t
	t=$(sed -n -E 's/.* in ([0-9]+(\.[0-9]+)?) s\b.*/\1/p' "$1" | tail -n 1)
	echo "${t:-$2}"
}

# run TAG COMMAND...: run, record wall and workload time as "TAG wall VALUE" lines
run() {
	local tag=$1 t0 t1 wall rc=0
	shift
	t0=$(now)
	"$@" >"$W/$tag.out" 2>"$W/$tag.err" || rc=$?
	t1=$(now)
	if [ "$rc" != 0 ]; then
		echo "bench: '$*' failed with status $rc:" >&2
		tail -n 5 "$W/$tag.err" >&2
		exit 2
	fi
	wall=$(echo "$t1 - $t0" | bc -l)
	printf '%s\twall\t%s\n' "$tag" "$wall" >>"$RES"
	printf '%s\twork\t%s\n' "$tag" "$(workload_time "$W/$tag.out" "$wall")" >>"$RES"
}

# timed TAG MEASURE COMMAND...: time a command whose output is discarded; a failure
# leaves the measure out (shown as "-")
timed() {
	local tag=$1 what=$2 t0 t1
	shift 2
	t0=$(now)
	"$@" >/dev/null 2>"$W/$tag.$what.err" || {
		echo "bench: '$*' failed (no $what time for $tag):" >&2
		tail -n 3 "$W/$tag.$what.err" >&2
		return 0
	}
	t1=$(now)
	printf '%s\t%s\t%s\n' "$tag" "$what" "$(echo "$t1 - $t0" | bc -l)" >>"$RES"
}

echo "bench: $NAME, $ROUNDS rounds, -F $FREQ $CGNAME; scratch in $W" >&2
for r in $(seq 1 "$ROUNDS"); do
	echo "bench: round $r/$ROUNDS" >&2
	run plain "${CMD[@]}"

	rm -f "$W/perf.data"
	run perf "$PERF" record -q -F "$FREQ" "${CG[@]}" -o "$W/perf.data" -- "${CMD[@]}"
	printf 'perf\tbytes\t%s\n' "$(stat -c %s "$W/perf.data")" >>"$RES"
	printf 'perf\tsamples\t%s\n' "$("$PERF" script -F tid -i "$W/perf.data" 2>/dev/null | wc -l)" >>"$RES"
	timed perf report "$PERF" report --stdio -i "$W/perf.data"
	# the same file read by both: dlprof reads perf.data too
	timed dlprof perfreport "$DLPROF" report -i "$W/perf.data"

	rm -f "$W/dlprof.data"
	run dlprof "$DLPROF" record -F "$FREQ" "${CG[@]}" -o "$W/dlprof.data" -- "${CMD[@]}"
	printf 'dlprof\tbytes\t%s\n' "$(stat -c %s "$W/dlprof.data")" >>"$RES"
	# "dlprof: N samples, M lost, wrote ...": the on-CPU samples (switch-outs apart)
	n=$(sed -n -E 's/^dlprof: ([0-9]+) samples, .*/\1/p' "$W/dlprof.err" | tail -n 1)
	printf 'dlprof\tsamples\t%s\n' "${n:-0}" >>"$RES"
	timed dlprof report "$DLPROF" report -i "$W/dlprof.data"
done

# medians and the table
awk -F '\t' -v name="$NAME" -v rounds="$ROUNDS" -v freq="$FREQ" -v cg="$CGNAME" '
function median(key,    n, i, j, t, a) {
	n = cnt[key]
	if (!n)
		return ""
	for (i = 1; i <= n; i++)
		a[i] = val[key, i]
	for (i = 2; i <= n; i++)		# insertion sort: n is small
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function add(key, v) { val[key, ++cnt[key]] = v }
function row(label, fmt, p, d) {
	printf "%-34s %12s %12s %12s\n", label,
		p == "" ? "-" : sprintf(fmt, p), d == "" ? "-" : sprintf(fmt, d),
		(p == "" || d == "" || p == 0) ? "-" : sprintf("%.3f", d / p)
}
{
	add($1 SUBSEP $2, $3)
}
END {
	# per-round ratios against the plain run of the same round
	for (i = 1; i <= cnt["plain" SUBSEP "work"]; i++) {
		pw = val["plain" SUBSEP "work", i]; pwall = val["plain" SUBSEP "wall", i]
		for (k = 0; k < 2; k++) {
			tool = k ? "dlprof" : "perf"
			if (pw > 0)
				add(tool SUBSEP "slow", val[tool SUBSEP "work", i] / pw)
			add(tool SUBSEP "extra", val[tool SUBSEP "wall", i] - pwall)
			s = val[tool SUBSEP "samples", i]
			if (s > 0)
				add(tool SUBSEP "bps", val[tool SUBSEP "bytes", i] / s)
			if (s > 0 && (tool SUBSEP "report", i) in val)
				add(tool SUBSEP "rps", val[tool SUBSEP "report", i] / s * 1e6)
		}
	}
	printf "%s: medians of %d rounds, -F %d %s; plain: workload %.3f s, wall %.3f s\n\n",
		name, rounds, freq, cg, median("plain" SUBSEP "work"), median("plain" SUBSEP "wall")
	printf "%-34s %12s %12s %12s\n", "measure", "perf", "dlprof", "dlprof/perf"
	row("workload slowdown (x plain)", "%.3f", median("perf" SUBSEP "slow"), median("dlprof" SUBSEP "slow"))
	row("workload time (s)", "%.3f", median("perf" SUBSEP "work"), median("dlprof" SUBSEP "work"))
	row("end-to-end wall (s)", "%.3f", median("perf" SUBSEP "wall"), median("dlprof" SUBSEP "wall"))
	row("wall over plain (s)", "%.3f", median("perf" SUBSEP "extra"), median("dlprof" SUBSEP "extra"))
	row("samples", "%d", median("perf" SUBSEP "samples"), median("dlprof" SUBSEP "samples"))
	row("file size (MB)", "%.2f", median("perf" SUBSEP "bytes") / 1e6, median("dlprof" SUBSEP "bytes") / 1e6)
	row("file bytes per sample", "%.0f", median("perf" SUBSEP "bps"), median("dlprof" SUBSEP "bps"))
	row("report time (s)", "%.3f", median("perf" SUBSEP "report"), median("dlprof" SUBSEP "report"))
	row("report us per sample", "%.1f", median("perf" SUBSEP "rps"), median("dlprof" SUBSEP "rps"))
	row("report time, same perf.data (s)", "%.3f", median("perf" SUBSEP "report"), median("dlprof" SUBSEP "perfreport"))
}' "$RES"
