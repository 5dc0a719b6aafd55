#!/bin/sh
# t3001-unwind-jit.sh - dwarf stacks through JIT code: unw-jit runs an AVX-512 kernel
# in anonymous memory (no CFI), published by a perf map and a jitdump, from
# main -> jit_driver.  The kernel must be named in [jit] and its stacks reach main.
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS

WL="$BUILD/tests/unw-jit"

cleanup_jit() {
	pid=$(sed -n "s/^pid //p" "$TRASH/wl.out" 2>/dev/null)
	[ -n "$pid" ] && rm -f "/tmp/perf-$pid.map"
}
trap 'cleanup_jit; test_cleanup' EXIT

# The probe publishes its kernel too: its perf map goes like the recorded run's.
JITDUMPDIR=$TRASH "$WL" 0 >"$TRASH/wl.out" 2>&1
rc=$?
cleanup_jit
[ $rc = 3 ] && test_skip_all "no AVX-512 on this CPU"

test_expect_success 'record unw-jit with --call-graph dwarf' '
	JITDUMPDIR=$TRASH "$DLPROF" record --call-graph dwarf -o jit.data -- "$WL" >wl.out 2>err &&
	cat err && grep "^pid " wl.out
'

test_expect_success 'report names the kernel in [jit] as the hottest symbol' '
	"$DLPROF" report -i jit.data >rep && cat rep &&
	grep -A1 "Self%" rep | tail -1 | test_grep -E "unw_avx512_kernel +\[jit\]"
'

test_expect_success 'fold: most samples are main;jit_driver;unw_avx512_kernel under _start' '
	"$DLPROF" fold -i jit.data >folded &&
	total=$(awk "{ s += \$NF } END { print s }" folded) &&
	good=$(grep -E "^unw-jit;_start;.*;main;jit_driver;unw_avx512_kernel [0-9]+\$" folded |
		awk "{ s += \$NF } END { print s + 0 }") &&
	echo "complete through the JIT kernel: $good of $total" &&
	test "$total" -gt 100 && test $((good * 100)) -ge $((total * 90))
'

test_expect_success 'header: most stacks went through the JIT kernel by a stack scan' '
	sed -n "s/^# stacks: .* \([0-9]*\)\.[0-9]% recovered by scan.*/\1/p" rep >rec &&
	echo "recovered: $(cat rec)%" && test "$(cat rec)" -ge 80
'

test_done
