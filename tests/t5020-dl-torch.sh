#!/bin/sh
# t5020: a small PyTorch CNN training run: the DL families and operators appear with
# plausible shares; ITT labels oneDNN primitives; fold --family puts families at the root.
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS TORCH
"$DLPROF" report -h 2>&1 | grep -q "family" || test_skip_all "report --sort family not wired yet"
export DLPROF_DATADIR="$TOP/share"

pyget() {	# pyget FILE KEY VALUE -> self_pct of the row whose KEY is VALUE (sum)
	/usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(sum(r.get("self_pct", 0) for r in d["rows"] if r.get(sys.argv[2]) == sys.argv[3]))' "$@"
}

test_expect_success 'record the CNN training workload (dwarf stacks)' '
	"$DLPROF" record -F 499 --call-graph dwarf -o cnn.data -- /usr/bin/python3 "$SRC/workloads/dl_torch_cnn.py" 6
'

test_expect_success 'families: jit-conv, jit-reorder, aten and omp-* present' '
	"$DLPROF" report -i cnn.data --sort family --format json >fam.json &&
	cat fam.json &&
	for f in jit-conv aten; do
		s=$(pyget fam.json family $f) &&
		/usr/bin/python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) >= 3 else 1)" "$s" ||
		{ echo "$f share $s"; exit 1; }
	done &&
	for f in jit-reorder omp-spin omp-runtime; do
		s=$(pyget fam.json family $f) &&
		/usr/bin/python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0 else 1)" "$s" ||
		{ echo "$f share $s"; exit 1; }
	done
'

test_expect_success 'operators: convolution_backward and native_batch_norm appear' '
	"$DLPROF" report -i cnn.data --sort op --format json >op.json &&
	/usr/bin/python3 -c "
import json
d = json.load(open(\"op.json\"))
names = {r[\"name\"]: r for r in d[\"rows\"]}
print(sorted(names)[:40])
assert any(n.startswith(\"aten::convolution_backward\") or n == \"aten::mkldnn_convolution_backward\" for n in names)
assert any(\"batch_norm\" in n for n in names)
assert any(n.startswith(\"dnnl:\") for n in names), \"no ITT-labelled primitive\"
"
'

test_expect_success 'thread table lists the python threads' '
	"$DLPROF" report -i cnn.data --sort thread >thr.txt && cat thr.txt &&
	test_grep -q python thr.txt
'
test_done
