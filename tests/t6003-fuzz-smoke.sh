#!/bin/sh
# t6003: the libFuzzer harnesses (tests/fuzz.mk: recordings, raw files, small parsers,
# perf.data, ELF) run a few seconds each on their seed corpora, and every input a harness
# once failed on (tests/fuzz/regress/NAME/: a crash, a leak, a timeout, an allocation past
# the malloc limit) runs clean: a smoke test; `make fuzz FUZZ_SECONDS=N` is the real run.
. "$(dirname "$0")/lib.sh"
FUZZ="$BUILD/fuzz/fuzz-recording"
[ -x "$FUZZ" ] || test_skip_all "no $FUZZ (clang with libFuzzer: make builds it when clang is installed)"
export DLPROF_DATADIR="$TOP/share"
# as tests/fuzz.mk runs them: one malloc over 256 MiB is a finding (an oom-*)
LIMITS="-rss_limit_mb=2048 -malloc_limit_mb=256 -timeout=20"

test_expect_success 'the inputs a harness once failed on run clean' '
	"$FUZZ" $LIMITS -close_fd_mask=2 "$SRC"/fuzz/regress/recording/* >out 2>&1 || { cat out; exit 1; } &&
	"$BUILD/fuzz/fuzz-parsers" $LIMITS -close_fd_mask=2 "$SRC"/fuzz/regress/parsers/* >out 2>&1 ||
		{ cat out; exit 1; } &&
	"$BUILD/fuzz/fuzz-perfdata" $LIMITS -close_fd_mask=2 "$SRC"/fuzz/regress/perfdata/* >out 2>&1 ||
		{ cat out; exit 1; } &&
	"$BUILD/fuzz/fuzz-elf" $LIMITS -close_fd_mask=2 "$SRC"/fuzz/regress/elf/* >out 2>&1 ||
		{ cat out; exit 1; }
'

# smoke NAME BINARY [VAR=VALUE]: BINARY 5 s on the seeds of NAME, no finding
smoke() {
	mkdir -p "c-$1" && cp "$SRC"/fuzz/corpus/"$1"/* "c-$1"/ &&
	env $3 "$BUILD/fuzz/$2" -max_total_time=5 $LIMITS -close_fd_mask=2 \
		-print_final_stats=1 -artifact_prefix=./ "c-$1" >out 2>&1 || { tail -40 out; return 1; }
	grep -E "DONE|number_of_executed_units" out &&
	! ls crash-* leak-* timeout-* oom-* slow-unit-* 2>/dev/null
}

test_expect_success 'records harness: 5 s on the seeds, no finding' '
	smoke recording fuzz-recording
'

test_expect_success 'raw-file harness: 5 s on the seeds, no finding' '
	smoke recording-raw fuzz-recording FUZZ_RAW=1
'

test_expect_success 'parsers harness (rules, perf map, jitdump, ITT): 5 s, no finding' '
	smoke parsers fuzz-parsers
'

test_expect_success 'perf.data harness (files, attr + records): 5 s, no finding' '
	smoke perfdata fuzz-perfdata
'

test_expect_success 'ELF harness (check-isa scan, symbols, DWARF, CFI unwinding): 5 s, no finding' '
	smoke elf fuzz-elf
'

test_done
