#!/bin/sh
# t0100-recfile.sh - the recording file (lib/file): the writer and reader, the session
# reader, the compact sample and memory records (memrec.c), the packed Python records
# (pyrec.c), META parsed once (recmeta.c) as unit tests; recdump on good, cut and damaged files.
. "$(dirname "$0")/lib.sh"

RECDUMP="$BUILD/tests/recdump"
MKFILE="$BUILD/tests/rec-mkfile"

test_unit test-recfile 2	# 2 s of random mutations
test_unit test-session
test_unit test-memrec
test_unit test-pyrec
test_unit test-recmeta

test_expect_success 'recdump reads a complete recording' '
	"$MKFILE" -n 300 -s 2048 -c 65536 good.dlp &&
	"$RECDUMP" good.dlp >dump &&
	test "$(grep -c "^PERF SAMPLE pid=100 " dump)" = 300 &&
	test_grep "^ATTR name=cpu-clock type=1 config=0 sample_type=0x131a7 ids=2$" dump &&
	test_grep "^PERF COMM pid=100 tid=100 time=999000 exec=1 comm=python3$" dump &&
	test_grep "^PERF MMAP2 .* buildid=deadbeef0102030405060708090a0b0c0d0e0f10 file=/usr/lib/libfoo.so$" dump &&
	test_grep "^PERF SAMPLE pid=100 tid=101 time=1001000 ip=0x7f1234500001 cpu=1 period=1000 callchain=8 stack=2048$" dump &&
	test_grep "^PERF LOST id=11 lost=3$" dump &&
	test_grep "^STATS samples=300 lost=3 exit=0 flags=0x0$" dump &&
	tail -n 1 dump >last &&
	test_grep "^records=308 chunks=[0-9]* truncated=0$" last &&
	test "$(stat -c %a good.dlp)" = 600
'

test_expect_success 'a cut recording shows its complete chunks, one warning' '
	size=$(stat -c %s good.dlp) &&
	for n in 40 $((size / 3)) $((size / 2)) $((size - 1)); do
		head -c $n good.dlp >cut.dlp &&
		{ "$RECDUMP" cut.dlp >cut.out 2>cut.err; st=$?; } &&
		test $st = 1 &&
		test "$(wc -l <cut.err)" = 1 &&
		test_grep "^dlprof: warning: .cut.dlp. is truncated after [0-9]* complete chunks (recording was interrupted?); showing what it holds$" cut.err &&
		tail -n 1 cut.out | grep "truncated=1$" &&
		grep -v "^ignored=" cut.out | sed "\$d" >cut.recs &&
		head -n $(wc -l <cut.recs) dump | cmp - cut.recs || return 1
	done &&
	head -c $((size / 2)) good.dlp >half.dlp &&
	"$RECDUMP" half.dlp >half.out 2>/dev/null; test $? = 1 &&
	test "$(grep -c "^PERF SAMPLE" half.out)" -gt 50 &&
	test "$(grep -c "^PERF SAMPLE" half.out)" -lt 250
'

test_expect_success 'a killed writer leaves a readable, truncated file' '
	"$MKFILE" -k -n 300 -s 2048 -c 65536 killed.dlp &&
	{ "$RECDUMP" killed.dlp >k.out 2>k.err; test $? = 1; } &&
	tail -n 1 k.out | grep "truncated=1$" &&
	test "$(grep -c "^PERF SAMPLE" k.out)" -gt 200
'

test_expect_success 'flipped bytes give a one-line corrupt-recording error' '
	size=$(stat -c %s good.dlp) &&
	for off in 20 $((size / 2)) $((size - 5)); do
		cp good.dlp bad.dlp &&
		printf "\\377" | dd of=bad.dlp bs=1 seek=$off conv=notrunc 2>/dev/null &&
		{ "$RECDUMP" bad.dlp >bad.out 2>bad.err; st=$?; } &&
		test $st = 2 &&
		test "$(wc -l <bad.err)" = 1 &&
		test_grep "^dlprof: error: .bad.dlp.: corrupt recording: chunk [0-9]* at offset [0-9]*: " bad.err &&
		! grep "^records=" bad.out || return 1
	done &&
	cp good.dlp bad.dlp &&
	printf "\\377" | dd of=bad.dlp bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null &&
	"$RECDUMP" bad.dlp 2>bad.err >/dev/null; test $? = 2 &&
	test_grep "checksum mismatch$" bad.err
'

test_expect_success 'not a recording, empty, short, newer version' '
	printf "hello world, not a recording\n" >text.dlp &&
	{ "$RECDUMP" text.dlp 2>e1; test $? = 2; } &&
	test_grep "^dlprof: error: .text.dlp. is not a dlprof recording$" e1 &&
	: >empty.dlp &&
	{ "$RECDUMP" empty.dlp 2>e2; test $? = 2; } &&
	test_grep "empty" e2 &&
	head -c 10 good.dlp >short.dlp &&
	{ "$RECDUMP" short.dlp 2>e3; test $? = 2; } &&
	test_grep "too short" e3 &&
	cp good.dlp new.dlp &&
	printf "\\012" | dd of=new.dlp bs=1 seek=8 conv=notrunc 2>/dev/null &&
	{ "$RECDUMP" new.dlp 2>e4; test $? = 2; } &&
	test_grep "format version 10, newer than this dlprof reads (8); upgrade dlprof" e4
'

if command -v valgrind >/dev/null 2>&1; then
	test_expect_success 'no memory errors on good, cut and damaged files (valgrind)' '
		"$MKFILE" -n 40 -s 1024 -c 16384 small.dlp &&
		size=$(stat -c %s small.dlp) &&
		head -c $((size * 2 / 3)) small.dlp >small-cut.dlp &&
		cp small.dlp small-bad.dlp &&
		printf "\\001" | dd of=small-bad.dlp bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null &&
		for f in small.dlp small-cut.dlp small-bad.dlp; do
			valgrind -q --error-exitcode=99 --leak-check=full "$RECDUMP" $f >/dev/null 2>vg.err;
			test $? != 99 || { cat vg.err; return 1; }
		done
	'
else
	test_skip 'no memory errors (valgrind)' 'valgrind not installed'
fi

test_done
