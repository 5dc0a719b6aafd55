#!/bin/sh
# t8001: Python frames in threads (threading.Thread), in a native thread that calls into
# Python late, in multiprocessing children made by fork and by spawn (an exec'd
# interpreter), in a process attached to with -p; and a process that is not Python is
# left alone.
. "$(dirname "$0")/lib.sh"
. "$SRC/record-lib.sh"
test_require PERF_EVENTS
/usr/bin/python3 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' ||
	test_skip_all "/usr/bin/python3 is not CPython 3.11"

# share PATTERN FOLDFILE: "hits total" of the samples whose stack holds PATTERN
share() {
	awk -v k="$1" '{ n = $NF; t += n; if (index($0, k)) h += n } END { print h + 0, t + 0 }' "$2"
}
# at_least PCT HITS TOTAL
at_least() {
	awk -v p="$1" -v h="$2" -v t="$3" 'BEGIN { exit !(t > 0 && 100 * h >= p * t) }'
}

test_expect_success 'threads and fork/spawn children: each sample under its own function' '
	"$DLPROF" record -o pp.data -- /usr/bin/python3 "$SRC/workloads/py_procs.py" pp.json &&
	cat pp.json && echo &&
	for k in thread_x thread_y; do
		t=$(json_get pp.json "j.tids.$k") &&
		"$DLPROF" fold -i pp.data --tid $t >f-$k.txt 2>/dev/null &&
		set -- $(share "$k (py_procs.py:" f-$k.txt) && echo "$k: $1 of $2" &&
		at_least 90 "$1" "$2" || exit 1
	done &&
	! grep -q "thread_y (" f-thread_x.txt && ! grep -q "thread_x (" f-thread_y.txt &&
	for k in fork spawn; do
		p=$(json_get pp.json "j.$k") &&
		"$DLPROF" fold -i pp.data --pid $p >f-$k.txt 2>/dev/null &&
		set -- $(share "child_$k (py_procs.py:" f-$k.txt) && echo "child_$k: $1 of $2" &&
		at_least 75 "$1" "$2" || exit 1
	done &&
	grep -q "child_spawn (py_procs.py:[0-9]*);spin (py_procs.py:[0-9]*);" f-spawn.txt
'

# A native thread (a C library's, as a C++ pool makes them) that spins in C, then calls
# into Python through a ctypes callback (its thread state made only then): its C part
# under late_native_spin, its Python part under late_py, each as its own CPU time says;
# read in the kernel, and from outside (DLPROF_NO_BPF: the reader's walk of the thread
# list finds the new state; with a walk every 3 s instead of 50 ms, none of its 1,500
# Python samples had frames)
late_thread() {	# late_thread NAME [ENV...]
	name=$1 && shift &&
	env "$@" PY_LATE_THREAD_LIB="$WL/libpy-late-thread.so" "$DLPROF" record -o $name.data -- \
		/usr/bin/python3 "$SRC/workloads/py_late_thread.py" $name.json 0.5 1.5 2>$name.err &&
	cat $name.err && t=$(json_get $name.json "j.tid") &&
	"$DLPROF" fold -i $name.data --tid $t >f-$name.txt 2>/dev/null &&
	set -- $(share "late_native_spin" f-$name.txt) && n_c=$1 all=$2 &&
	set -- $(share "late_py (py_late_thread.py:" f-$name.txt) && n_py=$1 &&
	echo "$name: of $all samples, $n_c in C, $n_py with late_py" &&
	at_least 20 "$n_c" "$all" && ! at_least 30 "$n_c" "$all" &&
	at_least 90 "$n_py" $((all - n_c))
}
test_expect_success 'a native thread that calls into Python after 0.5 s in C' '
	late_thread lt && late_thread lt-out DLPROF_NO_BPF=1 &&
	test_grep -q "read from outside" lt-out.err
'

test_expect_success 'record -p of a running Python process' '
	/usr/bin/python3 "$SRC/workloads/py_known.py" 3 att.json &
	pid=$! &&
	sleep 0.7 &&
	"$DLPROF" record -q -p $pid -o att.data -- sleep 1 &&
	wait $pid &&
	"$DLPROF" fold -i att.data >att.fold &&
	set -- $(share "work_a (py_known.py:" att.fold) && echo "work_a: $1 of $2" &&
	at_least 25 "$1" "$2" &&
	"$DLPROF" report -i att.data >att.txt &&
	grep -E "^# python: +(9[0-9]|100)\.[0-9]% of samples with Python frames" att.txt
'

test_expect_success 'a process that is not Python: no Python records, no python line' '
	"$DLPROF" record -o c.data -- "$WL/rec-hot" 0.3 2>c.err &&
	! grep -q "python" c.err &&
	"$RECDUMP" c.data >cdump && ! grep -q "^PY" cdump &&
	"$DLPROF" report -i c.data >c.txt && ! grep -q "^# python" c.txt &&
	"$DLPROF" report -i c.data --format json | grep -q "\"python\":{\"thread_samples\":0,"
'

test_done
