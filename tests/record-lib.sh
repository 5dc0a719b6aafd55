# record-lib.sh - helpers for the record tests (sourced after lib.sh).
WL="$BUILD/tests/workloads"
RECDUMP="$BUILD/tests/recdump"

# a Python program of 1.2 s of CPU-bound work in later_spin() (python3 -c "$LATER_SPIN")
LATER_SPIN="import time
def later_spin(t):
    x = 0
    while time.process_time() - t < 1.2:
        x += 1
later_spin(time.process_time())"

# jit_maps_cleanup: remove the /tmp/perf-PID.map each unw-jit run published (the pid
# from its "pid PID" line, kept in $TRASH/wl*.out)
jit_maps_cleanup() {
	for f in "$TRASH"/wl*.out; do
		pid=$(sed -n "s/^pid //p" "$f" 2>/dev/null)
		[ -n "$pid" ] && rm -f "/tmp/perf-$pid.map"
	done
}

# sym_range BIN SYM: "START END" (hex, no 0x) of SYM in a non-PIE binary.
sym_range() {
	nm -S "$1" | awk -v s="$2" '$4 == s { print $1, $2 }'
}

# samples_in DUMP BIN SYM [TID]: count the samples of a recdump output whose ip lies in SYM.
samples_in() {
	set -- "$1" "$(sym_range "$2" "$3")" "${4:-}"
	awk -v r="$2" -v tid="$3" '
		function hex(s,   i, v) {
			sub(/^0x/, "", s); s = tolower(s); v = 0
			for (i = 1; i <= length(s); i++)
				v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
			return v
		}
		BEGIN { split(r, a, " "); lo = hex(a[1]); hi = lo + hex(a[2]); if (r == "") lo = hi = -1 }
		$1 == "PERF" && $2 == "SAMPLE" {
			for (i = 3; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
			ip = hex(f["ip"])
			if (ip >= lo && ip < hi && (tid == "" || f["tid"] == tid)) n++
		}
		END { print n + 0 }' "$1"
}

# nr_samples DUMP
nr_samples() {
	grep -c "^PERF SAMPLE " "$1" || true
}

# nr_oncpu_samples DUMP: the samples of the sampling event, not the off-CPU
# switch-outs (a busy machine preempts the workload more: those vary with the load)
nr_oncpu_samples() {
	grep "^PERF SAMPLE " "$1" | grep -vc " ev=context-switches" || true
}

# field DUMP-LINE KEY: value of KEY=VALUE in a line
field() {
	echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}

# phases_check DATA OUT: a recording of tests/workloads/phases.py (its lines in OUT):
# each phase took its 0.5 s, and 95% or more of the samples of its spin carry the phase
# as their operator: the constructor (library init), the import (import), the atexit
# handler (exit); the op table's "called from" of (import) is the import statement in
# main, not importlib's frames
phases_check() {
	cat "$2" && grep -q "^phases: constructor 0\.[5-9]" "$2" &&
	grep -q "^phases: import 0\.[5-9]" "$2" &&
	grep -q "^phases: exit handler 0\.[5-9]" "$2" &&
	"$DLPROF" fold -i "$1" --op --comm python3 >"$1.folded" 2>/dev/null &&
	awk '/;burn_spin/ { if (index($0, "(library init);") == 1) in_ph += $NF; all += $NF }
	     /import_spin \(phase_import_mod.py/ { if (index($0, "(import);") == 1) im_ph += $NF; im += $NF }
	     /exit_spin \(phases.py/ { if (index($0, "(exit);") == 1) ex_ph += $NF; ex += $NF }
	     END { print all + 0, in_ph + 0, im + 0, im_ph + 0, ex + 0, ex_ph + 0 }' \
		"$1.folded" >"$1.counts" &&
	read all in_ph im im_ph ex ex_ph <"$1.counts" &&
	echo "constructor: $in_ph of $all samples (library init); import: $im_ph of $im (import); handler: $ex_ph of $ex (exit)" &&
	test "$all" -ge 400 && test "$in_ph" -ge $((all * 95 / 100)) &&
	test "$im" -ge 400 && test "$im_ph" -ge $((im * 95 / 100)) &&
	test "$ex" -ge 400 && test "$ex_ph" -ge $((ex * 95 / 100)) &&
	at=$(grep -n "^    import phase_import_mod" "$SRC/workloads/phases.py" | cut -d: -f1) &&
	"$DLPROF" report -i "$1" --sort op --comm python3 --format json --limit 0 >"$1.op.json" &&
	json_check "$1.op.json" "r = [r for r in j.rows if r.name == \"(import)\"][0]" \
		"print(r.python_line)" \
		"r.python_line.function == \"main\" and r.python_line.line == $at" \
		"r.python_line.file.endswith(\"phases.py\")"
}
