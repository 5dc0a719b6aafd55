#!/bin/sh
# t2103-report-names.sh - the symbol table on a stripped, versioned library: an unnamed
# (FDE-bounded) function shows as "func@0x..." with its named caller, the DSO column
# drops version numbers before cutting (never in the middle), JSON keeps the full names;
# 80 and 120 columns.
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS

# unw-libmain loads libunw-lib.so through $ORIGIN: make that a symlink to a file with a
# long versioned name, which is the name the mmap records (and the report) carry
LONG=libunw-lib.so.1.2.3
ARROW=$(printf '\342\206\220')
ELL=$(printf '\342\200\246')

test_expect_success 'record unw-libmain with its library under a long versioned name' '
	mkdir bin &&
	cp "$BUILD/tests/unw-libmain" bin/ &&
	cp "$BUILD/tests/libunw-lib.so" bin/$LONG &&
	ln -s $LONG bin/libunw-lib.so &&
	"$DLPROF" record --call-graph dwarf -o dw.data -- bin/unw-libmain >/dev/null 2>err
'

# fits FILE COLUMNS: no line wider than COLUMNS characters (the arrow and the ellipsis
# are one column each; awk here counts bytes)
fits() {
	sed "s/$ARROW/</g; s/$ELL/./g" "$1" |
	awk -v w="$2" "{ if (length(\$0) > w) { print \"too wide: \" \$0; bad = 1 } } END { exit bad }"
}

# the table row of the library's static inner loop (the hottest unnamed function)
fde_row() {
	grep -A1000 "Self%" "$1" | grep "func@0x" | head -1
}

test_expect_success 'json: the inner loop keeps its full dso!func name and names its caller' '
	"$DLPROF" report -i dw.data --format json >j &&
	grep "\"symbol\":\"$LONG!func@0x" j | head -1 >row &&
	cat row &&
	test_grep "\"dso\":\"$LONG\"" row &&
	test_grep "\"caller\":\"unw_lib_spin\"" row
'

test_expect_success '80 columns: func@0x... <- unw_lib_spin, DSO without its version tail' '
	COLUMNS=80 "$DLPROF" report -i dw.data >t80 && cat t80 &&
	fde_row t80 >r80 &&
	test_grep -E " func@0x[0-9a-f]+ $ARROW unw_lib_spin +libunw-lib.so.1\$" r80 &&
	! grep "$LONG!" r80 &&
	fits t80 80
'

test_expect_success '80 columns: DSO names are never cut in the middle' '
	grep -A1000 "Self%" t80 | tail -n +2 | awk "{ print \$NF }" >dsos &&
	cat dsos &&
	! grep "$ELL." dsos &&
	grep "^libunw-lib" dsos | while read d; do
		case "$LONG" in "${d%$ELL}"*) ;; *) echo "not a prefix: $d"; exit 1 ;; esac
	done
'

test_expect_success '120 columns: the whole DSO name fits and the symbol column is wider' '
	COLUMNS=120 "$DLPROF" report -i dw.data >t120 &&
	fde_row t120 >r120 && cat r120 &&
	test_grep -E "func@0x[0-9a-f]+ $ARROW unw_lib_spin +$LONG\$" r120 &&
	fits t120 120
'

test_expect_success 'header: dwarf stacks say how many were recovered by scan (none here: all CFI)' '
	test_grep -E "^# stacks: .*% named, 0\.[0-9]% recovered by scan" t80 &&
	test_grep "\"recovered_stacks\":[0-9]" j
'

test_done
