#!/bin/sh
# t8004: Python frames from the CPython 3.12 and 3.13 interpreters this machine has
# (python3.12 / python3.13 on PATH, or under pyenv's versions; skipped when there is
# none): tests/workloads/py_known.py under each, recorded like t8000 does with Debian's
# 3.11: each function's share within 3 points of its own clock, hot call lines, recursion,
# generator and coroutine in order, and most samples checked against their stack copy;
# with --memory, the bytes each C call allocates on the Python line that made it.
# 3.13 is read through the offsets its _Py_DebugOffsets confirm (lib/pyread.c).
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS
W="$SRC/workloads/py_known.py"
LIBMK="$BUILD/tests/workloads/libmemknown.so"

find_python() {
	for p in $(command -v "python$1" 2>/dev/null) \
		 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$1".*/bin/"python$1"; do
		[ -x "$p" ] && "$p" -c "import sys; sys.exit(sys.implementation.name != 'cpython')" \
			2>/dev/null && { echo "$p"; return 0; }
	done
	return 1
}

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
		test_expect_success "CPython $v --memory: the bytes of each C call on the line that called it" '
			"$DLPROF" record -q --mem-sample 64K -o m$v.data -- "$PY" \
				"$SRC/workloads/mem_py.py" "$LIBMK" 524288 >own$v &&
			"$DLPROF" report --memory -i m$v.data --sort line --format json >m$v.json &&
			/usr/bin/python3 - "$SRC/workloads/mem_py.py" own$v m$v.json <<-\EOF
			import json, sys
			src = open(sys.argv[1]).read().split("\n")
			line = {t: i + 1 for i, l in enumerate(src) for t in ("batch", "cache", "leak") if "# LINE:" + t in l}
			rows = {r["name"]: r for r in json.load(open(sys.argv[3]))["rows"]}
			own = {l.split()[1]: int(l.split()[2]) for l in open(sys.argv[2]) if l.startswith("alloc ")}
			for fn, t, c in (("small_objects", "batch", "batch_small"), ("big_blocks", "cache", "keep_cache"),
			                 ("big_blocks", "leak", "leak_blocks")):
			    got = rows.get("%s (mem_py.py:%d)" % (fn, line[t]), {"alloc_bytes": 0})["alloc_bytes"]
			    print(fn, t, got, own[c])
			    assert abs(got - own[c]) <= 0.05 * own[c], (fn, got, own[c])
			EOF
		'
	fi
done
[ -n "$found" ] || test_skip_all "no CPython 3.12 or 3.13 on this machine"

test_done
