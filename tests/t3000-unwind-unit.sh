#!/bin/sh
# t3000-unwind-unit.sh - the CFI unwinder on live stacks of the test process itself:
# plain chain, a JIT frame without CFI (stack scan), a stripped library, one with only a
# .debug_frame, and the draining thread's walks (unit test).
. "$(dirname "$0")/lib.sh"

test_expect_success 'unwind main -> a -> b -> leaf, over JIT code and a stripped library' '
	"$BUILD/tests/unit/test-unwind" "$BUILD/tests/libunw-lib.so" -v >out 2>&1 || { cat out; false; } &&
	cat out &&
	grep "all unwind checks passed (with the library)" out
'

test_expect_success 'the same library with its CFI in .debug_frame alone; fast walks stop there' '
	"$BUILD/tests/unit/test-unwind" -d "$BUILD/tests/libunw-dbg.so" -v >dbg.out 2>&1 ||
		{ cat dbg.out; false; } &&
	grep "all unwind checks passed (with the library)" dbg.out
'

test_expect_success 'per-sample unwind time stays under 50 us' '
	us=$(sed -n "s/^unwind time: plain \([0-9.]*\) us.*/\1/p" out) &&
	echo "plain: $us us/sample" &&
	awk -v t="$us" "BEGIN { exit !(t > 0 && t < 50) }"
'

test_done
