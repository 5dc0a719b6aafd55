#!/bin/sh
# t3002-unwind-stripped-lib.sh - dwarf stacks through a stripped shared library without
# frame pointers (libunw-lib.so: .dynsym + .eh_frame only): main -> unw_libmain_loop ->
# unw_lib_spin -> (static, unnamed) inner loop.  Frame-pointer stacks cannot do this.
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS

WL="$BUILD/tests/unw-libmain"

test_expect_success 'record unw-libmain with --call-graph dwarf and with -g (fp)' '
	"$DLPROF" record --call-graph dwarf -o dw.data -- "$WL" >/dev/null 2>err &&
	"$DLPROF" record -g -o fp.data -- "$WL" >/dev/null 2>err
'

share_through_lib() {
	"$DLPROF" fold -i "$1" >"$1.folded" &&
	total=$(awk "{ s += \$NF } END { print s }" "$1.folded") &&
	good=$(grep -E "^unw-libmain;_start;.*;main;unw_libmain_loop[^;]*;unw_lib_spin;[^;]+ [0-9]+\$" "$1.folded" |
		awk "{ s += \$NF } END { print s + 0 }") &&
	echo "$1: $good of $total samples complete through the library" &&
	test "$total" -gt 100 &&
	echo $((good * 100 / total)) >"$1.share"
}

test_expect_success 'dwarf: the stripped library frames sit between main and the leaf' '
	share_through_lib dw.data && test "$(cat dw.data.share)" -ge 90
'

test_expect_success 'dwarf: the stack-quality line says at least 90% reach the thread root' '
	"$DLPROF" report -i dw.data >rep && cat rep &&
	sed -n "s/^# stacks: *\([0-9]*\).*/\1/p" rep >pct && test "$(cat pct)" -ge 90
'

test_expect_success 'fp: the same workload does not give these stacks (the test can fail)' '
	share_through_lib fp.data && test "$(cat fp.data.share)" -lt 50
'

test_done
