#!/bin/sh
# make check-e2e: over 20 s here, run apart from make check (tests/README.md)
# t3004-unwind-kernel.sh - native stacks walked in the kernel (lib/record/kstack.c).
# DLPROF_KSTACK=compare: the walk runs beside the stack copy and is held to the copy's
# walk of the same samples: where both ended, the same frames in 99.5% of samples or
# more.  DLPROF_KSTACK=1: the walk replaces the copy where it reached the thread's root;
# the stacks are the known ones.  With --keep-stacks the kernel's stacks are recorded
# beside the copies, and report --check-unwind holds them to report's walks of the
# copies; with --no-python the program walks native stacks alone.  A page of libc's code
# re-protected (UCX's patching) leaves the rest of libc walked; a stack deeper than the
# copy, rooted by the copy's walk through the thread's earlier walks, is the kernel's
# walk of it; a JIT kernel that takes rbp for itself leaves the frames above it walked;
# a signal handler's stacks go on through the signal frame (unw-signal); a stale return
# address found by a scan, whose step leads nowhere, is dropped as the copy's walk drops it.
# An executable without a build-id (no table, no wants of its own) beside one with them.
# Workloads whose stacks are known: a stripped library
# without frame pointers (unw-libmain: main -> unw_libmain_loop -> unw_lib_spin), JIT
# code without CFI that the walk must scan past (unw-jit: main -> jit_driver -> KERNEL),
# and the demo (oneDNN's JIT convolution under two OpenMP threads).  The program stays
# far from the verifier's limit of 1,000,000 instructions.  Where the kernel will not
# run the walk (no BPF, no bpf_loop), the end line says nothing of it: skipped.  Its
# tables are its own (not the suite's cache, lib.sh): made once walks stopped for them
# 16 times, as on a first run.
. "$(dirname "$0")/lib.sh"
. "$SRC/record-lib.sh"
unset DLPROF_KTAB_DIR
test_require PERF_EVENTS

trap 'jit_maps_cleanup; test_cleanup' EXIT

# agree ERR [MIN_ENDED_PCT]: the end line of ERR says the kernel walked nearly every
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
	assert "dropped" not in l and "lost" not in l, l
	EOF
}

# instead ERR MIN_PCT: at least MIN_PCT% of the samples walked in place of their copy
instead() {
	/usr/bin/python3 - "$1" "$2" <<-\EOF
	import re, sys
	l = [l for l in open(sys.argv[1]) if l.startswith("dlprof: native stacks walked")][0]
	print(l.strip())
	m = re.search(r"(\d+) of (\d+) samples in place of their stack copy", l)
	assert m and int(m.group(1)) >= float(sys.argv[2]) / 100 * int(m.group(2)), l
	assert "dropped" not in l and "lost" not in l, l
	EOF
}

# share FILE PATTERN MIN_PCT: of FILE's folded samples, at least MIN_PCT% on stacks
# matching PATTERN (an ERE over "comm;frames... count")
share() {
	"$DLPROF" fold -i "$1" >"$1.folded" &&
	total=$(awk '{ s += $NF } END { print s }' "$1.folded") &&
	good=$(grep -E "$2" "$1.folded" | awk '{ s += $NF } END { print s + 0 }') &&
	echo "$1: $good of $total samples on the known stack" &&
	test "$total" -gt 100 && test $((good * 100)) -ge $((total * $3))
}

test_expect_success 'the walk loads, the verifier well within its limit' '
	DLPROF_KSTACK=compare DLPROF_DEBUG_BPF=1 "$DLPROF" record -o l.data -- \
		"$BUILD/tests/unw-libmain" >/dev/null 2>err; cat err &&
	if grep -q "^dlprof: native stacks walked in the kernel" err; then
		touch have-kernel &&
		n=$(sed -n "s/^dlprof: BPF program dlprof_py: [0-9]* instructions, \([0-9]*\) processed.*/\1/p" err) &&
		test "$n" -gt 0 && test "$n" -lt 200000
	fi
'
test -e "$TRASH/have-kernel" || test_skip_all "the kernel does not run the native walk here"

test_expect_success 'beside the copy: a stripped library without frame pointers' '
	agree err
'

test_expect_success 'beside the copy: JIT code without CFI, scanned past as the copy is' '
	JITDUMPDIR=$TRASH DLPROF_KSTACK=compare "$DLPROF" record -o j.data -- \
		"$BUILD/tests/unw-jit" >wl-beside.out 2>err && agree err 60
'

test_expect_success 'in place of the copy: the stripped library, its known stack' '
	DLPROF_KSTACK=1 "$DLPROF" record -o li.data -- "$BUILD/tests/unw-libmain" \
		>/dev/null 2>err && instead err 50 &&
	share li.data "^unw-libmain;_start;.*;main;unw_libmain_loop[^;]*;unw_lib_spin;[^;]+ [0-9]+\$" 90
'

# UCX (loaded by torch 2.6 in Debian 13) patches libc: an mprotect of one page of its
# code, which the kernel tells as a mapping of that page.  The walk used to forget the
# rest of libc's code then: 0 of 1,010 samples walked in place (every stack passes
# __libc_start_call_main); 838 to 856 after, as without the mprotect
test_expect_success 'a page of libc re-protected (as UCX patches it): the rest still walked' '
	DLPROF_KSTACK=1 "$DLPROF" record -o mp.data -- "$BUILD/tests/unw-libmain" mprotect \
		>/dev/null 2>err && instead err 50 &&
	share mp.data "^unw-libmain;_start;.*;main;unw_libmain_loop[^;]*;unw_lib_spin;[^;]+ [0-9]+\$" 90
'

# unw-deep: a stack of 75 KiB whose outer frames lie past the 32 KiB copy; the walk while
# recording takes them from the thread's earlier walks (t1008), the kernel's walk reads
# them: the two agree on every sample both took to the root
test_expect_success 'a stack deeper than its copy: its outer frames as the kernel walks them' '
	DLPROF_KSTACK=compare "$DLPROF" record -o deep.data -- "$BUILD/tests/unw-deep" 1 \
		>/dev/null 2>err && agree err &&
	l=$(grep "^dlprof: native stacks walked" err) &&
	set -- $(echo "$l" | sed -n "s/.*rooted through the thread.s last walk, \([0-9]*\) the same as the kernel.s whole walk, \([0-9]*\) different.*/\1 \2/p") &&
	echo "deeper than the copy: $1 the same as the kernel walk, $2 different" &&
	test "$1" -ge 300 && test "$2" = 0
'

# --keep-stacks records the kernel's walks of those stacks, whole where the copy ended:
# report --check-unwind finds them the same as its walk of the copy as far as the copy
# reaches ("deeper than their copy"), none different (1,107 of 1,358 were "different")
test_expect_success 'a stack deeper than its copy, recorded as the kernel walked it: report holds it to the copy' '
	DLPROF_KSTACK=compare "$DLPROF" record --keep-stacks -o deepk.data -- \
		"$BUILD/tests/unw-deep" 1 >/dev/null 2>err && agree err &&
	"$DLPROF" report -i deepk.data --check-unwind --format json -n 1 >deepk.json &&
	json_check deepk.json "c = j.header.unwind_check" "print(c)" \
		"c.checked >= 500" "c.differs == 0" "c.past_copy >= 300"
'

# The walks' ring is read every 100 ms at least; the program wakes record once it is
# half full.  unw-deep at 2999 Hz writes ~3 MB a second of 120-frame walks: of a ring of
# 256 KiB (DLPROF_BPF_RING_KB), without the wakeups 425 of ~4,100 walks were dropped
# (128 KiB: 1,587), with them none
test_expect_success 'a ring smaller than 100 ms of walks: record woken to drain it, none dropped' '
	DLPROF_BPF_RING_KB=256 DLPROF_KSTACK=1 "$DLPROF" record -F 2999 --no-python \
		-o ring.data -- "$BUILD/tests/unw-deep" 1 >/dev/null 2>err &&
	test_grep ", 0 lost," err && ! grep "dropped" err && instead err 90
'

# unw-signal: the handler's stacks go through the signal frame (__restore_rt), whose
# rule (KR_SIGNAL) takes the interrupted code's rip, rsp and rbp from the ucontext; the
# frame after it is where the signal came, not a return address.  Before, the walk
# stopped there: 491 of 1,095 samples walked in place of their copy.
test_expect_success 'through a signal frame: walked in place of the copy, as the copy'"'"'s walk goes' '
	DLPROF_KSTACK=compare "$DLPROF" record -o sigc.data -- "$BUILD/tests/unw-signal" 1 \
		>/dev/null 2>err && agree err &&
	DLPROF_KSTACK=1 "$DLPROF" record -o sig.data -- "$BUILD/tests/unw-signal" 1 \
		>/dev/null 2>err && instead err 85 &&
	share sig.data "^unw-signal;_start;.*;main;inner_spin(;__clock_gettime;__vdso_clock_gettime)?(;[^;]*\[signal\];handler_spin(;__clock_gettime;__vdso_clock_gettime)?)? [0-9]+\$" 95 &&
	handler=$(grep ";handler_spin" sig.data.folded | awk "{ s += \$NF } END { print s + 0 }") &&
	echo "$handler in the handler" && test "$handler" -ge 300
'

test_expect_success '--no-python (as top records): the program loaded for the walk alone' '
	DLPROF_KSTACK=1 "$DLPROF" record --no-python -o np.data -- "$BUILD/tests/unw-libmain" \
		>/dev/null 2>err && instead err 50 &&
	share np.data "^unw-libmain;_start;.*;main;unw_libmain_loop[^;]*;unw_lib_spin;[^;]+ [0-9]+\$" 90
'

test_expect_success 'in place of the copy: JIT code, main;jit_driver;KERNEL under _start' '
	JITDUMPDIR=$TRASH DLPROF_KSTACK=1 "$DLPROF" record -o ji.data -- \
		"$BUILD/tests/unw-jit" >wl.out 2>err && instead err 60 &&
	k=$(sed -n "s/^kernel //p" wl.out) &&
	share ji.data "^unw-jit;_start;.*;main;jit_driver;$k [0-9]+\$" 90 &&
	"$DLPROF" report -i ji.data >rep && cat rep &&
	sed -n "s/^# stacks: .* \([0-9]*\)\.[0-9]% recovered by scan.*/\1/p" rep >rec &&
	test "$(cat rec)" -ge 80
'

# UNW_JIT_FP=1: the JIT kernel takes rbp for itself (as oneDNN's do) under two functions
# with frame pointers: the walk reads fp_inner's slot at 0x408, fails, and scans on.  A
# failed read of a 512-byte window used to leave the window's range cached over a
# zeroed buffer: the scan read zeros and skipped main, fp_outer and fp_inner (848 of
# 1,000 samples _start;__libc_start_main;jit_driver;KERNEL, taken as whole; in the
# Debian 13 container the OpenMP workers skipped libgomp's frame)
test_expect_success 'in place of the copy: a JIT kernel that takes rbp, under frame pointers' '
	UNW_JIT_FP=1 JITDUMPDIR=$TRASH DLPROF_KSTACK=1 "$DLPROF" record -o jfp.data -- \
		"$BUILD/tests/unw-jit" >wl-fp.out 2>err && instead err 60 &&
	k=$(sed -n "s/^kernel //p" wl-fp.out) &&
	share jfp.data "^unw-jit;_start;.*;main;fp_outer;fp_inner;jit_driver;$k [0-9]+\$" 90
'

# UNW_JIT_STALE=1 too: fp_inner's frame holds a stale return address (into stale_ra),
# which the scan past fp_inner's failed read meets first; its step reads 0x7000, an
# address in no mapping.  The copy's walk takes such a frame for a dead end: it scans on
# and drops it where the scan finds another.  The kernel's walk took the address for a
# mapping not told yet and gave every sample to its copy (0 of 1,002 walked in place; in
# the Debian 13 container's CNN, 4.5% of samples so, oneDNN's JIT kernels under
# libtorch's stale words).  Now as the copy's walk, beside it and in its place.
test_expect_success 'a stale return address whose step leads nowhere: dropped, as the copy'"'"'s walk does' '
	UNW_JIT_FP=1 UNW_JIT_STALE=1 JITDUMPDIR=$TRASH DLPROF_KSTACK=compare "$DLPROF" record \
		-o jsc.data -- "$BUILD/tests/unw-jit" >/dev/null 2>err && agree err 60 &&
	UNW_JIT_FP=1 UNW_JIT_STALE=1 JITDUMPDIR=$TRASH DLPROF_KSTACK=1 "$DLPROF" record \
		-o jst.data -- "$BUILD/tests/unw-jit" >wl-st.out 2>err && instead err 60 &&
	k=$(sed -n "s/^kernel //p" wl-st.out) &&
	share jst.data "^unw-jit;_start;.*;main;fp_outer;fp_inner;jit_driver;$k [0-9]+\$" 90
'

test_expect_success '--keep-stacks, the demo: beside the copy, and the kernel'"'"'s stacks recorded, held to the copies by report' '
	DLPROF_KSTACK=1 "$DLPROF" record --keep-stacks -o dk.data -- "$BUILD/examples/demo" \
		>/dev/null 2>err && agree err 60 &&
	"$DLPROF" report -i dk.data --check-unwind --format json -n 1 >check.json &&
	/usr/bin/python3 - err check.json <<-\EOF
	import json, re, sys
	err = open(sys.argv[1]).read()
	l = [l for l in err.splitlines() if l.startswith("dlprof: native stacks walked")][0]
	m = re.search(r"the kernel.s stack recorded for (\d+)", l)
	samples = int(re.search(r"of (\d+) samples", l).group(1))
	# report checks the CPU samples; the walk also counts the switch-outs (thousands
	# on a loaded machine: 26,342 samples and 11,194 switch-outs, 37,536 walked)
	cpu = int(re.search(r"^dlprof: (\d+) samples, ", err, re.M).group(1))
	c = json.load(open(sys.argv[2]))["header"]["unwind_check"]
	print(c, m and m.group(0), "cpu samples", cpu)
	assert m and int(m.group(1)) >= 0.5 * samples, l
	assert c["checked"] >= 0.9 * cpu and c["differs"] <= 0.005 * c["checked"], c
	EOF
'

# A kept table is loaded as its file is mapped only where walks in a process of the same
# executable wanted it in an earlier run: the executable's ".wants" beside its own table
# lists them.  Every other one waits for a walk that stops for it, as a table not yet
# made does.  unw-libmain, run again after the demo and the others, loads its own few,
# not the demo's libdnnl and libgomp.  (Before, every kept table of every file mapped was
# loaded: 201 tables and 21.9 MB for the CNN, whose walks want 25 to 38.)
test_expect_success 'a second run loads the tables its executable'"'"'s walks wanted, not every one kept' '
	exe=$(readelf -n "$BUILD/tests/unw-libmain" | sed -n "s/.*Build ID: //p") &&
	lib=$(readelf -n "$BUILD/tests/libunw-lib.so" | sed -n "s/.*Build ID: //p") &&
	wants=$(find "$DLPROF_BUILDID_DIR" -name "$(echo "$exe" | cut -c3-).wants") &&
	cat "$wants" && grep -q "^$lib " "$wants" &&
	kept=$(find "$DLPROF_BUILDID_DIR" -name "*.ktab" | wc -l) &&
	DLPROF_KSTACK=1 "$DLPROF" record -o again.data -- "$BUILD/tests/unw-libmain" \
		>/dev/null 2>err && instead err 50 &&
	n=$(sed -n "s/^dlprof: native stacks walked.* \([0-9]*\) tables (\([0-9]*\) kept.*/\2/p" err) &&
	echo "tables kept: $kept; on unw-libmain'"'"'s wants: $(wc -l <"$wants"); loaded: ${n:-none}" &&
	test "${n:-0}" -ge 1 && test "$n" -le "$(wc -l <"$wants")" && test "$n" -lt "$kept"
'

# The executables' wants are kept at the end in the order their files were mapped; one
# without a build-id keeps none.  After one with a build-id whose list was read, it once
# freed that list a second time (dlprof top, watching every process, aborted at its end).
test_expect_success 'an executable without a build-id after one whose wants were read: both walked, the wants kept' '
	mkdir -p nobid &&
	objcopy --remove-section .note.gnu.build-id "$BUILD/tests/unw-libmain" nobid/unw-libmain &&
	cp "$BUILD/tests/libunw-lib.so" nobid/ &&
	! readelf -n nobid/unw-libmain | grep -q "Build ID" &&
	for i in 1 2; do
		DLPROF_KSTACK=1 "$DLPROF" record -o nobid$i.data -- \
			sh -c "\"$BUILD/tests/unw-libmain\"; nobid/unw-libmain" >/dev/null 2>err$i &&
		instead err$i 50 || return 1
	done &&
	share nobid2.data "^unw-libmain;_start;.*;main;unw_libmain_loop[^;]*;unw_lib_spin;[^;]+ [0-9]+\$" 90 &&
	exe=$(readelf -n "$BUILD/tests/unw-libmain" | sed -n "s/.*Build ID: //p") &&
	grep -q "^$(readelf -n "$BUILD/tests/libunw-lib.so" | sed -n "s/.*Build ID: //p") " \
		"$(find "$DLPROF_BUILDID_DIR" -name "$(echo "$exe" | cut -c3-).wants")"
'

test_done
