#!/bin/sh
# t1006-record-stack-tcb.sh - dwarf mode cuts a thread's stack copy at its TCB: the
# worker of rec-tstack runs on a stack with a readable mapping right above it, so the
# kernel copies the full 32 KiB per sample (stack, TLS, struct pthread, then the
# unrelated mapping); record keeps only the bytes below the TCB, and the stacks still
# unwind completely from clone3 to the leaf.
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS

. "$SRC/record-lib.sh"

test_expect_success 'record rec-tstack with --call-graph dwarf' '
	"$DLPROF" record -q --call-graph dwarf --no-unwind -o dw.data -- "$WL/rec-tstack" 0.5 >out &&
	test_grep "^stack 0x" out &&
	"$RECDUMP" dw.data >dump &&
	test_grep "^STATS .* lost=0 " dump
'

test_expect_success 'worker samples keep a few KiB of stack, not the 32 KiB copied' '
	pid=$(sed -n "s/^PERF COMM pid=\([0-9]*\) .*comm=rec-tstack.*/\1/p" dump | head -n 1) &&
	test -n "$pid" &&
	# a sample in the kernel can come with no copy at all: the worker s first, in
	# finish_task_switch from ret_from_fork, once in 500 (the kernel s copy of user
	# memory refused there); those in user code always have one
	grep "^PERF SAMPLE pid=$pid " dump | grep -v " tid=$pid " | grep -v " ip=0xffff" |
		sed -n "s/.* stack=\([0-9]*\).*/\1/p" >sizes &&
	n=$(wc -l <sizes) && echo "$n worker samples in user code" && test "$n" -gt 100 &&
	sort -n sizes | uniq -c | tail -n 5 &&
	awk "\$1 == 0 || \$1 > 8192 { bad++ } END { exit bad > 0 }" sizes
'

test_expect_success 'the cut stacks still unwind from the thread root to the leaf' '
	"$DLPROF" fold -i dw.data >folded &&
	total=$(grep ";rec_tstack_" folded | awk "{ s += \$NF } END { print s + 0 }") &&
	good=$(grep -E "^rec-tstack;[^;]*clone[^;]*;start_thread;worker;rec_tstack_outer;rec_tstack_middle;rec_tstack_spin( |;)" folded |
		awk "{ s += \$NF } END { print s + 0 }") &&
	echo "$good of $total worker samples complete" &&
	test "$total" -gt 100 && test $((good * 100 / total)) -ge 90
'

test_done
