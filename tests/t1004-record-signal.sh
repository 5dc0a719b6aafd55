#!/bin/bash
# t1004-record-signal.sh - SIGINT/SIGTERM/SIGQUIT reach the workload and the recording is
# finalized; a SIGKILLed dlprof leaves a file readable up to its last chunk.
. "$(dirname "$0")/lib.sh"
. "$SRC/record-lib.sh"
test_require PERF_EVENTS

test_expect_success 'SIGINT to dlprof: workload interrupted, exit 130, STATS written' '
	"$DLPROF" record -o int.data -- "$WL/rec-hot" 0.3 wait 2>err &
	pid=$! &&
	sleep 1 &&
	kill -INT $pid &&
	{ set +e; wait $pid; st=$?; set -e; } && cat err && echo "status $st" &&
	test "$st" = 130 &&
	"$RECDUMP" int.data >dump &&
	grep -q "^STATS .* exit=130 flags=0x1$" dump &&
	grep -q "truncated=0" dump &&
	test_grep "samples, .* lost, wrote int.data" err
'

test_expect_success 'SIGTERM to dlprof: exit 143, finalized' '
	"$DLPROF" record -q -o term.data -- "$WL/rec-hot" 0.2 wait &
	pid=$! &&
	sleep 1 &&
	kill -TERM $pid &&
	{ set +e; wait $pid; st=$?; set -e; } && echo "status $st" &&
	test "$st" = 143 &&
	"$RECDUMP" term.data | grep -q "^STATS .* exit=143 flags=0x1$"
'

test_expect_success 'SIGQUIT to dlprof: passed on, exit 131, finalized, no crash note' '
	ulimit -c 0
	"$DLPROF" record -o quit.data -- "$WL/rec-hot" 0.2 wait 2>err &
	pid=$!
	{ sleep 20; kill -KILL $pid 2>/dev/null; } &
	watchdog=$!
	sleep 1 &&
	kill -QUIT $pid &&
	{ set +e; wait $pid; st=$?; set -e; } && kill $watchdog 2>/dev/null; cat err &&
	echo "status $st" &&
	test "$st" = 131 &&
	"$RECDUMP" quit.data | grep -q "^STATS .* exit=131 flags=0x1$" &&
	! grep -q "killed by signal" err
'

test_expect_success 'dlprof killed with SIGKILL: file readable up to the last chunk' '
	"$DLPROF" record -q -o kill.data -- "$WL/rec-hot" 4 &
	pid=$! &&
	sleep 2.5 &&
	kill -KILL $pid &&
	{ wait $pid || true; } &&
	sleep 0.2;
	set +e; "$RECDUMP" kill.data >dump 2>err; st=$?; set -e
	tail -n 1 dump && cat err &&
	test "$st" = 1 &&
	n=$(nr_samples dump) && echo "$n samples" && test "$n" -ge 100 &&
	! grep -q "^STATS" dump
'

# $TMPDIR is $TRASH: the killed dlprof's JIT and ITT directories are there.
test_expect_success 'the next record removes what a SIGKILLed dlprof left, not a live one'"'"'s' '
	ls -d "$TMPDIR"/dlprof-jit.* "$TMPDIR"/dlprof-itt.* >left &&
	cat left && test "$(wc -l <left)" = 2 &&
	touch -d "2 minutes ago" $(cat left) || exit 1
	"$DLPROF" record -q -o live.data -- sleep 30 &
	live=$!
	sleep 1 &&
	ls -d "$TMPDIR"/dlprof-jit.* "$TMPDIR"/dlprof-itt.* >now &&
	! grep -qxFf left now && test "$(wc -l <now)" = 2 &&
	touch -d "2 minutes ago" $(cat now) &&
	"$DLPROF" record -q -o next.data -- true &&
	ls -d $(cat now) &&
	kill -TERM $live && { wait $live || :; } &&
	! ls -d "$TMPDIR"/dlprof-* 2>/dev/null
'

test_done
