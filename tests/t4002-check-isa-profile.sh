#!/bin/sh
# t4002: check-isa -i: samples classified by the ISA of the code they landed in
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS
[ "$(uname -m)" = x86_64 ] || test_skip_all "check-isa knows only x86-64"

K="$BUILD/tests/workloads/isa-kernels"
JIT="$BUILD/tests/unw-jit"
export XDG_CACHE_HOME="$TRASH/cache"
export DLPROF_DATADIR="$TOP/share"
have512=false; grep -qw avx512f /proc/cpuinfo && have512=true

cleanup_jit() {
	for f in "$TRASH/wl.out" "$TRASH/wl2.out"; do
		pid=$(sed -n "s/^pid //p" "$f" 2>/dev/null)
		[ -n "$pid" ] && rm -f "/tmp/perf-$pid.map"
	done
}
trap 'cleanup_jit; test_cleanup' EXIT

test_expect_success 'record equal time in zmm, AVX2 and scalar kernels' '
	"$DLPROF" record -F 999 -o k.data -- "$K" run 500 >/dev/null 2>err || { cat err; exit 1; }
'

test_expect_success 'each kernel symbol is in its class, with about a third of the samples' '
	"$DLPROF" check-isa -i k.data >out; rc=$?; cat out && test $rc -le 1 &&
	test_grep -qE "^ *[0-9.]+%  scalar +[^ ]+ +isa_scalar_hash \[isa-kernels\]" out &&
	test_grep -qE "^ *[0-9.]+%  AVX/AVX2 +[^ ]+ +isa_avx2_axpy \[isa-kernels\]" out &&
	if $have512; then
		test_grep -qE "^ *[0-9.]+%  AVX-512 \(zmm\) +[^ ]+ +isa_zmm_axpy \[isa-kernels\]" out
	fi &&
	for cls in "scalar" "AVX/AVX2"; do
		share=$(grep -E "^ *[0-9.]+%  $cls  " out | head -1 | sed "s/%.*//; s/ //g") &&
		echo "$cls $share%" &&
		test "${share%.*}" -ge 15 && test "${share%.*}" -le 60 || exit 1
	done &&
	test_grep -q "^summary: .*% of samples in " out
'

test_expect_success 'json: class shares sum to the sample count; sources are the file' '
	"$DLPROF" check-isa -i k.data --format json >j; test $? -le 1 &&
	json_check j <<-\PY
	sum(c.samples for c in j.classes) == j.samples
	s = {x.symbol: x for x in j.symbols}
	s["isa_scalar_hash"]["class"] == "scalar" and s["isa_scalar_hash"].source == "file"
	s["isa_avx2_axpy"]["class"] == "avx"
	not j.avx512_usable or s["isa_zmm_axpy"]["class"] == "avx512-zmm"
	PY
'

test_expect_success 'exit 1: AVX-512 code holds less than the narrower vector code' '
	"$DLPROF" check-isa -i k.data >/dev/null; rc=$? &&
	{ "$DLPROF" check-isa -i k.data --format json >j || :; } &&
	if grep -q "\"avx512_used\":true" j; then test $rc = 0; else test $rc = 1; fi
'

# unw-jit runs the widest kernel this CPU has; its class comes from the captured bytes
test_expect_success 'JIT kernel classified from the jitdump bytes: the class of the ISA it runs' '
	JITDUMPDIR=$TRASH "$DLPROF" record -o jit.data -- "$JIT" 1 >wl.out 2>err || { cat err; exit 1; }
	k=$(sed -n "s/^kernel //p" wl.out) && echo "kernel $k" &&
	case $k in
	unw_avx512_kernel) desc="AVX-512 \(zmm\)" cls=avx512-zmm want=0 ;;
	unw_avx2_kernel) desc="AVX/AVX2" cls=avx want=1 ;;
	unw_sse_kernel) desc="SSE" cls=sse want=1 ;;
	*) echo "unexpected kernel $k"; exit 1 ;;
	esac &&
	{ "$DLPROF" check-isa -i jit.data >out; rc=$?; } ; cat out &&
	test $rc = $want &&
	test_grep -qE "^ *[0-9.]+%  $desc +[^ ]+ +$k \[jit\]" out &&
	{ "$DLPROF" check-isa -i jit.data --format json >j || :; } &&
	test_grep -q "\"symbol\":\"$k\",\"dso\":\"\[jit\]\",\"family\":\"[^\"]*\",\"class\":\"$cls\",\"source\":\"jitdump\"" j
'

test_expect_success 'the AVX2 kernel where the CPU has AVX2: class AVX/AVX2 from its bytes, exit 1' '
	grep -qw avx2 /proc/cpuinfo || { echo "no AVX2 on this CPU: nothing to check"; exit 0; }
	UNW_JIT_ISA=avx2 JITDUMPDIR=$TRASH "$DLPROF" record -o jit2.data -- "$JIT" 1 >wl2.out 2>err ||
		{ cat err; exit 1; }
	{ "$DLPROF" check-isa -i jit2.data >out2; rc=$?; } ; cat out2 && test $rc = 1 &&
	test_grep -qE "^ *[0-9.]+%  AVX/AVX2 +[^ ]+ +unw_avx2_kernel \[jit\]" out2
'

test_expect_success 'report --isa is check-isa -i: same output, same exit status' '
	{ "$DLPROF" check-isa -i k.data --top 5 >a 2>/dev/null; ra=$?; } ;
	{ "$DLPROF" report -i k.data --isa -n 5 >b; rb=$?; } ;
	echo "check-isa $ra, report --isa $rb" && test $ra = $rb && test $ra -le 1 &&
	test_grep -q "isa_zmm_axpy\|isa_avx2_axpy" b && cmp a b &&
	{ "$DLPROF" check-isa -i k.data --format json >a; ra=$?; } ;
	{ "$DLPROF" report -i k.data --isa --format json >b; rb=$?; } ;
	test $ra = $rb && cmp a b &&
	{ "$DLPROF" report -i k.data --isa --sort op 2>err; test $? = 64; } &&
	test_grep -q "takes only" err
'

test_expect_success 'missing or damaged recording: error, exit 2' '
	"$DLPROF" check-isa -i nosuch.data >out 2>err; test $? = 2 &&
	head -c 100 k.data >cut.data &&
	"$DLPROF" check-isa -i cut.data >out 2>err; test $? = 2
'
test_done
