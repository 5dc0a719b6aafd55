#!/bin/sh
# t2113-report-same-stack.sh - the frames of a stack stored once in a recording are named
# once per process and kept (profile.c, user_stack_frames) for as long as the process's
# mappings stay what they were (machine_view).  rep-swap runs swap_a_outer of one library,
# closes it, then swap_b_outer of another of the same code, which the loader puts where
# the first was: both halves' stacks are the same addresses, one stored stack, and each
# half's samples must be named by the library mapped at their time.  Known truth: each
# half spins for the same CPU time.  Checked in a recording's report (its mappings all
# read first) and live in top (the second library's mapping arrives after the first
# half's samples were named).
. "$(dirname "$0")/lib.sh"
. "$SRC/record-lib.sh"
test_require PERF_EVENTS

# a and b: the samples of each half, of n in all, each within 40-60%
halves_ok() {
	echo "swap_a_outer $1, swap_b_outer $2, of $3" &&
	test "$3" -ge 400 &&
	test $(($1 * 100)) -ge $(($3 * 40)) && test $(($1 * 100)) -le $(($3 * 60)) &&
	test $(($2 * 100)) -ge $(($3 * 40)) && test $(($2 * 100)) -le $(($3 * 60))
}

test_expect_success 'record: each half named by its own library' '
	"$DLPROF" record -q --call-graph dwarf -o sw.data -- "$WL/rep-swap" "$WL" 0.3 >out &&
	cat out && read where base_a base_b <out &&
	if test "$where" = same; then
		echo "# the second library mapped where the first was"
	else
		echo "# the loader moved the second library: stacks of other addresses"
	fi &&
	"$DLPROF" fold -i sw.data >folded &&
	a=$(grep ";swap_a_outer;" folded | awk "{ s += \$NF } END { print s + 0 }") &&
	b=$(grep ";swap_b_outer;" folded | awk "{ s += \$NF } END { print s + 0 }") &&
	n=$(awk "{ s += \$NF } END { print s + 0 }" folded) &&
	halves_ok "$a" "$b" "$n"
'

test_expect_success 'top, live: each half named by its own library' '
	printf "swapa stack=swap_a_outer\nswapb stack=swap_b_outer\n" >swap.rules &&
	"$DLPROF" top --sort family --families swap.rules --rows 5 -- "$WL/rep-swap" "$WL" 0.3 \
		>top.out 2>top.err &&
	sed -n "/view: family/,/^\$/p" top.out >fam && cat fam &&
	a=$(awk "\$NF == \"swapa\" { print \$3 }" fam) &&
	b=$(awk "\$NF == \"swapb\" { print \$3 }" fam) &&
	n=$(sed -n "s/.* \([0-9]*\) samples, .*/\1/p" top.out | tail -1) &&
	halves_ok "${a:-0}" "${b:-0}" "$n"
'

test_done
