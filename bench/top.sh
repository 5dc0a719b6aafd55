#!/bin/sh
# bench/top.sh - what `dlprof top` costs: dlprof's own CPU time (the workload's excluded)
# per second of the run, for `record` and for `top` (plain tables to a pipe, and on a
# terminal in tmux), at 999 Hz on 2 busy threads (rec-threads), interleaved rounds.
# Goal (issue: tuning): top's refresh costs under 5% of one core: top minus record.
#   bench/top.sh [-n ROUNDS] [-s SECONDS] [-d DELAY]
set -e
cd "$(dirname "$0")/.."
DLPROF=${DLPROF:-$PWD/dlprof}
W=$PWD/build/tests/workloads/rec-threads
rounds=3 secs=20 delay=1
while [ $# -gt 0 ]; do
	case "$1" in
	-n) rounds=$2; shift 2 ;;
	-s) secs=$2; shift 2 ;;
	-d) delay=$2; shift 2 ;;
	*) echo "usage: bench/top.sh [-n ROUNDS] [-s SECONDS] [-d DELAY]" >&2; exit 64 ;;
	esac
done
[ -x "$W" ] || make -s build/tests/workloads/rec-threads >/dev/null
tmp=$(mktemp -d)
trap 'tmux -L dlprof-bench kill-server 2>/dev/null; rm -rf "$tmp"' EXIT

# cpu_of PID: utime+stime of PID in seconds, polled until it exits (the last reading
# before it is a zombie)
cpu_of() {
	last=0
	while v=$(awk '$3 != "Z" { print ($14 + $15) / 100 }' /proc/$1/stat 2>/dev/null) &&
	      [ -n "$v" ]; do
		last=$v
		sleep 0.05
	done
	echo "$last"
}
run_plain() {	# MODE: record | top
	start=$(date +%s.%N)
	if [ "$1" = record ]; then
		"$DLPROF" record -q -F 999 -o "$tmp/r.data" -- "$W" 2 "$secs" >/dev/null 2>&1 &
	else
		"$DLPROF" top -F 999 -d "$delay" -- "$W" 2 "$secs" >"$tmp/top.out" 2>/dev/null &
	fi
	cpu=$(cpu_of $!)
	wait $! || true
	end=$(date +%s.%N)
	echo "$cpu $(echo "$end - $start" | bc)"
}
run_tty() {
	tmux -L dlprof-bench kill-server 2>/dev/null || true
	tmux -L dlprof-bench new-session -d -s b -x 160 -y 50 \
		"$DLPROF top -F 999 -d $delay -- $W 2 $secs; sleep 30"
	# the last table stays until q: press it once the workload is done
	( sleep $((secs + 3)); tmux -L dlprof-bench send-keys -t b q ) &
	start=$(date +%s.%N)
	pid=
	# the dlprof process itself: the oldest (its child is "dlprof" too until it execs;
	# tmux's server keeps the command line that started it)
	while [ -z "$pid" ]; do pid=$(pgrep -o -x dlprof || true); sleep 0.02; done
	cpu=$(cpu_of "$pid")
	end=$(date +%s.%N)
	wait
	tmux -L dlprof-bench kill-server 2>/dev/null || true
	echo "$cpu $(echo "$end - $start" | bc)"
}
: >"$tmp/rows"
for r in $(seq "$rounds"); do
	set -- $(run_plain record); echo "record $1 $2" >>"$tmp/rows"
	set -- $(run_plain top); echo "top-pipe $1 $2" >>"$tmp/rows"
	if command -v tmux >/dev/null; then
		set -- $(run_tty); echo "top-tty $1 $2" >>"$tmp/rows"
	fi
done
/usr/bin/python3 - "$tmp/rows" "$secs" "$delay" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
by = {}
for m, cpu, wall in rows:
    # per second of the workload (2 threads x SECONDS of CPU on 2 cores: SECONDS of
    # wall); top on a terminal then holds its last table until q, idle
    by.setdefault(m, []).append(float(cpu) / float(sys.argv[2]) * 100)
print("dlprof's own CPU, %% of one core, 999 Hz, 2 busy threads, %s s runs, refresh %s s"
      % (sys.argv[2], sys.argv[3]))
for m, v in by.items():
    print("  %-9s median %5.2f%%  (rounds: %s)" % (m, statistics.median(v),
          ", ".join("%.2f" % x for x in v)))
rec = statistics.median(by["record"])
for m in ("top-pipe", "top-tty"):
    if m in by:
        print("  %s - record: %+.2f%% of one core (goal: under 5%%)" % (m, statistics.median(by[m]) - rec))
PY
