#!/bin/sh
# t3003-unwind-exec.sh - exec without a new pid: unw-execspin spins, then execs
# unw-libmain in the same process.  With ASLR off both programs (and their libraries)
# load at the same addresses, so an unwinder that kept one address space per pid would
# unwind the second program through the first one's modules.
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS
setarch -R true 2>/dev/null || test_skip_all "setarch -R (personality ADDR_NO_RANDOMIZE) not available"

test_expect_success 'record a program that execs unw-libmain, ASLR off' '
	"$DLPROF" record --call-graph dwarf -o ex.data -- \
		setarch -R "$BUILD/tests/unw-execspin" "$BUILD/tests/unw-libmain" >/dev/null 2>err &&
	"$DLPROF" fold -i ex.data >folded
'

total_of() {
	awk "{ s += \$NF } END { print s + 0 }"
}

test_expect_success 'before the exec: complete stacks through unw_execspin_loop' '
	n=$(grep -E "^unw-execspin;_start;.*;main;unw_execspin_loop[^;]* [0-9]+\$" folded | total_of) &&
	echo "before exec: $n complete" && test "$n" -ge 150
'

test_expect_success 'after the exec: 90% of the new program complete through the stripped library' '
	all=$(grep "^unw-libmain;" folded | total_of) &&
	good=$(grep -E "^unw-libmain;_start;.*;main;unw_libmain_loop[^;]*;unw_lib_spin;[^;]+ [0-9]+\$" folded |
		total_of) &&
	echo "after exec: $good of $all complete through the library" &&
	test "$all" -gt 300 && test $((good * 100)) -ge $((all * 90))
'

test_expect_success 'no stack needed a stack scan (the old modules would force one per sample)' '
	"$DLPROF" report -i ex.data >rep &&
	sed -n "s/^# stacks: .* \([0-9]*\)\.[0-9]% recovered by scan.*/\1/p" rep >rec &&
	cat rep | head -8 &&
	test -s rec && test "$(cat rec)" -lt 5
'

test_done
