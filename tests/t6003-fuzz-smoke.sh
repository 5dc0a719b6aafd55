#!/bin/sh
# t6003: the libFuzzer harnesses (tests/fuzz.mk: recordings, raw files, small parsers,
# perf.data, ELF) run a few seconds each on their seed corpora, and every input a harness once crashed on (tests/fuzz/regress/NAME/) runs
# clean: a smoke test; `make fuzz FUZZ_SECONDS=N` is the real run.
. "$(dirname "$0")/lib.sh"
FUZZ="$BUILD/fuzz/fuzz-recording"
[ -x "$FUZZ" ] || test_skip_all "no $FUZZ (clang with libFuzzer: make builds it when clang is installed)"
export DLPROF_DATADIR="$TOP/share"

test_expect_success 'the inputs that once crashed run clean' '
	"$FUZZ" -close_fd_mask=2 "$SRC"/fuzz/regress/recording/* >out 2>&1 || { cat out; exit 1; } &&
	"$BUILD/fuzz/fuzz-parsers" -close_fd_mask=2 "$SRC"/fuzz/regress/parsers/* >out 2>&1 ||
		{ cat out; exit 1; } &&
	"$BUILD/fuzz/fuzz-perfdata" -close_fd_mask=2 "$SRC"/fuzz/regress/perfdata/* >out 2>&1 ||
		{ cat out; exit 1; } &&
	"$BUILD/fuzz/fuzz-elf" -close_fd_mask=2 "$SRC"/fuzz/regress/elf/* >out 2>&1 ||
		{ cat out; exit 1; }
'

test_expect_success 'records harness: 5 s on the seeds, no finding' '
	mkdir -p c1 && cp "$SRC"/fuzz/corpus/recording/* c1/ &&
	"$FUZZ" -max_total_time=5 -rss_limit_mb=2048 -timeout=20 -close_fd_mask=2 \
		-print_final_stats=1 -artifact_prefix=./ c1 >out 2>&1 || { tail -40 out; exit 1; } &&
	grep -E "DONE|number_of_executed_units" out && ! ls crash-* leak-* timeout-* 2>/dev/null
'

test_expect_success 'raw-file harness: 5 s on the seeds, no finding' '
	mkdir -p c2 && cp "$SRC"/fuzz/corpus/recording-raw/* c2/ &&
	FUZZ_RAW=1 "$FUZZ" -max_total_time=5 -rss_limit_mb=2048 -timeout=20 -close_fd_mask=2 \
		-print_final_stats=1 -artifact_prefix=./ c2 >out 2>&1 || { tail -40 out; exit 1; } &&
	grep -E "DONE|number_of_executed_units" out && ! ls crash-* leak-* timeout-* 2>/dev/null
'

test_expect_success 'parsers harness (rules, perf map, jitdump, ITT): 5 s, no finding' '
	P="$BUILD/fuzz/fuzz-parsers" &&
	mkdir -p c3 && cp "$SRC"/fuzz/corpus/parsers/* c3/ &&
	"$P" -max_total_time=5 -rss_limit_mb=2048 -timeout=20 -close_fd_mask=2 \
		-print_final_stats=1 -artifact_prefix=./ c3 >out 2>&1 || { tail -40 out; exit 1; } &&
	grep -E "DONE|number_of_executed_units" out && ! ls crash-* leak-* timeout-* 2>/dev/null
'

test_expect_success 'perf.data harness (files, attr + records): 5 s, no finding' '
	mkdir -p c4 && cp "$SRC"/fuzz/corpus/perfdata/* c4/ &&
	"$BUILD/fuzz/fuzz-perfdata" -max_total_time=5 -rss_limit_mb=2048 -timeout=20 -close_fd_mask=2 \
		-print_final_stats=1 -artifact_prefix=./ c4 >out 2>&1 || { tail -40 out; exit 1; } &&
	grep -E "DONE|number_of_executed_units" out && ! ls crash-* leak-* timeout-* 2>/dev/null
'

test_expect_success 'ELF harness (check-isa scan, symbols, DWARF, CFI unwinding): 5 s, no finding' '
	mkdir -p c5 && cp "$SRC"/fuzz/corpus/elf/* c5/ &&
	"$BUILD/fuzz/fuzz-elf" -max_total_time=5 -rss_limit_mb=2048 -timeout=20 -close_fd_mask=2 \
		-print_final_stats=1 -artifact_prefix=./ c5 >out 2>&1 || { tail -40 out; exit 1; } &&
	grep -E "DONE|number_of_executed_units" out && ! ls crash-* leak-* timeout-* 2>/dev/null
'

test_done
