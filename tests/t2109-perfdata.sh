#!/bin/sh
# t2109-perfdata.sh - report, fold and pprof read perf record's own perf.data: the same
# samples perf report counts, names and whole stacks (fp and dwarf), one event at a
# time, and one line for what cannot be read (pipe mode, compressed, damaged).
. "$(dirname "$0")/lib.sh"
. "$SRC/record-lib.sh"
test_require PERF_EVENTS PERF

# perf_samples FILE: how many samples perf report counts in FILE
perf_samples() {
	perf report -i "$1" --stats 2>/dev/null | sed -n "s/^ *SAMPLE events: *\([0-9]*\).*/\1/p" | head -1
}

test_expect_success 'perf record -g two threads; report reads the perf.data' '
	perf record -q -e cpu-clock -g -o fp.data -- "$WL/rec-threads" 2 0.5 >/dev/null 2>&1 &&
	"$DLPROF" report -i fp.data >rep && cat rep &&
	test_grep -q "^# command: .*perf record .*rec-threads 2 0.5" rep &&
	test_grep -qE "^# event: +cpu-clock \([0-9]+ Hz, stacks: fp\)" rep &&
	n=$(perf_samples fp.data) && echo "perf counts $n samples" &&
	test_grep -q "^# samples: $n in " rep &&
	grep -A1 "Self%" rep | tail -1 | test_grep -qE "^ +(9[0-9]|100)\.[0-9]+% .* rec_thread_work +rec-threads"
'

test_expect_success 'fold: the counts sum to perf'"'"'s, stacks from start_thread' '
	"$DLPROF" fold -i fp.data >folded &&
	total=$(awk "{ s += \$NF } END { print s }" folded) &&
	test "$total" = "$(perf_samples fp.data)" &&
	good=$(grep -E "^rec-threads;start_thread;worker;rec_thread_work [0-9]+\$" folded |
		awk "{ s += \$NF } END { print s + 0 }") &&
	echo "$good of $total" && test $((good * 100)) -ge $((total * 90))
'

test_expect_success 'perf --call-graph dwarf: stripped library code named by its FDE, whole stacks' '
	perf record -q -e cpu-clock --call-graph dwarf -o dw.data -- "$BUILD/tests/unw-libmain" >/dev/null 2>&1 &&
	"$DLPROF" report -i dw.data >rep && sed -n 3,5p rep &&
	complete=$(sed -n "s/^# stacks: *\([0-9]*\)\.[0-9]% reach the thread root.*/\1/p" rep) &&
	test "$complete" -ge 95 &&
	"$DLPROF" fold -i dw.data >folded &&
	total=$(awk "{ s += \$NF } END { print s }" folded) &&
	good=$(grep -E ";main;[^ ]*unw_lib_spin;libunw-lib.so!func@0x[0-9a-f]+ [0-9]+\$" folded |
		awk "{ s += \$NF } END { print s + 0 }") &&
	echo "$good of $total through main to the stripped function" &&
	test $((good * 100)) -ge $((total * 90))
'

test_expect_success 'two events: one at a time, the other named in the header' '
	perf record -q -e cpu-clock,page-faults -o two.data -- "$WL/rec-hot" 0.2 >/dev/null 2>&1 &&
	"$DLPROF" report -i two.data >rep && head -5 rep &&
	test_grep -q "also recorded, not counted here: page-faults" rep &&
	"$DLPROF" report -i two.data --event page-faults >pf && test_grep -q "^# event: *page-faults" pf
'

test_expect_success 'pprof and check-isa -i read it too' '
	"$DLPROF" pprof -i fp.data -o fp.pb.gz 2>err && cat err &&
	test_grep -q "wrote fp.pb.gz: $(perf_samples fp.data) samples" err &&
	{ "$DLPROF" check-isa -i fp.data >isa; test $? -le 1; } &&
	test_grep -q "rec_thread_work \[rec-threads\]" isa
'

test_expect_success 'pipe mode, compressed, cut and damaged files: one line each' '
	perf record -q -e cpu-clock -o - -- true 2>/dev/null >pipe.data &&
	{ "$DLPROF" report -i pipe.data 2>err; test $? = 2; } && cat err &&
	test "$(wc -l <err)" = 1 && test_grep -q "pipe-mode perf.data" err &&
	if perf record -q -z -e cpu-clock -o z.data -- true >/dev/null 2>&1; then
		{ "$DLPROF" report -i z.data 2>err; test $? = 2; } && cat err &&
		test_grep -q "compressed perf.data (perf record -z) is not supported" err
	fi &&
	head -c 64 fp.data >head.data &&
	{ "$DLPROF" report -i head.data 2>err; test $? = 2; } && cat err &&
	test "$(wc -l <err)" = 1 && test_grep -q "corrupt perf.data" err &&
	# cut in the middle of the data section (the header gives its offset and size; the
	# features after it can outweigh it: 730 KB after 343 KB of samples here)
	half=$(/usr/bin/python3 -c "import struct, sys; o, n = struct.unpack(\"<QQ\", open(sys.argv[1], \"rb\").read(56)[40:56]); print(o + n // 2)" fp.data) &&
	head -c "$half" fp.data >half.data &&
	{ "$DLPROF" report -i half.data >rep 2>err; test $? = 1; } && cat err &&
	test_grep -q "truncated" err && test_grep -q "^# samples: [1-9]" rep
'

test_done
