#!/bin/sh
# t5011: cblas_sgemm (OpenBLAS) vs a plain C loop, each run for half the time: the gemm
# family and the own loop must split the samples like the measured times.
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS OPENBLAS
"$DLPROF" report -h 2>&1 | grep -q "family" || test_skip_all "report --sort family not wired yet"
export DLPROF_DATADIR="$TOP/share"

test_expect_success 'record gemm vs own loop' '
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "$DLPROF" record -F 999 -o gemm.data -- "$BUILD/tests/workloads/dl-gemm" 2 >wl.out &&
	cat wl.out
'

test_expect_success 'gemm share matches the measured time split within 12 points' '
	"$DLPROF" report -i gemm.data --sort family --format json >fam.json &&
	json_check fam.json <<-\PY
	w = open("wl.out").read().split()
	g, o = float(w[1]), float(w[3])
	want = 100 * g / (g + o)
	got = sum(r.self_pct for r in j.rows if r.family == "gemm")
	print("gemm want %.1f%% got %.1f%%" % (want, got))
	abs(got - want) < 12
	PY
'
test_done
