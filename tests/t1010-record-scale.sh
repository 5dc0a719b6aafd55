#!/bin/bash
# t1010-record-scale.sh - many threads and many processes: 64 threads of known CPU time
# each, and a torchrun-shaped launcher (4 worker processes x 4 threads, RANK/LOCAL_RANK/
# WORLD_SIZE in their environment) at 999 Hz: every thread's samples match the CPU time
# it burnt (the workload's own clock), nothing is lost, `report --sort pid` gives each
# process with its command line and rank, and JIT maps and ITT tasks stay per process.
. "$(dirname "$0")/lib.sh"
. "$SRC/record-lib.sh"
test_require PERF_EVENTS

# rec-threads N S: N workers, each burns exactly S seconds of its own CPU time
cat >"$TRASH/launch.sh" <<'EOF'
#!/bin/sh
# launch.sh NPROC PROGRAM ARGS...: NPROC copies, ranked as torchrun ranks them
n=$1; shift
r=0
while [ $r -lt "$n" ]; do
	RANK=$r LOCAL_RANK=$r WORLD_SIZE=$n "$@" &
	r=$((r + 1))
done
wait
EOF
chmod +x "$TRASH/launch.sh"

test_expect_success '64 threads: each has the samples of its CPU time, none lost' '
	"$DLPROF" record -o t64.data -- "$WL/rec-threads" 64 0.06 2>err &&
	cat err && test_grep ", 0 lost," err &&
	"$DLPROF" report -i t64.data --sort thread --format csv --limit 0 >threads.csv &&
	"$DLPROF" report -i t64.data --no-findings --limit 1 >head.txt &&
	test_grep "lost: 0$" head.txt &&
	awk -F, "NR > 1 && \$1 != \$2" threads.csv >workers &&
	test "$(wc -l <workers)" -eq 64 &&
	# 60 ms of CPU at 999 Hz: 60 samples each, 3836 in all.  Time-sliced 32 to a core,
	# a thread'"'"'s share of the samples drifts from its CPU time (52 to 67 seen), their
	# sum does not.  Now and then the kernel'"'"'s cpu-clock gives one or two threads far
	# fewer (35 and 31 samples for 60 ms on a cpu by the switch records, 0 lost, 2 runs
	# in 35): two may fall to 25
	awk -F, "{ n += \$4 } \$4 < 48 || \$4 > 72 { bad++; print \"off:\", \$0 }
		 \$4 < 25 || \$4 > 72 { worse++ }
		 END { print \"sum\", n; exit bad > 2 || worse > 0 || n < 3720 || n > 3950 }" workers
'

test_expect_success '4 ranks x 4 threads: every thread sampled, none lost' '
	"$DLPROF" record -o ranks.data -- "$TRASH/launch.sh" 4 "$WL/rec-threads" 4 0.1 2>err &&
	cat err && test_grep ", 0 lost," err &&
	"$DLPROF" report -i ranks.data --sort thread --format csv --limit 0 >threads.csv &&
	awk -F, "NR > 1 && \$1 != \$2 && \$3 ~ /rec-threads/" threads.csv >workers &&
	# 16 x 100 ms of CPU: 1600 samples; a CI run on a busy guest saw 1542 (and 364 for
	# one rank of 400): the sum may fall 6% short, a rank 11%

	test "$(wc -l <workers)" -eq 16 &&
	awk -F, "{ n += \$4 } \$4 < 80 || \$4 > 120 { bad++; print \"off:\", \$0 }
		 END { print \"sum\", n; exit bad > 0 || n < 1500 || n > 1650 }" workers &&
	test "$(cut -d, -f1 workers | sort -u | wc -l)" -eq 4
'

test_expect_success 'report --sort pid: each process, its command line and rank' '
	"$DLPROF" report -i ranks.data --sort pid --no-findings >pid.txt &&
	cat pid.txt &&
	test_grep "Share  *Samples  *On-CPU  *Threads  *Pid  *Rank" pid.txt &&
	"$DLPROF" report -i ranks.data --sort pid --format csv >pid.csv &&
	for r in 0 1 2 3; do
		line=$(awk -F, -v r=$r "NR > 1 && \$6 == r" pid.csv) &&
		echo "$line" | test_grep ",5,$r,$r,4,\"[^\"]*\",[0-9.]*,\"rec-threads\",\"[^\"]*rec-threads 4 0.1\"$" &&
		n=$(echo "$line" | cut -d, -f2) &&
		test "$n" -ge 355 && test "$n" -le 440 || return 1
	done &&
	# the launcher: no rank; its fork and exec, under a tenth of the least a rank has
	# (1 to 12 samples as guests go: page faults cost more on some)
	test_grep "^[0-9]*,[0-9]*,[0-9.]*,[0-9]*,1,,,,\"[^\"]*\",[0-9.]*,\"[^\"]*\",\"/bin/sh [^\"]*launch.sh 4 " pid.csv &&
	n=$(grep "launch.sh 4 " pid.csv | cut -d, -f2) && test "$n" -lt 36 &&
	"$DLPROF" report -i ranks.data --sort pid --format json >pid.json &&
	json_check pid.json <<-\PY
	sorted(r.rank for r in j.rows if "rank" in r) == [0, 1, 2, 3]
	all(r.world_size == 4 for r in j.rows if "rank" in r)
	abs(sum(r.pct for r in j.rows) - 100) < 0.1
	PY
'

test_expect_success 'attached (-p): the process is named with its rank' '
	{ RANK=7 WORLD_SIZE=8 "$WL/rec-threads" 1 3 >/dev/null 2>&1 & } &&
	bg=$! &&
	"$DLPROF" record -q -o att.data -p $bg --duration 0.5 &&
	kill $bg &&
	"$RECDUMP" att.data >dump &&
	test_grep "^PROC pid=$bg cmdline=$WL/rec-threads 1 3 rank=7 world_size=8 start=[0-9]*$" dump &&
	"$DLPROF" report -i att.data --sort pid --format csv >pid.csv && cat pid.csv &&
	test_grep "^$bg,[^,]*,[^,]*,[^,]*,[^,]*,7,,8," pid.csv
'

test_expect_success 'a rank that is not a number is not taken (the JSON stays valid)' '
	RANK="0, \"x\": 1" "$DLPROF" record -q -o badrank.data -- "$WL/rec-hot" 0.05 &&
	"$DLPROF" report -i badrank.data --sort pid --format json >bad.json &&
	json_check bad.json "all(\"rank\" not in r for r in j.rows)"
'

test_expect_success 'ITT tasks stay per process (two ITT users side by side)' '
	"$DLPROF" record -q -o itt.data -- "$TRASH/launch.sh" 2 "$WL/dl-itt-user" >out &&
	cat out &&
	"$DLPROF" timeline -i itt.data -o t.json 2>/dev/null &&
	json_check t.json <<-\PY
	c = collections.Counter((e.pid, e.name) for e in j.traceEvents if e.get("cat") == "dnnl")
	pids = sorted(set(p for p, _ in c))
	print(c)
	len(pids) == 2
	all(c[(p, "convolution")] == 200 and c[(p, "reorder")] == 100 for p in pids)
	PY
'

test_expect_success 'JIT maps stay per process (two JIT processes side by side)' '
	JITDUMPDIR=$TRASH "$DLPROF" record -q -o jit.data -- "$TRASH/launch.sh" 2 "$BUILD/tests/unw-jit" 0.3 >out &&
	cat out && k=$(sed -n "s/^kernel //p" out | head -n 1) && test -n "$k" &&
	for p in $(sed -n "s/^pid //p" out); do
		"$DLPROF" report -i jit.data --pid $p --limit 1 --format csv >top.csv &&
		sed -n 2p top.csv | test_grep ",$k,\\[jit\\]$" || { cat top.csv; return 1; }
		rm -f /tmp/perf-$p.map "$TRASH/jit-$p.dump"
	done
'

test_done
