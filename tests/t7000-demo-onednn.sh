#!/bin/sh
# t7000: the bundled demo (OpenMP loops, OpenBLAS sgemm, a real oneDNN C API convolution):
# the JIT kernels oneDNN generates are named from the captured perf map / jitdump, also
# after the files are gone; the families split into jit-conv, gemm and OpenMP; and
# check-isa -i finds the convolution and sgemm kernels running the vector code of the ISA
# their libraries chose here (the demo prints oneDNN's implementation, check-isa names
# OpenBLAS's core).  The ISA-dependent expectations come from those answers, so the test
# holds on AVX2 and AVX-512 machines alike; the AVX2 path is run on every AVX2 machine by
# capping oneDNN (ONEDNN_MAX_CPU_ISA=AVX2).
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS DNNL OPENBLAS
DEMO="$BUILD/examples/demo"
[ -x "$DEMO" ] || test_skip_all "build/examples/demo not built"
# the environment this test assumes: the libraries choose for themselves
unset ONEDNN_MAX_CPU_ISA DNNL_MAX_CPU_ISA ONEDNN_CPU_ISA_HINTS DNNL_CPU_ISA_HINTS \
	OPENBLAS_CORETYPE OPENBLAS_VERBOSE ONEDNN_VERBOSE DNNL_VERBOSE MKLDNN_VERBOSE \
	ONEDNN_JIT_PROFILE DNNL_JIT_PROFILE INTEL_LIBITTNOTIFY64 OMP_WAIT_POLICY GOMP_SPINCOUNT
export OMP_NUM_THREADS=2

# "jit:avx512_core" -> the kernel-name word and the check-isa class of its code
isa_of_impl() {
	case $1 in
	*avx512*) echo "avx512|AVX-512 .zmm." ;;
	*avx2*) echo "avx2|AVX/AVX2" ;;
	*sse41*) echo "sse41|SSE" ;;
	*) echo "?|?" ;;
	esac
}

test_expect_success 'record the demo with fp stacks' '
	"$DLPROF" record -g -o demo.data -- "$DEMO" -n 60 >out 2>err &&
	cat out err &&
	test_grep -q "0 lost" err &&
	test_grep -q "^demo: convolution jit:" out &&
	"$BUILD/tests/recdump" demo.data >dump.txt &&
	test_grep -q "^JITMAP" dump.txt &&
	pid=$(sed -n "s/^PERF COMM pid=\([0-9]*\) .*comm=demo$/\1/p" dump.txt | head -n 1) &&
	echo "demo pid $pid" && [ -n "$pid" ] &&
	# dlprof set ONEDNN_JIT_PROFILE itself, so it removed the map it caused: the names
	# below can only come from the recording
	[ ! -e "/tmp/perf-$pid.map" ]
'

test_expect_success 'oneDNN JIT kernels are named in [jit], from the recording alone' '
	impl=$(sed -n "s/^demo: convolution \([^ ]*\) .*/\1/p" out) &&
	isa=$(isa_of_impl "$impl") && word=${isa%%|*} &&
	echo "implementation $impl: the convolution kernel names $word" &&
	"$DLPROF" report -i demo.data --format json >rep.json &&
	json_check rep.json <<-PY
	jit = {r.symbol: r.self_pct for r in j.rows if r.dso == "[jit]"}
	print("jit rows:", jit)
	# the JIT convolution kernel of the ISA oneDNN chose is a hot named row
	conv = sum(p for s, p in jit.items() if "conv" in s and "$word" in s)
	conv >= 5
	# JIT code does not stay anonymous
	anon = sum(r.self_pct for r in j.rows if r.dso.startswith("[anon"))
	anon < 1
	# the OpenBLAS sgemm kernel shows
	gemm = sum(r.self_pct for r in j.rows if r.symbol.startswith("sgemm_kernel"))
	gemm >= 5
	PY
'

test_expect_success 'families: jit-conv, gemm and OpenMP, each a real share' '
	"$DLPROF" report -i demo.data --sort family --format json >fam.json &&
	json_check fam.json <<-\PY
	f = {r.family: r.self_pct for r in j.rows}
	print(f)
	f.get("jit-conv", 0) >= 5
	f.get("gemm", 0) >= 5
	f.get("omp-spin", 0) + f.get("omp-runtime", 0) > 0
	# family shares add up to 100%
	abs(sum(f.values()) - 100) < 0.5
	PY
'

test_expect_success 'fold --family: stacks start with the family, counts add up' '
	"$DLPROF" fold -i demo.data --family >fold.txt &&
	test_grep -q "^jit-conv;.*_conv_fwd_kernel[_a-z0-9]* [0-9]*$" fold.txt &&
	total=$(awk "{s += \$NF} END {print s}" fold.txt) &&
	samples=$("$DLPROF" report -i demo.data --format json | json_get - j.header.samples) &&
	echo "fold $total report $samples" && [ "$total" = "$samples" ]
'

test_expect_success 'check-isa -i: the convolution and sgemm kernels run the code of their ISA' '
	impl=$(sed -n "s/^demo: convolution \([^ ]*\) .*/\1/p" out) &&
	isa=$(isa_of_impl "$impl") && conv_class=${isa#*|} &&
	bits=$("$DLPROF" check-isa --no-python --format json |
		json_get - "[l for l in j.libraries if l.name == \"OpenBLAS\"][0].vector_bits") &&
	case $bits in 512) gemm_class="AVX-512 .zmm." ;; 256) gemm_class="AVX/AVX2" ;; *) gemm_class="SSE" ;; esac &&
	echo "convolution $impl: $conv_class; OpenBLAS $bits-bit: $gemm_class" &&
	{ "$DLPROF" check-isa -i demo.data >isa.txt; rc=$?; } ; cat isa.txt &&
	test_grep -qE "$conv_class +jit-conv +[_a-z0-9]*conv_fwd_kernel" isa.txt &&
	test_grep -qE "$gemm_class +gemm +sgemm_kernel" isa.txt &&
	{ "$DLPROF" check-isa -i demo.data --format json >isa.json; rj=$?; } ;
	echo "exit $rc (json $rj)" && [ $rc = $rj ] &&
	if grep -q "\"avx512_used\":true" isa.json; then [ $rc = 0 ]; else [ $rc = 1 ]; fi
'

test_expect_success 'a healthy demo: no slow-path finding in report or check-isa -i' '
	"$DLPROF" report -i demo.data >rep.txt && sed -n "/^Findings/,\$p" rep.txt &&
	! grep -q "dnnl-no-jit\|dnnl-reference\|aten-default\|openblas-coretype" rep.txt &&
	! grep -q "slow path\|fast path is not running" isa.txt &&
	grep -q "\"fast_path\":true" isa.json
'

test_expect_success 'capped at AVX2: jit:avx2, its kernel named and classed AVX/AVX2' '
	grep -qw avx2 /proc/cpuinfo || { echo "no AVX2 on this CPU: nothing to check"; exit 0; }
	ONEDNN_MAX_CPU_ISA=AVX2 "$DLPROF" record -o avx2.data -- "$DEMO" -n 20 >out2 2>err2 &&
	cat out2 err2 && test_grep -q "^demo: convolution jit:avx2 on nChw8c" out2 &&
	"$DLPROF" fold -i avx2.data >fold2 &&
	test_grep -q "^demo;.*;jit_avx2_conv_fwd_kernel_f32 [0-9]*$" fold2 &&
	{ "$DLPROF" check-isa -i avx2.data >isa2.txt; cat isa2.txt; } &&
	test_grep -q "AVX/AVX2 *jit-conv *jit_avx2_conv_fwd_kernel_f32" isa2.txt
'
test_done
