#!/bin/bash
# make check-e2e: over 20 s here, run apart from make check (tests/README.md)
# t9600-dist-ranks.sh - a distributed CPU training job (issue 37): DDP over gloo, two
# ranks (tests/workloads/ddp_train.py), rank 1 the straggler (--extra-ms 1:60: 60 ms of
# torch.mm in extra_work() every step, which rank 0 waits for in the gradient
# all-reduce), recorded as a job is:
#   (a) one dlprof record around the launcher (tests/tools/launch-ranks.sh, torchrun's
#       variables), both ranks in job.data;
#   (b) one record per rank inside the launcher, -o prof-%r.data;
#   (c) two hosts (network namespaces joined by a veth, a host name each), one record
#       per host around its launcher, -o node-%h.data;
#   (d) mpirun -np 2 dlprof record -o prof-%h-%r.data (openmpi-bin);
#   (e) srun -n 2 dlprof record ... on a Slurm node of the test's own (slurm-wlm, munge);
#   and a balanced run (--extra-ms 0:20,1:20: the same on both), one record per rank.
# Each scenario's directory keeps the recordings, the ranks' TRUTH lines (truth*.txt)
# and stderr (err*.txt).  Checked today: the recordings' names; report --sort pid has a
# row per rank with the rank and pid the workload reported; report --by-input gives
# each recording its host's name (the namespaces' in (c)); the Python stacks of the
# ranks are read in the kernel at the sample (record's end line: M >= 90% of N), where
# python is dlprof's own child (b, d, e) and where a launcher is between them (a, c;
# before record loaded its BPF reader for any command: 0 in the kernel).
# The straggler (check_straggler, tests/dist-lib.sh): report --sort rank names rank 1
# with its extra work per step within 10% (3 ms floor) of what it measured, and
# extra_work in where, and rank 0's wait per step within 10% (3 ms floor) of its own
# wait_ms; the balanced run has no straggler.  Measured (one run, a-e): rank 1's extra
# 59.7-61.8 ms a step for 60.1 (its CPU time over rank 0's gave 53.7 once: rank 0's own
# page faults taken off), rank 0's wait 59.6-61.8 ms for its own 60.4-63.1.
# The workload's own wait_ms (its header says how it is measured) against rank 1's
# extra_ms, 2-core KVM guest: rank 0 waited 55.0-67.0 ms for 60.1 ms over 11 runs under
# dlprof record, rank 1 itself 0-5.5 ms (the all-reduce); hence each rank is compared
# with its own wait_ms, not with the straggler's extra.  36-42 s on 2 cores (each
# scenario 3.4-6.5 s, the rest the reports and Slurm's start and stop).
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS TORCH
. "$SRC/dist-lib.sh"
$PY -c 'import torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null ||
	test_skip_all "torch has no gloo backend"

# --sync hook: DDP's own all-reduce, its wait timed from when the gradients are handed to
# it (a comm hook) to the end of backward, not by the calibration (backward's time less a
# no-sync backward's): on a guest whose page faults are dear that one missed dlprof's by
# 6.5 ms (of 57) in a CI run; the hook's was within 3 ms of dlprof's in all five of a run
ARGS="--steps $DDP_STEPS --extra-ms 1:60 --sync hook"
HOST=$(uname -n)

# timed DIR CMD...: run CMD, add "DIR: S s" to the summary printed at the end
timed() {
	t0=$(date +%s%N)
	"${@:2}"
	rc=$?
	echo "$1: $(( ($(date +%s%N) - t0) / 1000000 )) ms" >>"$TRASH/summary"
	return $rc
}

# summary DIR: the truth and the kernel reads, for the summary
summary() {
	{ truth_json "$1" | sed "s|^|$1: |"
	  check_kernel_reads "$1"/err*.txt 2>/dev/null | sed "s|^|$1: |"; } >>"$TRASH/summary"
	return 0
}

test_expect_success '(a) one record around the launcher: job.data, a row per rank' '
	mkdir a &&
	timed a "$DLPROF" record -o a/job.data -- "$LAUNCH" 2 -- $PY "$DDP" $ARGS \
		>a/truth.txt 2>a/err.txt &&
	cat a/truth.txt && grep "^dlprof:" a/err.txt && summary a &&
	test "$(ls a/*.data)" = a/job.data &&
	check_ranks a 2 && check_hosts a
'
test_expect_success '(a) kernel reads of the ranks under the launcher: >= 90%' '
	check_kernel_reads a/err.txt
'
test_expect_success '(a) report --sort rank: rank 1 the straggler, rank 0 waits for it' '
	check_straggler a
'

test_expect_success '(b) one record per rank inside the launcher: prof-%r.data' '
	mkdir b &&
	timed b "$LAUNCH" 2 -- "$DLPROF" record -o b/prof-%r.data -- $PY "$DDP" $ARGS \
		>b/truth.txt 2>b/err.txt &&
	cat b/truth.txt && grep "^dlprof:" b/err.txt && summary b &&
	test "$(echo $(ls b/*.data))" = "b/prof-0.data b/prof-1.data" &&
	check_ranks b 2 && check_hosts b
'
test_expect_success '(b) kernel reads of each rank: >= 90%' '
	check_kernel_reads b/err.txt
'
test_expect_success '(b) report --sort rank over prof-0.data prof-1.data' '
	check_straggler b
'

if netns_setup >"$TRASH/.netns-why" 2>&1; then
	test_expect_success "(c) two hosts, one record each: node-%h.data, the hosts' names" '
		mkdir c && port=$(netns_port) && echo "port $port" &&
		net="--nnodes 2 --master-addr $ADDR_A --port $port" &&
		t0=$(date +%s%N)
		on_host A "$DLPROF" record -o c/node-%h.data -- "$LAUNCH" 1 $net --node-rank 0 -- \
			$PY "$DDP" $ARGS >c/truth-a.txt 2>c/err-a.txt &
		a=$!
		rcb=0
		on_host B "$DLPROF" record -o c/node-%h.data -- "$LAUNCH" 1 $net --node-rank 1 -- \
			$PY "$DDP" $ARGS >c/truth-b.txt 2>c/err-b.txt || rcb=$?
		rca=0
		wait $a || rca=$?
		echo "c: $(( ($(date +%s%N) - t0) / 1000000 )) ms" >>"$TRASH/summary" &&
		cat c/truth-a.txt c/truth-b.txt && grep "^dlprof:" c/err-a.txt c/err-b.txt &&
		test $rca = 0 && test $rcb = 0 && summary c &&
		test "$(echo $(ls c/*.data))" = "c/node-$HOST_A.data c/node-$HOST_B.data" &&
		check_ranks c 2 && check_hosts c &&
		json_check c/input.json "sorted(x.host for x in j.rows) == [\"$HOST_A\", \"$HOST_B\"]"
	'
	netns_cleanup
	test_expect_success '(c) kernel reads of the ranks under the launchers: >= 90%' '
		check_kernel_reads c/err-a.txt c/err-b.txt
	'
	test_expect_success '(c) report --sort rank over the two hosts: rank 1 on host B' '
		check_straggler c
	'
	test_expect_success '(c) timeline of the two hosts: both ranks step together' '
		check_timeline_steps c
	'
else
	why=$(tail -n 1 "$TRASH/.netns-why")
	netns_cleanup
	test_skip '(c) two hosts in network namespaces' "$why"
	test_skip '(c) kernel reads' "$why"
	test_skip '(c) report --sort rank over the two hosts' "$why"
	test_skip '(c) timeline of the two hosts' "$why"
fi

if command -v mpirun >/dev/null; then
	test_expect_success '(d) mpirun -np 2 dlprof record -o prof-%h-%r.data' '
		mkdir d &&
		MASTER_ADDR=127.0.0.1 MASTER_PORT=$(free_port) timed d mpirun -np 2 --oversubscribe \
			--bind-to none -x MASTER_ADDR -x MASTER_PORT \
			"$DLPROF" record -o d/prof-%h-%r.data -- $PY "$DDP" $ARGS \
			>d/truth.txt 2>d/err.txt &&
		cat d/truth.txt && grep "^dlprof:" d/err.txt && summary d &&
		test "$(echo $(ls d/*.data))" = "d/prof-$HOST-0.data d/prof-$HOST-1.data" &&
		check_ranks d 2 && check_hosts d
	'
	test_expect_success '(d) kernel reads of each rank: >= 90%' '
		check_kernel_reads d/err.txt
	'
	test_expect_success '(d) report --sort rank over the mpirun ranks' '
		check_straggler d
	'
else
	test_skip '(d) mpirun' 'no mpirun (openmpi-bin)'
	test_skip '(d) kernel reads' 'no mpirun (openmpi-bin)'
	test_skip '(d) report --sort rank' 'no mpirun (openmpi-bin)'
fi

if slurm_start >"$TRASH/.slurm-why" 2>&1; then
	test_expect_success '(e) srun -n 2 dlprof record -o prof-%h-%r.data' '
		mkdir e &&
		MASTER_ADDR=127.0.0.1 MASTER_PORT=$(free_port) timed e timeout 120 srun -n 2 \
			"$DLPROF" record -o e/prof-%h-%r.data -- $PY "$DDP" $ARGS \
			>e/truth.txt 2>e/err.txt &&
		cat e/truth.txt && grep "^dlprof:" e/err.txt && summary e &&
		test "$(echo $(ls e/*.data))" = "e/prof-$HOST-0.data e/prof-$HOST-1.data" &&
		check_ranks e 2 && check_hosts e
	'
	slurm_stop
	test_expect_success '(e) kernel reads of each rank: >= 90%' '
		check_kernel_reads e/err.txt
	'
	test_expect_success '(e) report --sort rank over the srun ranks' '
		check_straggler e
	'
else
	why=$(tail -n 1 "$TRASH/.slurm-why")
	slurm_stop
	test_skip '(e) srun' "$why"
	test_skip '(e) kernel reads' "$why"
	test_skip '(e) report --sort rank' "$why"
fi

# The balanced ranks each run 20 ms of extra_work a step: without it a step is 7 ms, and
# on 2 cores shared by both ranks, their gloo threads and two recorders a rank woken at
# the end of an all-reduce may run again a whole step later (the workload's own clocks put
# the two ranks' returns from one all-reduce up to 6.6 ms apart): no profiler can then
# tell from the waits alone which all-reduce a wait ended, and the steps found were
# 27-36 for 30.  With 27 ms steps such a delay is a quarter of a step.  Balanced ranks
# now and then both leave the all-reduce without blocking (one run of 7 here: no wait
# on either rank in one step, 27 steps found for 30 before steps were also told by
# the backward's samples).  Their waits are timed by the comm hook (--sync hook), as the
# other scenarios': the calibrated ones (backward less a no-sync backward) were 10.7 ms
# for a rank whose hook would have said ~4 once, its no-sync backward 2.9 ms for the
# other rank's 12.5.  A CI run named rank 1 the straggler, rightly: it ran 17.6 ms a
# step more than rank 0 (8.8 of aten, 6.4 of page faults), glibc's malloc giving it its
# page faults again every step (ddp_train.py --malloc); the workload now pins malloc.
test_expect_success 'balanced: one record per rank, the same extra work on each' '
	mkdir bal &&
	timed bal "$LAUNCH" 2 -- "$DLPROF" record -o bal/prof-%r.data -- \
		$PY "$DDP" --steps $DDP_STEPS --extra-ms 0:20,1:20 --sync hook >bal/truth.txt 2>bal/err.txt &&
	cat bal/truth.txt && summary bal &&
	check_ranks bal 2 &&
	json_check bal/truth.json "all(x.extra_ms >= 20 for x in j)" \
		"max(x.extra_ms for x in j) - min(x.extra_ms for x in j) < 10"
'
test_expect_success 'balanced: report --sort rank names no straggler' '
	check_straggler bal
'

test -e "$TRASH/summary" && sed 's/^/# /' "$TRASH/summary"
test_done
