#!/bin/sh
# t9501-mem-torch.sh - record --memory against torch.profiler(profile_memory=True) on ONE
# process: tests/workloads/dl_torch_profiled.py --memory trains a small CNN for 20 steps in the
# profiler and writes, per operator, the bytes its calls allocated (the positive memory
# records of the profiler's trace inside each call, on its thread: the op and the ops it
# called) beside the profiler's own "CPU Mem" (the same, net of the frees).  dlprof's
# report --memory --sort total over the profiled window, at the default interval: the
# profiler's top 8 operators by allocated bytes (its autograd nodes spelled autograd::)
# each within 10%, in the same order wherever the profiler tells two apart by more than
# 3% (the forward convolution's four nested ops allocate the same bytes: a tie), and the
# bytes allocated inside operators within 10% of the profiler's total.
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS UPROBES TORCH
export DLPROF_DATADIR="$TOP/share"

cat >"$TRASH/compare.py" <<'EOF2'
import json, re, sys
prof, rep, tol = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), float(sys.argv[3])
def dl_name(k):
    if k.startswith("aten::"):
        return k
    if re.fullmatch(r"[A-Za-z0-9]+Backward[0-9]+|AccumulateGrad", k):
        return "autograd::" + k
    return None     # Python scopes (Optimizer.step#SGD.step) and the engine's wrappers
p = {dl_name(r["key"]): r for r in prof["rows"] if dl_name(r["key"])}
d = {r["name"]: r for r in rep["rows"]}
top = sorted(p, key=lambda k: (-p[k]["alloc_bytes"], k))[:8]
ok = True
print("%-40s %12s %12s %7s %12s" % ("operator", "profiler", "dlprof", "diff", "CPU Mem"))
for k in top:
    want, got = p[k]["alloc_bytes"], d.get(k, {}).get("total_bytes", 0)
    bad = abs(got - want) > tol * want
    ok = ok and not bad
    print("%-40s %12d %12d %+6.1f%% %12d%s" % (k, want, got, 100.0 * (got - want) / want,
          p[k]["cpu_mem"], "  <-- more than %.0f%%" % (100 * tol) if bad else ""))
for i, a in enumerate(top):
    for b in top[i + 1:]:
        pa, pb = p[a]["alloc_bytes"], p[b]["alloc_bytes"]
        da, db = d.get(a, {}).get("total_bytes", 0), d.get(b, {}).get("total_bytes", 0)
        if pa > 1.03 * pb and not da > db:
            print("order: %s before %s in the profiler (%d > %d), not in dlprof (%d, %d)"
                  % (a, b, pa, pb, da, db))
            ok = False
want = prof["alloc_bytes"]
got = sum(r["alloc_bytes"] for r in rep["rows"] if r["name"].startswith(("aten::", "autograd::")))
print("allocated in operators: profiler %d, dlprof %d (%+.1f%%)" % (want, got, 100.0 * (got - want) / want))
ok = ok and want > 0 and abs(got - want) <= tol * want
sys.exit(0 if ok else 1)
EOF2

test_expect_success 'record the profiled CNN run with --memory' '
	"$DLPROF" record -q --memory -o tm.data -- /usr/bin/python3 \
		"$SRC/workloads/dl_torch_profiled.py" --memory tm.json 20 >rec.out 2>rec.err &&
	cat rec.out rec.err && test -s tm.json &&
	set -- $(profiled_span tm.data tm.json) && echo "$2" >window &&
	cat window &&
	"$DLPROF" report -i tm.data --memory --sort total --time "$(cat window)" >total.txt &&
	head -24 total.txt &&
	"$DLPROF" report -i tm.data --memory --sort total --time "$(cat window)" \
		--format json >total.json
'

test_expect_success 'top 8 operators by allocated bytes: within 10%, the same order' '
	/usr/bin/python3 "$TRASH/compare.py" tm.json total.json 0.10
'

test_expect_success 'Total counts the callers: conv2d holds what mkldnn_convolution allocates' '
	json_check total.json <<-\PY
	rows = {r.name: r for r in j.rows}
	conv, mk = rows["aten::conv2d"], rows["aten::mkldnn_convolution"]
	# conv2d may allocate a little of its own (a sampled small block
	# weighs 512 KiB), so its Total is compared, not its self bytes
	conv.total_bytes >= mk.total_bytes > 0
	conv.total_bytes >= conv.alloc_bytes
	mk.total_bytes >= mk.alloc_bytes > 0
	# autograd nodes hold the backward ops they ran
	node, op = rows["autograd::ConvolutionBackward0"], rows["aten::convolution_backward"]
	node.total_bytes >= op.total_bytes > 0
	PY
'

test_expect_success 'the table and csv carry Total; --sort op keeps the self order' '
	grep -q "Total   Share  Operator" total.txt &&
	"$DLPROF" report -i tm.data --memory --sort op --format csv >op.csv &&
	head -1 op.csv | grep -q ",total_bytes$" &&
	"$DLPROF" report -i tm.data --memory --sort op --format json >op.json &&
	json_check op.json <<-\PY
	a = [r.alloc_bytes for r in j.rows]
	a == sorted(a, reverse=True)
	PY
'

# the allocations' Python lines: read by the allocating thread as it allocated, none is
# left without (read from outside, after the thread went on: 0.95% of the bytes here, 12%
# in a plain CNN run of dl_torch_cnn.py; now 0)
test_expect_success 'by Python line: the allocations in the window all carry one' '
	"$DLPROF" report -i tm.data --memory --sort line --time "$(cat window)" \
		--format json >line.json &&
	json_check line.json <<-\PY
	total = sum(r.alloc_bytes for r in j.rows)
	none = sum(r.alloc_bytes for r in j.rows if r.name == "(no Python)")
	print("no Python line: %d of %d bytes" % (none, total))
	total > 0 and none <= 0.002 * total
	PY
'

test_done
