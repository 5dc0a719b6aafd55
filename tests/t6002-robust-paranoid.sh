#!/bin/bash
# t6002-robust-paranoid.sh - dlprof record as an unprivileged user: at
# kernel.perf_event_paranoid 2 the kernel part is dropped with one warning; above 2 (where
# this kernel refuses user profiling) one error line names the sysctl that fixes it.
# Runs the user part through setpriv as nobody; changes the sysctl only as root, for the
# duration of one test, restored by a trap.
. "$(dirname "$0")/lib.sh"
. "$SRC/record-lib.sh"
test_require PERF_EVENTS

PARANOID=/proc/sys/kernel/perf_event_paranoid
test "$(id -u)" = 0 || test_skip_all "needs root to run a command as another user"
command -v setpriv >/dev/null || test_skip_all "setpriv (util-linux) missing"

# The unprivileged user must reach the binary, the workload and a directory of its own.
chmod 755 "$TRASH"
mkdir "$TRASH/u" && chmod 777 "$TRASH/u"
as_nobody() {
	TMPDIR="$TRASH/u" setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
}
as_nobody test -x "$DLPROF" && as_nobody test -x "$WL/rec-hot" ||
	test_skip_all "user nobody cannot reach $DLPROF (directory permissions)"

# run_user ARGS...: dlprof record as nobody in $TRASH/u; sets st, leaves err
run_user() {
	set +e
	(cd "$TRASH/u" && as_nobody timeout 30 "$DLPROF" record "$@") 2>err
	st=$?
	set -e
	echo "exit $st"; cat err
}

orig=$(cat $PARANOID)

if [ "$orig" -ge 3 ]; then
	test_skip 'paranoid 2: user space only, one warning' "perf_event_paranoid is $orig here"
else
	test_expect_success 'paranoid <= 2 as nobody: records user space, one warning at 2' '
		run_user -q -o u.data -- "$WL/rec-hot" 0.2 &&
		test $st = 0 &&
		"$RECDUMP" u/u.data >dump &&
		test "$(nr_samples dump)" -ge 50 &&
		if [ "$orig" = 2 ]; then
			grep -v "no hardware PMU" err >e &&
			test "$(cat e)" = "dlprof: warning: kernel.perf_event_paranoid is 2: recording user space only" &&
			grep -q "^META kernel=excluded" dump
		fi
	'
fi

# Does this kernel refuse an unprivileged cpu-clock at paranoid 3?  (Upstream treats
# values above 2 like 2; distributions patch it to mean "no perf for users".)
refuses_at_3() {
	echo 3 >$PARANOID || return 1
	as_nobody "$BUILD/tests/can-perf" >/dev/null 2>&1
	ok=$?
	echo "$orig" >$PARANOID
	test $ok != 0
}

if ! (echo "$orig" >$PARANOID) 2>/dev/null; then
	test_skip 'paranoid 3' "cannot write $PARANOID"
elif ! refuses_at_3; then
	# upstream behaviour: 3 means what 2 means
	test_expect_success 'paranoid 3 as nobody (kernel allows user space): one warning, records' '
		trap "echo $orig >$PARANOID" EXIT
		echo 3 >$PARANOID &&
		run_user -q -o p3.data -- "$WL/rec-hot" 0.2 &&
		echo $orig >$PARANOID &&
		test $st = 0 &&
		grep -v "no hardware PMU" err >e &&
		test "$(cat e)" = "dlprof: warning: kernel.perf_event_paranoid is 3: recording user space only" &&
		"$RECDUMP" u/p3.data >dump &&
		test "$(nr_samples dump)" -ge 50
	'
else
	test_expect_success 'paranoid 3 as nobody (kernel refuses): exit 2, one line naming the sysctl' '
		trap "echo $orig >$PARANOID" EXIT
		echo 3 >$PARANOID &&
		run_user -o p3.data -- sh -c "touch started" &&
		echo $orig >$PARANOID &&
		test $st = 2 &&
		test "$(wc -l <err)" = 1 &&
		test_grep "cannot open event .cpu-clock.: Permission denied (kernel.perf_event_paranoid is 3; .sysctl -w kernel.perf_event_paranoid=2. or run as root/with CAP_PERFMON)" err &&
		test ! -e u/started && test ! -e u/p3.data
	'
fi

if (echo "$orig" >$PARANOID) 2>/dev/null && ! refuses_at_3; then
	test_skip 'a kernel that refuses users: one line naming the sysctl' \
		"this kernel lets users profile user space at any perf_event_paranoid"
fi

MLOCK=/proc/sys/kernel/perf_event_mlock_kb
morig=$(cat $MLOCK)
if ! (echo "$morig" >$MLOCK) 2>/dev/null; then
	test_skip 'small perf_event_mlock_kb' "cannot write $MLOCK"
else
	test_expect_success 'small perf_event_mlock_kb: the ring asked for (-m) shrinks, one warning, samples kept' '
		trap "echo $morig >$MLOCK" EXIT
		echo 100 >$MLOCK &&
		(ulimit -l 0 && run_user --call-graph dwarf -m 2048 -o m.data -- "$WL/rec-hot" 0.3) >log &&
		echo $morig >$MLOCK &&
		cat log && grep -q "^exit 0$" log &&
		test "$(grep -c "warning: ring buffer limited to [0-9]* KiB per cpu (kernel.perf_event_mlock_kb is 100" log)" = 1 &&
		s=$(sed -n "s/^dlprof: \([0-9]*\) samples, \([0-9]*\) lost.*/\1/p" log) &&
		l=$(sed -n "s/^dlprof: \([0-9]*\) samples, \([0-9]*\) lost.*/\2/p" log) &&
		echo "$s samples, $l lost" &&
		test "$s" -ge 150 && test $((l * 4)) -lt "$s"
	'
	test_expect_success 'the default ring shrunk: no warning unless samples were lost, then one' '
		trap "echo $morig >$MLOCK" EXIT
		echo 100 >$MLOCK &&
		(ulimit -l 0 && run_user -o d.data -- "$WL/rec-hot" 0.3) >log &&
		echo $morig >$MLOCK &&
		cat log && grep -q "^exit 0$" log &&
		l=$(sed -n "s/^dlprof: \([0-9]*\) samples, \([0-9]*\) lost.*/\2/p" log) &&
		w=$(grep -c "warning: .*\(ring buffer\|samples lost\)" log || :) &&
		echo "$l lost, $w warnings" &&
		if [ "$l" = 0 ]; then [ "$w" = 0 ]; else
			[ "$w" = 1 ] && grep -q "warning: $l samples lost: the ring buffer limited to" log
		fi
	'

	test_expect_success 'tiny perf_event_mlock_kb: one line naming the sysctl' '
		trap "echo $morig >$MLOCK" EXIT
		echo 8 >$MLOCK &&
		(ulimit -l 0 && run_user -o m.data -- true) >log &&
		echo $morig >$MLOCK &&
		cat log && grep -q "^exit 2$" log &&
		test "$(grep -c "error:" log)" = 1 &&
		grep -q "cannot map the ring buffer of cpu [0-9]*: .*kernel.perf_event_mlock_kb is 8: raise it with .sysctl -w kernel.perf_event_mlock_kb=[0-9]*." log
	'
fi

test_expect_success 'the sysctls are back as they were' '
	test "$(cat $PARANOID)" = "$orig" &&
	test "$(cat $MLOCK)" = "$morig"
'

test_done
