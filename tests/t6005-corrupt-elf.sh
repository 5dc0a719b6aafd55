#!/bin/sh
# t6005-corrupt-elf.sh - a file a recording names whose CFI libdw would trust to its cost:
# one CFI instruction naming DWARF register 234881023 made libdw 0.188 size a row at
# 1.8 GB (8 bytes a register).  report and check-isa refuse such a file in one line
# (report: a warning, once, the samples kept as what is known), within 256 MiB.  A sound
# file's verdict is kept in dlprof's cache while the file stays the same.
#
# The files are the elf harness's regress seeds (tests/fuzz/regress/elf/):
#   cfi-register-oom      the fuzz finding: section headers past its end, and the FDE
#   cfi-register-min      226 bytes: a PT_LOAD, PT_GNU_EH_FRAME, one CIE, one FDE over
#                         [0, 0x100) whose program is DW_CFA_same_value 234881023
#   cfi-register-symbols  an executable (rec_hot_loop at 0x4012c0, file offset 0x12c0)
#                         whose rec_hot_loop FDE begins with that instruction
. "$(dirname "$0")/lib.sh"

EDGE="$BUILD/tests/rep-edge"
SEEDS="$SRC/fuzz/regress/elf"
[ -x "$EDGE" ] || test_skip_all "no $EDGE (make check builds it)"

# bounded CMD...: CMD under a 256 MiB address-space limit
bounded() {
	(ulimit -v 262144 && exec "$@")
}

# report_one FILE OFFSET: 20 samples at OFFSET.. of FILE (mapped at 0x400000), reported
# under the limit: sets st, leaves out and err
report_one() {
	"$EDGE" "at:$2" r.dlp "$PWD/$1" &&
	{ bounded "$DLPROF" report -i r.dlp --format csv >out 2>err; st=$?; } &&
	cat err && cat out
}

test_expect_success 'setup: the corrupt files' '
	cp "$SEEDS/cfi-register-oom" liboom.so &&
	cp "$SEEDS/cfi-register-min" libmin.so &&
	cp "$SEEDS/cfi-register-symbols" symexe
'

test_expect_success 'check-isa: each refused in one line, exit 2' '
	for f in liboom.so:"section headers beyond the end of the file" \
		 libmin.so:"FDE at .eh_frame+0xd names DWARF register 234881023" \
		 symexe:"FDE at .eh_frame+0x80 names DWARF register 234881023"; do
		{ bounded "$DLPROF" check-isa --no-cache "${f%%:*}" >out 2>err; st=$?; } &&
		cat err &&
		test $st = 2 && test $(wc -l <err) = 1 &&
		test_grep -qx "dlprof: error: corrupt ELF file .${f%%:*}.: ${f#*:}" err || exit 1
	done
'

test_expect_success 'report: an FDE naming register 234881023: one warning, samples [unknown]' '
	report_one libmin.so 0x10 && test $st = 0 &&
	test $(wc -l <err) = 1 &&
	test_grep -qx "dlprof: warning: corrupt ELF file .$PWD/libmin.so.: FDE at .eh_frame+0xd names DWARF register 234881023: not using its CFI" err &&
	test_grep -qx "100.0000,20,20000000,100.0000,20,\[unknown\],libmin.so" out
'

test_expect_success 'report: the same FDE in an executable with symbols: they name its samples' '
	report_one symexe 0x12c0 && test $st = 0 &&
	test $(wc -l <err) = 1 &&
	test_grep -qx "dlprof: warning: corrupt ELF file .$PWD/symexe.: FDE at .eh_frame+0x80 names DWARF register 234881023: not using its CFI" err &&
	test_grep -qx "100.0000,20,20000000,100.0000,20,rec_hot_loop,symexe" out
'

test_expect_success 'report: section headers past the end of the file: not read, one warning' '
	report_one liboom.so 0x1300 && test $st = 0 &&
	test $(wc -l <err) = 1 &&
	test_grep -qx "dlprof: warning: corrupt ELF file .$PWD/liboom.so.: section headers beyond the end of the file: not reading it" err &&
	test_grep -qx "100.0000,20,20000000,100.0000,20,\[unknown\],liboom.so" out
'

test_expect_success 'a sound file is checked once: its verdict kept, not served once it changed' '
	export XDG_CACHE_HOME="$PWD/cache" &&
	cp "$BUILD/tests/workloads/rec-hot" good.exe &&
	report_one good.exe 0x10 && test $st = 0 && ! test -s err &&
	n=$(ls cache/dlprof/elfcheck | wc -l) && echo "verdicts kept: $n" && test "$n" -ge 1 &&
	grep -q "^1 .* $(printf %x $(stat -c %s good.exe)) " cache/dlprof/elfcheck/* &&
	cat symexe >good.exe &&
	report_one good.exe 0x12c0 && test $st = 0 &&
	test_grep -qx "dlprof: warning: corrupt ELF file .$PWD/good.exe.: FDE at .eh_frame+0x80 names DWARF register 234881023: not using its CFI" err
'

if [ -x /usr/bin/time ]; then
	test_expect_success 'report: peak RSS under 64 MB for each (not 1.8 GB)' '
		for f in libmin.so:0x10 symexe:0x12c0 liboom.so:0x1300; do
			"$EDGE" "at:${f#*:}" r.dlp "$PWD/${f%%:*}" &&
			(ulimit -v 4194304 && exec /usr/bin/time -f %M -o rss \
				"$DLPROF" report -i r.dlp >/dev/null 2>&1) &&
			echo "${f%%:*}: $(cat rss) KB" &&
			test $(cat rss) -lt 65536 || exit 1
		done
	'
else
	test_skip 'report: peak RSS under 64 MB for each' 'no /usr/bin/time'
fi

test_done
