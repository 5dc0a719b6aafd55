#!/bin/sh
# t5010: an OpenMP loop where thread 0 does 3x the work: the workers spin at the barrier
# ~1/3 of all CPU samples on idle cores (more when the cores are shared).  The workload
# measures its own work CPU time; report --sort family must agree with that split.
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS
"$DLPROF" report -h 2>&1 | grep -q "family" || test_skip_all "report --sort family not wired yet"
export DLPROF_DATADIR="$TOP/share"

json_share() {	# json_share FILE FAMILY -> self_pct
	json_get "$1" "sum(r.self_pct for r in j.rows if r.family == '$2')"
}

test_expect_success 'record the imbalanced OpenMP loop (active wait policy)' '
	OMP_NUM_THREADS=2 OMP_WAIT_POLICY=active GOMP_SPINCOUNT=infinite \
		"$DLPROF" record -F 999 -g -o omp.data -- "$BUILD/tests/workloads/dl-omp-imbalance" 3 >wl.out &&
	test_grep -q "threads 2 spin-fraction 0.333" wl.out
'

test_expect_success 'omp-spin and the work loop split the samples as measured (10 points)' '
	"$DLPROF" report -i omp.data --sort family --format json >fam.json &&
	spin=$(json_share fam.json omp-spin) && other=$(json_share fam.json other) &&
	work=$(sed -n "s/.*measured-work-fraction \([0-9.]*\).*/\1/p" wl.out) &&
	echo "omp-spin $spin% work_units (other) $other% measured work $work" &&
	/usr/bin/python3 -c "
import sys
spin, other, work = float(sys.argv[1]), float(sys.argv[2]), 100 * float(sys.argv[3])
assert spin >= 15, \"the barrier spin must be visible\"
assert abs(other - work) <= 10, (other, work)
assert abs(spin - (100 - work)) <= 10, (spin, 100 - work)
" "$spin" "$other" "$work"
'

# Debian's libgomp is stripped: its spin loop is named by the FDE around it, one name a
# function whatever CFI row (push, pop) a sample fell in; readelf lists the FDEs
test_expect_success 'stripped libgomp: each func@0x... is the start of an FDE, readelf says' '
	gomp=$(readlink -f "$(ldd "$BUILD/tests/workloads/dl-omp-imbalance" | sed -n "s/.*libgomp[^ ]* => \([^ ]*\) .*/\1/p")") &&
	echo "libgomp: $gomp" && test -f "$gomp" &&
	readelf --debug-dump=frames "$gomp" | sed -n "s/.* FDE .* pc=0*\([0-9a-f]*\)\.\..*/\1/p" >fdes &&
	"$DLPROF" fold -i omp.data >omp.fold &&
	grep -o "libgomp[^;!]*!func@0x[0-9a-f]*" omp.fold | sed "s/.*func@0x//" | sort -u >named &&
	cat named && test -s named &&
	while read -r a; do grep -qx "$a" fdes || { echo "func@0x$a starts no FDE"; exit 1; }; done <named
'

test_expect_success 'thread table: the spinning worker has a high omp-spin share' '
	"$DLPROF" report -i omp.data --sort thread --format json >thr.json &&
	json_check thr.json <<-\PY
	rows = sorted(j.rows, key=lambda r: -r.omp_spin_pct)
	print(rows[0])
	rows[0].omp_spin_pct > 40
	PY
'
test_done
