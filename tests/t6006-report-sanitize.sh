#!/bin/sh
# make check-e2e: over 20 s here, run apart from make check (tests/README.md)
# report/fold under AddressSanitizer (leaks included) and UBSan, and valgrind: edge-case
# recordings (no samples, a process without mappings, a library without symbols, LOST
# counts that would wrap, skipped malformed records) and live fp/dwarf recordings.
. "$(dirname "$0")/lib.sh"

SAN="$BUILD/tests/san/dlprof"
EDGE="$BUILD/tests/rep-edge"
BAD="$BUILD/tests/rec-bad"
WL="$BUILD/tests/workloads"
# the sanitized binary is not installed next to share/: point it at the rules
DLPROF_DATADIR="$TOP/share"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=99
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=98
export DLPROF_DATADIR ASAN_OPTIONS UBSAN_OPTIONS

test -x "$SAN" && test -x "$EDGE" || test_skip_all "sanitized build missing (make check builds it)"

# san_run ARGS...: run the sanitized dlprof; fail on any sanitizer report or a status
# other than 0/1 (the edge cases are not errors)
san_run() {
	set +e
	"$SAN" "$@" >san.out 2>san.err
	st=$?
	set -e
	if grep -q "runtime error\|Sanitizer\|SUMMARY" san.err || test $st -gt 1; then
		echo "$*: exit $st"
		cat san.err
		return 1
	fi
}

# san CMD FILE [ARGS]: san_run on a recording
san() {
	cmd=$1 file=$2
	shift 2
	san_run $cmd -i "$file" "$@"
}

test_expect_success 'a recording without samples: report, fold, the DL views' '
	"$EDGE" nosamples e.dlp &&
	san report e.dlp && grep "^# samples: 0 " san.out &&
	san fold e.dlp && test ! -s san.out &&
	san report e.dlp --format json && san report e.dlp --format csv &&
	for k in family op thread; do san report e.dlp --sort $k || exit 1; done &&
	san report e.dlp --group family && san fold e.dlp --family --op
'

test_expect_success 'samples of a process that mapped nothing' '
	"$EDGE" nomaps m.dlp &&
	san report m.dlp && grep "^# samples: 20 " san.out &&
	san fold m.dlp && grep -c "^bare;" san.out | grep -x 1
'

test_expect_success 'samples in a library without any symbols' '
	printf "void _start(void) { for (;;); }\n" >nosym.c &&
	gcc -nostdlib -static -s -o nosym nosym.c &&
	"$EDGE" nosyms s.dlp "$PWD/nosym" &&
	san report s.dlp --format csv && grep ",nosym\$" san.out &&
	san fold s.dlp
'

test_expect_success 'LOST counts that overflow saturate instead of wrapping' '
	"$EDGE" lost-wrap l.dlp &&
	san report l.dlp &&
	test_grep "^# samples: 20 in .*, lost: 18446744073709551615\$" san.out &&
	san report l.dlp --format json &&
	test_grep "\"lost\":18446744073709551615," san.out
'

test_expect_success 'skipped malformed records: exit 1, counted in the header and JSON' '
	"$BAD" sample-short bad.dlp &&
	set +e; "$DLPROF" report -i bad.dlp >out 2>err; st=$?; set -e &&
	test $st = 1 &&
	test_grep "^# skipped: 3 malformed records\$" out &&
	grep "^# samples: 40 " out &&
	test "$(wc -l <err)" = 1 && test_grep "skipped 3 malformed perf records" err &&
	set +e; "$DLPROF" report -i bad.dlp --format json >out.json 2>/dev/null; st=$?; set -e &&
	test $st = 1 && test_grep "\"skipped_records\":3[,}]" out.json &&
	set +e; "$DLPROF" fold -i bad.dlp >out 2>err; st=$?; set -e &&
	test $st = 1 && test -s out && test "$(wc -l <err)" = 1
'

test_expect_success 'a good recording: exit 0 and no skipped line' '
	"$BAD" good good.dlp &&
	"$DLPROF" report -i good.dlp >out && ! grep "^# skipped" out &&
	"$DLPROF" report -i good.dlp --format json | grep "\"skipped_records\":0[,}]"
'

test_expect_success 'a bad ITT record is one warning line with the reason' '
	"$BAD" itt-magic itt.dlp &&
	"$DLPROF" report -i itt.dlp >out 2>err && grep "^# samples: 40 " out &&
	test "$(wc -l <err)" = 3 &&
	test "$(grep -c "^dlprof: warning: ITT record ignored: ." err)" = 3 &&
	test_grep "ignored: event names unknown id 77\$" err &&
	"$DLPROF" fold -i itt.dlp --op >out 2>err && test "$(wc -l <err)" = 3
'

if test_have PERF_EVENTS; then
	test_expect_success 'live fp and dwarf recordings: no sanitizer report, no leak' '
		"$DLPROF" record -q -g -o fp.data "$WL/rep-split" &&
		"$DLPROF" record -q --call-graph dwarf -o dw.data "$WL/rep-split" &&
		for f in fp.data dw.data; do
			san report $f && grep -q rep_hot san.out &&
			san report $f --srcline --format json &&
			san fold $f --inline &&
			san report $f --sort op && san fold $f --family --op || exit 1
		done
	'

	test_expect_success 'record unwinding while recording (sanitized): no report, no leak' '
		san_run record -q -o on.data "$WL/rep-split" &&
		san_run record -q --keep-stacks -o keep.data "$WL/rep-split" &&
		san report on.data && grep -q rep_hot san.out &&
		san report keep.data --check-unwind && grep -A1 "^# unwind check" san.out &&
		grep -q "^#  *differ after a frame found by a stack scan, 0 differ" san.out &&
		san fold keep.data --reunwind && grep -q rep_hot san.out
	'

	# Python frames (read in the kernel where it runs the reader, code objects too, else
	# from outside): short-lived code objects, the next often at the same address
	if test -e "$BUILD/tests/workloads/libmemknown.so"; then
		test_expect_success 'record of a Python workload (sanitized): no report, no leak' '
			san_run record -q -o py.data -- /usr/bin/python3 \
				"$SRC/workloads/py_codes.py" "$BUILD/tests/workloads/libmemknown.so" 1 &&
			san fold py.data && grep -q "f_[0-9]* (gen_[0-9]*.py:2)" san.out &&
			san report py.data --sort line
		'
	fi

	test_expect_success 'pprof, diff, check-isa -i, report --event: no sanitizer report' '
		san_run pprof -i dw.data -o dw.pb.gz && test -s dw.pb.gz &&
		san_run diff --sort sym fp.data dw.data && grep -q rep_hot san.out &&
		san_run diff --sort op --format json fp.data dw.data &&
		san check-isa dw.data && grep -q rep_hot san.out &&
		san report fp.data --event cpu-clock &&
		san timeline dw.data -o dw.trace.json && test -s dw.trace.json
	'

	# counters read with the samples: their table, tracks and diff (the scaling of one
	# that shared the PMU among them), and a recording of none of them
	test_expect_success 'record --metrics, report --metrics, timeline, diff --metric: no sanitizer report' '
		san_run record -q --metrics faults,sched -o met.data "$WL/rep-split" &&
		san report met.data --metrics --sort op && grep -q "page-faults" san.out &&
		san report met.data --metrics --format json &&
		san timeline met.data -o met.trace.json && test -s met.trace.json &&
		san_run diff --metric page-faults met.data met.data && {
			"$SAN" report -i fp.data --metrics >none.out 2>none.err
			test $? = 2
		} && cat none.err && test $(wc -l <none.err) = 1 &&
		! grep -q "runtime error\|Sanitizer" none.err
	'

	if test_have PERF; then
		test_expect_success 'a perf.data (fp and dwarf): no sanitizer report' '
			perf record -q -e cpu-clock -g -o pfp.data "$WL/rep-split" >/dev/null 2>&1 &&
			perf record -q -e cpu-clock --call-graph dwarf -o pdw.data "$WL/rep-split" \
				>/dev/null 2>&1 &&
			for f in pfp.data pdw.data; do
				san report $f && grep -q rep_hot san.out &&
				san fold $f --family && san report $f --sort op || exit 1
			done &&
			head -c 3000 pdw.data >pcut.data && san report pcut.data
		'
	else
		test_skip 'a perf.data under the sanitizers' 'no perf'
	fi

	if command -v valgrind >/dev/null 2>&1; then
		test_expect_success 'valgrind: no definite leak in report and fold' '
			for c in "report -i dw.data" "fold -i dw.data" "report -i fp.data --sort op"; do
				valgrind --leak-check=full --errors-for-leak-kinds=definite \
					--error-exitcode=9 "$DLPROF" $c >/dev/null 2>vg.err ||
					{ echo "$c:"; grep -A12 "definitely lost in" vg.err; exit 1; }
			done
		'
	else
		test_skip 'valgrind: no definite leak in report and fold' 'no valgrind'
	fi
else
	test_skip 'live recordings under the sanitizers' 'no perf events'
fi

test_done
