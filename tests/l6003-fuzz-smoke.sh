#!/bin/sh
# l6003 (make check-long): the libFuzzer harnesses (tests/fuzz.mk: recordings, raw files,
# small parsers, perf.data, ELF) run 5 s each on their seed corpora with no finding: a
# smoke test; `make fuzz FUZZ_SECONDS=N` is the real run, t6003 the inputs once failed on.
. "$(dirname "$0")/lib.sh"
FUZZ="$BUILD/fuzz/fuzz-recording"
[ -x "$FUZZ" ] || test_skip_all "no $FUZZ (clang with libFuzzer: make builds it when clang is installed)"
export DLPROF_DATADIR="$TOP/share"
# as tests/fuzz.mk runs them: one malloc over 256 MiB is a finding (an oom-*)
LIMITS="-rss_limit_mb=2048 -malloc_limit_mb=256 -timeout=20"

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
