#!/bin/sh
# t9002: where threads wait.  record --off-cpu samples every switch-out with its stack;
# fold and report --off-cpu weigh each blocking stack by the time until its thread ran
# again.  The workload waits 3 x 100 ms on a condition variable in wait_for_batch() and
# ~200 ms in read() of a pipe in read_pipe(), and prints what its own clock measured:
# each within 10%.  The thread table: a thread that runs to its exit (rep-tail), on
# and off the CPU as its own clocks say.
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS
W="$BUILD/tests/workloads/rep-waits"
[ -x "$W" ] || test_skip_all "$W not built"

test_expect_success 'record --off-cpu the known waits' '
	"$DLPROF" record -q --off-cpu -o w.data -- "$W" >truth.txt && cat truth.txt &&
	"$DLPROF" fold -i w.data --off-cpu --no-comm >off.fold &&
	"$DLPROF" report -i w.data --off-cpu >off.txt && head -14 off.txt
'

test_expect_success 'each wait within 10% of the workload own figure' '
	/usr/bin/python3 - <<-\EOF
	truth = {k: int(v) / 1000.0 for k, v in (l.split() for l in open("truth.txt"))}
	got = dict.fromkeys(truth, 0)
	for line in open("off.fold"):
	    stack, n = line.rsplit(" ", 1)
	    for k in truth:
	        if ";%s;" % k in ";" + stack + ";":
	            got[k] += int(n)
	for k in truth:
	    print("%-15s measured %8.0f us  off-CPU %8.0f us" % (k, truth[k], got[k]))
	    assert abs(got[k] - truth[k]) <= 0.1 * truth[k], k
	EOF
'

test_expect_success 'by family: the waits told apart (wait-lock, wait-io, the sleeping producer)' '
	"$DLPROF" report -i w.data --off-cpu --sort family >fam.txt && cat fam.txt &&
	"$DLPROF" report -i w.data --off-cpu --sort family --format json >fam.json &&
	json_check fam.json <<-\PY
	truth = {k: int(v) / 1000.0 for k, v in (l.split() for l in open("truth.txt"))}
	fam = {f.family: f.us for f in j.families}
	print(fam)
	abs(fam["wait-lock"] - truth["wait_for_batch"]) <= 0.1 * truth["wait_for_batch"]
	abs(fam["wait-io"] - truth["read_pipe"]) <= 0.1 * truth["read_pipe"]
	# the helper thread sleeps 3 x 100 ms + 200 ms in nanosleep
	abs(fam["wait-sleep"] - 500000) <= 50000
	PY
	"$DLPROF" report -i w.data --wall --sort family --format csv >wall.csv && cat wall.csv &&
	head -1 wall.csv | grep -q "^family,us,pct,samples$" && grep -q "^\"wait-lock\"," wall.csv
'

test_expect_success 'the report says what it counts; the other DL views refuse --off-cpu' '
	grep -E "^# off-CPU: [0-9]+ switch-outs; each stack weighs the time its thread was" off.txt &&
	grep -E "^# event: +context-switches \(every switch-out" off.txt &&
	"$DLPROF" report -i w.data --off-cpu --format json >off.json &&
	json_check off.json <<-\PY &&
	# every switch-out stack ends where the thread left the CPU: schedule(), or a
	# preemption point that calls __schedule() itself (__cond_resched, preempt_schedule*)
	entry = lambda s: s in ("schedule", "__cond_resched", "do_task_dead") or s.startswith("preempt_schedule")
	leaves = sum(r.self_pct for r in j.rows if entry(r.symbol))
	abs(leaves - 100) < 0.01 and j.header.ns_per_sample == 1000
	PY
	{ "$DLPROF" report -i w.data --off-cpu --sort op 2>err; test $? = 64; } && cat err &&
	"$DLPROF" report -i w.data >on.txt && ! grep -q "^# event: *context-switches" on.txt
'

test_expect_success 'timeline from inside a wait: what came before its zero is cut, not moved' '
	# --time starts inside the third 100 ms wait: the trace starts at the next sample,
	# after it.  The waits before are not drawn at 0 with their whole length (over the
	# next ones, 5 ms later): each track nests, the read_pipe wait is whole.
	"$DLPROF" timeline -i w.data --time 0.15,10 -o late.json 2>err && cat err &&
	json_check late=late.json <<-\PY
	truth = {k: int(v) / 1000.0 for k, v in (l.split() for l in open("truth.txt"))}
	tracks = collections.defaultdict(list)
	for e in late.traceEvents:
	    if e.ph == "X":
	        tracks[(e.pid, e.tid)].append((e.ts, e.ts + e.dur, e.name))
	for key, sl in tracks.items():
	    sl.sort()
	    for (b0, e0, n0), (b1, e1, n1) in zip(sl, sl[1:]):
	        assert e0 <= b1 + 1e-3 or e1 <= e0 + 1e-3, (key, n0, b0, e0, n1, b1, e1)
	io = [e - b for sl in tracks.values() for b, e, n in sl if n.startswith("wait-io")]
	print("wait-io slices (us):", io, "read_pipe:", truth["read_pipe"])
	len(io) == 1 and abs(io[0] - truth["read_pipe"]) <= 0.1 * truth["read_pipe"]
	PY
'

test_expect_success '--wall: on- and off-CPU together, the main thread totals its wall time' '
	"$DLPROF" report -i w.data --wall --sort tid --format json >wall.json &&
	"$DLPROF" report -i w.data --wall --sort tid | sed -n 1,14p &&
	json_check wall.json <<-\PY
	wall_us = j.header.duration_ns / 1000.0
	rows = {int(r.symbol.split()[0]): r.self for r in j.rows}
	print("duration %.0f us, threads %s" % (wall_us, rows))
	# the main thread lives from the first sample to the end: its on+off time
	abs(max(rows.values()) - wall_us) <= 0.05 * wall_us
	PY
	"$DLPROF" fold -i w.data --wall --no-comm | grep -q "^_start;.*;main;spin_ms" &&
	{ "$DLPROF" fold -i w.data --wall --off-cpu 2>err; test $? = 64; } &&
	"$DLPROF" record -q --no-off-cpu -o plain.data -- "$W" >/dev/null &&
	{ "$DLPROF" report -i plain.data --wall 2>err; test $? = 2; } && cat err &&
	test "$(wc -l <err)" = 1 && grep -q "record it with --off-cpu" err
'

# rep-tail: a thread naps 20 x 10 ms, then runs 300 ms alone to its exit, with no switch
# after its last switch-in: the thread table gives it its own CPU time on the CPU, and
# its own wall - CPU time off it (each within 5% and 3 ms), the last stretch counted on
# the CPU to its exit, not taken from its time off the CPU
test_expect_success 'the thread table: a thread running to its exit, on and off the CPU' '
	"$DLPROF" record -q -o tail.data -- "$BUILD/tests/workloads/rep-tail" >tail.txt &&
	cat tail.txt &&
	"$DLPROF" report -i tail.data --sort thread --format json >tail.json &&
	"$DLPROF" report -i tail.data --sort thread &&
	json_check tail.json "tid, wall, cpu = [int(x) for x in open(\"tail.txt\").read().split()[1:4]]" \
		"r = [r for r in j.rows if r.tid == tid][0]" \
		"print(\"on the CPU\", r.on_cpu_ns / 1e6, \"ms, its CPU\", cpu / 1e6, \"; off\", r.off_cpu_ns / 1e6, \"ms, its wall - CPU\", (wall - cpu) / 1e6)" \
		"abs(r.on_cpu_ns - cpu) <= 0.05 * cpu + 3e6" \
		"abs(r.off_cpu_ns - (wall - cpu)) <= 0.05 * (wall - cpu) + 3e6"
'

test_done
