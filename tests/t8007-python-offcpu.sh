#!/bin/sh
# t8007-python-offcpu.sh - where a Python thread blocked, by Python line: the kernel's
# Python stack reader runs on the switch-outs too, so fold --off-cpu names the Python
# function a thread waited in.  tests/workloads/py_waits.py sleeps in sleep_here() and
# waits on an Event in event_here(), and measures each itself: the off-CPU time under
# each function must be its own within 10% (3 ms floor), and nearly all of the thread's
# off-CPU time must carry Python frames; the timeline names those waits by the Python
# line, their durations the same within 10%.  Where the kernel will not run the reader, the
# switch-outs keep their native stacks (checked: no Python frame, no error).
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS

test_expect_success 'record py_waits.py: switch-outs recorded, stacks read in the kernel' '
	"$DLPROF" record -o w.data -- /usr/bin/python3 "$SRC/workloads/py_waits.py" 20 >own 2>err &&
	cat err own && test_grep -q " switch-outs beside them" err &&
	"$DLPROF" fold -i w.data --off-cpu --no-comm >off.folded
'

if grep -q "read in the kernel at the sample" "$TRASH/err" 2>/dev/null; then
	test_expect_success 'off-CPU time by Python function: each within 10% of its own measure' '
		/usr/bin/python3 - <<-\EOF
		own = dict(l.split() for l in open("own"))
		us = {"sleep_here": 0, "event_here": 0}
		for l in open("off.folded"):
		    stack, n = l.rsplit(" ", 1)
		    for f in us:
		        if ";%s (py_waits.py:" % f in stack:
		            us[f] += int(n)
		for f, n in us.items():
		    want = float(own[f]) * 1e6
		    print("%s: %.1f ms off the CPU, %.1f ms measured" % (f, n / 1e3, want / 1e3))
		    assert abs(n - want) <= max(0.1 * want, 3000), (f, n, want)
		EOF
	'

	test_expect_success 'the main thread off the CPU: nearly all of it under a Python frame' '
		/usr/bin/python3 - <<-\EOF
		total = py = 0
		for l in open("off.folded"):
		    stack, n = l.rsplit(" ", 1)
		    if "Py_BytesMain" not in stack:
		        continue
		    total += int(n)
		    py += int(n) if ".py:" in stack else 0
		print("%.1f ms of the main thread off the CPU, %.1f%% with Python frames" % (total / 1e3, 100.0 * py / total))
		assert total > 0 and py >= 0.95 * total, (py, total)
		EOF
	'

	test_expect_success 'timeline: the waits named by the Python line they blocked on' '
		"$DLPROF" timeline -i w.data -o w.json 2>/dev/null &&
		json_check w.json <<-\PY
		own = dict(l.split() for l in open("own"))
		ms = collections.Counter()
		for e in j.traceEvents:
		    if e.ph == "X" and e.cat == "sched" and e.get("args", {}).get("python"):
		        assert e.name.endswith(e.args.python), (e.name, e.args.python)
		        ms[e.args.python.split(" (")[0]] += e.dur / 1000.0
		print(dict(ms), own)
		# (where a wait went unnamed: the off-CPU slices without a Python line, by name)
		other = collections.Counter()
		for e in j.traceEvents:
		    if e.ph == "X" and e.cat == "sched" and not e.get("args", {}).get("python"):
		        other[e.name] += e.dur / 1000.0
		print("off the CPU without a Python line, ms:", dict(other))
		# sleep_here blocks in time.sleep itself; event_here in Condition.wait of threading.py
		for f, got in (("sleep_here", ms["sleep_here"]), ("event_here", ms["Condition.wait"])):
		    want = float(own[f]) * 1e3
		    assert abs(got - want) <= max(0.1 * want, 3), (f, got, want)
		PY
	'
else
	test_skip 'off-CPU time by Python function' 'the kernel does not run the Python reader here'
fi

test_expect_success 'DLPROF_NO_BPF=1: the switch-outs keep their native stacks' '
	DLPROF_NO_BPF=1 "$DLPROF" record -q --off-cpu -o nb.data -- /usr/bin/python3 "$SRC/workloads/py_waits.py" 5 >own2 &&
	"$DLPROF" fold -i nb.data --off-cpu --no-comm >nb.folded &&
	test -s nb.folded && ! grep -q "py_waits.py" nb.folded
'

test_done
