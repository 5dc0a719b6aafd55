#!/bin/sh
# t2110: perf report's filters on every reader: --pid, --tid, --comm, --time, --family,
# --op, --sym on report, fold, pprof and diff.  Each kept count is checked against the
# unfiltered tables of the same recording (a thread's row, a family's, an operator's),
# the readers agree with each other, and the header says what was kept.
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS DNNL OPENBLAS
DEMO="$BUILD/examples/demo"
[ -x "$DEMO" ] || test_skip_all "build/examples/demo not built"
export OMP_NUM_THREADS=2

kept() {	# the "N of M samples kept" of a report's header: N
	sed -n "s/^# filter:  .*: \([0-9]*\) of \([0-9]*\) samples kept\$/\1/p" "$1"
}
fold_total() {
	awk '{ s += $NF } END { print s + 0 }' "$1"
}

test_expect_success 'record the demo' '
	"$DLPROF" record -q -o d.data -- "$DEMO" -n 30 >/dev/null &&
	"$DLPROF" report -i d.data --sort tid --format csv >tids.csv &&
	"$DLPROF" report -i d.data --sort family --format json >fam.json &&
	"$DLPROF" report -i d.data --sort op --format json >op.json &&
	total=$("$DLPROF" report -i d.data --format json | json_get - j.header.samples) &&
	echo $total >total && test "$total" -gt 500
'

test_expect_success '--tid: the thread row of the unfiltered table, in report and fold' '
	head -3 tids.csv &&
	tid=$(sed -n 2p tids.csv | cut -d, -f6 | sed "s/ .*//; s/\"//g") &&
	want=$(sed -n 2p tids.csv | cut -d, -f2) && echo "tid $tid: $want samples" &&
	"$DLPROF" report -i d.data --tid "$tid" >r.txt && head -6 r.txt &&
	test "$(kept r.txt)" = "$want" &&
	test_grep -q "^# filter:  --tid $tid: $want of $(cat total) samples kept" r.txt &&
	"$DLPROF" fold -i d.data --tid "$tid" >f.txt 2>f.err &&
	test "$(fold_total f.txt)" = "$want" && test_grep -q "fold: --tid $tid: $want of" f.err
'

test_expect_success '--family and --op: the rows of the unfiltered DL tables' '
	fam=$(json_get fam.json "{r.family: r.samples for r in j.rows}[\"jit-conv\"]") &&
	op=$(json_get op.json "{r.name: r.self_samples for r in j.rows}[\"dnnl:convolution\"]") &&
	echo "jit-conv $fam, dnnl:convolution $op" &&
	"$DLPROF" report -i d.data --family jit-conv --sort family >rf.txt && cat rf.txt &&
	test "$(kept rf.txt)" = "$fam" && test_grep -q "^jit-conv  *100.00%" rf.txt &&
	"$DLPROF" report -i d.data --op "dnnl:conv*" >ro.txt && test "$(kept ro.txt)" = "$op" &&
	"$DLPROF" fold -i d.data --op="dnnl:conv*" --no-comm >fo.txt 2>/dev/null &&
	test "$(fold_total fo.txt)" = "$op" && ! grep -v "^dnnl:convolution;" fo.txt
'

test_expect_success '--sym: samples with the function anywhere on the stack' '
	"$DLPROF" fold -i d.data --sym "sgemm_kernel*" >fs.txt 2>/dev/null &&
	n=$(fold_total fs.txt) && echo "$n stacks with sgemm_kernel" && test "$n" -gt 50 &&
	! grep -v ";sgemm_kernel" fs.txt &&
	all=$("$DLPROF" fold -i d.data | grep ";sgemm_kernel" | awk "{ s += \$NF } END { print s }") &&
	test "$n" = "$all" &&
	"$DLPROF" report -i d.data --sym "sgemm_kernel*" >rs.txt && test "$(kept rs.txt)" = "$n"
'

test_expect_success '--time: two halves make the whole; seconds and percent' '
	"$DLPROF" report -i d.data --time ,50% >h1.txt && "$DLPROF" report -i d.data --time 50%, >h2.txt &&
	a=$(kept h1.txt) && b=$(kept h2.txt) && t=$(cat total) && echo "$a + $b of $t" &&
	test $((a + b)) -ge "$t" && test $((a + b)) -le $((t + 2)) && test "$a" -gt 0 && test "$b" -gt 0 &&
	"$DLPROF" report -i d.data --time 0,0.1 >s.txt && k=$(kept s.txt) && echo "first 0.1 s: $k" &&
	# as many as the same span in percent: how many the workload took in it depends on
	# the CPU it had (47 once, with a spinner on each core), not on the filter
	test "$k" -gt 0 && test "$k" -lt 300 &&
	pct=$("$DLPROF" report -i d.data --format json |
	      json_get - "\"%.6f%%\" % (100 * 0.1e9 / j.header.duration_ns)") &&
	"$DLPROF" report -i d.data --time "0%,$pct" >p.txt && kp=$(kept p.txt) &&
	echo "first $pct: $kp" && test $((k - kp)) -le 2 && test $((kp - k)) -le 2
'

test_expect_success '--comm and --pid: all or nothing for the one process' '
	"$DLPROF" report -i d.data --comm "de*" >c1.txt && test "$(kept c1.txt)" = "$(cat total)" &&
	"$DLPROF" report -i d.data --comm nomatch >c2.txt && test "$(kept c2.txt)" = 0 &&
	pid=$("$BUILD/tests/recdump" d.data | sed -n "s/^PERF COMM pid=\([0-9]*\) .*comm=demo\$/\1/p" | head -n 1) &&
	echo "demo pid $pid" && [ -n "$pid" ] &&
	"$DLPROF" report -i d.data --pid "$pid" >p1.txt && test "$(kept p1.txt)" = "$(cat total)" &&
	"$DLPROF" report -i d.data --pid 1 >p.txt && test "$(kept p.txt)" = 0
'

test_expect_success 'pprof and diff keep the same samples' '
	op=$(kept ro.txt) &&
	"$DLPROF" pprof -i d.data --op "dnnl:conv*" -o p.pb.gz 2>pp.err && cat pp.err &&
	test_grep -q "wrote p.pb.gz: $op samples" pp.err &&
	"$DLPROF" diff --op "dnnl:conv*" --sort op d.data d.data >diff.txt && head -8 diff.txt &&
	test "$(grep -c "filter --op dnnl:conv\*: $op of $(cat total) samples kept" diff.txt)" = 2
'

test_expect_success 'bad filters: one line, exit 64' '
	for a in "--tid abc" "--pid 0" "--time 5" "--time 3,1" "--time 10%,2" "--op ," "--sym a,,b"; do
		{ "$DLPROF" report -i d.data $a >out 2>err; rc=$?; } ;
		echo "$a: $rc $(cat err)";
		test $rc = 64 && test "$(wc -l <err)" = 1 || exit 1
	done
'
test_done
