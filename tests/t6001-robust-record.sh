#!/bin/bash
# t6001-robust-record.sh - dlprof record when things go wrong: crashing, killed and
# stubborn workloads, Ctrl-C to the whole process group, daemons that outlive the
# workload, unwritable output, a full disk, bad options, forced sample loss.
. "$(dirname "$0")/lib.sh"
. "$SRC/record-lib.sh"
test_require PERF_EVENTS

# run_rec ARGS...: dlprof record ARGS; sets st, leaves err
run_rec() {
	set +e
	timeout 60 "$DLPROF" record "$@" 2>err
	st=$?
	set -e
	echo "exit $st"; cat err
}

# one_line PATTERN: err is exactly one line, matching PATTERN
one_line() {
	test "$(wc -l <err)" = 1 && grep -q -- "$1" err
}

test_unit test-record-event	# event errors: one line each, the paranoid one names the sysctl

test_expect_success 'workload crashes: exit 139 and one note naming the signal' '
	run_rec -q -o segv.data -- "$WL/rec-hot" 0.05 segv &&
	test $st = 139 &&
	grep -v "no hardware PMU" err >e &&
	test "$(cat e)" = "dlprof: workload killed by signal 11 (Segmentation fault)" &&
	"$RECDUMP" segv.data | grep -q "^STATS .* exit=139 flags=0x0$"
'

test_expect_success 'workload killed from outside with SIGKILL: 137, noted, finalized' '
	"$DLPROF" record -q -o k9.data -- "$WL/rec-hot" 20 2>err &
	pid=$! &&
	for i in $(seq 50); do
		wl=$(pgrep -P $pid) && break
		sleep 0.1
	done &&
	sleep 0.5 &&
	kill -KILL $wl &&
	{ set +e; wait $pid; st=$?; set -e; } && cat err &&
	test $st = 137 &&
	test_grep "^dlprof: workload killed by signal 9 (Killed)$" err &&
	"$RECDUMP" k9.data >dump && grep -q "^STATS .* exit=137 " dump &&
	test "$(nr_samples dump)" -ge 100
'

test_expect_success 'Ctrl-C to the whole process group: exit 130, nothing lost' '
	setsid "$DLPROF" record -o pg.data -- "$WL/rec-hot" 0.3 wait 2>err &
	pid=$! &&
	sleep 1.5 &&
	pg=$(ps -o pgid= -p $pid | tr -d " ") &&
	test -n "$pg" && test "$pg" != "$(ps -o pgid= -p $$ | tr -d " ")" &&
	kill -INT -- -$pg &&
	{ set +e; wait $pid; st=$?; set -e; } && cat err && echo "status $st" &&
	test $st = 130 &&
	"$RECDUMP" pg.data >dump &&
	grep "^STATS" dump &&
	grep -q "^STATS .* lost=0 exit=130 flags=0x1$" dump &&
	grep -q "truncated=0" dump &&
	n=$(nr_samples dump) && echo "$n samples" &&
	test "$n" -ge 150 &&
	grep -q "^STATS samples=$n " dump &&
	test_grep "^dlprof: $(nr_oncpu_samples dump) samples, 0 lost, wrote pg.data" err
'

test_expect_success 'a workload that ignores SIGINT: a second one after 2 s kills it' '
	"$DLPROF" record -q -o ig.data -- sh -c "trap \"\" INT; while :; do :; done" 2>err &
	pid=$! &&
	sleep 1 &&
	kill -INT $pid &&
	sleep 0.5 &&
	kill -0 $pid &&
	sleep 2 &&
	kill -INT $pid &&
	{ set +e; wait $pid; st=$?; set -e; } && cat err &&
	test $st = 137 &&
	test_grep "still runs 2 s after the first signal: killing it" err &&
	"$RECDUMP" ig.data | grep -q "^STATS .* exit=137 flags=0x1$"
'

test_expect_success 'a daemon child outliving the workload does not hold record open' '
	start=$(date +%s%N) &&
	run_rec -q -o dm.data -- sh -c "sleep 8 & echo \$! >daemon.pid; exit 4" &&
	end=$(date +%s%N) &&
	kill "$(cat daemon.pid)" 2>/dev/null || true
	echo "record took $(( (end - start) / 1000000 )) ms" &&
	test $st = 4 &&
	test $(( (end - start) / 1000000 )) -lt 4000 &&
	"$RECDUMP" dm.data | grep -q "^STATS .* exit=4 "
'

test_expect_success 'output not writable: one line, exit 2, workload never started' '
	run_rec -o /proc/no-such-dir/x.data -- sh -c "touch started" &&
	test $st = 2 && one_line "unable to create ./proc/no-such-dir/x.data." &&
	test ! -e started &&
	echo file >afile &&
	run_rec -o afile/x.data -- sh -c "touch started" &&
	test $st = 2 && one_line "unable to create .afile/x.data.: Not a directory" &&
	test ! -e started
'

test_expect_success 'output is a directory: one line, exit 2, nothing moved' '
	mkdir outdir &&
	run_rec -o outdir -- sh -c "touch started" &&
	test $st = 2 && one_line "^dlprof: error: .outdir. is a directory$" &&
	test -d outdir && test ! -e outdir.old && test ! -e started
'

test_expect_success 'output is a device: written through, its mode left alone, not moved' '
	if ! mknod nulldev c 1 3 2>/dev/null; then
		echo "# skipped: cannot create a device node here"; exit 0
	fi
	chmod 666 nulldev &&
	run_rec -q -o nulldev -- true &&
	test $st = 0 &&
	test "$(stat -c %a nulldev)" = 666 &&
	test -c nulldev && test ! -e nulldev.old
'

# disk_full RECORD-OPTIONS...: record rec-hot into a 64 KiB tmpfs: one error line, the
# workload waited for, the file readable up to its last complete chunk, with samples.
# The chunk that did not fit is written again in smaller pieces, as many as fit: the
# file fills the disk with whole chunks, no bytes of a chunk cut short (a 1 MiB chunk of
# samples, ~60 KiB compressed, once left the samples out whole when it did not fit).
disk_full() {
	mkdir -p full && rm -f done &&
	if ! mount -t tmpfs -o size=64k tmpfs full 2>/dev/null; then
		echo "# skipped: cannot mount a small tmpfs here"; return 0
	fi
	trap "umount \"$TRASH/full\" 2>/dev/null || :" EXIT
	run_rec -q "$@" -o full/x.data -- sh -c "\"$WL/rec-hot\" 1.5; touch \"$TRASH/done\""
	cp full/x.data x.data; umount full
	rst=0; "$DLPROF" report -i x.data >rep 2>rerr || rst=$?
	# (one chain: each check holds)
	test $st = 2 &&
	test -e done &&
	test "$(grep -c "^dlprof: error: " err)" = 1 &&
	test_grep "^dlprof: error: unable to write .full/x.data.: No space left on device$" err &&
	test_grep "wrote full/x.data (0.0[0-9]* MB, .*, incomplete: only the chunks written before the error)$" err &&
	size=$(wc -c <x.data) && echo "x.data: $size bytes of 65536" &&
	{ "$RECDUMP" x.data >dump || :; } && tail -n 2 dump &&
	! grep -q "^ignored=" dump && test "$size" -ge 49152 &&
	cat rerr && test "$rst" = 1 && test "$(wc -l <rerr)" = 1 &&
	test_grep "is truncated after [0-9]* complete chunks" rerr &&
	grep "^# samples:" rep && ! grep -q "^# samples: 0 " rep
}

test_expect_success 'disk full (stack copies): one error line, workload waited for, file readable' '
	disk_full --call-graph dwarf --no-unwind
'

# unwound while recording a sample takes ~10 bytes: 40k samples a second fill 64 KiB
test_expect_success 'disk full (stacks unwound while recording): the same' '
	disk_full --call-graph dwarf -F 20000
'

test_expect_success 'bad sampling options: one line each, no recording started' '
	run_rec -F 0 -o o.data -- sh -c "touch started" && test $st = 64 &&
	one_line "bad sampling frequency 0" &&
	run_rec -c 0 -o o.data -- sh -c "touch started" && test $st = 64 &&
	one_line "bad sample period 0" &&
	max=$(cat /proc/sys/kernel/perf_event_max_sample_rate) &&
	run_rec -F $((max + 1)) -o o.data -- sh -c "touch started" && test $st = 2 &&
	one_line "above kernel.perf_event_max_sample_rate ($max).*sysctl -w kernel.perf_event_max_sample_rate=$((max + 1))" &&
	run_rec -m 4 --call-graph dwarf -o o.data -- sh -c "touch started" && test $st = 64 &&
	one_line "cannot hold one sample with 32768 bytes of stack; use -m" &&
	test ! -e started && test ! -e o.data
'

test_expect_success 'bad event lists: one line naming the event' '
	run_rec -e "" -o o.data -- true && test $st = 64 && one_line "no event given" &&
	run_rec -e ",," -o o.data -- true && test $st = 64 && one_line "no event given" &&
	run_rec -e cpu-clock,bogus -o o.data -- true && test $st = 2 &&
	one_line "unknown event .bogus." &&
	run_rec -e cycles,bogus -o o.data -- true && test $st = 2 &&
	one_line "unknown event .bogus." &&
	run_rec -e cycles,cpu-clock,no-such-ev -o o.data -- true && test $st = 2 &&
	one_line "unknown event .no-such-ev." &&
	test ! -e o.data
'

test_expect_success 'forced sample loss: summary, STATS, LOST records and report agree' '
	run_rec -m 16 -F 20000 --call-graph dwarf -o lost.data -- "$WL/rec-threads" &&
	test $st = 0 &&
	lost=$(sed -n "s/^dlprof: [0-9]* samples, \([0-9]*\) lost, .*/\1/p" err) &&
	echo "lost $lost" && test "$lost" -gt 0 &&
	"$RECDUMP" lost.data >dump &&
	grep -q "^STATS .* lost=$lost " dump &&
	sum=$(awk "/^PERF LOST/ { sub(/.*lost=/, \"\"); s += \$1 } END { print s + 0 }" dump) &&
	echo "LOST records sum $sum" && test "$sum" = "$lost" &&
	"$DLPROF" report -i lost.data >rep 2>/dev/null &&
	grep "^# samples:" rep &&
	grep -q "^# samples: [0-9]* in .*, lost: $lost$" rep
'

test_done
