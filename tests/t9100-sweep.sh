#!/bin/sh
# t9100: dlprof sweep on an OpenMP workload of known scaling (sweep-omp: a fixed amount
# of work in many short parallel loops, timed by itself): the settings are 1, one
# socket's cores, all cores and a deliberately oversubscribed count; each speedup from the
# recordings' wall times matches the workload's own timings within 5%; the recommended
# setting is the one measured fastest; the --metric figure is the workload's; a setting
# that fails is reported and the sweep goes on; Ctrl-C prints what finished; the
# recordings stay for report.
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS
W="$BUILD/tests/workloads/sweep-omp"
[ -x "$W" ] || test_skip_all "$W not built"
unset OMP_NUM_THREADS OMP_PROC_BIND OMP_PLACES OMP_WAIT_POLICY GOMP_SPINCOUNT KMP_BLOCKTIME
ncores=$(ls -d /sys/devices/system/cpu/cpu[0-9]* | wc -l)
over=$((2 * ncores))

test_expect_success 'sweep 1 / one socket / all cores / oversubscribed, twice each' '
	"$DLPROF" sweep --threads $over --repeat 2 --format json -o sw -- "$W" 1200 8000 >sw.json 2>err &&
	cat err && ls sw | head -20 &&
	test -s sw/1-thread.1.data && test -s sw/$over-threads.2.out
'

test_expect_success 'speedups within 5% of the workload'"'"'s own; the best is the fastest' '
	json_check d=sw.json <<-PY
	sets = {s.threads: s for s in d.settings}
	1 in sets and $over in sets and d.complete
	own = {}
	for t, s in sets.items():
	    v = [float(re.search(r"time_ms=([0-9.]+)", open("sw/%s.%d.out" % (s.name, r)).read()).group(1))
	         for r in (1, 2)]
	    own[t] = statistics.median(v)
	for t, s in sorted(sets.items()):
	    mine = own[1] / own[t]
	    print("%2d threads: speedup %.3f, the workload says %.3f; spin %.1f%%" %
	          (t, s.speedup, mine, s.omp_spin_pct))
	    assert abs(s.speedup - mine) <= 0.05 * mine, (t, s.speedup, mine)
	    assert abs(s.efficiency - s.speedup / t) < 1e-3
	fastest = min(d.settings, key=lambda s: s.wall_s)
	d.best == fastest.name
	sets[1].cpu_s > 0 and sets[1].families
	PY
'

test_expect_success 'the table; --metric is the workload'"'"'s figure; recordings open in report' '
	"$DLPROF" sweep --repeat 1 --metric "time_ms=([0-9.]+)" -o sw2 -- "$W" 600 8000 >table 2>/dev/null &&
	cat table &&
	test_grep -q "^# machine: [0-9]* socket" table && test_grep -q "^Best: " table &&
	/usr/bin/python3 - <<-\EOF
	import re
	rows = [l.split() for l in open("table") if re.match(r"\d+-threads? ", l)]
	for r in rows:
	    own = float(re.search(r"time_ms=([0-9.]+)", open("sw2/%s.1.out" % r[0]).read()).group(1))
	    assert abs(float(r[3]) - own) < 0.01 * own + 0.001, (r, own)
	EOF
	"$DLPROF" report -i sw2/1-thread.1.data -n 3 >rep && test_grep -q "^# samples: " rep
'

test_expect_success 'a setting that fails is reported, the others run' '
	cat >fails.sh <<-EOF &&
	#!/bin/sh
	test "\$OMP_NUM_THREADS" = 1 && { echo "no single thread here" >&2; exit 3; }
	exec "$W" 300 8000
	EOF
	chmod +x fails.sh &&
	"$DLPROF" sweep --format json -o sw3 -- ./fails.sh >f.json 2>err; st=$? &&
	cat err && test $st = 0 &&
	test_grep -q "1-thread run 1 failed with status 3" err &&
	json_check f.json <<-\PY &&
	s = {x.threads: x for x in j.settings}
	s[1].failed_status == 3 and s[1].runs == 0
	j.best and j.best != "1-thread"
	PY
	grep -q "no single thread here" sw3/1-thread.1.out
'

test_expect_success 'Ctrl-C: exit 130 and what finished' '
	"$DLPROF" sweep --repeat 5 --format json -o sw4 -- "$W" 1500 8000 >i.json 2>err &
	pid=$! &&
	for i in $(seq 100); do test -s sw4/1-thread.1.out && break; sleep 0.1; done &&
	sleep 1 && kill -INT $pid; wait $pid; st=$? &&
	echo "status $st" && test $st = 130 &&
	json_check i.json <<-\PY
	j.complete is False
	sum(s.runs for s in j.settings) >= 1
	PY
'

test_expect_success 'bad options: one line, exit 64' '
	{ "$DLPROF" sweep --threads 0 -- "$W" 2>err; test $? = 64; } && test_grep -q "bad thread count" err &&
	{ "$DLPROF" sweep --wait lazy -- "$W" 2>err; test $? = 64; } && test_grep -q "bad wait policy" err &&
	{ "$DLPROF" sweep --metric "time_ms" -- "$W" 2>err; test $? = 64; } && test_grep -q "needs a group" err &&
	{ "$DLPROF" sweep 2>err; test $? = 64; } && test_grep -q "no command given" err
'

test_done
