#!/bin/bash
# t1001-record-basic.sh - dlprof record on a known hot function: samples land in it,
# the file is finalized (attrs, meta, stats), mode 0600, FILE.old kept, the no-PMU
# fallback is announced exactly once.
. "$(dirname "$0")/lib.sh"
. "$SRC/record-lib.sh"
test_require PERF_EVENTS

test_expect_success 'record the hot loop' '
	"$DLPROF" record -o hot.data -- "$WL/rec-hot" 1 2>err &&
	"$RECDUMP" hot.data >dump &&
	cat err
'

test_expect_success 'most samples are in rec_hot_loop' '
	total=$(nr_oncpu_samples "$TRASH/dump") &&
	hot=$(samples_in "$TRASH/dump" "$WL/rec-hot" rec_hot_loop) &&
	echo "total=$total hot=$hot" &&
	test "$total" -ge 700 && test "$total" -le 1300 &&
	test $((hot * 100)) -ge $((total * 85))
'

test_expect_success 'attr, meta and stats are written; stats come last' '
	test_grep "^ATTR name=" dump &&
	test_grep "^META cmdline=.*rec-hot 1$" dump &&
	test_grep "^META freq=999$" dump &&
	test_grep "^META nr_cpus=$(getconf _NPROCESSORS_ONLN)$" dump &&
	flags=$(sed -n "s/^flags[[:space:]]*: //p" /proc/cpuinfo | head -n 1) &&
	test -n "$flags" && test_grep "^META cpu_flags=$flags$" dump &&
	test "$(grep -v "^records=" dump | tail -n 1 | cut -d" " -f1)" = STATS &&
	test_grep "^STATS samples=$(nr_samples dump) lost=0 exit=0 flags=0x0$" dump &&
	test_grep "truncated=0" dump
'

test_expect_success 'summary line on stderr matches the file' '
	# the samples as report counts them, the switch-outs apart
	n=$(nr_oncpu_samples dump) && sw=$(($(nr_samples dump) - n)) &&
	if [ $sw = 0 ]; then s=; else s="; $sw switch-outs beside them"; fi &&
	test_grep "^dlprof: $n samples, 0 lost, wrote hot.data (.*per sample$s)\$" err &&
	"$DLPROF" report -i hot.data >rep && test_grep "^# samples: $n in " rep
'

test_expect_success 'the workload binary is mapped with a build-id' '
	bid=$(readelf -n "$WL/rec-hot" | sed -n "s/.*Build ID: //p") &&
	test -n "$bid" &&
	test_grep "PERF MMAP2 .*buildid=$bid file=$WL/rec-hot" dump
'

test_expect_success 'recording is mode 0600' '
	test "$(stat -c %a hot.data)" = 600
'

test_expect_success 'an existing file is kept as FILE.old' '
	cp hot.data before &&
	"$DLPROF" record -q -o hot.data -- "$WL/rec-hot" 0.1 2>/dev/null &&
	cmp before hot.data.old &&
	! cmp -s hot.data hot.data.old
'

test_expect_success 'default output is dlprof.data' '
	"$DLPROF" record -q -- "$WL/rec-hot" 0.1 &&
	"$RECDUMP" dlprof.data | test_grep "^STATS"
'

if "$DLPROF" record -q -e cycles -o /dev/null -- true 2>/dev/null; then
	test_skip 'no-PMU fallback message' 'this machine has a hardware PMU'
else
	test_expect_success 'no PMU: default falls back to cpu-clock with one line' '
		"$DLPROF" record -o fb.data -- "$WL/rec-hot" 0.2 2>err2 &&
		cat err2 &&
		test "$(grep -c "no hardware PMU available (cycles: .*); sampling cpu-clock instead" err2)" = 1 &&
		test "$(wc -l <err2)" = 2 &&
		"$RECDUMP" fb.data >fbdump &&
		test_grep "^ATTR name=cpu-clock type=1 config=0 " fbdump &&
		test_grep "^META note=no hardware PMU" fbdump
	'
fi

test_expect_success '-q: a clean run prints nothing on stderr; the file is the same' '
	"$DLPROF" record -q -o quiet.data -- "$WL/rec-hot" 0.2 2>err3 &&
	cat err3 && test ! -s err3 &&
	"$RECDUMP" quiet.data >qdump &&
	test_grep "^ATTR name=" qdump && test_grep "^STATS" qdump
'

test_expect_success 'explicit events by generic name; -c period' '
	"$DLPROF" record -q -e task-clock -c 1000000 -o tc.data -- "$WL/rec-hot" 0.3 &&
	"$RECDUMP" tc.data >tcdump &&
	test_grep "^ATTR name=task-clock type=1 config=1 " tcdump &&
	test_grep "^META period=1000000$" tcdump &&
	n=$(nr_oncpu_samples tcdump) && echo "$n samples" && test "$n" -ge 200 && test "$n" -le 400
'

test_expect_success 'two events share the rings; each has its ids' '
	"$DLPROF" record -q -e cpu-clock,page-faults -o two.data -- "$WL/rec-hot" 0.2 &&
	"$RECDUMP" two.data >twodump &&
	ncpu=$(grep "^META nr_cpus=" twodump | cut -d= -f2) &&
	test "$(grep -c "^ATTR name=cpu-clock .* ids=$ncpu$" twodump)" = 1 &&
	test "$(grep -c "^ATTR name=page-faults .* ids=$ncpu$" twodump)" = 1
'

test_expect_success 'report counts one event at a time: the first, or --event NAME; faults take no time' '
	"$DLPROF" report -i two.data --format json >clk.json &&
	"$DLPROF" report -i two.data --format json --event page-faults >pf.json &&
	"$DLPROF" report -i two.data >clk.txt && head -5 clk.txt &&
	test_grep -q "^#  *also recorded, not counted here: page-faults" clk.txt &&
	nclk=$(sed -n "s/.*\"event\":\"cpu-clock\".*\"samples\":\([0-9]*\),.*/\1/p" clk.json) &&
	npf=$(sed -n "s/.*\"event\":\"page-faults\".*\"samples\":\([0-9]*\),.*/\1/p" pf.json) &&
	all=$(grep -c "^PERF SAMPLE" twodump) &&
	echo "cpu-clock $nclk + page-faults $npf = $all" &&
	test "$nclk" -gt 100 && test "$npf" -gt 0 && test $((nclk + npf)) = "$all" &&
	"$DLPROF" report -i two.data --event page-faults >pf.txt && sed -n 5,9p pf.txt &&
	test_grep -q "^# time: *none: page-faults counts events, not time" pf.txt &&
	grep -A1 "Self%" pf.txt | tail -1 | test_grep -qE "^ +[0-9.]+% +[0-9]+ +- " &&
	{ "$DLPROF" report -i two.data --event cycles 2>err; test $? = 2; } &&
	test_grep -q "no event .cycles. in .two.data. (it has cpu-clock,page-faults)" err
'

test_expect_success '-g records call chains reaching main' '
	"$DLPROF" record -q -g -o g.data -- "$WL/rec-hot" 0.3 &&
	"$RECDUMP" g.data >gdump &&
	st=$(sed -n "s/^ATTR .*sample_type=\(0x[0-9a-f]*\) .*/\1/p" gdump) &&
	test $((st & 0x20)) = 32 &&
	n=$(grep "^PERF SAMPLE" gdump | grep -c " callchain=[3-9] ") && echo "$n deep chains" &&
	test "$n" -ge 200
'

test_expect_success 'dwarf mode --no-unwind: registers + trimmed stack copies, none lost' '
	"$DLPROF" record -q --call-graph dwarf --no-unwind -o dw.data -- "$WL/rec-threads" 2 0.5 &&
	"$RECDUMP" dw.data >dwdump &&
	test_grep "^META callgraph=dwarf=32768$" dwdump &&
	test_grep "^STATS .* lost=0 " dwdump &&
	grep "^PERF SAMPLE" dwdump | sed -n "s/.* stack=\([0-9]*\).*/\1/p" | sort -n | uniq -c >stacks &&
	cat stacks &&
	awk "\$2 > 0 && \$2 < 32768 { ok += \$1 } END { exit !(ok > 500) }" stacks &&
	! grep -q "^STACK\| ustack=" dwdump
'

test_expect_success 'dwarf mode (default): stacks unwound while recording, no copies, none lost' '
	"$DLPROF" record -o dw2.data -- "$WL/rec-threads" 2 0.5 2>err &&
	"$RECDUMP" dw2.data >dw2dump &&
	test_grep "^STATS .* lost=0 " dw2dump &&
	all=$(grep -c "^PERF SAMPLE" dw2dump) &&
	ids=$(grep "^PERF SAMPLE" dw2dump | grep -c " stack=0 ustack=[1-9]") &&
	stacks=$(grep -c "^STACK id=" dw2dump) &&
	echo "$all samples, $ids with a stack id, $stacks distinct stacks" &&
	test "$all" -gt 500 && test $((ids * 100)) -ge $((all * 99)) &&
	test "$stacks" -lt $((ids / 2)) &&
	test_grep "unwound while recording" err &&
	"$DLPROF" report -i dw2.data >rep && sed -n 5,6p rep &&
	test_grep -q "^#  *100.0% unwound while recording" rep
'

test_expect_success 'kernel symbols hit are captured when kallsyms is readable' '
	if test "$(head -c 16 /proc/kallsyms)" = "0000000000000000"; then exit 0; fi &&
	"$DLPROF" record -q -e page-faults -c 1 -o pf.data -- "$WL/rec-hot" 0.05 &&
	"$RECDUMP" pf.data | test_grep "^KSYMS len="
'

# The boot's core kernel symbols, kept (DLPROF_KSYMS_DIR, by the boot's id) by the first
# record that reads /proc/kallsyms whole, read there by the next ones; an address outside
# the core kernel's text, or a file that is not one, sends record back to a whole read.
# Each time, every symbol the recording keeps is the one /proc/kallsyms has at its start
# (one of its names), sized to the next text symbol (ksyms_true).
if test "$(head -c 16 /proc/kallsyms)" != "0000000000000000"; then
	ksyms_true() {
		"$RECDUMP" --ksyms "$1" >"$1.ks" &&
		/usr/bin/python3 - "$1.ks" <<-\EOF
		import collections, sys
		names, starts = collections.defaultdict(set), set()
		for line in open("/proc/kallsyms"):
		    w = line.split()
		    if len(w) >= 3 and w[1] in "tTwW" and int(w[0], 16):
		        names[int(w[0], 16)].add(w[2])
		        starts.add(int(w[0], 16))
		starts = sorted(starts)
		nxt = dict(zip(starts, starts[1:]))
		got = [l.split() for l in open(sys.argv[1]) if l.startswith("KSYM ")]
		bad = 0
		for _, a, size, name, *mod in got:
		    a, size = int(a, 16), int(size, 16)
		    want = min(nxt.get(a, a + (1 << 20)) - a, 1 << 20)
		    if name not in names.get(a, ()) or size != want:
		        print("not in /proc/kallsyms so: %x %x %s (there: %s, size %x)" %
		              (a, size, name, sorted(names.get(a, ())), want))
		        bad += 1
		print(len(got), "symbols kept,", bad, "not as /proc/kallsyms has them")
		sys.exit(len(got) < 5 or bad > 0)
		EOF
	}
	boot=$(cat /proc/sys/kernel/random/boot_id)
	test_expect_success 'kernel symbols: the first record keeps the boot'"'"'s, named as kallsyms' '
		export DLPROF_KSYMS_DIR="$TRASH/ksc" &&
		mkdir -p ksc && echo old >ksc/an-earlier-boot &&
		"$DLPROF" record -q -e page-faults -c 1 -o ks1.data -- "$WL/rec-hot" 0.05 &&
		test -s "ksc/$boot" && ! test -e ksc/an-earlier-boot &&
		ksyms_true ks1.data
	'
	test_expect_success 'kernel symbols: the next record reads them there, the same names' '
		export DLPROF_KSYMS_DIR="$TRASH/ksc" &&
		before=$(stat -c %y "ksc/$boot") &&
		"$DLPROF" record -q -e page-faults -c 1 -o ks2.data -- "$WL/rec-hot" 0.05 &&
		test "$(stat -c %y "ksc/$boot")" = "$before" &&
		ksyms_true ks2.data
	'
	test_expect_success 'kernel symbols: a file that is not one is read whole again, kept anew' '
		export DLPROF_KSYMS_DIR="$TRASH/ksc" &&
		size=$(stat -c %s "ksc/$boot") &&
		head -c 100 "ksc/$boot" >ksc.cut && cat ksc.cut >"ksc/$boot" &&
		"$DLPROF" record -q -e page-faults -c 1 -o ks3.data -- "$WL/rec-hot" 0.05 &&
		test "$(stat -c %s "ksc/$boot")" = "$size" &&
		ksyms_true ks3.data
	'
	test_expect_success 'kernel symbols: an address outside the kept text: read whole' '
		export DLPROF_KSYMS_DIR="$TRASH/ksc" &&
		/usr/bin/python3 "$SRC/tools/ksyms-cut.py" "ksc/$boot" &&
		"$DLPROF" record -q -e page-faults -c 1 -o ks4.data -- "$WL/rec-hot" 0.05 &&
		ksyms_true ks4.data
	'
fi

test_done
