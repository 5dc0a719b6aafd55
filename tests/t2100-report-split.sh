#!/bin/sh
# report: top symbol and shares of a workload with a known 70/30 split; formats; exit codes
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS

WL="$BUILD/tests/workloads"


test_expect_success 'record the 70/30 workload' '
	"$DLPROF" record -g -o keep.data "$WL/rep-split" 2>err && test -s keep.data
'

test_expect_success 'the top row is rep_hot at about 70%, rep_warm second at about 30%' '
	"$DLPROF" report -i keep.data --format csv >out.csv &&
	sed -n 2p out.csv | grep ",rep_hot,rep-split\$" &&
	sed -n 3p out.csv | grep ",rep_warm,rep-split\$" &&
	hot=$(sed -n 2p out.csv | cut -d, -f1) && warm=$(sed -n 3p out.csv | cut -d, -f1) &&
	echo "hot=$hot warm=$warm" &&
	awk -v h="$hot" -v w="$warm" "BEGIN { exit !(h > 60 && h < 78 && w > 22 && w < 38) }"
'

test_expect_success 'table has the header block and fits 80 columns' '
	COLUMNS=80 "$DLPROF" report -i keep.data >out.txt &&
	test_grep "^# samples: [0-9]* in .*, lost: 0" out.txt &&
	test_grep "^# stacks: .*% reach the thread root, .*% named" out.txt &&
	test_grep "^# event:   cpu-clock" out.txt &&
	grep -A1 "Self%" out.txt | tail -1 | grep rep_hot &&
	# --no-children walks no stack: its header must not say that none reach the root
	"$DLPROF" report -i keep.data --no-children >leaf.txt &&
	test_grep "^# stacks:  not walked (--no-children" leaf.txt &&
	! grep "reach the thread root" leaf.txt &&
	# characters, not bytes: the table shortens names with "…" and marks callers with "←"
	/usr/bin/python3 -c "
import sys
wide = [l for l in open(\"out.txt\", encoding=\"utf-8\") if len(l.rstrip(\"\\n\")) > 80
	and not l.startswith((\"# command:\", \"# file:\"))]	# paths are as long as they are
sys.exit(\"too wide: %r\" % wide if wide else 0)
"
'

test_expect_success 'json is one object with version, header and rows' '
	"$DLPROF" report -i keep.data --format json >out.json &&
	json_check out.json <<-\PY
	j.version == 1
	j.rows[0].symbol == "rep_hot"
	# self sums to samples
	j.header.samples == sum(r.self for r in j.rows)
	PY
'

test_expect_success 'total of main covers rep_hot and rep_warm (children counted)' '
	"$DLPROF" report -i keep.data --sort total --format csv >tot.csv &&
	main=$(grep ",main,rep-split\$" tot.csv | cut -d, -f5) &&
	hot=$(grep ",rep_hot,rep-split\$" tot.csv | cut -d, -f5) &&
	warm=$(grep ",rep_warm,rep-split\$" tot.csv | cut -d, -f5) &&
	test "$main" -ge $((hot + warm))
'

test_expect_success '--sort dso and --sort comm group rows' '
	"$DLPROF" report -i keep.data --sort dso --format csv >dso.csv &&
	sed -n 2p dso.csv | grep ",rep-split," &&
	"$DLPROF" report -i keep.data --sort comm --format csv >comm.csv &&
	sed -n 2p comm.csv | grep ",rep-split,"
'

test_expect_success 'missing file: one-line error, exit 2' '
	"$DLPROF" report -i nonexistent.data >o 2>e; echo $? >rc;
	test "$(cat rc)" = 2 && test "$(wc -l <e)" = 1
'

test_expect_success 'corrupt file: exit 2; bad option: exit 64' '
	head -c 100 /dev/urandom >bad.data;
	"$DLPROF" report -i bad.data >o 2>e; echo $? >rc; test "$(cat rc)" = 2 &&
	"$DLPROF" report --sort nope -i keep.data >o 2>e; echo $? >rc; test "$(cat rc)" = 64
'

test_expect_success 'truncated recording: table printed, exit 1' '
	size=$(stat -c %s keep.data) &&
	head -c $((size - 7)) keep.data >trunc.data &&
	"$DLPROF" report -i trunc.data >o 2>e; echo $? >rc;
	cat e; test "$(cat rc)" = 1 && test_grep "Self%" o
'

test_done
