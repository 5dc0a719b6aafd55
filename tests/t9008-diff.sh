#!/bin/sh
# t9008-diff.sh - dlprof diff: two runs of a known workload (the same hot loop for 0.3 s
# and for 0.6 s of CPU, then a different one); each side's counts must be that
# recording's own, rows ordered by the change of time, every key of either side shown.
. "$(dirname "$0")/lib.sh"
. "$SRC/record-lib.sh"
test_require PERF_EVENTS

cat >"$TRASH/fam.rules" <<'RULES'
hot-loop    sym=rec_hot_loop
RULES

# col FILE NAME COLUMN: the COLUMN-th field of NAME's row in a diff/report CSV
col() {
	awk -F, -v n="\"$2\"" -v c="$3" '$1 == n { print $c }' "$1"
}

test_expect_success 'record the hot loop for 0.3 s and for 0.6 s, then two threads' '
	"$DLPROF" record -q -o base.data -- "$WL/rec-hot" 0.3 &&
	"$DLPROF" record -q -o new.data -- "$WL/rec-hot" 0.6 &&
	"$DLPROF" record -q -o other.data -- "$WL/rec-threads" 2 0.2
'

test_expect_success 'by symbol: each side counts what its own report counts' '
	"$DLPROF" diff --sort sym --format csv base.data new.data >d.csv && cat d.csv &&
	"$DLPROF" report -i base.data --format csv >b.csv &&
	"$DLPROF" report -i new.data --format csv >n.csv &&
	nb=$(awk -F, "\$6 == \"rec_hot_loop\" { print \$2 }" b.csv) &&
	nn=$(awk -F, "\$6 == \"rec_hot_loop\" { print \$2 }" n.csv) &&
	echo "report: $nb then $nn" &&
	test "$(col d.csv "rec_hot_loop [rec-hot]" 2)" = "$nb" &&
	test "$(col d.csv "rec_hot_loop [rec-hot]" 3)" = "$nn" &&
	test "$nn" -gt "$nb" &&
	sed -n 2p d.csv | test_grep -q "^\"rec_hot_loop \[rec-hot\]\"," &&
	delta=$(col d.csv "rec_hot_loop [rec-hot]" 8) && echo "change $delta ns" &&
	test "$delta" -gt 200000000 && test "$delta" -lt 400000000
'

test_expect_success 'by family (--families): the rule'"'"'s family; shares sum to each side' '
	"$DLPROF" diff --families "$TRASH/fam.rules" --format csv base.data new.data >f.csv &&
	cat f.csv &&
	head -1 f.csv | test_grep -q "^family," &&
	test "$(col f.csv hot-loop 2)" = "$(col d.csv "rec_hot_loop [rec-hot]" 2)" &&
	sb=$(awk -F, "NR > 1 { s += \$2 } END { print s }" f.csv) &&
	sn=$(awk -F, "NR > 1 { s += \$3 } END { print s }" f.csv) &&
	test "$sb" = "$("$RECDUMP" base.data | grep "^PERF SAMPLE" | grep -vc " ev=context-switches")" &&
	test "$sn" = "$("$RECDUMP" new.data | grep "^PERF SAMPLE" | grep -vc " ev=context-switches")"
'

test_expect_success 'a function only one side has: its row, "-" for the other side' '
	"$DLPROF" diff --sort sym base.data other.data >t.txt && cat t.txt &&
	grep " rec_hot_loop " t.txt | test_grep -qE "^ *(9[0-9]|100)\.[0-9]+% +0\.00% +[0-9.]+ ms +- +-[0-9.]+ ms" &&
	grep " rec_thread_work " t.txt | test_grep -qE "^ +0\.00% +[0-9.]+% +- +[0-9.]+ ms +\+[0-9.]+ ms" &&
	/usr/bin/python3 -c "
import sys
wide = [l for l in open(\"t.txt\", encoding=\"utf-8\").read().splitlines() if len(l) > 80]
sys.exit(\"too wide: %r\" % wide if wide else 0)
"
'

test_expect_success 'by operator: each side sums to its samples' '
	"$DLPROF" diff --sort op --format json base.data new.data >o.json &&
	json_check o.json <<-\PY
	sum(r.base_samples for r in j.rows) == j.base.samples
	sum(r.new_samples for r in j.rows) == j.new.samples
	print("ok", [r.name for r in j.rows])
	PY
'

test_expect_success 'an event that stands for no time: counts, not time' '
	"$DLPROF" record -q -e cpu-clock,page-faults -o pf1.data -- "$WL/rec-hot" 0.1 &&
	"$DLPROF" record -q -e cpu-clock,page-faults -o pf2.data -- "$WL/rec-threads" 2 0.1 &&
	"$DLPROF" diff --event page-faults pf1.data pf2.data >pf.txt && cat pf.txt &&
	test "$(grep -c "samples of page-faults (events, not time)" pf.txt)" = 2 &&
	test_grep -q "^# change: [+-][0-9]* samples .*rows by how much their count changed" pf.txt &&
	sed -n "/Base%/,\$p" pf.txt | sed -n 2p | test_grep -qE "^ +[0-9.]+% +[0-9.]+% +[0-9-]+ +[0-9-]+ +[+-][0-9]+  "
'

test_expect_success 'usage errors exit 64; a missing file 2; a truncated one 1' '
	{ "$DLPROF" diff base.data 2>err; test $? = 64; } && test "$(wc -l <err)" = 1 &&
	{ "$DLPROF" diff --sort bogus base.data new.data 2>err; test $? = 64; } &&
	{ "$DLPROF" diff base.data nosuch.data 2>err; test $? = 2; } && test "$(wc -l <err)" = 1 &&
	size=$(wc -c <new.data) && head -c $((size / 2)) new.data >cut.data &&
	{ "$DLPROF" diff base.data cut.data >out 2>err; test $? = 1; } &&
	test_grep -q "truncated" err && test_grep -q "^# new: " out
'

test_done
