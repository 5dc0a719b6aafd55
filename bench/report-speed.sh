#!/bin/bash
# report-speed.sh - dlprof report at two commits on the same fixed recordings: time and
# peak memory, interleaved rounds, medians, ratios; and whether the outputs are equal.
#
#   bench/report-speed.sh [-n ROUNDS] [-d SECONDS] [--dir DIR] BASE NEW
#
# BASE and NEW are commits (anything git rev-parse takes; NEW may be "work" for the
# working tree as it is).  Each is built once in a worktree under DIR (default
# /tmp/dlprof-report-speed).  The recordings are made once with NEW's dlprof and kept in
# DIR/rec (delete them to record anew):
#   fp      a busy OpenMP GEMM (dl-gemm, 2 threads), -F 10000 -g, SECONDS (default 20)
#   dwarf   the demo, whole stacks unwound while recording (the default), -F 4000
#   dwarf-s the same workload for a quarter of the time: with dwarf, the marginal cost
#           per sample ((t_dwarf - t_dwarf-s) / (n_dwarf - n_dwarf-s))
#   python  tests/workloads/py_loop.py under Debian's python3, Python frames
#   memory  tests/workloads/mem-known, record --memory, then report --memory
#   two     report fp.data dwarf.data (several recordings, one table)
# Each round runs every report once with BASE and once with NEW (alternating which goes
# first), output to a file; wall seconds (date, ns) and peak RSS (/usr/bin/time).  Prints per
# recording the medians, us per sample and the NEW/BASE ratios, and "outputs: equal" or
# which differ.  Time on a quiet machine: nothing else measuring at the same time.
set -euo pipefail

rounds=5
seconds=20
dir=/tmp/dlprof-report-speed
while [ $# -gt 2 ]; do
	case $1 in
	-n) rounds=$2; shift 2 ;;
	-d) seconds=$2; shift 2 ;;
	--dir) dir=$2; shift 2 ;;
	*) echo "usage: $0 [-n ROUNDS] [-d SECONDS] [--dir DIR] BASE NEW" >&2; exit 64 ;;
	esac
done
[ $# = 2 ] || { echo "usage: $0 [-n ROUNDS] [-d SECONDS] [--dir DIR] BASE NEW" >&2; exit 64; }
top=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$dir/rec" "$dir/out"

# build COMMIT NAME: a worktree at COMMIT with dlprof built in it; prints its top
build() {
	if [ "$1" = work ]; then
		make -C "$top" -j2 dlprof >/dev/null
		echo "$top"
		return
	fi
	local wt="$dir/wt-$2"
	if [ ! -d "$wt" ] || [ "$(git -C "$wt" rev-parse HEAD)" != "$(git -C "$top" rev-parse "$1")" ]; then
		rm -rf "$wt"
		git -C "$top" worktree prune
		git -C "$top" worktree add -f --detach "$wt" "$1" >/dev/null 2>&1
	fi
	make -C "$wt" -j2 dlprof >/dev/null
	echo "$wt"
}

base=$(build "$1" base)
new=$(build "$2" new)
make -C "$new" -j2 build/examples/demo build/tests/workloads/dl-gemm \
	build/tests/workloads/mem-known build/libdlprof-mem.so build/libdlprof-itt.so >/dev/null
D="$new/dlprof"
R="$dir/rec"
[ -s "$R/fp.data" ] || OMP_NUM_THREADS=2 "$D" record -q -F 10000 -g --duration "$seconds" \
	-o "$R/fp.data" -- "$new/build/tests/workloads/dl-gemm" $((seconds + 5)) >/dev/null
[ -s "$R/dwarf.data" ] || OMP_NUM_THREADS=2 "$D" record -q -F 4000 -o "$R/dwarf.data" -- \
	"$new/build/examples/demo" -n 400 >/dev/null
[ -s "$R/dwarf-s.data" ] || OMP_NUM_THREADS=2 "$D" record -q -F 4000 -o "$R/dwarf-s.data" -- \
	"$new/build/examples/demo" -n 100 >/dev/null
[ -s "$R/python.data" ] || "$D" record -q -o "$R/python.data" -- /usr/bin/python3 \
	"$new/tests/workloads/py_loop.py" 8 >/dev/null
[ -s "$R/memory.data" ] || "$D" record -q --memory -o "$R/memory.data" -- \
	"$new/build/tests/workloads/mem-known" >/dev/null 2>&1

cases="fp dwarf dwarf-s python memory two"
args_of() {
	case $1 in
	two) echo "report $R/fp.data $R/dwarf.data" ;;
	memory) echo "report --memory -i $R/memory.data" ;;
	*) echo "report -i $R/$1.data" ;;
	esac
}
samples_of() {	# the samples a report reads: the header's count
	"$D" report -i "$R/$1.data" --format json 2>/dev/null |
		/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["header"]["samples"])'
}

# one BIN CASE ROUND: run, append "case who round seconds kb" to the log
one() {
	local who=$1 c=$2 r=$3 bin
	bin=$([ "$who" = base ] && echo "$base/dlprof" || echo "$new/dlprof")
	local t0 t1
	t0=$(date +%s%N)
	/usr/bin/time -f "%M" -o "$dir/out/t" env DLPROF_DATADIR="$(dirname "$bin")/share" \
		"$bin" $(args_of "$c") >"$dir/out/$c.$who" 2>"$dir/out/$c.$who.err"
	t1=$(date +%s%N)
	echo "$c $who $r $(( (t1 - t0) / 1000 ))e-6 $(cat "$dir/out/t")" >>"$dir/log"
}

: >"$dir/log"
for r in $(seq 1 "$rounds"); do
	for c in $cases; do
		if [ $((r % 2)) = 1 ]; then one base "$c" "$r"; one new "$c" "$r"
		else one new "$c" "$r"; one base "$c" "$r"; fi
	done
done

declare -A n
for c in fp dwarf dwarf-s python; do n[$c]=$(samples_of "$c"); done
n[two]=$(( n[fp] + n[dwarf] ))
n[memory]=0
{
	for c in $cases; do echo "samples $c ${n[$c]}"; done
	cat "$dir/log"
} | /usr/bin/python3 -c '
import sys, statistics, collections
n = {}
t = collections.defaultdict(list)
m = collections.defaultdict(list)
for l in sys.stdin:
    f = l.split()
    if f[0] == "samples":
        n[f[1]] = int(f[2]); continue
    t[f[0], f[1]].append(float(f[3])); m[f[0], f[1]].append(int(f[4]) / 1024)
print("%-8s %9s %8s %8s %7s %8s %8s %7s %8s %8s" % ("case", "samples", "base s", "new s",
      "new/b", "base MB", "new MB", "new/b", "base us", "new us"))
med = lambda v: statistics.median(v)
for c in n:
    bt, nt = med(t[c, "base"]), med(t[c, "new"])
    bm, nm = med(m[c, "base"]), med(m[c, "new"])
    per = lambda x: "%8.2f" % (x * 1e6 / n[c]) if n[c] else "%8s" % "-"
    print("%-8s %9d %8.3f %8.3f %7.3f %8.1f %8.1f %7.3f %s %s" % (c, n[c], bt, nt, nt / bt,
          bm, nm, nm / bm, per(bt), per(nt)))
dn = n["dwarf"] - n["dwarf-s"]
if dn > 0:
    for who in ("base", "new"):
        d = med(t["dwarf", who]) - med(t["dwarf-s", who])
        print("dwarf, marginal us per sample (%s): %.2f" % (who, d * 1e6 / dn))
'
diffs=
for c in $cases; do
	cmp -s "$dir/out/$c.base" "$dir/out/$c.new" || diffs="$diffs $c"
done
echo "outputs: ${diffs:-equal}"
