#!/bin/bash
# t1002-record-inherit.sh - record follows every thread, child process and exec.
. "$(dirname "$0")/lib.sh"
. "$SRC/record-lib.sh"
test_require PERF_EVENTS

test_expect_success 'threads: each worker has its own samples in rec_thread_work' '
	"$DLPROF" record -q -o thr.data -- "$WL/rec-threads" 2 0.5 &&
	"$RECDUMP" thr.data >dump &&
	pid=$(sed -n "s/^PERF COMM pid=\([0-9]*\) .*exec=1 comm=rec-threads$/\1/p" dump | head -n 1) &&
	test -n "$pid" &&
	grep "^PERF SAMPLE pid=$pid " dump | sed "s/.* tid=\([0-9]*\) .*/\1/" | sort | uniq -c | sort -rn >tids &&
	cat tids &&
	t1=$(awk "NR == 1 { print \$2 }" tids) && t2=$(awk "NR == 2 { print \$2 }" tids) &&
	test "$t1" != "$pid" && test "$t2" != "$pid" &&
	n1=$(samples_in dump "$WL/rec-threads" rec_thread_work "$t1") &&
	n2=$(samples_in dump "$WL/rec-threads" rec_thread_work "$t2") &&
	echo "tid $t1: $n1, tid $t2: $n2" &&
	test "$n1" -ge 350 && test "$n2" -ge 350 &&
	test "$(grep -c "^PERF FORK pid=$pid " dump)" -ge 2
'

test_expect_success 'fork: the child process is followed' '
	"$DLPROF" record -q -o fork.data -- "$WL/rec-fork" &&
	"$RECDUMP" fork.data >dump &&
	parent=$(sed -n "s/^PERF COMM pid=\([0-9]*\) .*exec=1 comm=rec-fork$/\1/p" dump | head -n 1) &&
	child=$(sed -n "s/^PERF FORK pid=\([0-9]*\) ppid=$parent .*/\1/p" dump | grep -v "^$parent$" | head -n 1) &&
	echo "parent=$parent child=$child" && test -n "$child" &&
	grep "^PERF SAMPLE pid=$child " dump >child &&
	n=$(samples_in child "$WL/rec-fork" rec_child_work) && echo "$n child samples" &&
	test "$n" -ge 350
'

test_expect_success 'exec: comm changes and the new program is sampled' '
	"$DLPROF" record -q -o exec.data -- "$WL/rec-exec.sh" 0.5 &&
	"$RECDUMP" exec.data >dump &&
	grep "^PERF COMM .*exec=1" dump >comms && cat comms &&
	pid=$(sed -n "s/^PERF COMM pid=\([0-9]*\) .*exec=1 comm=rec-hot$/\1/p" comms) &&
	test -n "$pid" &&
	grep -q "^PERF COMM pid=$pid .*exec=1 comm=rec-exec.sh$" comms &&
	n=$(samples_in dump "$WL/rec-hot" rec_hot_loop) && echo "$n samples" &&
	test "$n" -ge 350
'

# A record inside the command (a distributed job: one per node around the launcher, one
# per rank inside it) samples the same threads: the kernel gives the outer record's
# switch-outs the inner record's event id, which the outer one writes as its own
# (drain.c sample_own_id); report read none of them before ("skipped 124 malformed").
test_expect_success 'nested record: every sample of the outer recording reads' '
	"$DLPROF" record -q -o outer.data -- "$DLPROF" record -q -o inner.data -- \
		/usr/bin/python3 -c "sum(range(30000000))" &&
	"$DLPROF" report -i outer.data --sort pid --format json >outer.json 2>err &&
	cat err && ! grep -i malformed err &&
	json_check outer.json <<-\PY &&
	dl = [r for r in j.rows if r.comm == "dlprof" and "inner.data" in (r.cmdline or "")]
	py = [r for r in j.rows if r.comm == "python3"]
	len(dl) == 1 and len(py) == 1
	dl[0].samples > 0
	py[0].samples >= 100
	PY
	"$RECDUMP" outer.data >outer.dump && "$RECDUMP" inner.data >inner.dump &&
	! grep "^PERF SAMPLE bad" outer.dump &&
	pid=$(sed -n "s/^PERF COMM pid=\([0-9]*\) .*exec=1 comm=python3$/\1/p" inner.dump | head -n 1) &&
	test -n "$pid" &&
	out=$(grep "^PERF SAMPLE pid=$pid .* ev=context-switches" outer.dump | wc -l) &&
	in=$(grep "^PERF SAMPLE pid=$pid .* ev=context-switches" inner.dump | wc -l) &&
	echo "python3 switch-outs: $out in the outer recording, $in in the inner" &&
	test $((out * 2)) -ge "$in"
'

test_done
