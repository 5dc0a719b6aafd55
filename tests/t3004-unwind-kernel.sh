#!/bin/sh
# t3004-unwind-kernel.sh - native stacks walked in the kernel (DLPROF_KSTACK=1: the walk
# runs beside the stack copy, lib/record/kstack.c), held to the copy's walk of the same
# samples: where both ended, the same frames in 99.5% of samples or more.  Workloads
# whose stacks are known: a stripped library without frame pointers (unw-libmain), JIT
# code without CFI that the walk must scan past (unw-jit), and the demo (oneDNN's JIT
# convolution under two OpenMP threads).  The program stays far from the verifier's
# limit of 1,000,000 instructions.  Where the kernel will not run the walk (no BPF, no
# bpf_loop), the end line says nothing of it and the file is skipped.
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS

# agree ERR [MIN_COMPARED_PCT]: the end line of ERR says the kernel walked nearly every
# sample, and that where both walks ended they agree
agree() {
	/usr/bin/python3 - "$1" "${2:-50}" <<-\EOF
	import re, sys
	l = [l for l in open(sys.argv[1]) if l.startswith("dlprof: native stacks walked")][0]
	print(l.strip())
	g = lambda p: int(re.search(p, l).group(1))
	compared, samples = g(r"(\d+) of \d+ samples"), g(r"of (\d+) samples")
	same, further, differ = g(r"(\d+) the same"), g(r"(\d+) further"), g(r"(\d+) different")
	ended = same + further + differ
	assert compared >= 0.95 * samples, (compared, samples)
	assert ended >= float(sys.argv[2]) / 100 * compared, (ended, compared)
	assert same + further >= 0.995 * ended, (same, further, ended)
	assert "dropped" not in l, l
	EOF
}

test_expect_success 'the walk loads, the verifier well within its limit' '
	DLPROF_KSTACK=1 DLPROF_DEBUG_BPF=1 "$DLPROF" record -o l.data -- \
		"$BUILD/tests/unw-libmain" >/dev/null 2>err; cat err &&
	if grep -q "^dlprof: native stacks walked in the kernel" err; then
		touch have-kernel &&
		n=$(sed -n "s/^dlprof: BPF program dlprof_py: [0-9]* instructions, \([0-9]*\) processed.*/\1/p" err) &&
		test "$n" -gt 0 && test "$n" -lt 200000
	fi
'
test -e "$TRASH/have-kernel" || test_skip_all "the kernel does not run the native walk here"

test_expect_success 'a stripped library without frame pointers: the copy'"'"'s stacks' '
	agree err
'

test_expect_success 'JIT code without CFI: scanned past as the copy'"'"'s walk does' '
	DLPROF_KSTACK=1 "$DLPROF" record -o j.data -- "$BUILD/tests/unw-jit" 2 \
		>/dev/null 2>err && agree err 60
'

test_expect_success 'the demo: oneDNN JIT code, two OpenMP threads' '
	DLPROF_KSTACK=1 "$DLPROF" record -o d.data -- "$BUILD/examples/demo" \
		>/dev/null 2>err && agree err 60
'

test_done
