#!/bin/bash
# t1007-record-attach.sh - record -p: processes that were running before dlprof, all
# their threads (those started later too), their mappings (read from /proc: stacks
# unwind and names resolve), their JIT map; the end of the recording leaves them alone.
. "$(dirname "$0")/lib.sh"
. "$SRC/record-lib.sh"
test_require PERF_EVENTS

# Tests run in subshells: the pids of what they start go to a file, killed at the end.
cleanup_bg() {
	[ -f "$TRASH/bg.pids" ] || return 0
	for p in $(cat "$TRASH/bg.pids"); do
		kill -KILL "$p" 2>/dev/null
		rm -f "/tmp/perf-$p.map"
	done
}
trap 'cleanup_bg; test_cleanup' EXIT

# start_bg CMD...: run CMD in the background, its pid in $bg
start_bg() {
	"$@" >/dev/null 2>&1 &
	bg=$!
	echo $bg >>"$TRASH/bg.pids"
}

test_expect_success '-g: the threads of a running process, its hot function, it lives on' '
	start_bg "$WL/rec-threads" 2 4
	sleep 0.5 &&
	"$DLPROF" record -q -g -o fp.data -p $bg -- sleep 1 &&
	kill -0 $bg &&
	"$DLPROF" report -i fp.data >rep && cat rep &&
	test_grep -q "^# command: .*rec-threads 2 4 (pid $bg, attached)" rep &&
	grep -A1 "Self%" rep | tail -1 | test_grep -qE "^ +(9[0-9]|100)\.[0-9]+% .* rec_thread_work +rec-threads" &&
	"$DLPROF" report -i fp.data --sort tid --format csv >tids &&
	test "$(grep -c "rec-threads" tids)" = 2 &&
	"$DLPROF" fold -i fp.data >folded &&
	total=$(awk "{ s += \$NF } END { print s }" folded) &&
	good=$(grep -E "^rec-threads;start_thread;worker;rec_thread_work [0-9]+\$" folded |
		awk "{ s += \$NF } END { print s + 0 }") &&
	echo "$good of $total under start_thread;worker" && test "$total" -gt 500 &&
	test $((good * 100)) -ge $((total * 90))
'

test_expect_success 'dwarf: stacks unwind through mappings read from /proc, build-ids kept' '
	start_bg "$WL/rec-threads" 2 4
	sleep 0.3 &&
	"$DLPROF" record -q --call-graph dwarf -o dw.data -p $bg -- sleep 0.5 &&
	"$DLPROF" fold -i dw.data >folded &&
	total=$(awk "{ s += \$NF } END { print s }" folded) &&
	good=$(grep -E "^rec-threads;[^ ]*clone3;start_thread;worker;rec_thread_work [0-9]+\$" folded |
		awk "{ s += \$NF } END { print s + 0 }") &&
	echo "$good of $total" && test "$total" -gt 200 &&
	test $((good * 100)) -ge $((total * 90)) &&
	"$RECDUMP" dw.data >dump &&
	test_grep -q "^PERF MMAP2 pid=$bg .*file=$WL/rec-threads\$" dump &&
	id=$(readelf -n "$WL/rec-threads" | sed -n "s/.*Build ID: //p") && test -n "$id" &&
	test_grep -q "^PERF MMAP2 pid=$bg .*buildid=$id file=$WL/rec-threads\$" dump &&
	kill -KILL $bg
'

test_expect_success 'SIGINT ends the recording, not the process; exit 0, finalized' '
	start_bg "$WL/rec-hot" 30
	sleep 0.3
	"$DLPROF" record -q -o int.data -p $bg &
	dl=$!
	sleep 1 &&
	kill -INT $dl &&
	{ set +e; wait $dl; st=$?; set -e; } && echo "status $st" &&
	test "$st" = 0 &&
	kill -0 $bg &&
	"$RECDUMP" int.data >dump &&
	grep -q "^STATS .* exit=0 flags=0x1$" dump &&
	test "$(samples_in dump "$WL/rec-hot" rec_hot_loop)" -gt 300 &&
	kill -KILL $bg
'

test_expect_success 'without a command the recording ends when the process does' '
	start_bg "$WL/rec-hot" 1.5
	sleep 0.2 &&
	"$DLPROF" record -q -o end.data -p $bg &&
	! kill -0 $bg 2>/dev/null &&
	"$RECDUMP" end.data >dump &&
	n=$(samples_in dump "$WL/rec-hot" rec_hot_loop) && echo "$n samples" &&
	test "$n" -gt 800
'

test_expect_success 'an exec and threads started after attaching are followed' '
	start_bg sh -c "sleep 1; exec \"$WL/rec-threads\" 3 0.5"
	sleep 0.2 &&
	"$DLPROF" record -q -g -o later.data -p $bg &&
	"$DLPROF" report -i later.data --sort tid --format csv >tids && cat tids &&
	test "$(grep -c "rec-threads" tids)" -ge 3 &&
	"$DLPROF" report -i later.data >rep &&
	grep -A1 "Self%" rep | tail -1 | test_grep -q " rec_thread_work "
'

# unw-jit runs the widest kernel this CPU has (AVX-512, AVX2 or SSE) and says which
test_expect_success 'a JIT map written before attaching is captured: the kernel is named' '
	JITDUMPDIR=$TRASH "$BUILD/tests/unw-jit" 0 >probe.out 2>&1
	rm -f "/tmp/perf-$(sed -n "s/^pid //p" probe.out).map"
	k=$(sed -n "s/^kernel //p" probe.out) && echo "kernel $k" && [ -n "$k" ] &&
	JITDUMPDIR=$TRASH start_bg "$BUILD/tests/unw-jit" 3
	sleep 0.5 &&
	"$DLPROF" record -q --call-graph dwarf -o jit.data -p $bg -- sleep 0.5 &&
	"$DLPROF" report -i jit.data >rep && cat rep &&
	grep -A1 "Self%" rep | tail -1 | test_grep -qE "$k +\[jit\]" &&
	"$DLPROF" fold -i jit.data | test_grep -q ";main;jit_driver;$k "
'

test_expect_success 'bad -p: a bad number is a usage error, a missing process exit 2' '
	{ "$DLPROF" record -p abc 2>err; test $? = 64; } && test_grep -q "bad process id .abc." err &&
	{ "$DLPROF" record -p 0 2>err; test $? = 64; } &&
	test "$(wc -l <err)" = 1 &&
	{ "$DLPROF" record -p 2147483646 -o none.data 2>err; test $? = 2; } &&
	test_grep -q "no such process: 2147483646" err && test "$(wc -l <err)" = 1 &&
	test ! -e none.data
'

test_expect_success 'a recording that cannot start leaves the previous file in place' '
	"$DLPROF" record -q -o prev.data -- true && cp prev.data want &&
	{ "$DLPROF" record -q -o prev.data -p 2147483646 2>err; test $? = 2; } &&
	cmp prev.data want && test ! -e prev.data.old &&
	{ "$DLPROF" record -q -o prev.data -- ./no-such-command 2>err; test $? = 127; } &&
	cmp prev.data want && test ! -e prev.data.old
'

test_done
