#!/bin/sh
# t9000: dlprof timeline writes the Chrome Trace Event format: valid JSON by the format's
# rules (ph, ts/dur in microseconds, pid/tid, names by metadata, properly nested slices
# on each track); the oneDNN primitive events are the ITT record exactly (calls and their
# time equal report's ITT table); the sampled operator slices account for every sample.
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS DNNL
DEMO="$BUILD/examples/demo"
[ -x "$DEMO" ] || test_skip_all "build/examples/demo not built"
export OMP_NUM_THREADS=2

test_expect_success 'record the demo, write its timeline' '
	"$DLPROF" record -q -o demo.data -- "$DEMO" -n 40 >/dev/null &&
	"$DLPROF" timeline -i demo.data -o trace.json 2>err && cat err &&
	grep -E "^dlprof: wrote trace.json: [0-9]+ events from [0-9]+ samples" err &&
	"$DLPROF" report -i demo.data --sort op --format json >op.json &&
	"$DLPROF" timeline -i demo.data -o - >stdout.json && cmp -s trace.json stdout.json
'

test_expect_success 'the format: events, fields, names, nesting' '
	json_check d=trace.json <<-\PY
	ev = d.traceEvents
	d.displayTimeUnit == "ms" and d.otherData.command.endswith("-n 40")
	named = set()
	tracks = collections.defaultdict(list)
	for e in ev:
	    assert e.ph in ("M", "X", "C"), e
	    assert isinstance(e.pid, int), e
	    if e.ph == "M":
	        assert e.name in ("process_name", "thread_name", "thread_sort_index"), e
	        if e.name == "thread_name":
	            assert e.args.name, e
	            named.add((e.pid, e.tid))
	    elif e.ph == "X":
	        assert e.name and e.cat and e.ts >= 0 and e.dur >= 0, e
	        tracks[(e.pid, e.tid)].append((e.ts, e.ts + e.dur, e.name))
	    else:
	        assert e.name == "families" and all(0 <= v <= 1.0001 for v in e.args.values()), e
	        assert abs(sum(e.args.values()) - 1) < 0.01, e
	set(tracks) <= named
	# slices on one track nest or follow each other (a viewer stacks them by time)
	for key, sl in tracks.items():
	    sl.sort(key=lambda s: (s[0], -s[1]))
	    stack = []
	    for b, e, name in sl:
	        while stack and stack[-1] <= b + 1e-3:
	            stack.pop()
	        assert not stack or e <= stack[-1] + 1e-3, (key, name, b, e, stack[-1])
	        stack.append(e)
	print(len(ev), "events,", len(tracks), "tracks")
	PY
'

test_expect_success 'oneDNN primitives: the ITT record exactly' '
	json_check tr=trace.json op=op.json <<-\PY
	ev = tr.traceEvents
	calls = collections.Counter()
	call_us = collections.Counter()
	task_us = collections.Counter()
	for e in ev:
	    if e.ph == "X" and e.cat == "dnnl":
	        # named by the primitive, "dnnl:convolution jit:avx2 mb...", its task in args
	        assert e.name.startswith(e.args.task), (e.name, e.args.task)
	        task_us[e.args.task] += e.dur
	        if e.args.call:
	            calls[e.args.task] += 1
	            call_us[e.args.task] += e.dur
	# ITT tasks in the report
	len(op.itt_tasks) > 0
	for t in op.itt_tasks:
	    n = t.name
	    print(n, calls[n], t.calls, round(call_us[n]), t.call_ns / 1000.0)
	    assert calls[n] == t.calls, (n, calls[n], t.calls)
	    assert abs(call_us[n] - t.call_ns / 1000.0) <= 0.001 * calls[n] + 1e-6, n
	    assert abs(task_us[n] - t.task_ns / 1000.0) <= 0.001 * len(ev), n
	PY
'

test_expect_success 'sampled operator slices hold every sample, under its operator' '
	json_check tr=trace.json op=op.json <<-\PY
	got = collections.Counter()
	for e in tr.traceEvents:
	    if e.ph == "X" and e.cat == "op,sampled":
	        got[e.name] += e.args.samples
	want = collections.Counter()
	for r in op.rows:
	    if "parent" not in r:
	        want[r.name] += r.self_samples
	print(dict(got))
	+got == +want
	sum(got.values()) == op.samples
	PY
'

test_expect_success 'a bad input: one line, exit 2' '
	echo "not a recording" >bad.data &&
	{ "$DLPROF" timeline -i bad.data -o t.json 2>err; test $? = 2; } &&
	test "$(wc -l <err)" = 1 && cat err
'

test_done
