#!/bin/sh
# make check-e2e: over 20 s here, run apart from make check (tests/README.md)
# t8002: Python frames on a PyTorch CNN training run: the main thread's samples inside
# the training loop (its window, measured by the workload on the samples' clock) carry
# Python frames; the forward of each module class and the training step appear above the
# operators; every Python frame that called further names a line that holds a call.
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS TORCH
/usr/bin/python3 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' ||
	test_skip_all "/usr/bin/python3 is not CPython 3.11"
export DLPROF_DATADIR="$TOP/share"

test_expect_success 'record the training run' '
	"$DLPROF" record -o tt.data -- /usr/bin/python3 "$SRC/workloads/py_torch_train.py" \
		tt.json 3 2>err && cat err && test -s tt.json
'

# the goal is 95%; read from outside (no BPF here) the code moves on before some reads
test_expect_success 'the main thread in the training loop: >= 95% of samples with Python frames (93% read from outside)' '
	set -- $(profiled_span tt.data tt.json) &&
	"$DLPROF" report -i tt.data --tid $1 --time $2 >loop.txt && sed -n 1,12p loop.txt &&
	pct=$(sed -n "s/^# python: *\([0-9.]*\)% of samples with Python frames.*/\1/p" loop.txt) &&
	echo "main thread in the loop: $pct% with Python frames" &&
	want=93 && if grep -q "read in the kernel at the sample" err; then want=95; fi &&
	awk -v p="$pct" -v w="$want" "BEGIN { exit !(p >= w) }"
'

test_expect_success 'where the kernel reads them, a few stacks at most read from outside (a new process is listed at once)' '
	if grep -q "read in the kernel at the sample" err; then
		out=$(sed -n "s/.*; \([0-9]*\) read from outside.*/\1/p" err) &&
		echo "read from outside: ${out:-0}" &&
		test "${out:-0}" -le 10
	fi
'

# A DataLoader's workers are forks of the Python process: listed for the kernel reader
# at their first sample (record's doorbell wakes it at the fork), read there as the
# main process is (1,761 of 1,767 in the kernel; workers 97.9% and 98.5% of their
# samples with Python frames, in load_item)
test_expect_success 'a DataLoader with 2 workers: the workers read in the kernel, in load_item' '
	"$DLPROF" record -o dl.data -- /usr/bin/python3 "$SRC/workloads/py_dataloader.py" \
		dl.json 2>dl.err && cat dl.err dl.json &&
	if grep -q "read in the kernel at the sample" dl.err; then
		set -- $(sed -n "s/^dlprof: python: \([0-9]*\) samples read.*; \([0-9]*\) read in the kernel.*/\2 \1/p" dl.err) &&
		test $(( $1 * 100 / $2 )) -ge 99
	fi &&
	set -- $(json_get dl.json "\" \".join(str(p) for p in j.workers)") &&
	test $# = 2 &&
	for w in "$@"; do
		"$DLPROF" report -i dl.data --pid $w >w.txt &&
		pct=$(sed -n "s/^# python: *\([0-9.]*\)% of samples with Python frames.*/\1/p" w.txt) &&
		echo "worker $w: $pct% of its samples with Python frames" &&
		test "${pct%.*}" -ge 95 &&
		"$DLPROF" fold -i dl.data --pid $w | grep -q "load_item (py_dataloader.py:[0-9]*)" ||
		return 1
	done
'

test_expect_success 'module forwards and the training step above the operators' '
	"$DLPROF" fold -i tt.data --no-comm >tt.fold &&
	for f in "Sequential.forward (container.py:" "Conv2d.forward (conv.py:" \
		 "_BatchNorm.forward (batchnorm.py:" "ReLU.forward (activation.py:" \
		 "MaxPool2d.forward (pooling.py:" "Linear.forward (linear.py:" \
		 "train_step (py_torch_train.py:"; do
		grep -qF "$f" tt.fold || { echo "missing: $f"; exit 1; }
	done &&
	grep -E "train_step \(py_torch_train\.py:[0-9]+\);.*Conv2d\.forward \(conv\.py:[0-9]+\);.*at::_ops::conv" tt.fold >/dev/null &&
	grep -E "train_step \(py_torch_train\.py:[0-9]+\);.*torch::autograd::" tt.fold >/dev/null
'

test_expect_success 'a Python frame that called further names a line with a call' '
	"$DLPROF" report -i tt.data --format json --limit 0 >rows.json &&
	/usr/bin/python3 - <<-\EOF
	import collections, json, linecache, re
	ok = bad = 0
	worst = collections.Counter()
	for r in json.load(open("rows.json"))["rows"]:
	    py = r.get("python")
	    if not py or not py["file"].startswith("/"):
	        continue	# frozen modules have no file to read
	    n = r["total"] - r["self"]	# the samples where it called further
	    src = linecache.getline(py["file"], py["line"])
	    if not n or not src:
	        continue
	    # a call: parentheses, or a statement that calls (import, for, with, await)
	    if "(" in src or re.match(r"\s*(import|from|for|with|async|await|yield|return await)\b", src):
	        ok += n
	    else:
	        bad += n
	        worst[r["symbol"] + " | " + src.strip()] += n
	print("calling frames on call lines:", ok, "elsewhere:", bad, worst.most_common(3))
	assert ok > 1000 and bad <= 0.02 * ok, (ok, bad)
	EOF
'

test_expect_success '--sort line: the forward lines with their operators; workers inherit them' '
	"$DLPROF" report -i tt.data --sort line --format json >line.json &&
	"$DLPROF" report -i tt.data --sort line -n 8 && "$DLPROF" report -i tt.data --sort op -n 8 &&
	"$DLPROF" report -i tt.data --sort op --format json >op.json &&
	"$DLPROF" report -i tt.data --sort thread --format json >thr.json &&
	/usr/bin/python3 - <<-\EOF
	import json, subprocess, os
	rows = json.load(open("line.json"))["rows"]
	conv = [r for r in rows if r["function"] == "Conv2d._conv_forward"]
	assert conv and conv[0]["file"].endswith("/torch/nn/modules/conv.py"), conv
	assert conv[0]["ops"][0]["name"] == "aten::mkldnn_convolution", conv[0]["ops"]
	bw = [r for r in rows if r["function"] == "backward" and r["ops"]]
	assert bw, rows
	ops = {r["name"]: r for r in json.load(open("op.json"))["rows"] if "parent" not in r}
	# the convolutions: their backward runs under the backward() line (which of its operators
	# leads goes with the CPU: on a Zen 5 guest, those of ReLU and batch norm)
	cb = ops["aten::convolution_backward"]["python_line"]
	assert cb["function"] == "backward" and cb["line"] == bw[0]["line"], (cb, bw[0])
	pl = ops["aten::mkldnn_convolution"]["python_line"]
	assert pl["function"] == "Conv2d._conv_forward" and pl["line"] > 0, pl
	assert pl["samples"] >= 0.8 * ops["aten::mkldnn_convolution"]["self_samples"], pl
	# the OpenMP worker: no Python frame of its own, the lines of its master
	d = json.load(open("tt.json"))
	workers = [r["tid"] for r in json.load(open("thr.json"))["rows"]
	           if r["pid"] != r["tid"] and r["samples"] > 200]
	assert workers, "no busy worker thread"
	out = subprocess.run([os.environ["DLPROF"], "report", "-i", "tt.data", "--sort", "line",
	                      "--format", "json", "--tid", str(workers[0])],
	                     capture_output=True, text=True, check=True).stdout
	w = json.loads(out)
	inherited = sum(r["self_samples"] for r in w["rows"])
	print("worker", workers[0], "samples", w["samples"], "with a Python line", inherited)
	assert inherited >= 0.7 * w["samples"], (inherited, w["samples"])
	EOF
'

test_expect_success 'timeline: Python lines as sampled slices, on the main thread and its workers' '
	"$DLPROF" timeline -i tt.data -o tt.trace.json 2>/dev/null &&
	json_check d=tt.json tr=tt.trace.json <<-\PY
	names = {(e.pid, e.tid): e.args.name for e in tr.traceEvents
	         if e.ph == "M" and e.name == "thread_name"}
	py = collections.Counter()
	for e in tr.traceEvents:
	    if e.ph == "X" and e.cat == "python,sampled":
	        assert names[(e.pid, e.tid)].endswith("[python, sampled]"), e
	        py[(e.tid & 0xffffff, e.name.split(" (")[0])] += e.args.samples
	py[(d.tid, "Conv2d._conv_forward")] > 50
	# a worker track has Python lines
	others = {t for t, _ in py if t != d.tid}
	len(others) > 0
	print(py.most_common(4), "other threads:", others)
	PY
'

test_done
