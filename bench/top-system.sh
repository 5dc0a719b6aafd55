#!/bin/sh
# bench/top-system.sh - `dlprof top` watching every process against `perf top`, as a user
# watches a training job in a container from the host: examples/cnn_train.py runs in the
# Debian 13 Podman container (scripts/trixie-root.sh --image) for the whole bench, and the
# tools take turns on it, each SECONDS, interleaved rounds.  Each tool's own CPU time
# (utime + stime of its process, every thread, read from /proc 2 s into its turn and just
# before it is stopped) per second of its turn, and apart: its start (the first 2 s:
# reading every process's files) and its steady cost, medians.  Goal (issue 47): dlprof top at most perf
# top's.  perf top samples without call chains by default; dlprof top unwinds every
# sample (dwarf): the row "perf top -g dwarf" is perf with the same stacks.  The row
# "dlprof top, walked in the kernel" is the default (issue 48; the row "dwarf stacks" is
# DLPROF_KSTACK=0, the copies unwound in dlprof's process): its BPF program
# runs in the sampled threads, not in dlprof's process, so its kernel time (the
# kernel's BPF stats, turned on for the bench) is given apart, per second of the turn.
# The other rows run both at 999 Hz, refreshing once a second; the last two run each as a
# user starts it, with its own defaults (perf top: 4000 Hz, dlprof top: 999 Hz; both
# refreshing every 2 s).
#   bench/top-system.sh [-n ROUNDS] [-s SECONDS]
set -e
cd "$(dirname "$0")/.."
DLPROF=${DLPROF:-$PWD/dlprof}
rounds=3 secs=8
while [ $# -gt 0 ]; do
	case "$1" in
	-n) rounds=$2; shift 2 ;;
	-s) secs=$2; shift 2 ;;
	*) echo "usage: bench/top-system.sh [-n ROUNDS] [-s SECONDS]" >&2; exit 64 ;;
	esac
done
command -v perf >/dev/null || { echo "top-system: no perf (linux-perf)" >&2; exit 2; }
scripts/trixie-root.sh --image >/dev/null
tmp=$(mktemp -d)
printf '[containers]\ndefault_ulimits = []\n' >"$tmp/containers.conf"
export CONTAINERS_CONF=$tmp/containers.conf
P="podman --runtime runc --cgroup-manager cgroupfs"
name=dlprof-bench-top-$$
trap '$P rm -f -t 0 $name >/dev/null 2>&1; rm -rf "$tmp"' EXIT
total=$(( (secs + 2) * rounds * 4 + 30 ))
$P run --rm -d --name $name -v "$PWD/examples:/w:ro" dlprof-trixie \
	python3 /w/cnn_train.py --steps 100000 --seconds "$total" >/dev/null
sleep 8	# torch's import
# perf top reads keys from its standard input and spins at its end (/dev/null: a whole
# core): a pipe held open stands for the terminal it is meant for
mkfifo "$tmp/keys"
exec 3<>"$tmp/keys"

# turn TOOL: the tool's CPU seconds per second over SECONDS
turn() {
	case "$1" in
	dlprof) DLPROF_KSTACK=0 "$DLPROF" top -d 1 --rows 10 >"$tmp/out" 2>/dev/null & ;;
	dlprof-k) DLPROF_KSTACK=1 "$DLPROF" top -d 1 --rows 10 >"$tmp/out" 2>/dev/null & ;;
	perf) perf top -F 999 --stdio -d 1 -E 10 >"$tmp/out" 2>/dev/null <"$tmp/keys" & ;;
	perf-g) perf top -F 999 --stdio -d 1 -E 10 --call-graph dwarf >"$tmp/out" 2>/dev/null \
		<"$tmp/keys" & ;;
	dlprof-def) "$DLPROF" top --rows 10 >"$tmp/out" 2>/dev/null & ;;
	perf-def) perf top --stdio -E 10 >"$tmp/out" 2>/dev/null <"$tmp/keys" & ;;
	esac
	pid=$!
	sleep 2
	c2=$(awk '{ print ($14 + $15) / 100 }' /proc/$pid/stat)
	b2=$(bpf_ns)
	sleep $((secs - 2))
	cpu=$(awk '{ print ($14 + $15) / 100 }' /proc/$pid/stat)
	b=$(bpf_ns)
	kill -INT $pid 2>/dev/null || true
	sleep 0.5; kill -KILL $pid 2>/dev/null || true
	wait $pid 2>/dev/null || true
	echo "$cpu / $secs" | bc -l >>"$tmp/$1"
	echo "$c2" >>"$tmp/$1.start"
	echo "($cpu - $c2) / ($secs - 2)" | bc -l >>"$tmp/$1.steady"
	echo "($b - $b2) / 1000000000 / ($secs - 2)" | bc -l >>"$tmp/$1.bpf"
}
# the kernel time of dlprof's sampling program so far (ns; 0 where none runs)
bpf_ns() {
	bpftool prog show --json 2>/dev/null | /usr/bin/python3 -c '
import json, sys
print(sum(p.get("run_time_ns", 0) for p in json.load(sys.stdin) if p.get("name") == "dlprof_py"))'
}
stats=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -q kernel.bpf_stats_enabled=1
trap '$P rm -f -t 0 $name >/dev/null 2>&1; rm -rf "$tmp"; sysctl -q kernel.bpf_stats_enabled=$stats' EXIT
for r in $(seq "$rounds"); do
	for t in dlprof dlprof-k perf perf-g dlprof-def perf-def; do
		turn $t
		sleep 1
	done
done
med() { sort -g "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
printf 'medians of %s rounds of %s s: CPU seconds per second of the turn (1.0 = one core),\n' "$rounds" "$secs"
printf 'CPU seconds of its first 2 s, CPU seconds per second after them\n'
printf '                                          whole  first 2 s  after  BPF after\n'
for t in dlprof dlprof-k perf perf-g dlprof-def perf-def; do
	case $t in
	dlprof) label='dlprof top (every process, dwarf copies)' ;;
	dlprof-k) label='dlprof top, walked in the kernel        ' ;;
	perf) label='perf top (every process, no stacks)     ' ;;
	perf-g) label='perf top -g dwarf                       ' ;;
	dlprof-def) label='dlprof top, its defaults (999 Hz, 2 s)  ' ;;
	perf-def) label='perf top, its defaults (4000 Hz, 2 s)   ' ;;
	esac
	printf '  %s %.3f  %.2f       %.3f  %.4f\n' "$label" "$(med "$tmp/$t")" "$(med "$tmp/$t.start")" \
		"$(med "$tmp/$t.steady")" "$(med "$tmp/$t.bpf")"
done
