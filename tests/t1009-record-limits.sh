#!/bin/bash
# t1009-record-limits.sh - record --duration and --max-size: the recording stops at the
# limit, the file is finished (it reads whole, STATS carries the flag), the reason is
# said on stderr and in report's header; a command runs on unrecorded and its exit
# status is still record's; with -p the processes are left alone.  On a terminal a
# status line (elapsed, samples, MB, lost) is refreshed each second, and report says how
# far into the file it is.
. "$(dirname "$0")/lib.sh"
. "$SRC/record-lib.sh"
test_require PERF_EVENTS

# span_s REPORT: the seconds the samples span, from report's "# samples: N in D UNIT"
# (a span under a second is said in ms)
span_s() {
	/usr/bin/python3 - "$1" <<-\EOF
	import re, sys
	m = re.search(r"^# samples: \d+ in ([0-9.]+) (us|ms|s),", open(sys.argv[1]).read(), re.M)
	print(float(m.group(1)) / {"us": 1e6, "ms": 1e3, "s": 1.0}[m.group(2)])
	EOF
}

test_expect_success '--duration 1: a 3 s command is recorded for 1 s, waited for, its status kept' '
	start=$(date +%s.%N) &&
	set +e && "$DLPROF" record --duration 1 -o d.data -- "$WL/rec-hot" 3 exit 7 2>err; rc=$?; set -e &&
	end=$(date +%s.%N) && cat err && echo "exit $rc" && test $rc = 7 &&
	/usr/bin/python3 -c "import sys; d = $end - $start; print(\"wall %.2f s\" % d); assert d >= 2.8, d" &&
	grep -q "recording stopped at --duration 1 s: the command ran on unrecorded" err &&
	grep -q "waiting for the command (pid [0-9]*) to end" err &&
	"$RECDUMP" d.data | grep "^STATS" >stats && cat stats &&
	grep -q " exit=-1 flags=0x2$" stats &&
	"$DLPROF" report -i d.data -n 3 >rep 2>rep.err && cat rep.err &&
	! grep -q truncated rep rep.err &&
	grep -q "^# warning: recording stopped at --duration 1 s" rep &&
	secs=$(span_s rep) && echo "samples over $secs s" &&
	/usr/bin/python3 -c "assert 0.8 <= $secs <= 1.4, $secs"
'

test_expect_success '--duration with -p: stops after the limit, the process runs on' '
	"$WL/rec-hot" 6 &
	pid=$! &&
	sleep 0.3 &&
	start=$(date +%s.%N) &&
	"$DLPROF" record -q --duration 1 -p $pid -o p.data 2>err && end=$(date +%s.%N) &&
	cat err && kill -0 $pid &&
	/usr/bin/python3 -c "d = $end - $start; print(\"wall %.2f s\" % d); assert d < 2.5, d" &&
	"$RECDUMP" p.data | grep "^STATS" | grep -q "flags=0x2$" &&
	kill $pid && wait $pid || true
'

# (128K: 1 to 1.8 s of rec-hot here, 86 to 173 bytes a sample; the command runs 5 s)
test_expect_success '--max-size: stops near the size, the file whole' '
	"$DLPROF" record --no-unwind --max-size 128K -o m.data -- "$WL/rec-hot" 5 2>err &&
	cat err && grep -q "recording stopped at --max-size 0.1 MB" err &&
	size=$(stat -c %s m.data) && echo "file $size bytes" &&
	test $size -ge 100000 && test $size -lt 350000 &&
	"$DLPROF" report -i m.data -n 2 >rep 2>rep.err &&
	! grep -q truncated rep rep.err && grep -q "^# warning: recording stopped at --max-size" rep &&
	secs=$(span_s rep) && echo "samples over $secs s" &&
	/usr/bin/python3 -c "assert $secs < 4, $secs"
'

test_expect_success 'on a terminal: the status line each second, cleared at the end' '
	script -qec "$DLPROF record -o t.data -- $WL/rec-hot 2.5" /dev/null >tty.out &&
	tr "\r" "\n" <tty.out | grep "^dlprof: recording" >lines && cat lines &&
	test $(wc -l <lines) -ge 2 &&
	grep -Eq "^dlprof: recording 0:0[12]  [0-9]+ samples  [0-9.]+ MB  0 lost" lines &&
	"$DLPROF" record -o t2.data -- "$WL/rec-hot" 0.3 2>plain && ! grep -q "recording 0:" plain
'

test_expect_success 'report on a terminal: how far into the file, cleared before the table' '
	"$DLPROF" record -q --no-unwind -o r.data -- "$WL/rec-hot" 1 &&
	DLPROF_PROGRESS_AFTER_MS=0 script -qec "$DLPROF report -i r.data -n 2" /dev/null >tty.out &&
	tr "\r" "\n" <tty.out | cat -v >lines && head -5 lines &&
	grep -Eq "^dlprof: reading r.data: +[0-9]+%" lines &&
	grep -q "^\^\[\[K# file: " lines &&
	DLPROF_PROGRESS_AFTER_MS=0 "$DLPROF" report -i r.data -n 2 >plain 2>&1 && ! grep -q "reading r.data" plain
'

test_expect_success 'bad limits: one line, exit 64' '
	for a in "--duration 0" "--duration x" "--duration -1" "--max-size 1K" "--max-size 0" "--max-size 5Q"; do
		set +e; "$DLPROF" record $a -o x.data -- true 2>e; rc=$?; set -e
		cat e; test $rc = 64 && test $(wc -l <e) = 1 || return 1
	done
'

test_done
