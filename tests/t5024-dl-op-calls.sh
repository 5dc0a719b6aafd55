#!/bin/sh
# make check-e2e: over 20 s here, run apart from make check (tests/README.md)
# t5024: each PyTorch operator's calls, counted by record --op-calls (a BPF program on
# every at::_ops::NAME::call entry of libtorch_cpu, one uprobe_multi link).
# tests/workloads/op_calls.py calls relu, mm, sigmoid and tanh a known number of times in
# its main thread, a thread and a forked child, and runs torch.profiler over the main
# thread's part: the counts must be exactly the workload's, and the profiler's where it
# looked; the op table has a row with its calls for each, sampled or not.  On the CNN of
# t5021 (dl_torch_profiled.py, one step before the profiled ones): the operators of the
# steps alone have (STEPS + 1) / STEPS of the profiler's calls, in the op table's Calls
# column, and report --metrics gives their page faults per call, the page-faults finding
# too for the operator it names.
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS TORCH
[ "$(id -u)" = 0 ] || test_skip_all "record --op-calls loads a BPF program: root"
export DLPROF_DATADIR="$TOP/share"
RECDUMP="$BUILD/tests/recdump"
STEPS=10

# calls_of DUMP: the META op_calls pairs, one per line
calls_of() {
	sed -n "s/^META op_calls=//p" "$1" | tr , "\n"
}

test_expect_success 'the known calls of a main thread, a thread and a forked child' '
	"$DLPROF" record --op-calls -o w.data -- /usr/bin/python3 "$SRC/workloads/op_calls.py" \
		>truth 2>err &&
	cat truth err &&
	grep -q "^dlprof: op calls: [0-9]* calls of [0-9]* operators counted ([0-9]* entries of .*libtorch_cpu" err &&
	"$RECDUMP" w.data >dump && calls_of dump >calls &&
	grep -E "aten::(relu|mm|sigmoid|tanh)=" calls &&
	while read -r what op n; do
		[ "$what" = calls ] || continue
		grep -qx "$op=$n" calls || { echo "$op: not $n"; exit 1; }
	done <truth &&
	while read -r what op n; do
		[ "$what" = profiler ] || continue
		case $op in aten::relu) want=$((n + 50)) ;; *) want=$n ;; esac
		grep -qx "$op=$want" calls || { echo "$op: the profiler $n"; exit 1; }
	done <truth &&
	test $(grep -c "^profiler " truth) = 2 &&
	"$DLPROF" report -i w.data --sort op --limit 0 --format json >w.json &&
	json_check w.json "got = {r.name + (\".\" + r.overload if r.overload else \"\"): r.calls for r in j.rows if r.get(\"primitive\") is None and r.get(\"calls\")}" \
		"truth = dict((l.split()[1], int(l.split()[2])) for l in open(\"truth\") if l.startswith(\"calls \"))" \
		"print({k: got.get(k) for k in truth})" \
		"all(got.get(k) == n for k, n in truth.items())"
'

test_expect_success 'the CNN: the steps'"'"' operators, the profiler'"'"'s calls and one step more' '
	"$DLPROF" record -q --op-calls --metrics faults -o cnn.data -- /usr/bin/python3 \
		"$SRC/workloads/dl_torch_profiled.py" prof.json $STEPS 1 &&
	"$DLPROF" report -i cnn.data --sort op --limit 0 --format json >op.json &&
	"$DLPROF" report -i cnn.data --sort op >op.txt && head -20 op.txt &&
	grep -q "Operators'"'"' calls were counted" op.txt &&
	json_check p=prof.json o=op.json \
		"steps = [\"aten::convolution_backward\", \"aten::max_pool2d_with_indices\", \"aten::native_batch_norm\", \"aten::mkldnn_convolution\", \"aten::threshold_backward\", \"aten::native_batch_norm_backward\", \"aten::max_pool2d_with_indices_backward\"]" \
		"prof = {r.key: r.count for r in p.rows}" \
		"mine = {r.name: r.calls for r in o.rows if r.get(\"primitive\") is None and r.get(\"calls\")}" \
		"both = [k for k in steps if k in mine and k in prof]" \
		"print([(k, prof[k], mine[k]) for k in both])" \
		"len(both) >= 4" \
		"all(mine[k] * $STEPS == prof[k] * ($STEPS + 1) for k in both)" &&
	"$DLPROF" report -i cnn.data --sort op --metrics >m.txt &&
	tr -s " \n" "  " <m.txt | grep -o "most in aten::[^;]*" >finding &&
	cat finding && read -r _ _ op pct _ _ n _ _ _ per _ <finding &&
	"$DLPROF" report -i cnn.data --sort op --metrics --format json --limit 0 >m.json &&
	json_check m.json "r = [r for r in j.rows if r.op == \"${op%:}\"][0]" \
		"print(r.calls, r[\"page-faults\"], \"$per\")" \
		"r.calls > 0 and abs(r[\"page-faults\"] / r.calls - $per) <= 1" &&
	json_check m.json \
		"r = [r for r in j.rows if r.op == \"aten::mkldnn_convolution\"][0]" \
		"print(r)" \
		"r.calls > 0 and abs(r[\"page-faults/call\"] - r[\"page-faults\"] / r.calls) < 0.01"
'

# one file under two paths (a bind mount, as two containers of one image have it): one
# link, each call counted once; a link per path counted the second process's twice
# (1,050 relu for 700)
test_expect_success 'one library under two paths: each call counted once' '
	mkdir bindlib &&
	unshare -m sh -c "mount --bind /usr/lib/x86_64-linux-gnu \"$TRASH/bindlib\" &&
		\"$DLPROF\" record -q --op-calls -o bind.data -- sh -c \"/usr/bin/python3 \
		$SRC/workloads/op_calls.py >t1 && LD_LIBRARY_PATH=$TRASH/bindlib /usr/bin/python3 \
		$SRC/workloads/op_calls.py >t2\"" &&
	"$RECDUMP" bind.data >bdump && calls_of bdump >bcalls &&
	grep -q "bindlib/libtorch_cpu" bdump &&
	while read -r what op n; do
		[ "$what" = calls ] || continue
		grep -qx "$op=$((2 * n))" bcalls || { echo "$op: not $((2 * n))"; grep "^$op=" bcalls; exit 1; }
	done <t1
'

test_expect_success 'nothing to count: said in one line, an empty META' '
	"$DLPROF" record --op-calls -o none.data -- /usr/bin/python3 -c pass 2>err &&
	cat err && grep -q "^dlprof: warning: --op-calls: no process mapped libtorch_cpu.so" err &&
	"$RECDUMP" none.data | grep -qx "META op_calls=" &&
	"$DLPROF" report -i none.data --sort op >none.txt &&
	! grep -q "calls were counted" none.txt
'

test_expect_success '-a: the calls of every process, the workload'"'"'s among them' '
	"$DLPROF" record -a --op-calls -o a.data -- /usr/bin/python3 "$SRC/workloads/op_calls.py" \
		>atruth 2>aerr &&
	cat aerr && "$RECDUMP" a.data >adump && calls_of adump >acalls &&
	while read -r what op n; do
		[ "$what" = calls ] || continue
		got=$(sed -n "s/^$op=//p" acalls) &&
		test "${got:-0}" -ge "$n" || { echo "$op: $got, fewer than $n"; exit 1; }
	done <atruth
'
test_done
