#!/bin/sh
# t2104-report-inline.sh - DWARF inline chains and source lines: rep-inline (-O2 -g) spends
# its time in rep_inline_mix, always inlined into rep_inline_outer.  fold --inline shows
# the inlined frame under its caller; report --srcline names the line of the hot loop.
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS

WL="$BUILD/tests/workloads/rep-inline"
SRCF="$SRC/workloads/rep-inline.c"

test_expect_success 'record rep-inline with dwarf stacks' '
	"$DLPROF" record --call-graph dwarf -o inl.data -- "$WL" >/dev/null 2>err
'

heaviest() {
	sort -t" " -k2 -n "$1" | tail -1
}

test_expect_success 'fold: without --inline the leaf is the real function' '
	"$DLPROF" fold -i inl.data >plain &&
	heaviest plain | tee top &&
	test_grep -E ";main;rep_inline_outer[^;]* [0-9]+\$" top &&
	! grep rep_inline_mix plain
'

test_expect_success 'fold --inline: the inlined function is a frame below its caller' '
	"$DLPROF" fold --inline -i inl.data >inl &&
	heaviest inl | tee top &&
	test_grep -E ";main;rep_inline_outer[^;]*;rep_inline_mix [0-9]+\$" top &&
	test "$(awk "{ s += \$NF } END { print s }" inl)" = "$(awk "{ s += \$NF } END { print s }" plain)"
'

test_expect_success 'report --srcline: the hot row carries the line of the loop body' '
	line=$(grep -n "x = x \\* 6364136223846793005ULL" "$SRCF" | cut -d: -f1) &&
	echo "loop body at line $line" &&
	"$DLPROF" report --srcline -i inl.data --format json >j &&
	grep "\"symbol\":\"rep_inline_outer" j | head -1 | tee row &&
	test_grep "\"srcline\":\"rep-inline.c:$line\"" row &&
	COLUMNS=120 "$DLPROF" report --srcline -i inl.data >t &&
	grep -A1 "Self%" t | tail -1 | test_grep "rep_inline_outer.* @ rep-inline.c:$line "
'

test_expect_success 'report without --srcline has no srcline' '
	"$DLPROF" report -i inl.data --format json >j2 &&
	! grep "\"srcline\"" j2
'

test_done
