#!/bin/sh
# t9005: training steps from the samples (report --steps, timeline --step): a Python loop
# whose train_step() times itself (every 7th step computes three times as long): as many
# steps as it ran, each within 10% of the workload's own clock (the first one excepted:
# the Python reader attaches after it starts), the slowest step one of the long ones,
# the timeline's step slices the same as report's; and the CNN's step() against its own
# steps per second.
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS
export DLPROF_DATADIR="$TOP/share"

test_expect_success 'record py_steps.py (40 steps, every 7th long)' '
	"$DLPROF" record -q -o steps.data -- /usr/bin/python3 "$SRC/workloads/py_steps.py" 40 truth.json &&
	"$DLPROF" report -i steps.data --steps train_step --format json >steps.json &&
	"$DLPROF" report -i steps.data --steps train_step >steps.txt && sed -n 1,10p steps.txt
'

test_expect_success 'each step within 10% of the workload'"'"'s clock; the slowest a long one' '
	json_check truth=truth.json d=steps.json <<-\PY
	t = truth.steps_ns
	s = [x.dur_ns for x in d.steps]
	print(len(s), "steps found,", len(t), "run")
	len(s) == len(t)
	bad = [(i, s[i] // 10**6, t[i] // 10**6) for i in range(1, len(t))
	       if abs(s[i] - t[i]) > 0.10 * t[i]]
	print("off by more than 10%:", bad)
	len(bad) <= len(t) // 20
	d.max_index in truth.slow
	abs(statistics.median(s) - statistics.median(t)) < 0.10 * statistics.median(t)
	abs(max(s) - max(t)) < 0.10 * max(t)
	PY
	grep "^ *$(($(json_get steps.json j.max_index) + 1)) .* slowest$" steps.txt
'

test_expect_success 'timeline --step: the same steps as slices on a [steps] track' '
	"$DLPROF" timeline -i steps.data --step train_step -o trace.json 2>/dev/null &&
	json_check tr=trace.json rep=steps.json <<-\PY
	st = [e for e in tr.traceEvents if e.get("cat") == "step,sampled"]
	[e.name for e in st] == ["step %d" % (i + 1) for i in range(len(rep.steps))]
	all(abs(e.dur - r.dur_ns / 1000.0) < 0.01 for e, r in zip(st, rep.steps))
	names = [e.args.name for e in tr.traceEvents if e.get("name") == "thread_name"]
	any(n.endswith("[steps]") for n in names)
	print(len(st), "step slices")
	PY
'

test_expect_success 'a function that is not there: one line, exit 2' '
	{ "$DLPROF" report -i steps.data --steps no_such_fn >out 2>err; st=$?; } ;
	test $st = 2 && test "$(wc -l <err)" = 1 && test_grep -q "no_such_fn: on no sample.s stack" err &&
	{ "$DLPROF" report -i steps.data --steps train_step --format csv 2>err; st=$?; } ;
	test $st = 64
'

if test_have TORCH; then
	test_expect_success 'the CNN: step() against its own steps per second' '
		"$DLPROF" record -q -o cnn.data -- /usr/bin/python3 "$TOP/examples/cnn_train.py" \
			--steps 25 >out && cat out &&
		"$DLPROF" report -i cnn.data --steps step --format json >cnn.json &&
		json_check cnn.json <<-\PY
		m = re.search(r"(\d+) steps in ([0-9.]+) s", open("out").read())
		n, secs = int(m.group(1)), float(m.group(2))
		s = [x.dur_ns for x in j.steps]
		print(len(s), "steps (25 timed + 2 warm-up), median %.1f ms, the run %.1f ms a step"
		      % (statistics.median(s) / 1e6, secs / n * 1e3))
		abs(len(s) - (n + 2)) <= 2
		abs(statistics.median(s) / 1e9 - secs / n) < 0.15 * secs / n
		PY
	'
fi

test_done
