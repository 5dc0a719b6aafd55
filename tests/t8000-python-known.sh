#!/bin/sh
# t8000: Python frames in the native stacks, on a workload whose time per Python function
# is known: each function runs a native loop (sum over a range, C code under its frame)
# and times it with its thread's CPU clock.  Plain calls, a generator, recursion and a
# coroutine.  Each function's share of the samples must match the workload's own share
# within 3 points; its frames name the line of the hot call; recursion shows every level;
# the merged stacks read python3;...;<module>;main;work_a;sum's C frames.  The phases
# outside operators: a constructor, an import, an exit handler.
. "$(dirname "$0")/lib.sh"
. "$SRC/record-lib.sh"
test_require PERF_EVENTS
/usr/bin/python3 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' ||
	test_skip_all "/usr/bin/python3 is not CPython 3.11"
W="$SRC/workloads/py_known.py"

test_expect_success 'record the known-split Python workload' '
	"$DLPROF" record -o kn.data -- /usr/bin/python3 "$W" 3 kn.json 2>rec.err &&
	cat rec.err && test -s kn.json &&
	grep -E "^dlprof: python: [0-9]+ samples read \([0-9.]+% checked against the sample" rec.err &&
	"$DLPROF" fold -i kn.data >kn.fold &&
	"$DLPROF" report -i kn.data >kn.txt && head -12 kn.txt
'

test_expect_success 'each function holds its measured share within 3 points' '
	/usr/bin/python3 "$SRC/tools/py-known-check.py" shares kn.fold kn.json
'

test_expect_success 'frames name the hot call line; recursion, generator, coroutine in order' '
	/usr/bin/python3 "$SRC/tools/py-known-check.py" lines kn.fold kn.json
'

test_expect_success 'the Python frames sit where the eval loop ran: root, Python, then C' '
	grep -E "^python3;_start;.*;<module> \(py_known\.py:[0-9]+\);main \(py_known\.py:[0-9]+\);work_a \(py_known\.py:[0-9]+\);[^;(]*(Vectorcall|func@)" kn.fold &&
	! grep -q "_PyEval_EvalFrameDefault;[^;]*work_a (" kn.fold &&
	grep -E "^# python: +[0-9.]+% of samples with Python frames" kn.txt &&
	"$DLPROF" report -i kn.data --sort total >total.txt &&
	grep -E "work_a \(py_known\.py:[0-9]+\) +python3\.[0-9]+$" total.txt
'

test_expect_success 'json header and recdump: the counts and the records' '
	"$DLPROF" report -i kn.data --format json >kn.json2 &&
	json_check kn.json2 <<-\PY &&
	h = j.header.python
	print(h)
	h.thread_samples > 1000 and h.merged >= 0.9 * h.thread_samples
	PY
	"$BUILD/tests/recdump" kn.data >dump &&
	grep -E "^PYCODE id=[0-9]+ pid=[0-9]+ first=[0-9]+ name=work_a file=.*py_known.py" dump &&
	grep -E "^PYCODE id=[0-9]+ .* name=main\.<locals>|^PYCODE id=[0-9]+ .* name=main " dump &&
	/usr/bin/python3 - <<-\EOF
	import re
	lines = open("dump").read().splitlines()
	chains = {int(m.group(1)) for l in lines for m in [re.match(r"PYCHAIN id=(\d+) ", l)] if m}
	named = [int(m.group(1)) for l in lines for m in [re.search(r" pychain=(\d+) ", l)] if m]
	own = sum(l.startswith("PYSTACK ") for l in lines)
	print(len(chains), "chains;", len(named), "samples name one;", own, "stack records")
	# a sample read in the kernel names its stack, written once as a chain before it
	assert len(named) + own >= 1000
	# (where the kernel reads them: elsewhere every sample has a stack record)
	assert not named or (len(chains) < len(named) / 4 and all(c in chains for c in named))
	EOF
'

test_expect_success 'the Python records are a small part of the file (recdump --sizes)' '
	"$BUILD/tests/recdump" --sizes kn.data >sizes && cat sizes &&
	/usr/bin/python3 - <<-\EOF
	import re
	kinds = {m.group(1): int(m.group(2)) for m in
	         re.finditer(r"^(\S+(?: \S+)?) count=\d+ raw=\d+ deflated=(\d+)$",
	                     open("sizes").read(), re.M)}
	total = int(re.search(r"^ALL raw=\d+ deflated=(\d+)$", open("sizes").read(), re.M).group(1))
	py = sum(v for k, v in kinds.items() if k in ("PYCODE", "PYCHAIN", "PYSTACK"))
	print("Python records: %d of %d bytes deflated (%.1f%%)" % (py, total, 100.0 * py / total))
	# a record per sample (time, frames) and whole line tables made it 40% and more
	assert kinds.get("PYCODE") and py < 0.2 * total
	EOF
'

test_expect_success 'samples kept as they came (unwinder behind) keep their Python stacks' '
	DLPROF_KSTACK=0 DLPROF_TEST_UNWIND_BEHIND=1 "$DLPROF" record -o kb.data -- \
		/usr/bin/python3 "$W" 2 kb.json 2>kb.err &&
	grep -E "stacks: [0-9]+ kept as copies .* [1-9][0-9]* while the unwinder was behind" kb.err &&
	"$BUILD/tests/recdump" kb.data >kb.dump &&
	! grep -q " pychain=" kb.dump &&
	if grep -q "read in the kernel" kb.err; then
		test "$(grep -c "^PYSTACK .* chain=[1-9]" kb.dump)" -ge 500
	fi &&
	"$DLPROF" fold -i kb.data >kb.fold &&
	/usr/bin/python3 "$SRC/tools/py-known-check.py" shares kb.fold kb.json
'

test_expect_success 'frame pointers (no eval loop in the native stacks): stacks read at the sample go root-side' '
	"$DLPROF" record --call-graph fp -o kf.data -- /usr/bin/python3 "$W" 2 kf.json 2>kf.err &&
	if grep -q "read in the kernel at the sample" kf.err; then
		"$DLPROF" fold -i kf.data >kf.fold &&
		grep -q "^python3;<module> (py_known\.py:[0-9]*);main (py_known\.py:[0-9]*);work_a (py_known\.py:[0-9]*);" kf.fold &&
		/usr/bin/python3 "$SRC/tools/py-known-check.py" shares kf.fold kf.json
	fi
'

if test_have PROTOC; then
	test_expect_success 'pprof: Python functions with their file, lines as Line.line' '
		"$DLPROF" pprof -i kn.data -o kn.pb.gz 2>/dev/null &&
		gzip -dc kn.pb.gz | protoc --proto_path="$SRC/pprof" --decode=dlprof_check.Profile \
			"$SRC/pprof/profile.proto" | /usr/bin/python3 "$SRC/tools/pprof-summary.py" >pp.txt &&
		grep "^line " pp.txt | head -8 &&
		/usr/bin/python3 - <<-\EOF
		import json, re
		d = json.load(open("kn.json"))
		got = {}
		for l in open("pp.txt"):
		    m = re.match(r"line (\S+) (\S+):(\d+) (\d+)$", l)
		    if m and m.group(2).endswith("/py_known.py"):
		        got[(m.group(1), int(m.group(3)))] = int(m.group(4))
		fold = {}
		for l in open("kn.fold"):
		    stack, n = l.rsplit(" ", 1)
		    for f in set(stack.split(";")):
		        m = re.match(r"(\S+) \(py_known\.py:(\d+)\)$", f)
		        if m:
		            fold[(m.group(1), int(m.group(2)))] = fold.get((m.group(1), int(m.group(2))), 0) + int(n)
		for fn in ("work_a", "chunks", "coro"):
		    key = (fn, d["lines"][fn])
		    assert got.get(key, 0) > 100 and got[key] == fold.get(key), (key, got.get(key), fold.get(key))
		print("pprof lines agree with fold:", {k: v for k, v in got.items() if v > 100})
		EOF
	'
else
	test_skip 'pprof Python lines' 'no protoc'
fi

test_expect_success '--sort line: each hot line holds its function share as Self' '
	"$DLPROF" report -i kn.data --sort line --format json >line.json &&
	"$DLPROF" report -i kn.data --sort line -n 6 &&
	json_check d=kn.json line=line.json <<-\PY
	rows = {(r.function, r.line): r for r in line.rows}
	fns = ["work_a", "work_b", "chunks", "rec", "coro"]
	tt = sum(d.cpu_ns[f] for f in fns)
	got = {f: rows[(f, d.lines[f])].self_samples for f in fns}
	gt = sum(got.values())
	for f in fns:
	    t, g = 100.0 * d.cpu_ns[f] / tt, 100.0 * got[f] / gt
	    print("%-7s measured %5.1f%%  line self %5.1f%%" % (f, t, g))
	    assert abs(t - g) <= 3.0, f
	r = rows[("work_a", d.lines.work_a)]
	r.file.endswith("/py_known.py") and r.total_samples >= r.self_samples
	PY
'

test_expect_success '--no-python: no Python records, the eval loop frames stay' '
	"$DLPROF" record -q --no-python -o np.data -- /usr/bin/python3 "$W" 0.5 np.json &&
	"$BUILD/tests/recdump" np.data >npdump &&
	! grep -q "^PY" npdump && grep -q "^META python=off" npdump &&
	"$DLPROF" fold -i np.data >np.fold &&
	grep -q "_PyEval_EvalFrameDefault" np.fold && ! grep -q "(py_known.py:" np.fold
'

# the phases outside operators, on the host: a library's constructor, a module's import,
# an exit handler, each 0.5 s of CPU (tests/workloads/phases.py; in a container: t1015)
if command -v g++ >/dev/null 2>&1; then
	test_expect_success 'phases: a constructor (library init), an import (import), a handler (exit)' '
		"$DLPROF" record -q -o ph.data -- /usr/bin/python3 "$SRC/workloads/phases.py" >ph.out &&
		phases_check ph.data ph.out
	'
fi

test_done
