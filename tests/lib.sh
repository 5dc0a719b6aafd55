# lib.sh - TAP test harness for dlprof's shell tests (sourced by tests/tNNNN-*.sh).
#
#   . "$(dirname "$0")/lib.sh"
#   test_expect_success 'title' '
#       commands; the test fails when the last one (or any && link) fails
#   '
#   test_done
#
# Each test runs in a subshell, in a fresh scratch directory $TRASH (removed at the end
# unless DLPROF_TEST_KEEP=1), which is also $TMPDIR: what dlprof or a workload leaves
# there (a SIGKILLed record's JIT and ITT directories) goes with it.  $DLPROF is the binary under test; $BUILD the build dir.
# test_skip_all REASON skips the whole file; test_have PREREQ checks a prerequisite:
#   PERF_EVENTS (perf_event_open allowed), TORCH (python3-torch), DNNL, OPENBLAS, PERF,
#   PROTOC (protoc, to decode pprof output).

TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD="$TOP/build"
DLPROF="$TOP/dlprof"
SRC="$TOP/tests"
TRASH=$(mktemp -d "${TMPDIR:-/tmp}/dlprof-test.XXXXXX")
TMPDIR=$TRASH
# the files record keeps of containers and chroots: the test's own, not the user's cache
DLPROF_BUILDID_DIR=$TRASH/.build-id
# the kernel walk's tables (made from a file's CFI, kept by its build-id): one cache for
# the suite, as a user's second run finds them.  Made afresh in every test, torch's took
# 1.4 s of CPU beside the workload's start on these 2 cores, and the workloads' own
# clocks felt it (t9600: rank 0's wait 54.4 ms a step by its own clock where the run
# under a kept table gave 60.5-61.9).  t3004 makes its own, as a first run does.
DLPROF_KTAB_DIR=$BUILD/ktab-cache
# the boot's kernel symbols (record's end reads them there, not /proc/kallsyms whole):
# one cache for the suite, beside the tables, not the user's
DLPROF_KSYMS_DIR=$BUILD/ksyms-cache
export DLPROF BUILD TOP SRC TRASH TMPDIR DLPROF_BUILDID_DIR DLPROF_KTAB_DIR DLPROF_KSYMS_DIR
export LC_ALL=C
# The libraries' settings a machine's environment may carry (OPENBLAS_CORETYPE=Haswell
# on one, an ONEDNN_MAX_CPU_ISA left by a user): none is inherited.  A test that wants
# one sets it; the libraries otherwise choose for themselves, as the tests expect.
for v in $(env | sed -n 's/^\(\(OMP\|GOMP\|KMP\|OPENBLAS\|GOTO\|ONEDNN\|DNNL\|MKLDNN\|MKL\|ATEN\|INTEL_LIBITTNOTIFY\|INTEL_ITTNOTIFY\)_[A-Za-z0-9_]*\)=.*/\1/p'); do
	unset "$v"
done
test_count=0
test_failed=0
trap 'test_cleanup' EXIT

test_cleanup() {
	# a daemon docker_setup or containerd_setup started is stopped, its containers with it
	for d in ${DK_DAEMON:-} ${CTRD_DAEMON:-}; do
		kill "$d" 2>/dev/null
		i=0
		while kill -0 "$d" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	done
	[ "${DLPROF_TEST_KEEP:-}" = 1 ] || rm -rf "$TRASH"
}

test_skip_all() {
	echo "1..0 # SKIP $*"
	exit 0
}

test_have() {
	case "$1" in
	PERF_EVENTS)
		"$BUILD/tests/can-perf" >/dev/null 2>&1 ;;
	TORCH)
		/usr/bin/python3 -c 'import torch' >/dev/null 2>&1 ;;
	DNNL)
		[ -e /usr/include/dnnl.h ] ;;
	OPENBLAS)
		[ -e /usr/include/x86_64-linux-gnu/cblas.h ] || [ -e /usr/include/cblas.h ] ;;
	PERF)
		perf --version >/dev/null 2>&1 ;;
	PROTOC)
		command -v protoc >/dev/null 2>&1 ;;
	UPROBES)
		# record --memory makes uprobes in tracefs (mounting it when it is not)
		[ "$(id -u)" = 0 ] && { [ -e /sys/kernel/tracing/uprobe_events ] ||
			[ -e /sys/kernel/debug/tracing/uprobe_events ] || [ -d /sys/kernel/tracing ]; } ;;
	*)
		echo "unknown prerequisite $1" >&2; return 1 ;;
	esac
}

# test_require PREREQ...: skip the whole file unless all are met.
test_require() {
	for p in "$@"; do
		test_have "$p" || test_skip_all "missing prerequisite $p"
	done
}

test_expect_success() {
	test_count=$((test_count + 1))
	# DLPROF_TEST_TIMES=1: each test's seconds after its title (what make check's ten
	# minutes go to)
	[ "${DLPROF_TEST_TIMES:-}" = 1 ] && test_t0=$(date +%s.%N)
	if (cd "$TRASH" && set -e && eval "$2") >"$TRASH/.out.$test_count" 2>&1; then
		if [ "${DLPROF_TEST_TIMES:-}" = 1 ]; then
			echo "ok $test_count - $1 ($(echo "$(date +%s.%N) - $test_t0" | bc) s)"
		else
			echo "ok $test_count - $1"
		fi
	else
		test_failed=$((test_failed + 1))
		echo "not ok $test_count - $1"
		sed 's/^/#   /' "$TRASH/.out.$test_count"
		# prove shows a test's stderr: the failure's output reaches a CI log too
		{ echo "$(basename "$0"): not ok $test_count - $1"; tail -n 40 "$TRASH/.out.$test_count"; } >&2
	fi
}

# test_skip TITLE REASON: count a test as skipped.
test_skip() {
	test_count=$((test_count + 1))
	echo "ok $test_count # SKIP $1: $2"
}

test_done() {
	echo "1..$test_count"
	[ "$test_failed" = 0 ]
}

# Helpers for assertions inside tests (print what differed).
test_cmp() {
	diff -u "$1" "$2"
}
test_grep() {
	grep "$@" && return 0
	eval "last=\${$#}"	# the file: the last argument (POSIX sh has no ${@: -1})
	echo "grep $* found nothing in:"
	cat "$last"
	return 1
}

# JSON checks through tests/tools/json-check.py (tests/README.md, "JSON checks"):
#   json_get [NAME=]FILE... EXPR...       print each Python expression's value, one a line
#   json_check [NAME=]FILE... [CHECK...]  each check holds (the lines of stdin when none):
#                                         an expression must be true, NAME = EXPR binds
# FILE is read as j (NAME=FILE as NAME), - is stdin; j.header.samples is j["header"]["samples"].
json_get() {
	/usr/bin/python3 "$SRC/tools/json-check.py" get "$@"
}
# find_python VERSION: a CPython VERSION (3.12) on PATH, or under pyenv's versions; its
# path on stdout, or fail
find_python() {
	for p in $(command -v "python$1" 2>/dev/null) \
		 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$1".*/bin/"python$1"; do
		[ -x "$p" ] && "$p" -c "import sys; sys.exit(sys.implementation.name != 'cpython')" \
			2>/dev/null && { echo "$p"; return 0; }
	done
	return 1
}

# container_setup: a container of Debian 13 with today's PyTorch (torch 2.6, oneDNN 3.7,
# Python 3.13: scripts/trixie-root.sh builds it once, cached), to run a command in.
# Sets CT_ROOT (its root), CT_KIND (podman or chroot) and CT_RUN, the command that runs
# what follows it in a new container with $SRC, $TOP/examples and $TOP/lib at the same
# paths, read-only (with Podman, CT_PODMAN and CT_VOLS are its parts, for other ways): Podman (runc, cgroupfs, no default ulimits: what these machines need), or
# where it cannot start, unshare --mount --pid --fork + chroot (tests/ct-chroot.sh).
# Fails (the reason in CT_WHY) where neither can run.
container_setup() {
	CT_WHY=
	[ "$(id -u)" = 0 ] || { CT_WHY="a container root needs root"; return 1; }
	CT_ROOT=$("$TOP/scripts/trixie-root.sh" 2>"$TRASH/.ct-root.err") || {
		CT_WHY="no Debian 13 root: $(tail -n 1 "$TRASH/.ct-root.err")"; return 1; }
	printf '[containers]\ndefault_ulimits = []\n' >"$TRASH/containers.conf"
	CONTAINERS_CONF=$TRASH/containers.conf
	export CONTAINERS_CONF
	# (DLPROF_TEST_CT=chroot: the fallback, to test it where Podman runs)
	if [ "${DLPROF_TEST_CT:-}" != chroot ] && command -v podman >/dev/null 2>&1 &&
	   "$TOP/scripts/trixie-root.sh" --image >/dev/null 2>>"$TRASH/.ct-root.err" &&
	   podman --runtime runc --cgroup-manager cgroupfs run --rm dlprof-trixie true \
		>/dev/null 2>>"$TRASH/.ct-root.err"; then
		CT_KIND=podman
		CT_PODMAN="podman --runtime runc --cgroup-manager cgroupfs"
		CT_VOLS="-v $SRC:$SRC:ro -v $TOP/examples:$TOP/examples:ro -v $TOP/lib:$TOP/lib:ro"
		CT_RUN="$CT_PODMAN run --rm $CT_VOLS dlprof-trixie"
	elif unshare --mount --pid --fork true 2>/dev/null; then
		CT_KIND=chroot
		CT_RUN="unshare --mount --pid --fork $SRC/ct-chroot.sh $CT_ROOT"
	else
		CT_WHY="neither Podman nor unshare --mount --pid can start here"
		return 1
	fi
}

# docker_setup: the same Debian 13 root as the Docker image dlprof-trixie, run by a
# Docker daemon: the machine's own where one answers, else one started for the test
# (cgroupfs driver and no networking of its own: what these machines allow; stopped at
# the test's end).  Sets DK_RUN, the docker run that runs what follows it in a new
# container with the volumes container_setup gives, and DK_WHY where it cannot.
docker_setup() {
	DK_WHY=
	[ "$(id -u)" = 0 ] || { DK_WHY="Docker needs root"; return 1; }
	command -v docker >/dev/null 2>&1 || { DK_WHY="docker is not installed"; return 1; }
	CT_ROOT=$("$TOP/scripts/trixie-root.sh" 2>"$TRASH/.ct-root.err") || {
		DK_WHY="no Debian 13 root: $(tail -n 1 "$TRASH/.ct-root.err")"; return 1; }
	if ! docker info >/dev/null 2>&1; then
		command -v dockerd >/dev/null 2>&1 || {
			DK_WHY="no Docker daemon answers and dockerd is not installed"; return 1; }
		daemon_start "docker info" dockerd --iptables=false --ip6tables=false \
			--bridge=none --exec-opt native.cgroupdriver=cgroupfs || {
			DK_WHY=$DAEMON_WHY; return 1; }
		DK_DAEMON=$DAEMON_PID
	fi
	"$TOP/scripts/trixie-root.sh" --docker-image >/dev/null 2>>"$TRASH/.ct-root.err" || {
		DK_WHY="no Docker image: $(tail -n 1 "$TRASH/.ct-root.err")"; return 1; }
	DK_VOLS="-v $SRC:$SRC:ro -v $TOP/examples:$TOP/examples:ro -v $TOP/lib:$TOP/lib:ro"
	DK_RUN="docker run --rm --network none $DK_VOLS"
}

# containerd_setup: a containerd that ctr reaches (the machine's, or one started for the
# test, at containerd's own paths: what a Kubernetes node runs under its CRI), and the
# Debian 13 root in CT_ROOT for ctr run --rootfs.  CTRD_WHY where it cannot.
containerd_setup() {
	CTRD_WHY=
	[ "$(id -u)" = 0 ] || { CTRD_WHY="containerd needs root"; return 1; }
	command -v ctr >/dev/null 2>&1 || { CTRD_WHY="ctr (package containerd) is not installed"; return 1; }
	CT_ROOT=$("$TOP/scripts/trixie-root.sh" 2>"$TRASH/.ct-root.err") || {
		CTRD_WHY="no Debian 13 root: $(tail -n 1 "$TRASH/.ct-root.err")"; return 1; }
	if ! ctr version >/dev/null 2>&1; then
		daemon_start "ctr version" containerd || { CTRD_WHY=$DAEMON_WHY; return 1; }
		CTRD_DAEMON=$DAEMON_PID
	fi
}

# daemon_start CHECK DAEMON [ARGS...]: DAEMON started in the background (its output in
# $TRASH/DAEMON.log, its pid in DAEMON_PID; test_cleanup stops what the callers keep),
# then up to 30 s for CHECK (a command line) to succeed; 1 with DAEMON_WHY where the
# daemon ends or does not answer
daemon_start() {
	ds_check=$1
	shift
	"$@" >"$TRASH/$1.log" 2>&1 &
	DAEMON_PID=$!
	ds_i=0
	until $ds_check >/dev/null 2>&1; do
		ds_i=$((ds_i + 1))
		if [ $ds_i -gt 300 ] || ! kill -0 "$DAEMON_PID" 2>/dev/null; then
			DAEMON_WHY="$1 did not start: $(tail -n 1 "$TRASH/$1.log")"
			kill "$DAEMON_PID" 2>/dev/null
			return 1
		fi
		sleep 0.1
	done
}

# profiled_span DATA PROF.json: "TID START,END", what a workload measured itself
# (tests/workloads/dl_torch_profiled.py's torch.profiler, py_torch_train.py's loop) in a
# run recorded as DATA, as report's --tid and --time take them: its thread (PROF's tid,
# where DATA has it; in a container PROF's is the tid the workload knows, not the
# host's: then the main thread of the python process with the most samples) and its
# window (PROF's start_ns and end_ns, CLOCK_MONOTONIC, dlprof's sample clock, in seconds
# from DATA's first sample)
profiled_span() {
	"$BUILD/tests/recdump" "$1" >"$TRASH/.span.dump" &&
	"$DLPROF" report -i "$1" --sort thread --format json >"$TRASH/.span.json" 2>/dev/null &&
	/usr/bin/python3 - "$2" "$TRASH/.span.dump" "$TRASH/.span.json" <<-\EOF
	import json, sys
	d = json.load(open(sys.argv[1]))
	first = min(int(l.split(" time=")[1].split()[0]) for l in open(sys.argv[2])
	            if l.startswith("PERF SAMPLE"))
	rows = [r for r in json.load(open(sys.argv[3]))["rows"] if r["comm"].startswith("python")]
	tid = d["tid"] if d["tid"] in [r["tid"] for r in rows] else \
	      max([r for r in rows if r["pid"] == r["tid"]], key=lambda r: r["samples"])["tid"]
	print(tid, "%.6f,%.6f" % ((d["start_ns"] - first) / 1e9, (d["end_ns"] - first) / 1e9))
	EOF
}

# ops_vs_profiler PROF.json OP.json: the top 8 aten ops of torch.profiler's key_averages()
# (PROF, from tests/workloads/dl_torch_profiled.py) hold their Self CPU share within 2
# points in dlprof's op table (OP, report --sort op --format json --tid --time as
# profiled_span gives them: the profiler's Self CPU is its thread's time in the window,
# not the OpenMP workers'), under the same names.  The profiler's time is the wall
# clock's: an op's own thread off the CPU in it (waiting at the OpenMP barrier for a
# worker held up, preempted) counts, so dlprof's is its CPU time and its off-CPU time on
# that thread (Self, Off-CPU; shares over the aten ops').  Measured: within 0.1 to 0.3
# points in the container, 0.4 to 0.5 on the host, where the CPU time alone was up to 1.1
# points off, and once 6.3 (threshold_backward: 271 ms of its 774 in the barrier)
ops_vs_profiler() {
	json_check prof="$1" op="$2" <<-\PY
	us = {r.key: r.self_cpu_us for r in prof.rows if r.key.startswith("aten::")}
	ptot = sum(us.values())
	dl = collections.Counter()
	cpu = collections.Counter()
	for r in op.rows:
	    if "parent" not in r and r.name.startswith("aten::"):
	        dl[r.name] += r.self_ns + r.get("off_cpu_ns", 0)
	        cpu[r.name] += r.self_ns
	dtot = sum(dl.values())
	ptot > 0 and dtot > 500e6 and any("off_cpu_ns" in r for r in op.rows)
	worst = 0
	for k, v in sorted(us.items(), key=lambda kv: -kv[1])[:8]:
	    p, d = 100.0 * v / ptot, 100.0 * dl.get(k, 0) / dtot
	    c = 100.0 * cpu.get(k, 0) / sum(cpu.values())
	    print("%-42s profiler %5.1f%%  dlprof %5.1f%%  %+.1f  (CPU alone %5.1f%%)" % (k, p, d, d - p, c))
	    assert k in dl, "dlprof has no row %s" % k
	    worst = max(worst, abs(d - p))
	print("worst difference: %.1f points" % worst)
	worst <= 2.0
	PY
}

json_check() {
	/usr/bin/python3 "$SRC/tools/json-check.py" check "$@"
}

# test_unit NAME [ARGS...]: run the unit program build/tests/unit/NAME (tests/unit/NAME.c,
# TAP through tests/unit/tap.h) from the top of the tree and count each of its results
# as a test of this file, "NAME ARGS: what it checks".  One more test fails when its
# results do not match its plan, or it exits non-zero with none failed (a crash, a setup
# error).  A failure shows its output.
test_unit() {
	unit_name=$1
	shift
	unit_label=$unit_name
	for unit_a in "$@"; do unit_label="$unit_label ${unit_a##*/}"; done
	(cd "$TOP" && exec "$BUILD/tests/unit/$unit_name" "$@") \
		>"$TRASH/.unit.out" 2>"$TRASH/.unit.err"
	unit_rc=$?
	unit_n=0 unit_plan= unit_bad=0
	while IFS= read -r unit_line; do
		case $unit_line in
		"ok "*|"not ok "*)
			unit_n=$((unit_n + 1))
			test_count=$((test_count + 1))
			unit_what=${unit_line#not }
			unit_what=${unit_what#ok }
			unit_what=${unit_what#"${unit_what%%[!0-9]*}"}	# the number
			unit_what=${unit_what# }
			unit_what=${unit_what#- }
			case $unit_line in
			ok*)
				echo "ok $test_count - $unit_label: $unit_what" ;;
			*)
				echo "not ok $test_count - $unit_label: $unit_what"
				unit_bad=$((unit_bad + 1))
				test_failed=$((test_failed + 1)) ;;
			esac ;;
		1..*)
			unit_plan=${unit_line#1..} ;;
		"#"*)
			echo "$unit_line" ;;
		*)
			echo "# $unit_line" ;;
		esac
	done <"$TRASH/.unit.out"
	if [ "$unit_n" != "${unit_plan:-none}" ] || { [ "$unit_rc" != 0 ] && [ "$unit_bad" = 0 ]; }; then
		test_count=$((test_count + 1))
		unit_bad=$((unit_bad + 1))
		test_failed=$((test_failed + 1))
		echo "not ok $test_count - $unit_label: exit status $unit_rc, $unit_n results of a plan of ${unit_plan:-none}"
	fi
	if [ "$unit_bad" != 0 ]; then
		sed 's/^/#   /' "$TRASH/.unit.err"
		{ echo "$(basename "$0"): $unit_label: $unit_bad failed"; cat "$TRASH/.unit.out"
		  tail -n 40 "$TRASH/.unit.err"; } >&2
	fi
}
