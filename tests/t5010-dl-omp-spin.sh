#!/bin/sh
# t5010: an OpenMP loop where thread 0 does 3x the work: the workers spin at the barrier
# ~1/3 of all CPU samples; report --sort family must show omp-spin near that share.
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS
"$DLPROF" report -h 2>&1 | grep -q "family" || test_skip_all "report --sort family not wired yet"
export DLPROF_DATADIR="$TOP/share"

json_share() {	# json_share FILE FAMILY -> self_pct
	/usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(sum(r["self_pct"] for r in d["rows"] if r["family"] == sys.argv[2]))' "$1" "$2"
}

test_expect_success 'record the imbalanced OpenMP loop (active wait policy)' '
	OMP_NUM_THREADS=2 OMP_WAIT_POLICY=active GOMP_SPINCOUNT=infinite \
		"$DLPROF" record -F 999 -g -o omp.data -- "$BUILD/tests/workloads/dl-omp-imbalance" 3 >wl.out &&
	test_grep -q "threads 2 spin-fraction 0.333" wl.out
'

test_expect_success 'omp-spin share is about 1/3 (15..50%), work_units dominates the rest' '
	"$DLPROF" report -i omp.data --sort family --format json >fam.json &&
	spin=$(json_share fam.json omp-spin) && echo "omp-spin $spin%" &&
	/usr/bin/python3 -c "import sys; s=float(sys.argv[1]); sys.exit(0 if 15 <= s <= 50 else 1)" "$spin" &&
	other=$(json_share fam.json other) && echo "other $other%" &&
	/usr/bin/python3 -c "import sys; s=float(sys.argv[1]); sys.exit(0 if s >= 40 else 1)" "$other"
'

test_expect_success 'thread table: the spinning worker has a high omp-spin share' '
	"$DLPROF" report -i omp.data --sort thread --format json >thr.json &&
	/usr/bin/python3 -c "
import json
d = json.load(open(\"thr.json\"))
rows = sorted(d[\"rows\"], key=lambda r: -r[\"omp_spin_pct\"])
print(rows[0])
assert rows[0][\"omp_spin_pct\"] > 40, rows
"
'
test_done
