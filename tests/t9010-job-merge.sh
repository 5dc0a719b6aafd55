#!/bin/bash
# t9010-job-merge.sh - one job's recordings from several hosts read together.  Two
# "hosts" are UTS namespaces (their own host names, one kernel), each with a node
# recording (dlprof record -o node-%h.data) around a rank that prints its wall clock
# as it wakes from a sleep (job-mark); host-a also has a per-rank recording inside its
# node one.  Checked: the timeline puts each host's wake-up where the rank's own
# CLOCK_REALTIME says (within 2 ms), pids and names per host; report's header says how
# well the recordings line up; the rank recorded twice is counted once (merged samples
# = the sum less the later recording's); different jobs and a rank held twice are
# warned in one line each; a recording without clock anchors is said in one line and
# put at the trace's start.
. "$(dirname "$0")/lib.sh"
. "$SRC/record-lib.sh"
test_require PERF_EVENTS

command -v unshare >/dev/null && unshare --uts true 2>/dev/null ||
	test_skip_all "no UTS namespaces (unshare --uts, root)"
test -x "$WL/job-mark" || test_skip_all "job-mark not built (make check)"
unset RANK LOCAL_RANK WORLD_SIZE MASTER_ADDR MASTER_PORT TORCHELASTIC_RUN_ID SLURM_JOB_ID \
	SLURM_STEP_ID SLURM_PROCID PMIX_NAMESPACE OMPI_MCA_ess_base_jobid OMPI_COMM_WORLD_RANK \
	PMI_RANK

# host NAME RANK PORT CMD...: CMD under dlprof record in a UTS namespace named NAME, as
# the rank RANK of the job whose rendezvous is at 10.0.0.1:PORT
host() {
	name=$1 rank=$2 port=$3
	shift 3
	unshare --uts env H="$name" RANK="$rank" LOCAL_RANK=0 WORLD_SIZE=2 \
		MASTER_ADDR=10.0.0.1 MASTER_PORT="$port" sh -c 'hostname "$H" && exec "$@"' sh \
		"$DLPROF" record -q -o "node-%h.data" -- "$@"
}

# A node recording that holds a dlprof record of its own has some of the inner
# recorder's samples unreadable (a known fault, older than this test: their stack
# copies): those readers exit 1 (partial) instead of 0
ok01() {
	"$@" || test $? = 1
}

json() {	# report's JSON header of the recordings
	ok01 "$DLPROF" report --format json --limit 1 "$@"
}

test_expect_success 'two hosts, a rank each; host-a records its rank twice' '
	host host-a 0 29500 sh -c "\"$DLPROF\" record -q -o rank-%h-%r.data -- \"$WL/job-mark\" 150 250 150 >mark-a" &
	sleep 0.1 &&
	host host-b 1 29500 sh -c "\"$WL/job-mark\" 100 300 100 >mark-b" &&
	wait $! && wait &&
	cat mark-a mark-b && ls -l *.data &&
	test -s node-host-a.data && test -s node-host-b.data && test -s rank-host-a-0.data &&
	"$RECDUMP" node-host-a.data | grep "^PROC .*job-mark" | tee procs &&
	test_grep "job-mark 150 250 150 rank=0 .*start=[0-9]* job=master:10.0.0.1:29500" procs
'

test_expect_success 'timeline: both hosts on the wall clock, each wake-up where its rank saw it' '
	ok01 "$DLPROF" timeline -o trace.json node-host-a.data node-host-b.data 2>err &&
	cat err && ! grep -q "no clock anchor" err &&
	/usr/bin/python3 - trace.json mark-a mark-b <<-\PY
	import json, sys
	j = json.load(open(sys.argv[1]))
	od = j["otherData"]
	assert od["clock"] == "CLOCK_REALTIME", od
	zero = od["first_ns"]
	names = {e["pid"]: e["args"]["name"] for e in j["traceEvents"] if e["name"] == "process_name"}
	print(names)
	for f, host in zip(sys.argv[2:], ("host-a", "host-b")):
	    _, pid, real = open(f).read().split()
	    pid, real = int(pid), int(real)
	    tp = [p for p, n in names.items() if p % 10000000 == pid and "(%s) pid %d " % (host, pid) in n]
	    assert len(tp) == 1, (host, pid, names)
	    tp = tp[0]
	    assert names[tp].startswith("rank %d (%s) pid %d " % (host == "host-b", host, pid)), names[tp]
	    assert (tp >= 10000000) == (host == "host-b"), tp
	    offs = [e for e in j["traceEvents"] if e.get("cat") == "sched" and e["pid"] == tp]
	    wake = max(offs, key=lambda e: e["dur"])
	    at = zero + (wake["ts"] + wake["dur"]) * 1000
	    print(host, "pid", pid, "slept", wake["dur"] / 1000, "ms; woke at", at,
	          "printed", real, "error %.3f ms" % ((real - at) / 1e6))
	    assert wake["dur"] > 200000, wake
	    assert abs(real - at) < 2e6, (real, at)
	PY
'

test_expect_success 'report: the alignment line, with sane numbers' '
	ok01 "$DLPROF" report --no-findings --limit 3 node-host-a.data node-host-b.data >rep.txt 2>err &&
	cat rep.txt && test_grep "^# aligned: 2 hosts by wall clock, +-.* (anchor reads), drift up to .* over the run; hosts.* clocks assumed in sync (NTP)" rep.txt &&
	json node-host-a.data node-host-b.data >al.json &&
	json_check al.json <<-\PY
	a = j.header.alignment
	a.recordings == 2 and a.anchored == 2 and a.hosts == 2
	a.anchor_err_ns < 1000000
	a.drift_ns < 5000000
	j.header.duplicates.processes == 0
	PY
'

test_expect_success 'a rank recorded by its node and by itself is counted once' '
	json node-host-a.data >n.json && json rank-host-a-0.data >r.json &&
	json node-host-a.data rank-host-a-0.data >m.json &&
	json_check n=n.json r=r.json m=m.json <<-\PY
	d = m.header.duplicates
	d.processes == 1
	d.samples == r.header.samples
	m.header.samples == n.header.samples + r.header.samples - d.samples
	r.header.samples > 50
	PY
	ok01 "$DLPROF" report --no-findings --limit 1 node-host-a.data rank-host-a-0.data >m.txt &&
	test "$(grep -c "^# twice:" m.txt)" = 1 &&
	test_grep "^# twice:   1 process in two recordings, counted once: host-a pid [0-9]* .*job-mark (node-host-a.data, rank-host-a-0.data)" m.txt &&
	ok01 "$DLPROF" timeline -o t2.json node-host-a.data rank-host-a-0.data 2>err && cat err &&
	test_grep "in two recordings, counted once" err &&
	pid=$(cut -d" " -f2 mark-a) &&
	json_check t2.json <<-PY
	names = [e.args.name for e in j.traceEvents if e.name == "process_name"]
	len([n for n in names if " pid $pid " in n]) == 1
	PY
'

test_expect_success 'different jobs, and one rank twice: a line each' '
	host host-c 1 29600 "$WL/job-mark" 20 10 20 >/dev/null &&
	ok01 "$DLPROF" fold node-host-a.data node-host-c.data >/dev/null 2>err && cat err &&
	test "$(grep -c "different jobs" err)" = 1 &&
	test_grep "recordings of different jobs read together: master:10.0.0.1:29500 (node-host-a.data) and master:10.0.0.1:29600 (node-host-c.data)" err &&
	mv node-host-c.data other-job.data &&
	host host-c 1 29500 "$WL/job-mark" 20 10 20 >/dev/null &&
	"$DLPROF" report --no-findings --limit 1 node-host-b.data node-host-c.data >rep.txt 2>err &&
	cat err && ! grep -q "different jobs" err &&
	test "$(grep -c "rank 1 twice" err)" = 1 &&
	test_grep "rank 1 twice: host-b pid [0-9]* (node-host-b.data) and host-c pid [0-9]* (node-host-c.data)" err &&
	test_grep "^# warning: rank 1 twice" rep.txt &&
	ok01 "$DLPROF" timeline -o /dev/null node-host-a.data node-host-b.data 2>err &&
	! grep -q "twice\|different jobs" err
'

test_expect_success 'a recording without clock anchors: one line, at the trace start' '
	"$BUILD/tests/rec-mkfile" -n 200 old.data &&
	"$DLPROF" timeline -o t3.json node-host-b.data old.data 2>err && cat err &&
	test "$(grep -c "no clock anchor" err)" = 1 &&
	test_grep "no clock anchor in old.data" err &&
	json_check t3.json <<-\PY
	r = {x.file: x for x in j.otherData.recordings}
	not r["old.data"].anchored and r["node-host-b.data"].anchored
	first = min(e.ts for e in j.traceEvents if "ts" in e and e.pid >= 10000000)
	first < 2000
	PY
	"$DLPROF" report --no-findings --limit 1 node-host-b.data old.data >rep.txt 2>/dev/null &&
	test_grep "^# aligned: one host.*; no clock anchor in old.data: at its own start" rep.txt
'

test_done
