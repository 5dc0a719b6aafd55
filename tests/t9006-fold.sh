#!/bin/sh
# t9006-fold.sh - fold: a known call chain main -> a -> b -> c; counts sum to the
# report's sample count; report: C++ names demangled
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS

WL="$BUILD/tests/workloads"

test_expect_success 'record the deep chain and the C++ workload' '
	"$DLPROF" record -g -o deep.data "$WL/rep-deep" 2>err &&
	"$DLPROF" record -g -o cxx.data "$WL/rep-cxx" 2>err
'

test_expect_success 'fold holds main;a;b;c as the heaviest stack' '
	"$DLPROF" fold -i deep.data >folded &&
	sort -t" " -k2 -n folded | tail -1 | test_grep "main;a;b;c [0-9]*\$"
'

test_expect_success 'fold counts sum to the sample count of the report header' '
	sum=$(awk "{ s += \$NF } END { print s }" folded) &&
	n=$("$DLPROF" report -i deep.data | sed -n "s/^# samples: \([0-9]*\) .*/\1/p") &&
	echo "fold=$sum report=$n" && test "$sum" = "$n" && test "$n" -gt 100
'

test_expect_success 'fold lines are "stack count", root first, no empty frames' '
	awk "NF < 2 || \$NF !~ /^[0-9]+\$/ { bad = 1 } END { exit bad }" folded &&
	! grep ";;" folded &&
	head -1 folded | grep "^rep-deep;"
'

test_expect_success 'fold --no-kernel drops kernel frames and keeps the sum' '
	"$DLPROF" fold -i deep.data --no-kernel >uf &&
	! grep -E "asm_sysvec|irqentry|entry_SYSCALL" uf &&
	test "$(awk "{ s += \$NF } END { print s }" uf)" = "$(awk "{ s += \$NF } END { print s }" folded)"
'

test_expect_success 'C++ template member demangled in the table, full name in json' '
	COLUMNS=120 "$DLPROF" report -i cxx.data >t &&
	grep -A1 "Self%" t | tail -1 | test_grep "repns::Kernel<" &&
	"$DLPROF" report -i cxx.data --format json >j &&
	test_grep "\"repns::Kernel<double>::run(long, double)\"" j
'

test_done
