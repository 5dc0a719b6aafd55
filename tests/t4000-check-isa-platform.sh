#!/bin/sh
# t4000: check-isa's platform part against /proc/cpuinfo and raw CPUID, exit codes, json
. "$(dirname "$0")/lib.sh"

[ "$(uname -m)" = x86_64 ] || test_skip_all "check-isa knows only x86-64"

FLAGS="sse4_2 avx avx2 fma avx512f avx512cd avx512bw avx512dq avx512vl avx512_vnni avx512_bf16 avx512_fp16 amx_tile amx_int8 amx_bf16"

test_unit test-isa	# classifier, JIT bytes, CPUID bits

test_expect_success 'platform table: one line per feature, cpu column as json says' '
	"$DLPROF" check-isa --no-libs >out; rc=$? &&
	test "$rc" -le 1 &&
	test_grep -q "^CPU: " out &&
	test_grep -q "^AMX permission (arch_prctl XTILEDATA): \(not requested\|granted\|denied\)" out &&
	for f in SSE4.2 AVX AVX2 FMA AVX-512F AVX-512CD AVX-512BW AVX-512DQ AVX-512VL AVX-512VNNI AVX-512BF16 AVX-512FP16 AMX-TILE AMX-INT8 AMX-BF16; do
		test_grep -q "^$f " out || exit 1
	done
'

# json keys are the cpuinfo flag names: {"features":{"avx512f":{"name":..,"cpu":true,...}}}
json_cpu() {
	json_get "$1" "str(j.features['$2'].cpu).lower()"
}

test_expect_success 'every feature reported as supported is in /proc/cpuinfo and vice versa' '
	"$DLPROF" check-isa --no-libs --format json >j; test $? -le 1 &&
	flags=" $(grep -m1 "^flags" /proc/cpuinfo | cut -d: -f2) " &&
	for f in $FLAGS; do
		got=$(json_cpu j $f) &&
		case "$flags" in *" $f "*) want=true ;; *) want=false ;; esac &&
		echo "$f dlprof=$got cpuinfo=$want" &&
		test "$got" = "$want" || exit 1
	done &&
	! grep -q "disagrees" j
'

test_expect_success 'every feature matches the raw CPUID bits read by an independent program' '
	"$BUILD/tests/workloads/isa-cpuid" >raw &&
	"$DLPROF" check-isa --no-libs --format json >j; test $? -le 1 &&
	while read f bit; do
		got=$(json_cpu j $f) &&
		if [ "$bit" = 1 ]; then want=true; else want=false; fi &&
		echo "$f dlprof=$got cpuid=$want" &&
		test "$got" = "$want" || exit 1
	done <raw
'

test_expect_success 'exit status: 0 exactly when AVX-512F is usable (OS saves zmm state)' '
	"$DLPROF" check-isa --no-libs --format json >j; rc=$?;
	if grep -q "\"avx512_usable\":true" j; then test $rc = 0; else test $rc = 1; fi &&
	if grep -qw avx512f /proc/cpuinfo; then test $rc = 0; fi
'

test_expect_success 'a cpuinfo that disagrees with CPUID gives a warning line' '
	grep -m1 "^flags" /proc/cpuinfo | sed "s/ avx2 / /; s/\$/ amx_tile/" >fake &&
	"$DLPROF" check-isa --no-libs --cpuinfo fake >out 2>err; test $? -le 1 &&
	test_grep -q "warning: /proc/cpuinfo disagrees with CPUID on AVX2" err &&
	if ! grep -q "amx_tile" /proc/cpuinfo; then
		test_grep -q "disagrees with CPUID on AMX-TILE" err
	fi &&
	test_grep -q "^AVX2 .*(disagrees with CPUID)" out
'

test_expect_success 'libraries: oneDNN answers through dlopen and honours ONEDNN_MAX_CPU_ISA' '
	test_have DNNL || { echo "no oneDNN: skipped"; exit 0; }
	"$DLPROF" check-isa --no-python >out; test $? -le 1 &&
	test_grep -q "^  oneDNN [0-9]" out &&
	ONEDNN_MAX_CPU_ISA=AVX2 "$DLPROF" check-isa --no-python >capped; test $? -le 1 &&
	test_grep -q "^  oneDNN [0-9.]* *avx2 (256-bit vectors)" capped &&
	test_grep -q "environment: ONEDNN_MAX_CPU_ISA=AVX2" capped &&
	if grep -qw avx512f /proc/cpuinfo; then
		test_grep -q "ONEDNN_MAX_CPU_ISA=AVX2 caps oneDNN below AVX-512" capped
	fi
'

test_expect_success 'libraries: OpenBLAS core agrees with the library config string' '
	test_have OPENBLAS || { echo "no OpenBLAS: skipped"; exit 0; }
	"$DLPROF" check-isa --no-python --format json >j; test $? -le 1 &&
	core=$(sed -n "s/.*\"name\":\"OpenBLAS\",\"state\":\"present\",[^}]*\"isa\":\"\([^\"]*\)\".*/\1/p" j) &&
	test -n "$core" &&
	OPENBLAS_CORETYPE=Haswell "$DLPROF" check-isa --no-python >h; test $? -le 1 &&
	test_grep -q "OpenBLAS [0-9.]* *Haswell (256-bit vectors)" h
'

test_expect_success 'libraries: MKL absent is listed, not an error; --no-python skips torch' '
	"$DLPROF" check-isa --no-python >out; test $? -le 1 &&
	test_grep -q "^  MKL" out &&
	test_grep -q "^  PyTorch ATen *skipped" out
'

if test_have TORCH; then
	test_expect_success 'torch: ATen capability matches torch itself, and the advice works' '
		want=$(/usr/bin/python3 -c "import torch; print([l.split(\":\")[1].strip() for l in torch.__config__.show().splitlines() if \"CPU capability usage\" in l][0])") &&
		"$DLPROF" check-isa >out; test $? -le 1 &&
		test_grep -q "^  PyTorch ATen [^ ]* *$want " out &&
		if [ "$want" != AVX512 ] && grep -qw avx512f /proc/cpuinfo; then
			test_grep -q "set ATEN_CPU_CAPABILITY=avx512" out &&
			ATEN_CPU_CAPABILITY=avx512 "$DLPROF" check-isa >after &&
			test_grep -q "^  PyTorch ATen [^ ]* *AVX512 (512-bit" after &&
			! grep -q "set ATEN_CPU_CAPABILITY" after
		fi
	'
	test_expect_success 'torch: a python that hangs is cut by the timeout' '
		mkdir -p bin && printf "#!/bin/sh\nsleep 30\n" >bin/py && chmod +x bin/py &&
		start=$(date +%s) &&
		DLPROF_TEST_PYTHON="$TRASH/bin/py" "$DLPROF" check-isa --python-timeout 1 --python "$TRASH/bin/py" >out; test $? -le 1 &&
		end=$(date +%s) && test $((end - start)) -lt 10 &&
		test_grep -q "PyTorch ATen *unknown: python3 did not answer within 1000 ms" out
	'
else
	test_skip 'torch: ATen capability' 'no torch'
fi

test_expect_success 'usage errors exit 64' '
	"$DLPROF" check-isa --format xml >/dev/null 2>err; test $? = 64 &&
	"$DLPROF" check-isa --bogus >/dev/null 2>&1; test $? = 64
'
test_done
