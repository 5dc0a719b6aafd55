#!/bin/sh
# t5030: "is the fast path really running?" answered when it is not.  The truth is what
# the workload is told by its libraries: dl-conv-impl prints the implementation oneDNN
# chose (dnnl_query_impl_info_str).  One convolution is forced onto oneDNN's reference
# code (nChw16c with ONEDNN_MAX_CPU_ISA=AVX2: no JIT kernel for that layout below
# AVX-512, on every x86-64 CPU); the same convolution with format_tag_any gets a JIT
# kernel.  The first is flagged (report and check-isa -i), the second is not, and its
# kernel rows name the ISA the implementation has.  OpenBLAS pinned below the CPU by
# OPENBLAS_CORETYPE is flagged too, and not without the pin.  The reference (netlib)
# BLAS, Debian's libblas.so.3 where no OpenBLAS is installed, is flagged with the package
# that replaces it: dl-blas runs sgemm_ of the file it is given, the reference one and
# OpenBLAS's, and prints the rate each ran at.
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS DNNL
W="$BUILD/tests/workloads/dl-conv-impl"
[ -x "$W" ] || test_skip_all "dl-conv-impl not built"
export DLPROF_DATADIR="$TOP/share"
export OMP_NUM_THREADS=2
unset ONEDNN_MAX_CPU_ISA DNNL_MAX_CPU_ISA ONEDNN_CPU_ISA_HINTS DNNL_CPU_ISA_HINTS \
	OPENBLAS_CORETYPE ATEN_CPU_CAPABILITY ONEDNN_JIT_PROFILE DNNL_JIT_PROFILE \
	INTEL_LIBITTNOTIFY64 ONEDNN_ITT_TASK_LEVEL DNNL_ITT_TASK_LEVEL

# the convolution's ITT row (json) as "samples jit non_jit wait kernel top_kernel class isa"
conv_row() {
	json_get "$1" 't = [t for t in j.itt_tasks if t.name == "convolution"][0]' \
		'k = t.kernels[0] if t.kernels else {"name": "-", "class": "-", "isa": "-"}' \
		'(t.samples, t.jit_samples, t.non_jit_samples, t.wait_samples, t.kernel_samples,
		  k["name"], k["class"], k["isa"])'
}

# the check-isa class of code of the ISA an implementation names ("jit:avx2" -> avx)
class_of_impl() {
	case $1 in
	*avx512*|*amx*) echo avx512 ;;	# avx512 or avx512-zmm
	*avx2*|*avx*) echo avx ;;
	*sse41*) echo sse ;;
	*) echo "?" ;;
	esac
}

test_expect_success 'reference convolution: the workload says ref, record it' '
	ONEDNN_MAX_CPU_ISA=AVX2 "$DLPROF" record -q -o ref.data -- "$W" -l nChw16c -t 1.5 >ref.out &&
	cat ref.out && test_grep -q "^impl: ref:" ref.out
'

test_expect_success 'reference: the convolution row shows no JIT kernel, its work in libdnnl' '
	"$DLPROF" report -i ref.data --sort op >op.txt && sed -n "/^ITT/,\$p" op.txt &&
	test_grep -qE "^  \(libdnnl code, not JIT\) +[0-9.]+%  no JIT kernel ran" op.txt &&
	"$DLPROF" report -i ref.data --sort op --format json >op.json &&
	set -- $(conv_row op.json) && echo "samples $1 jit $2 libdnnl $3 wait $4 kernel $5" &&
	test "$1" -gt 200 && test $(( $2 * 20 )) -lt "$1" && test $(( $3 * 10 )) -ge $(( $1 * 8 ))
'

test_expect_success 'reference: report finds it, with its share and the cap that caused it' '
	"$DLPROF" report -i ref.data >rep.txt &&
	sed -n "/^Findings/,\$p" rep.txt | tr -s "\n " "  " >find.txt && cat find.txt &&
	test_grep -q "\[dnnl-no-jit\] oneDNN convolution ran without a JIT kernel: [0-9.]*% of samples" find.txt &&
	pct=$(sed -n "s/.*without a JIT kernel: \([0-9.]*\)% of samples.*/\1/p" find.txt) &&
	awk -v p="$pct" "BEGIN { exit !(p >= 80) }" &&
	test_grep -q "ONEDNN_MAX_CPU_ISA=AVX2 in the workload.s environment" find.txt &&
	test_grep -q "ONEDNN_VERBOSE=1" find.txt
'

test_expect_success 'reference: check-isa -i says the fast path is not running, exit 1, json' '
	{ "$DLPROF" check-isa -i ref.data >isa.txt; rc=$?; } ; tail -14 isa.txt &&
	test $rc = 1 &&
	test_grep -q "^verdict: the fast path is not running: oneDNN convolution ran without" isa.txt &&
	test_grep -q "^slow path \[dnnl-no-jit\]:" isa.txt &&
	{ "$DLPROF" check-isa -i ref.data --format json >isa.json; test $? = 1; } &&
	json_check isa.json <<-\PY
	j.fast_path is False
	ids = [f.id for f in j.findings]
	print("findings:", ids)
	"dnnl-no-jit" in ids
	PY
'

test_expect_success 'without ITT data (--no-itt) the finding stands on libdnnl vs JIT code' '
	ONEDNN_MAX_CPU_ISA=AVX2 "$DLPROF" record -q --no-itt -o refnoitt.data -- "$W" -l nChw16c -t 1 >/dev/null &&
	"$DLPROF" report -i refnoitt.data | sed -n "/^Findings/,\$p" | tr -s "\n " "  " >find2.txt &&
	cat find2.txt && test_grep -q "\[dnnl-no-jit\] oneDNN: [0-9.]*% of samples in libdnnl.s compiled code" find2.txt
'

# check_jit NAME ENV...: a JIT run is not flagged, its top kernel has the ISA of the
# implementation the workload printed and holds most of the convolution's work
check_jit() {
	name=$1; shift
	test_expect_success "JIT convolution ($name): not flagged, kernel ISA is the implementation's" "
		env $* \"\$DLPROF\" record -q -o $name.data -- \"\$W\" -l any -t 1.5 >$name.out &&
		cat $name.out && impl=\$(sed -n 's/^impl: //p' $name.out) &&
		case \$impl in ref*|'') echo 'expected a JIT implementation'; exit 1 ;; esac &&
		\"\$DLPROF\" report -i $name.data --sort op >$name.txt && sed -n '/^ITT/,\$p' $name.txt &&
		! grep -q 'dnnl-no-jit\\|dnnl-reference' $name.txt &&
		\"\$DLPROF\" report -i $name.data --sort op --format json >$name.json &&
		set -- \$(conv_row $name.json) &&
		echo \"impl \$impl: top kernel \$6 class \$7 isa \$8; samples \$1 jit \$2\" &&
		want=\$(class_of_impl \"\$impl\") &&
		case \$7 in \$want*) ;; *) echo \"class \$7, expected \$want\"; exit 1 ;; esac &&
		test \$(( \$2 * 10 )) -ge \$(( (\$2 + \$3) * 8 )) &&
		{ \"\$DLPROF\" check-isa -i $name.data --format json >$name-isa.json || :; } &&
		! grep -q dnnl-no-jit $name-isa.json
	"
}

check_jit any
if grep -qw avx2 /proc/cpuinfo; then
	check_jit avx2 ONEDNN_MAX_CPU_ISA=AVX2
else
	test_skip 'JIT convolution capped at AVX2' 'no AVX2 on this CPU'
fi
check_jit sse41 ONEDNN_MAX_CPU_ISA=SSE41

# OpenBLAS below the CPU: Haswell (AVX2) kernels on an AVX-512 CPU, Nehalem (SSE) on an
# AVX2 one
if grep -qw avx512f /proc/cpuinfo; then low=Haswell; elif grep -qw avx2 /proc/cpuinfo; then low=Nehalem; else low=; fi
if [ -n "$low" ] && test_have OPENBLAS && [ -x "$BUILD/tests/workloads/dl-gemm" ]; then
	test_expect_success "OPENBLAS_CORETYPE=$low pins OpenBLAS below the CPU: flagged" '
		OPENBLAS_CORETYPE='"$low"' OMP_NUM_THREADS=1 "$DLPROF" record -q -o blas.data -- \
			"$BUILD/tests/workloads/dl-gemm" 1 >/dev/null &&
		"$DLPROF" report -i blas.data | sed -n "/^Findings/,\$p" | tr -s "\n " "  " >fb.txt &&
		cat fb.txt &&
		test_grep -qi "\[openblas-coretype\] OpenBLAS: [0-9.]*% of samples in kernels narrower than this CPU offers (e.g. sgemm_kernel_'"$low"'" fb.txt &&
		test_grep -q "OPENBLAS_CORETYPE='"$low"' in the workload" fb.txt
	'
	test_expect_success 'OpenBLAS choosing for itself: not flagged' '
		OMP_NUM_THREADS=1 "$DLPROF" record -q -o blas2.data -- "$BUILD/tests/workloads/dl-gemm" 1 >/dev/null &&
		"$DLPROF" report -i blas2.data >rb.txt && sed -n "/^Findings/,\$p" rb.txt &&
		! grep -q openblas-coretype rb.txt
	'
else
	test_skip 'OpenBLAS pinned below the CPU' 'no OpenBLAS, or no core below this CPU to pin'
fi
REFBLAS=/usr/lib/x86_64-linux-gnu/blas/libblas.so.3
OBLAS=/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3
B="$BUILD/tests/workloads/dl-blas"
if [ -e "$REFBLAS" ] && [ -e "$OBLAS" ] && [ -x "$B" ]; then
	test_expect_success 'the reference BLAS: flagged, with the package that replaces it' '
		OMP_NUM_THREADS=1 "$DLPROF" record -q -o refblas.data -- "$B" "$REFBLAS" 1 >out &&
		cat out && "$DLPROF" report -i refblas.data --sort family >rep 2>&1 &&
		sed -n "/^Findings/,\$p" rep &&
		fig=$(sed -n "s/.*\[blas-reference\] \([0-9]*\)\.[0-9]% of samples in the reference (netlib) BLAS.*/\1/p" rep) &&
		echo "flagged: $fig% of samples" && test "$fig" -ge 90 &&
		test_grep -q "libopenblas0-openmp" rep &&
		{ "$DLPROF" check-isa -i refblas.data >isa; test $? = 1; } &&
		test_grep "^verdict: the fast path is not running: the reference (netlib) BLAS" isa
	'
	test_expect_success 'OpenBLAS through the same libblas.so.3 name: not flagged, and faster' '
		OMP_NUM_THREADS=1 "$DLPROF" record -q -o oblas.data -- "$B" "$OBLAS" 1 >out2 &&
		cat out2 && "$DLPROF" report -i oblas.data --sort family >rep2 2>&1 &&
		! grep "blas-reference" rep2 &&
		ref=$(sed -n "s/.*gflops=\([0-9]*\).*/\1/p" out) &&
		opt=$(sed -n "s/.*gflops=\([0-9]*\).*/\1/p" out2) &&
		echo "reference $ref GFLOP/s, OpenBLAS $opt" && test "$opt" -gt "$ref"
	'
	test_expect_success 'check-isa names what libblas.so.3 is on this machine' '
		"$DLPROF" check-isa --format json --no-python >j; test $? -le 1 && real=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3) &&
		isa=$(json_get j "[l for l in j.libraries if l.name.startswith(\"BLAS\")][0].isa") &&
		echo "libblas.so.3 -> $real: $isa" &&
		case $real in
		*/openblas*) test "$isa" = OpenBLAS ;;
		*/blas/*) test "$isa" = "reference (netlib)" ;;
		*) true ;;
		esac
	'
else
	test_skip 'the reference BLAS flagged' 'no reference libblas3 and OpenBLAS side by side here'
fi
test_done
