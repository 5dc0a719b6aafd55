#!/bin/bash
# t6000-robust-report.sh - damaged recordings: report, fold and check-isa -i end with one
# clear line and the documented exit code, never a crash or a hang.
#
#   cut short        exit 1, one "is truncated" warning, a table (exit 2, one error line,
#                    when not even the file header is left)
#   a flipped byte   exit 2, one "corrupt recording" (or "not a dlprof recording") line:
#                    the chunk checksums catch every flip
#   bad content      (valid checksums, built by rec-bad): exit 2 with one error line, or
#                    a table where the bad records are skipped with a counted warning
. "$(dirname "$0")/lib.sh"
. "$SRC/record-lib.sh"
test_require PERF_EVENTS

BAD="$BUILD/tests/rec-bad"
tools=(report fold check-isa)

# run_tool TOOL FILE: run dlprof TOOL on FILE (20 s cap); sets st, leaves out and err.
run_tool() {
	case "$1" in
	check-isa) set -- check-isa -i "$2" --no-python ;;
	*) set -- "$1" -i "$2" ;;
	esac
	set +e
	timeout 20 "$DLPROF" "$@" >out 2>err
	st=$?
	set -e
}

# describe WHAT: one line for the log when an expectation fails
describe() {
	echo "FAIL: $1: exit $st, $(wc -l <err) stderr lines:"
	sed 's/^/    /' err
	head -n 3 out | sed 's/^/    out: /'
}

# expect_cut TOOL FILE: the verdict on a cut-short file
expect_cut() {
	run_tool "$1" "$2"
	lines=$(wc -l <err)
	case "$st" in
	0|1)
		# report and fold: 1; check-isa: its verdict (0 or 1), with the same warning
		test "$st" = 1 || test "$1" = check-isa || { describe "$1 $2"; return 1; }
		test "$lines" = 1 && grep -q "^dlprof: warning: .* is truncated after [0-9]* complete chunks" err ||
			{ describe "$1 $2"; return 1; }
		if test "$1" = report; then
			grep -q "^# file: .*(truncated)" out || { describe "$1 $2: no table"; return 1; }
		fi ;;
	2)
		test "$lines" = 1 && grep -q "^dlprof: \(error\|warning\): " err ||
			{ describe "$1 $2"; return 1; } ;;
	*)
		describe "$1 $2 (crash or hang)"; return 1 ;;
	esac
}

# expect_corrupt TOOL FILE: exit 2 with one error line
expect_corrupt() {
	run_tool "$1" "$2"
	test "$st" = 2 && test "$(wc -l <err)" = 1 &&
		grep -q "^dlprof: error: .*\(corrupt recording\|not a dlprof recording\|format version\)" err ||
		{ describe "$1 $2"; return 1; }
}

test_expect_success 'setup: real recordings, fp and dwarf, several chunks each' '
	"$DLPROF" record -q -g -o fp.data -- "$WL/rec-hot" 1.2 2>/dev/null &&
	"$DLPROF" record -q --call-graph dwarf -o dw.data -- "$WL/rec-hot" 0.6 2>/dev/null &&
	for f in fp dw; do
		"$RECDUMP" $f.data | tail -n 1 >$f.sum &&
		cat $f.sum &&
		grep -q "chunks=[2-9]\|chunks=[1-9][0-9]" $f.sum &&
		grep -q "truncated=0" $f.sum || exit 1
	done &&
	for f in fp dw; do
		for t in report fold check-isa; do
			run_tool $t $f.data && test $st = 0 -o \( $t = check-isa -a $st = 1 \) &&
			test ! -s err || { describe "$t $f.data"; exit 1; }
		done
	done
'

test_expect_success 'not a recording at all: one line, exit 2, no hang' '
	mkfifo fifo && mkdir dir && : >empty && echo "hello" >text &&
	head -c 10 fp.data >short &&
	cp fp.data sparse && truncate -s 20G sparse &&
	fail=0 &&
	for f in fifo dir empty text short sparse /dev/zero no-such-file; do
		for t in report fold check-isa; do
			run_tool $t $f
			test $st = 2 && test "$(wc -l <err)" = 1 && grep -q "^dlprof: error: " err ||
				{ describe "$t $f"; fail=1; }
		done
	done &&
	rm -f sparse &&
	test $fail = 0
'

# chunk_offsets FILE: the offset of every chunk header
chunk_offsets() {
	/usr/bin/python3 - "$1" <<-\EOF
	import struct, sys
	d = open(sys.argv[1], "rb").read()
	off = 16
	while off + 32 <= len(d):
	    print(off)
	    off += 32 + struct.unpack_from("<I", d, off + 8)[0]
	EOF
}

test_expect_success 'cut at many offsets: exit 1 + one warning + table, or exit 2 + one line' '
	fail=0 &&
	for f in fp dw; do
		size=$(stat -c %s $f.data) &&
		offs="0 1 8 15 16 17 31 47 48 $((size - 1)) $((size - 33))" &&
		for c in $(chunk_offsets $f.data | sed -n "1,3p;\$p"); do
			offs="$offs $c $((c + 1)) $((c + 20)) $((c + 32)) $((c + 33))"
		done &&
		for i in $(seq 1 8); do offs="$offs $((size * i / 9))"; done &&
		n=0 &&
		for o in $offs; do
			test "$o" -lt "$size" || continue
			head -c "$o" $f.data >cut.data
			# the tools share the reader: each cut goes to one of them in turn
			t=${tools[n % 3]}
			expect_cut $t cut.data || { echo "  (cut at $o of $f.data)"; fail=1; }
			n=$((n + 1))
		done &&
		echo "$f.data: $n cuts"
	done &&
	test $fail = 0
'

test_expect_success 'flipped bytes anywhere: exit 2 and one line naming the damage' '
	fail=0 &&
	for f in fp dw; do
		size=$(stat -c %s $f.data) &&
		/usr/bin/python3 - $f.data "$(chunk_offsets $f.data | tr "\n" " ")" <<-\EOF &&
		import random, sys
		path, chunks = sys.argv[1], [int(c) for c in sys.argv[2].split()]
		d = bytearray(open(path, "rb").read())
		pos = list(range(0, 16, 3))
		for c in chunks[:2] + chunks[-1:]:
		    pos += [c + k for k in (0, 4, 8, 12, 16, 20, 24, 28, 31, 32, 40)]
		random.seed(6000)
		pos += random.sample(range(len(d)), 16)
		pos = sorted(set(p for p in pos if p < len(d)))
		for n, p in enumerate(pos):
		    e = bytearray(d)
		    e[p] ^= 1 << (n % 8)
		    open("flip-%d.data" % p, "wb").write(e)
		EOF
		n=0 &&
		for x in flip-*.data; do
			expect_corrupt ${tools[n % 3]} $x || fail=1
			rm -f $x
			n=$((n + 1))
		done &&
		echo "$f.data: $n flips" &&
		test $n -ge 30
	done &&
	test $fail = 0
'

test_expect_success 'valid checksums, bad content: clean error, or bad records skipped and counted' '
	fail=0 &&
	for m in $("$BAD" -l); do
		"$BAD" $m $m.dlp || { echo "rec-bad $m failed"; exit 1; }
		for t in report fold check-isa; do
			run_tool $t $m.dlp
			case "$m:$st" in
			itt-*:0)
				# the ITT reader reports each bad record (lines checked below)
				test $t = fold || test -s out || { describe "$m: $t (no output)"; fail=1; } ;;
			*:2)
				# one error; a warning may say what led to it (all samples skipped)
				test "$(grep -c "^dlprof: error: " err)" = 1 &&
				! grep -v "^dlprof: \(error\|warning\): " err | grep . ||
					{ describe "$m: $t"; fail=1; } ;;
			*:0|*:1)
				! grep -v "^dlprof: warning: " err | grep . ||
					{ describe "$m: $t (not a warning)"; fail=1; }
				test $t = fold || test -s out || { describe "$m: $t (no output)"; fail=1; } ;;
			*)
				describe "$m: $t (crash or hang)"; fail=1 ;;
			esac
			cp err $m.$t.err
			cp out $m.$t.out
		done
	done &&
	test $fail = 0
'

# skipped MODE N: report counts N skipped records of MODE in one warning and still
# shows the good samples (S of them)
skipped() {
	grep -q "^dlprof: warning: .$1.dlp.: skipped $2 malformed perf records$" $1.report.err &&
	grep -q "^# samples: $3 " $1.report.out ||
	{ echo "$1: want $2 skipped, $3 samples"; cat $1.report.err; head -n 4 $1.report.out; return 1; }
}

test_expect_success 'bad perf records are skipped, counted, and the good ones kept' '
	test ! -s good.report.err && grep -q "^# samples: 40 " good.report.out &&
	skipped callchain-huge 2 40 &&
	skipped mmap2-nonul 1 40 &&
	skipped mmap2-bidsize 1 40 &&
	skipped comm-nonul 1 40 &&
	skipped stack-huge 1 40 &&
	skipped stack-no-dyn 1 40 &&
	skipped sample-short 3 40 &&
	skipped sample-size 2 40 &&
	skipped unknown-id 1 40 &&
	skipped ustack-bad 4 41 &&
	skipped regs64 40 5 &&
	skipped no-attr 40 0 &&
	grep -q "^# samples: 45 " callchain-long.report.out &&
	grep -q "^# samples: 45 " fork-loop.report.out &&
	grep -q "^# samples: 41 " ksyms-garbage.report.out
'

test_expect_success 'a malformed event description is a clean error' '
	for m in attr-size attr-ids attr-short empty-records; do
		for t in report fold check-isa; do
			grep -q "^dlprof: error: .$m.dlp.: corrupt recording: malformed event description$" $m.$t.err ||
				{ echo "$m $t:"; cat $m.$t.err; exit 1; }
		done
	done
'

test_expect_success 'bad JIT maps and jitdumps: one warning per bad record, not repeated' '
	test_grep "ignoring perf map .perf-100.map.: malformed line 2" jitmap-garbage.report.err &&
	test "$(wc -l <jitmap-garbage.report.err)" = 1 &&
	test_grep "ignoring jitdump .jit-100.dump.: unterminated name" jitdump-noname.report.err &&
	test "$(wc -l <jitdump-noname.report.err)" = 1 &&
	test "$(grep -c "code size out of bounds" jitdump-codesize.report.err)" = 2 &&
	for m in jitmap-garbage jitmap-huge jitdump-hdr jitdump-recsize jitdump-codesize jitdump-noname jitdump-short; do
		grep "ignoring" $m.check-isa.err >isa-jit &&
		test_cmp $m.report.err isa-jit || exit 1
	done
'

# Known: the ITT reader (lib/attribute/itt.c, lib/views/dlview.c) prints an "error:" line and a
# "warning: ITT record ignored" line for each bad ITT record, where one warning would do.
test_expect_success 'bad ITT records: table shown, each bad record reported' '
	grep -q "^# samples: 40 " itt-garbage.report.out &&
	grep -q "^# samples: 40 " itt-magic.report.out &&
	test "$(grep -c "ITT record" itt-garbage.report.err)" = 2 &&
	test "$(grep -c "ITT record ignored" itt-magic.report.err)" = 3
'

test_done
