#!/bin/sh
# t3000-unwind-unit.sh - the CFI unwinder on live stacks of the test process itself:
# plain chain, a JIT frame without CFI (stack scan), a stripped library, one with only a
# .debug_frame, the draining thread's walks, and the kernel walk's tables held to the
# unwinder (unit test).
. "$(dirname "$0")/lib.sh"

# main -> a -> b -> leaf, over JIT code and a stripped library (the time a sample takes
# is printed; bench/unwind.sh measures it)
test_unit test-unwind "$BUILD/tests/libunw-lib.so" -v
# the same library with its CFI in .debug_frame alone; fast walks stop there
test_unit test-unwind -d "$BUILD/tests/libunw-dbg.so" -v
# ... and compressed, as a Go binary's: libelf decompresses it in a copy of the headers
test_unit test-unwind -d "$BUILD/tests/libunw-dbgz.so" -v

test_done
