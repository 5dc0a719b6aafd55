#!/bin/bash
# t0002-promises.sh - what the README promises a user, each checked as a user would meet
# it: every exit code of its table from every command that reads a recording, the mode
# of every file dlprof writes, and a recording read on "another machine" (the workload's
# binary gone from its path, no /proc) reporting from what it carries, and with --symfs
# from a copy of the recording machine's files.
. "$(dirname "$0")/lib.sh"
. "$SRC/record-lib.sh"
test_require PERF_EVENTS

READERS="report fold flamegraph pprof timeline speedscope"

# out CMD: where a reader writes when told to (the others print)
out_opt() {
	case $1 in
	flamegraph) echo "-o out.svg" ;;
	pprof) echo "-o out.pb.gz" ;;
	timeline) echo "-o out.json" ;;
	speedscope) echo "-o out.speedscope.json" ;;
	esac
}

test_expect_success 'a recording, and a copy cut short' '
	"$DLPROF" record -q -o ok.data -- "$WL/rec-hot" 0.3 &&
	size=$(stat -c %s ok.data) &&
	head -c $((size * 2 / 3)) ok.data >cut.data
'

test_expect_success 'exit 0: every reader on a whole recording' '
	for c in $READERS; do
		rc=0 && "$DLPROF" $c -i ok.data $(out_opt $c) >o.$c 2>e.$c || rc=$?
		test $rc = 0 || { echo "$c: $rc"; cat e.$c; return 1; }
	done
'

test_expect_success 'exit 1: every reader on a recording cut short prints what it holds' '
	for c in $READERS; do
		rm -f out.*
		rc=0 && "$DLPROF" $c -i cut.data $(out_opt $c) >o.$c 2>e.$c || rc=$?
		test $rc = 1 || { echo "$c: $rc"; cat e.$c; return 1; }
		test_grep "truncated" e.$c &&
		{ test -s o.$c || ls out.* >/dev/null; } || { echo "$c wrote nothing"; return 1; }
	done
'

test_expect_success 'exit 2: every reader on a file that is missing or not a recording, one line' '
	echo "not a recording" >junk.data &&
	for c in $READERS; do
		for f in nosuch.data junk.data; do
			rc=0 && "$DLPROF" $c -i $f $(out_opt $c) >o.$c 2>e.$c || rc=$?
			test $rc = 2 && test "$(wc -l <e.$c)" = 1 ||
				{ echo "$c $f: $rc"; cat e.$c; return 1; }
		done
	done &&
	rc=0 && "$DLPROF" record -e no-such-event -o x.data -- true 2>e || rc=$? &&
	test $rc = 2 && test "$(wc -l <e)" = 1
'

test_expect_success 'exit 64: a bad value, one line' '
	for c in $READERS; do
		rc=0 && "$DLPROF" $c -i ok.data --no-such-option >o 2>e || rc=$?
		test $rc = 64 && test "$(wc -l <e)" = 1 || { echo "$c: $rc"; cat e; return 1; }
	done &&
	rc=0 && "$DLPROF" report -i ok.data --sort nosuchkey 2>e || rc=$? &&
	test $rc = 64 && test "$(wc -l <e)" = 1
'

test_expect_success 'check-isa: 0 for a file with AVX-512 code, 1 for one without' '
	"$DLPROF" check-isa "$WL/isa/zmm.o" >o &&
	rc=0 && "$DLPROF" check-isa "$WL/isa/scalar.o" >o || rc=$? &&
	test $rc = 1
'

test_expect_success 'record exits with the workload status, 128+N for a signal' '
	rc=0 && "$DLPROF" record -q -o s.data -- sh -c "exit 3" || rc=$? &&
	test $rc = 3 &&
	rc=0 && "$DLPROF" record -q -o s.data -- sh -c "kill -USR1 \$\$" 2>/dev/null || rc=$? &&
	test $rc = $((128 + 10))
'

test_expect_success 'modes: recordings 0600 whatever the umask, outputs follow it' '
	(
		umask 000 &&
		"$DLPROF" record -q -o m.data -- "$WL/rec-hot" 0.05 &&
		"$DLPROF" record -q -o m.data -- "$WL/rec-hot" 0.05 &&
		test "$(stat -c %a m.data)" = 600 &&
		test "$(stat -c %a m.data.old)" = 600 &&
		"$DLPROF" top -n 1 -d 0.2 -o top.data -- "$WL/rec-hot" 0.3 >/dev/null &&
		test "$(stat -c %a top.data)" = 600 &&
		"$DLPROF" record -q --memory -o mem.data -- "$WL/rec-hot" 0.05 &&
		test "$(stat -c %a mem.data)" = 600
	) &&
	for u in 022 077; do
		(
			umask $u && rm -f out.* &&
			for c in flamegraph pprof timeline speedscope; do
				"$DLPROF" $c -i ok.data $(out_opt $c) 2>/dev/null || return 1
			done &&
			want=$(printf "%o" $((0666 & ~0$u))) &&
			for f in out.*; do
				test "$(stat -c %a $f)" = "$want" || { echo "$f: $(stat -c %a $f), want $want"; exit 1; }
			done
		) || return 1
	done
'

# Another machine: the binary moved away, a root of copies in its place, no /proc.
test_expect_success 'another machine: what the recording carries still reports' '
	mkdir -p wl && cp "$WL/rec-hot" wl/hot &&
	"$DLPROF" record -q -o far.data -- "$PWD/wl/hot" 0.3 &&
	"$DLPROF" report -i far.data --no-findings --limit 0 --format csv >here.csv &&
	"$DLPROF" report -i far.data --no-findings --limit 3 >here.txt &&
	test_grep ",rec_hot_loop,hot$" here.csv &&
	mkdir -p root"$PWD"/wl && mv wl/hot root"$PWD"/wl/hot &&
	"$DLPROF" report -i far.data --no-findings --limit 0 --format csv >gone.csv &&
	! grep -q ",rec_hot_loop," gone.csv &&
	test_grep "\\[unknown\\],hot$" gone.csv &&
	# the stacks came with the recording: still whole, libc'"'"'s frames under them as
	# before, and the unnamed frame holds the hot loop'"'"'s samples (and any of _start'"'"'s)
	m=$(grep ",__libc_start_main,libc.so.6$" here.csv | cut -d, -f5) &&
	test_grep "^[0-9.]*,[0-9]*,[0-9]*,[0-9.]*,$m,__libc_start_main,libc.so.6$" gone.csv &&
	n=$(grep ",rec_hot_loop,hot$" here.csv | cut -d, -f5) &&
	u=$(grep ",\\[unknown\\],hot$" gone.csv | cut -d, -f5) &&
	echo "rec_hot_loop: $n, [unknown] in hot: $u" && test "$u" -ge "$n" &&
	"$DLPROF" report --symfs "$PWD/root" -i far.data --no-findings --limit 0 --format csv >symfs.csv &&
	test_cmp here.csv symfs.csv &&
	DLPROF_SYMFS="$PWD/root" "$DLPROF" fold -i far.data >env.fold &&
	test_grep "rec_hot_loop" env.fold
'

test_expect_success 'another machine without /proc: the same report, kernel names too (unshare, root)' '
	if ! unshare -m true 2>/dev/null; then
		echo "no mount namespace here: skipped"; exit 0
	fi &&
	unshare -m sh -c "mount -t tmpfs none /proc && test ! -e /proc/self &&
		\"$DLPROF\" report --symfs \"$PWD/root\" -i far.data --no-findings --limit 3" >noproc.txt &&
	test_cmp here.txt noproc.txt &&
	# most of dd'"'"'s time is in the kernel: its symbols come from the recording
	"$DLPROF" record -q -o k.data -- dd if=/dev/zero of=/dev/null bs=64k count=60000 2>/dev/null &&
	"$DLPROF" report -i k.data --no-findings --limit 0 --format csv >k-here.csv &&
	unshare -m sh -c "mount -t tmpfs none /proc &&
		\"$DLPROF\" report -i k.data --no-findings --limit 0 --format csv" >k-noproc.csv &&
	test_cmp k-here.csv k-noproc.csv &&
	grep ",\\[kernel.kallsyms\\]$" k-noproc.csv >krows &&
	test "$(grep -vc "^[^,]*,[^,]*,[^,]*,[^,]*,[^,]*,\\[unknown\\]," krows)" -ge 5
'

test_done
