#!/bin/sh
# t7000: the bundled demo (OpenMP loops, OpenBLAS sgemm, a real oneDNN C API convolution):
# the JIT kernels oneDNN generates are named from the captured perf map / jitdump, also
# after the files are gone; the families split into jit-conv, gemm and OpenMP; and
# check-isa -i finds the convolution and sgemm kernels running AVX-512 (zmm) code.
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS DNNL OPENBLAS
DEMO="$BUILD/examples/demo"
[ -x "$DEMO" ] || test_skip_all "build/examples/demo not built"

test_expect_success 'record the demo with fp stacks' '
	OMP_NUM_THREADS=2 "$DLPROF" record -g -o demo.data -- "$DEMO" -n 60 >out 2>err &&
	cat err &&
	test_grep -q "0 lost" err &&
	"$BUILD/tests/recdump" demo.data >dump.txt &&
	test_grep -q "^JITMAP" dump.txt &&
	pid=$(sed -n "s/^PERF COMM pid=\([0-9]*\) .*comm=demo$/\1/p" dump.txt | head -n 1) &&
	echo "demo pid $pid" && [ -n "$pid" ] &&
	# dlprof set ONEDNN_JIT_PROFILE itself, so it removed the map it caused: the names
	# below can only come from the recording
	[ ! -e "/tmp/perf-$pid.map" ]
'

test_expect_success 'oneDNN JIT kernels are named in [jit], from the recording alone' '
	"$DLPROF" report -i demo.data --format json >rep.json &&
	/usr/bin/python3 - <<-PY
	import json
	d = json.load(open("rep.json"))
	rows = d["rows"]
	jit = {r["symbol"]: r["self_pct"] for r in rows if r["dso"] == "[jit]"}
	print("jit rows:", jit)
	conv = sum(p for s, p in jit.items() if "conv" in s and "avx512" in s)
	assert conv >= 5, "the AVX-512 JIT convolution kernel must be a hot named row"
	anon = sum(r["self_pct"] for r in rows if r["dso"].startswith("[anon"))
	assert anon < 1, "JIT code must not stay anonymous: %.1f%%" % anon
	gemm = sum(r["self_pct"] for r in rows if r["symbol"].startswith("sgemm_kernel"))
	assert gemm >= 5, "OpenBLAS sgemm kernel must show: %.1f%%" % gemm
	PY
'

test_expect_success 'families: jit-conv, gemm and OpenMP, each a real share' '
	"$DLPROF" report -i demo.data --sort family --format json >fam.json &&
	/usr/bin/python3 - <<-PY
	import json
	d = json.load(open("fam.json"))
	f = {r["family"]: r["self_pct"] for r in d["rows"]}
	print(f)
	assert f.get("jit-conv", 0) >= 5, f
	assert f.get("gemm", 0) >= 5, f
	assert f.get("omp-spin", 0) + f.get("omp-runtime", 0) > 0, f
	assert abs(sum(f.values()) - 100) < 0.5, "family shares must add up to 100%"
	PY
'

test_expect_success 'fold --family: stacks start with the family, counts add up' '
	"$DLPROF" fold -i demo.data --family >fold.txt &&
	test_grep -q "^jit-conv;.*_jit_avx512_common_conv_fwd_kernel [0-9]*$" fold.txt &&
	total=$(awk "{s += \$NF} END {print s}" fold.txt) &&
	samples=$("$DLPROF" report -i demo.data --format json | /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)[\"header\"][\"samples\"])") &&
	echo "fold $total report $samples" && [ "$total" = "$samples" ]
'

test_expect_success 'check-isa -i: the convolution and sgemm kernels run AVX-512 zmm code' '
	"$DLPROF" check-isa -i demo.data >isa.txt; rc=$?; cat isa.txt &&
	[ $rc = 0 ] &&
	test_grep -q "AVX-512 (zmm) *jit-conv *_jit_avx512_common_conv_fwd_kernel" isa.txt &&
	test_grep -q "AVX-512 (zmm) *gemm *sgemm_kernel" isa.txt
'
test_done
