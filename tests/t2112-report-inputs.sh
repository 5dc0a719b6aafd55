#!/bin/bash
# t2112-report-inputs.sh - several recordings at once, as from the ranks of a job: three
# "ranks" burn known CPU (rank 2 half as much again: the straggler); report merges them
# into one table or gives a row per recording (--by-input) whose samples match each
# recording's own report; fold and flamegraph take them all (--by-input: the recording as
# the root frame); pprof labels every sample with input, host, pid and rank.
. "$(dirname "$0")/lib.sh"
. "$SRC/record-lib.sh"
test_require PERF_EVENTS

samples_of() {	# the samples a report header gives for one recording
	"$DLPROF" report -i "$1" --limit 1 --no-findings | sed -n "s/^# samples: \([0-9]*\) .*/\1/p"
}

test_expect_success 'three ranks, one slower' '
	for r in 0 1 2; do
		s=0.2; [ $r = 2 ] && s=0.3
		RANK=$r WORLD_SIZE=3 "$DLPROF" record -q -o rank$r.data -- "$WL/rec-threads" 2 $s || return 1
	done &&
	for r in 0 1 2; do samples_of rank$r.data >n$r || return 1; done &&
	cat n0 n1 n2
'

test_expect_success 'report --by-input: a row per recording, the straggler stands out' '
	"$DLPROF" report --by-input rank0.data rank1.data rank2.data >by.txt && cat by.txt &&
	"$DLPROF" report --by-input --format csv rank0.data rank1.data rank2.data >by.csv &&
	for r in 0 1 2; do
		line=$(grep "^\"\\?rank$r.data\"\\?," by.csv) &&
		test "$(echo "$line" | cut -d, -f2)" = "$(cat n$r)" &&
		echo "$line" | test_grep ",$r,$r,\"other\"," || return 1
	done &&
	# 2 x 0.3 s against the median 2 x 0.2 s: +50% (the timer: a few percent)
	vs=$(grep "^\"\\?rank2.data" by.csv | cut -d, -f4) &&
	awk -v v="$vs" "BEGIN { exit !(v > 42 && v < 58) }" &&
	vs0=$(grep "^\"\\?rank0.data" by.csv | cut -d, -f4) &&
	awk -v v="$vs0" "BEGIN { exit !(v > -6 && v < 6) }" &&
	test_grep " $(hostname | cut -c1-12) " by.txt
'

test_expect_success 'report FILE...: one table, the sum of the recordings' '
	"$DLPROF" report rank0.data rank1.data rank2.data --format csv --limit 0 >all.csv &&
	"$DLPROF" report rank0.data rank1.data rank2.data --limit 3 --no-findings >all.txt &&
	cat all.txt &&
	test_grep "^# file: *rank0.data, rank1.data, rank2.data (3 recordings)" all.txt &&
	want=$(( $(cat n0) + $(cat n1) + $(cat n2) )) &&
	test_grep "^# samples: $want " all.txt &&
	hot=$(grep ",rec_thread_work," all.csv | cut -d, -f2) &&
	one=0 && for r in 0 1 2; do
		n=$("$DLPROF" report -i rank$r.data --format csv | grep ",rec_thread_work," | cut -d, -f2) &&
		one=$((one + n)) || return 1
	done &&
	test "$hot" = "$one"
'

test_expect_success 'fold FILE...: merged, and under each recording with --by-input' '
	"$DLPROF" fold rank0.data rank1.data rank2.data >all.fold &&
	test "$(awk "{ s += \$NF } END { print s }" all.fold)" = "$(( $(cat n0) + $(cat n1) + $(cat n2) ))" &&
	"$DLPROF" fold --by-input rank0.data rank1.data rank2.data >by.fold &&
	for r in 0 1 2; do
		test "$(awk -v f=rank$r.data "index(\$0, f \";\") == 1 { s += \$NF } END { print s }" by.fold)" = "$(cat n$r)" || return 1
	done &&
	"$DLPROF" flamegraph --by-input -o by.svg rank0.data rank1.data rank2.data 2>err &&
	test_grep "<title>rank2.data " by.svg
'

test_expect_success 'pprof FILE...: labels input, host, pid and rank' '
	"$DLPROF" pprof -o all.pb.gz rank0.data rank1.data rank2.data 2>err && cat err &&
	test_grep "(labels input, host, pid, rank)" err &&
	gzip -dc all.pb.gz | protoc --proto_path="$SRC/pprof" --decode=dlprof_check.Profile \
		"$SRC/pprof/profile.proto" | python3 "$SRC/tools/pprof-summary.py" >sum &&
	grep "^label" sum &&
	for r in 0 1 2; do
		test_grep "^label input=rank$r.data $(cat n$r)$" sum &&
		test_grep "^label rank=$r $(cat n$r)$" sum || return 1
	done &&
	test_grep "^label host=$(hostname) $(( $(cat n0) + $(cat n1) + $(cat n2) ))$" sum &&
	test "$(grep -c "^label pid=" sum)" -ge 3
'

test_expect_success 'bad combinations are refused with one line' '
	rc=0 && "$DLPROF" report -i rank0.data rank1.data 2>err || rc=$? &&
	test $rc = 64 && test_grep "not both" err &&
	rc=0 && "$DLPROF" report --sort op rank0.data rank1.data 2>err || rc=$? &&
	test $rc = 64 && test "$(wc -l <err)" = 1 &&
	rc=0 && "$DLPROF" flamegraph --diff --by-input rank0.data rank1.data 2>err || rc=$? &&
	test $rc = 64
'

test_done
