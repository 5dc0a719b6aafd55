#!/bin/sh
# t8006-python-bpf.sh - the BPF program that reads Python stacks in the kernel
# (lib/record/python/pybpf.bpf.c: built by clang, loaded by libbpf; t8005 checks what it reads).
# Where the kernel runs it: each of its two programs loads, and the verifier's work stays
# small, for every record pays it before its command starts (64,800 instructions took
# 0.1 s): the Python frame walk and the native walk's stack reads, its mapping search,
# its row search in a block, a frame's end, a signal frame, a frame-pointer step, a
# scan's start and its test for a call before a return address are global functions,
# which the verifier follows once each (the Python walk: 16 frames, called for each 16;
# the reader alone 3,700 instructions on 6.18, with the native walk 9,100, 9.5 ms).
# The program without code objects (DLPROF_NO_BPF_CODES=1, what a kernel without
# bpf_loop gets) follows its 256 frames one by one (21,100: written with the
# frame's flags branched on, 52,000; with each of the walk's 512 ways out followed on to
# the end, 760,000), and reads the stacks as the other does: the known split of
# py_known.py, its lines and recursion (as t8000).
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS
/usr/bin/python3 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' ||
	test_skip_all "/usr/bin/python3 is not CPython 3.11"
W="$SRC/workloads/py_known.py"

# verified NAME ERR MAX: ERR says program NAME was loaded, with what the verifier
# processed (0 where the kernel does not say: before 5.16) under MAX
verified() {
	/usr/bin/python3 - "$1" "$2" "$3" <<-\EOF
	import re, sys
	m = re.search(r"dlprof: BPF program (\S+): (\d+) instructions, (\d+) processed by the "
	              r"verifier", open(sys.argv[2]).read())
	assert m and m.group(1) == sys.argv[1], m and m.group(0)
	print(m.group(0))
	assert int(m.group(2)) > 0 and int(m.group(3)) < int(sys.argv[3]), m.group(0)
	EOF
}

# test-kbtf: the kernel's struct offsets the program reads its sample's time by (kbtf.h),
# as libbpf's own parse of the same BTF gives them
if test -e /sys/kernel/btf/vmlinux; then
	test_unit test-kbtf
else
	test_skip 'test-kbtf' 'this kernel has no BTF'
fi

# the end line: nearly every sample read in the kernel
all_in_kernel() {
	/usr/bin/python3 - "$1" <<-\EOF
	import re, sys
	l = [l for l in open(sys.argv[1]) if l.startswith("dlprof: python:")][0]
	total = int(re.search(r"python: (\d+) samples read", l).group(1))
	kern = int(re.search(r"(\d+) read in the kernel", l).group(1))
	print(kern, "of", total, "read in the kernel")
	assert kern >= 0.95 * total, (kern, total)
	EOF
}

test_expect_success 'with code objects: loaded, under 10,000 instructions' '
	DLPROF_KSTACK=0 DLPROF_DEBUG_BPF=1 "$DLPROF" record -o k.data -- /usr/bin/python3 \
		"$W" 2 k.json 2>err && cat err &&
	if grep -q "read in the kernel at the sample" err; then
		touch have-kernel && verified dlprof_py err 10000 && all_in_kernel err
	else
		grep -q "read from outside, .* (in the kernel: " err
	fi
'

# with the native walk (the default): the one program, walk and reader (9,100
# instructions on 6.18; 16,700 while the walk's turn was followed once for each reason
# its row look-up could give; three programs of it once took 0.3 s to verify)
if test -e "$TRASH/have-kernel"; then
	test_expect_success 'with the native walk: one program, under 25,000 instructions' '
		DLPROF_DEBUG_BPF=1 "$DLPROF" record -o w.data -- /usr/bin/python3 "$W" 2 \
			w.json 2>err && cat err &&
		verified dlprof_py err 25000 && all_in_kernel err &&
		test "$(grep -c "dlprof: BPF program dlprof_py" err)" = 1
	'
fi

if test -e "$TRASH/have-kernel"; then
	test_expect_success 'chains only (DLPROF_NO_BPF_CODES=1): loaded, the known split' '
		DLPROF_NO_BPF_CODES=1 DLPROF_DEBUG_BPF=1 "$DLPROF" record -o c.data -- \
			/usr/bin/python3 "$W" 3 c.json 2>err && cat err &&
		verified dlprof_py_chain err 50000 && all_in_kernel err &&
		grep -q "; code objects read from outside (DLPROF_NO_BPF_CODES is set)" err &&
		"$DLPROF" fold -i c.data >c.fold &&
		/usr/bin/python3 "$SRC/tools/py-known-check.py" shares c.fold c.json &&
		/usr/bin/python3 "$SRC/tools/py-known-check.py" lines c.fold c.json
	'
else
	test_skip 'chains only (DLPROF_NO_BPF_CODES=1)' 'the kernel does not run the reader here'
fi

# The ring is read every 100 ms at least; the program wakes record once it is half full.
# py_codes.py meets a new code object at nearly every sample, each a record of its line
# table: at 2999 Hz a ring of 64 KiB (DLPROF_BPF_RING_KB) without the wakeups dropped
# 1,712 of ~4,500 reads (256 KiB: 45), with them none
if test -e "$TRASH/have-kernel"; then
	test_expect_success 'a ring smaller than 100 ms of reads: record woken to drain it, none dropped' '
		DLPROF_BPF_RING_KB=64 "$DLPROF" record -F 2999 -o r.data -- /usr/bin/python3 \
			"$SRC/workloads/py_codes.py" "$BUILD/tests/workloads/libmemknown.so" 1.5 \
			>/dev/null 2>err && cat err &&
		test_grep ", 0 lost," err && ! grep "dropped" err && all_in_kernel err
	'
fi

test_done
