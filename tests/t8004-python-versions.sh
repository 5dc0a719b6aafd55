#!/bin/sh
# t8004: Python frames from the CPython 3.12 and 3.13 interpreters this machine has
# (python3.12 / python3.13 on PATH, or under pyenv's versions; skipped when there is
# none): tests/workloads/py_known.py under each, recorded like t8000 does with Debian's
# 3.11: each function's share within 3 points of its own clock, hot call lines, recursion,
# generator and coroutine in order, and most samples checked against their stack copy;
# with --memory, the bytes each C call allocates on the Python line that made it; an
# interpreter that maps its libpython late is read once it has.
# 3.13 is read through the offsets its _Py_DebugOffsets confirm (lib/record/python/pyread.c).
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS
W="$SRC/workloads/py_known.py"
LIBMK="$BUILD/tests/workloads/libmemknown.so"

found=
for v in 3.12 3.13; do
	PY=$(find_python $v) || continue
	found=1
	test_expect_success "CPython $v ($PY): record the known split" '
		"$DLPROF" record -o k$v.data -- "$PY" "$W" 2 k$v.json 2>rec$v.err &&
		cat rec$v.err && test -s k$v.json &&
		grep -E "^dlprof: python: [0-9]+ samples read \((9[0-9]|100)\.[0-9]% checked" rec$v.err &&
		"$DLPROF" fold -i k$v.data >k$v.fold &&
		"$DLPROF" report -i k$v.data >k$v.txt && sed -n 1,9p k$v.txt &&
		grep -E "^# python: +(9[0-9]|100)\.[0-9]% of samples with Python frames" k$v.txt
	'
	test_expect_success "CPython $v: each function within 3 points of its clock" '
		/usr/bin/python3 "$SRC/tools/py-known-check.py" shares k$v.fold k$v.json
	'
	test_expect_success "CPython $v: hot call lines, recursion, generator, coroutine" '
		/usr/bin/python3 "$SRC/tools/py-known-check.py" lines k$v.fold k$v.json
	'
	test_expect_success "CPython $v: the Python frames sit where the eval loop ran" '
		grep -E ";<module> \(py_known\.py:[0-9]+\);main \(py_known\.py:[0-9]+\);work_a \(py_known\.py:[0-9]+\);[^;(]*(Vectorcall|func@|builtin_sum)" k$v.fold &&
		! grep -q "_PyEval_EvalFrameDefault;[^;]*work_a (" k$v.fold
	'
	if test_have UPROBES && test -e "$LIBMK"; then
		test_expect_success "CPython $v --memory: the bytes of each C call on the line that called it, read as it allocated" '
			"$DLPROF" record -q --mem-sample 64K -o m$v.data -- "$PY" \
				"$SRC/workloads/mem_py.py" "$LIBMK" 524288 >own$v &&
			"$DLPROF" report --memory -i m$v.data --sort line --format json >m$v.json &&
			/usr/bin/python3 "$SRC/tools/mem-py-check.py" "$SRC/workloads/mem_py.py" \
				own$v m$v.json
		'
	fi
	LATE="$BUILD/tests/workloads/latepy/python3.12"
	LIBPY=$(ls "$(dirname "$PY")"/../lib/libpython$v.so.1.0 2>/dev/null)
	if [ $v = 3.12 ] && [ -n "$LIBPY" ] && [ -x "$LATE" ]; then
		test_expect_success "CPython $v loaded late (its libpython mapped after 200 ms): Python frames once it is in" '
			PY_LATE_LIB="$LIBPY" PYTHONHOME="$(dirname "$PY")/.." \
				"$DLPROF" record -o late.data -- "$LATE" "$W" 2 late.json 2>late.err &&
			cat late.err &&
			! grep -q "symbols are not readable" late.err &&
			"$DLPROF" fold -i late.data >late.fold &&
			grep -E "^dlprof: python: [0-9]+ samples read" late.err &&
			grep -q "^python3.12;.*;main;.*;<module> (py_known\.py:[0-9]*);main (py_known" late.fold &&
			/usr/bin/python3 "$SRC/tools/py-known-check.py" shares late.fold late.json
		'
	fi
done
[ -n "$found" ] || test_skip_all "no CPython 3.12 or 3.13 on this machine"

test_done
