#!/bin/sh
# t6003: every input a libFuzzer harness (tests/fuzz.mk: recordings, raw files, small
# parsers, perf.data, ELF) once failed on (tests/fuzz/regress/NAME/: a crash, a leak, a
# timeout, an allocation past the malloc limit) runs clean.  Each harness a few seconds
# on its seeds is tests/l6003-fuzz-smoke.sh (make check-long); `make fuzz
# FUZZ_SECONDS=N` is the real run.
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

test_done
