#!/bin/sh
# make check-e2e: over 20 s here, run apart from make check (tests/README.md)
# t7003: `make demo` on a fresh copy of the tree (the README's first command) builds every
# helper record loads and reports the demo with its oneDNN primitives, no warning; plain
# `make`, `make check` and `make install` list them too, and the plain build records the
# demo without a warning.  (What record says when a helper is missing: t1012.)
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS DNNL OPENBLAS
DEMO="$BUILD/examples/demo"
[ -x "$DEMO" ] || test_skip_all "build/examples/demo not built"
command -v git >/dev/null 2>&1 && [ -e "$TOP/.git" ] || test_skip_all "not a git checkout"
unset ONEDNN_JIT_PROFILE DNNL_JIT_PROFILE INTEL_LIBITTNOTIFY64 INTEL_ITTNOTIFY_GROUPS \
	DLPROF_LIBDIR ONEDNN_ITT_TASK_LEVEL DNNL_ITT_TASK_LEVEL ONEDNN_MAX_CPU_ISA DNNL_MAX_CPU_ISA
export OMP_NUM_THREADS=2
T="$TRASH/main"

test_expect_success 'make demo in a fresh copy of the tree: the report, no warning' '
	# what CI and a newcomer have: the tree git knows (no build/), ../shared beside it
	mkdir -p "$T" &&
	(cd "$TOP" && git ls-files -co --exclude-standard -z | xargs -0 tar cf -) | (cd "$T" && tar xf -) &&
	if [ -d "$TOP/../shared" ]; then ln -s "$(cd "$TOP/../shared" && pwd)" "$TRASH/shared"; fi &&
	# the README'"'"'s first command alone (-O0 only to build faster)
	make -C "$T" -j2 CFLAGS="-O0" demo >demo.log 2>&1 || { tail -30 demo.log; exit 1; } &&
	sed -n "/dlprof record/,\$p" demo.log &&
	! grep -in "warning" demo.log &&
	test_grep -q "^Family " demo.log &&
	test -x "$T/dlprof" && test -s "$T/build/libdlprof-itt.so" && test -s "$T/build/libdlprof-mem.so"
'

test_expect_success 'the demo'"'"'s recording has its oneDNN primitives as dnnl:* operators' '
	"$T/dlprof" report -i "$T/build/demo.data" --sort op >demo-op.txt && cat demo-op.txt &&
	test_grep -q "^dnnl:convolution " demo-op.txt && test_grep -q "^dnnl:reorder " demo-op.txt &&
	! grep -q "^# warning" demo-op.txt
'

test_expect_success 'plain make, make check (check-build) and make install list every helper record loads' '
	{ make -C "$T" -pq CFLAGS="-O0" nothing >db.txt 2>/dev/null || :; } &&
	helpers=$(sed -n "s/^HELPERS := //p" db.txt) && echo "helpers: $helpers" &&
	test -n "$helpers" &&
	for t in all demo check-build install; do
		line=$(grep "^$t:" db.txt) && echo "$line" | cut -c1-120 &&
		for h in $helpers; do
			case " $line " in *" $h "*) ;; *) echo "$t misses $h"; exit 1;; esac
		done
	done &&
	for t in check check-e2e check-long; do
		sed -n "/^$t:/,/^\$/p" db.txt | grep "^	" >recipe &&
		{ grep -q "check-build" recipe || { echo "$t does not build check-build"; exit 1; }; }
	done
'

test_expect_success 'the plain build records the demo with its dnnl:* operators, no warning' '
	"$T/dlprof" record -q -o ok.data -- "$DEMO" -n 20 >/dev/null 2>err &&
	cat err && ! test -s err &&
	"$T/dlprof" report -i ok.data --sort op >op.txt && cat op.txt &&
	test_grep -q "^dnnl:convolution " op.txt && ! grep -q "^# warning" op.txt
'
test_done
