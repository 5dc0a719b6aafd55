#!/bin/bash
# t1003-record-exit.sh - exit status propagation and the errors of dlprof record.
. "$(dirname "$0")/lib.sh"
. "$SRC/record-lib.sh"
test_require PERF_EVENTS

expect_status() {
	want=$1; shift
	set +e
	"$@"
	got=$?
	set -e
	echo "exit status $got (want $want)"
	test "$got" = "$want"
}

test_expect_success 'exit 3 -> dlprof exits 3, recorded in STATS' '
	expect_status 3 "$DLPROF" record -q -o e3.data -- "$WL/rec-hot" 0.05 exit 3 &&
	"$RECDUMP" e3.data | grep -q "^STATS .* exit=3 flags=0x0$"
'

test_expect_success 'killed by SIGKILL -> 137' '
	expect_status 137 "$DLPROF" record -q -o k.data -- "$WL/rec-hot" 0.05 kill 9 &&
	"$RECDUMP" k.data | grep -q "^STATS .* exit=137 "
'

test_expect_success 'SIGSEGV -> 139' '
	expect_status 139 "$DLPROF" record -q -o s.data -- "$WL/rec-hot" 0.05 segv
'

test_expect_success 'a command that cannot run -> 127 and a clear error' '
	expect_status 127 "$DLPROF" record -o nx.data -- ./no-such-program-here 2>err &&
	cat err &&
	test_grep "cannot run .\./no-such-program-here.: No such file or directory" err &&
	test ! -e nx.data
'

test_expect_success 'unknown event -> exit 2 and one line naming it' '
	expect_status 2 "$DLPROF" record -e no-such-event-xyz -o u.data -- true 2>err &&
	cat err &&
	test "$(wc -l <err)" = 1 &&
	test_grep "unknown event .no-such-event-xyz." err
'

if "$DLPROF" record -q -e cycles -o /dev/null -- true 2>/dev/null; then
	test_skip 'cycles asked for by name' 'this machine has a hardware PMU'
else
	test_expect_success 'cycles asked for by name where there is no PMU -> exit 2, reason' '
		expect_status 2 "$DLPROF" record -e cycles -o c.data -- true 2>err &&
		cat err &&
		test "$(wc -l <err)" = 1 &&
		test_grep "cannot open event .cycles.: no such counter here" err
	'
fi

test_expect_success 'usage errors exit 64' '
	expect_status 64 "$DLPROF" record 2>err && test_grep "no command" err &&
	expect_status 64 "$DLPROF" record -F 100 -c 1000 -- true 2>err &&
	expect_status 64 "$DLPROF" record --call-graph lbr -- true 2>err &&
	test_grep "unknown call-graph mode" err &&
	expect_status 64 "$DLPROF" record --bogus -- true 2>err
'

test_expect_success 'record -h lists every option of the man page' '
	"$DLPROF" record -h >help &&
	for o in $("$DLPROF" record --list-opts); do
		grep -q -- "$o" help || { echo "help lacks $o"; exit 1; }
		grep -q -- "$(echo "$o" | sed "s/-/\\\\\\\\-/g")" "$TOP/man/dlprof-record.1" ||
			{ echo "man page lacks $o"; exit 1; }
	done
'

test_done
