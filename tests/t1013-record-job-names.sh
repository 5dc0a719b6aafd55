#!/bin/bash
# t1013-record-job-names.sh - record in a distributed job: -o names a file per host,
# rank and process (%h, %r from the launcher's environment, %p), so ranks sharing a
# filesystem never write one file; a %r without a rank, or an unknown %x, is refused in
# one line before anything runs.  Each recording anchors its samples' clock
# (CLOCK_MONOTONIC) to the wall clock at its start and end (META clock_start,
# clock_end), which is what puts several hosts' recordings on one time axis.
. "$(dirname "$0")/lib.sh"
. "$SRC/record-lib.sh"
test_require PERF_EVENTS

unset RANK OMPI_COMM_WORLD_RANK PMI_RANK SLURM_PROCID

test_expect_success '-o %h-%r-%p: the host, the launcher rank, dlprof pid' '
	RANK=3 "$DLPROF" record -q -o "prof-%h-%r-%p.data" -- "$WL/rec-hot" 0.2 &&
	ls prof-* >files && cat files && test "$(wc -l <files)" = 1 &&
	grep -qx "prof-$(uname -n)-3-[0-9][0-9]*\.data" files &&
	"$RECDUMP" "$(cat files)" | grep -q "^STATS "
'

test_expect_success 'the rank from Slurm, Open MPI or PMI when torchrun set none; RANK first' '
	SLURM_PROCID=5 "$DLPROF" record -q -o "s-%r.data" -- true && test -f s-5.data &&
	OMPI_COMM_WORLD_RANK=6 "$DLPROF" record -q -o "o-%r.data" -- true && test -f o-6.data &&
	PMI_RANK=7 "$DLPROF" record -q -o "p-%r.data" -- true && test -f p-7.data &&
	RANK=1 SLURM_PROCID=9 "$DLPROF" record -q -o "b-%r.data" -- true && test -f b-1.data &&
	"$DLPROF" record -q -o "pct-%%.data" -- true && test -f "pct-%.data"
'

test_expect_success '%r without a rank, or an unknown %x: one line, exit 64, nothing run' '
	set +e; "$DLPROF" record -o "x-%r.data" -- touch ran1 2>err; rc=$?; set -e &&
	cat err && test $rc = 64 && test "$(wc -l <err)" = 1 &&
	grep -q "no rank in the environment" err && ! test -e ran1 && ! ls x-* 2>/dev/null &&
	set +e; "$DLPROF" record -o "x-%q.data" -- touch ran2 2>err; rc=$?; set -e &&
	cat err && test $rc = 64 && grep -q "unknown %q" err && ! test -e ran2
'

test_expect_success 'clock_start and clock_end: the samples lie between, the wall clock agrees' '
	before=$(date +%s%N) &&
	"$DLPROF" record -q -o c.data -- "$WL/rec-hot" 0.5 &&
	after=$(date +%s%N) &&
	"$RECDUMP" c.data >dump &&
	grep "^META clock_" dump &&
	/usr/bin/python3 - "$before" "$after" dump <<-\PY
	import re, sys
	before, after = int(sys.argv[1]), int(sys.argv[2])
	text = open(sys.argv[3]).read()
	clk = {k: list(map(int, v.split())) for k, v in re.findall(r"^META (clock_start|clock_end)=(.*)$", text, re.M)}
	(m0, r0, e0), (m1, r1, e1) = clk["clock_start"], clk["clock_end"]
	times = [int(t) for t in re.findall(r"^PERF SAMPLE .* time=(\d+)", text, re.M)]
	print("samples", len(times), "span", (m1 - m0) / 1e9, "s; errors", e0, e1, "ns")
	assert len(times) > 100, len(times)
	# the samples clock is the anchors monotonic one: every sample between them
	assert m0 <= min(times) and max(times) <= m1, (m0, min(times), max(times), m1)
	# the wall clock ran as the monotonic one did (no step in half a second)
	assert abs((r1 - r0) - (m1 - m0)) < 1000000 + e0 + e1, (r1 - r0, m1 - m0)
	# and it is the time the test saw, read within a microsecond or so
	assert before <= r0 <= r1 <= after, (before, r0, r1, after)
	assert e0 < 1000000 and e1 < 1000000, (e0, e1)
	PY
'

test_done
