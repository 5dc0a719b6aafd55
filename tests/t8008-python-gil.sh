#!/bin/sh
# t8008-python-gil.sh - who waits for the GIL, on which line (issue 49).
# tests/workloads/gil_contend.py: two spinner threads in pure Python, a napper (a
# millisecond of Python between 5 ms naps in time.sleep, which gives the GIL up) and a
# native thread (zlib.compress again and again: the GIL released while it deflates)
# share the GIL for 2 s; an idle thread sleeps through it and wakes when no thread holds
# it.  Who holds the GIL is read in the kernel at each sample: a spinner's held time is
# its CPU time, the native thread's at most its CPU time outside zlib, all together at
# most the run's wall time.
# Each measures its own wait: wall - CPU - naps asked for (tests/tools/gil-check.py).
# Under Debian's python3.11 (stripped: take_gil and drop_gil found from its code,
# include/pygil.h) and pyenv's 3.12 and 3.13 where they are (symbols): report --sort
# thread gives each thread's GIL wait within 10% of its own (from its start() on), the
# idle thread's under 1 ms (it waits only as it starts);
# fold --off-cpu puts 90% of each thread's time in take_gil/drop_gil under the Python
# line it waited on; the family table has wait-gil; the gil-contention finding says
# how many threads wait more than they run Python.
# test-pygil: take_gil and drop_gil found in each interpreter's code, at their symbols
# where it has them, and the same in a stripped copy.
# A free-threaded 3.13t where scripts/python-ft.sh has built one: no GIL said, none
# waited for, its Python frames read (objects laid out 16 bytes further); with
# PYTHON_GIL=1 its GIL on, checked as the others are.
# Measured (AMD EPYC, 2 cores, 3.11): spinners 1105/1103 ms for 1119/1133, napper
# 778 ms for 788.
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS
W="$SRC/workloads/gil_contend.py"

# take_gil and drop_gil found from the code: in Debian's stripped interpreter, and in
# pyenv's libpython (with symbols: where they are) and its stripped copy
py311=$(readlink -f /usr/bin/python3)
test_unit test-pygil -n "$py311"
pys=/usr/bin/python3
for v in 3.12 3.13; do
	p=$(find_python $v) || continue
	pys="$pys $p"
	lib=$(ls "$(dirname "$p")"/../lib/libpython$v.so.1.0 2>/dev/null) || continue
	strip --strip-all -o "$TRASH/libpython$v-stripped.so" "$lib" &&
		test_unit test-pygil "$(readlink -f "$lib")" "$TRASH/libpython$v-stripped.so"
done

for PY in $pys; do
	v=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	test_expect_success "CPython $v ($PY): record the contending threads" '
		"$DLPROF" record -o g$v.data -- "$PY" "$W" --seconds 2 --native >truth$v 2>err$v &&
		cat err$v truth$v && test_grep -q " switch-outs beside them" err$v &&
		grep -q "^GIL enabled" truth$v
	'
	test_expect_success "CPython $v: each thread's GIL wait within 10% of its own, who held it" '
		"$DLPROF" report -i g$v.data --sort thread >th$v.txt &&
		"$DLPROF" report -i g$v.data --sort thread --format json >th$v.json &&
		cat th$v.txt &&
		for tid in $(sed -n "s/^TRUTH.*\"tid\": \([0-9]*\).*/\1/p" truth$v); do
			"$DLPROF" fold -i g$v.data --off-cpu --tid $tid >off$v.$tid || return 1
		done &&
		{ /usr/bin/python3 "$SRC/tools/gil-check.py" "$W" truth$v th$v.json off$v ||
		  { sed -n "/^dlprof:/p" err$v; false; }; }
	'
	test_expect_success "CPython $v: wait-gil in the family table, the gil-contention finding" '
		"$DLPROF" report -i g$v.data --off-cpu --sort family >fam$v &&
		cat fam$v && grep -E "^ +[0-9.]+% .* wait-gil$" fam$v &&
		n=$(sed -n "s/.*\[gil-contention\] \([0-9]*\) Python threads.*/\1/p" th$v.txt) &&
		json_check th$v.json "n = sum(1 for r in j.rows if r.gil_wait_ns >= 0.05 * (r.on_cpu_ns + r.off_cpu_ns))" \
			"print(n, \"threads wait 5% of their time or more\")" "n == ${n:-0}" "n >= 4"
	'
done

# A free-threaded build (scripts/python-ft.sh: CPython 3.13 configured --disable-gil,
# built once and cached; .ci/run builds it): no GIL, so nothing waits for it or holds it,
# and the threads run Python side by side.  Its objects' headers are 16 bytes longer:
# the Python frames must still be read (each thread's on-CPU time with Python frames
# within 10% of its own CPU time, each spinner's on its spin() lines too).  With
# PYTHON_GIL=1 its GIL is reported as any; turned on as it runs (an extension module
# without free-threading support, tests/workloads/gil_late.py), its holders from then on.
if PYFT=$("$TOP/scripts/python-ft.sh" --check); then
	# its GIL's code is there (PYTHON_GIL=1 turns it on): drop_gil inlined in this build
	strip --strip-all -o "$TRASH/python3.13t-stripped" "$PYFT" &&
		test_unit test-pygil "$PYFT" "$TRASH/python3.13t-stripped"
	test_expect_success "free-threaded $PYFT: record the same threads" '
		"$DLPROF" record -o ft.data -- "$PYFT" "$W" --seconds 2 --native >truthft 2>errft &&
		cat errft truthft && grep -q "^GIL disabled 3.13" truthft &&
		! grep -q "native stacks only" errft &&
		grep -E "python: [0-9]+ samples read" errft
	'
	test_expect_success "free-threaded: no GIL said, no wait for it, the frames read" '
		"$DLPROF" report -i ft.data --sort thread >thft.txt &&
		"$DLPROF" report -i ft.data --sort thread --format json >thft.json &&
		cat thft.txt &&
		grep -q "python3.13t is a free-threaded build: no thread waited for a GIL" thft.txt &&
		! grep -q "gil-contention" thft.txt &&
		sed -n "s/^TRUTH //p" truthft >ownft &&
		json_check thft.json "import json" \
			"own = {o[\"tid\"]: o for o in map(json.loads, open(\"ownft\"))}" \
			"rows = {r.tid: r for r in j.rows}" \
			"busy = [o for o in own.values() if o[\"cpu_ms\"] > 200]" \
			"[print(o[\"name\"], rows[o[\"tid\"]].python_ns / 1e6, o[\"cpu_ms\"]) for o in busy]" \
			"j.free_threaded.endswith(\"python3.13t\")" \
			"all(r.gil_wait_ns is None and r.gil_waits is None for r in j.rows)" \
			"all(r.get(\"gil_held_ns\", 0) == 0 for r in (rows[o[\"tid\"]] for o in busy))" \
			"len(busy) == 4" \
			"all(abs(rows[o[\"tid\"]].python_ns / 1e6 - o[\"cpu_ms\"]) <= 0.1 * o[\"cpu_ms\"] for o in busy)"
	'
	# each spinner (spin() in a loop) on its spin() lines within 10% of its own CPU time
	test_expect_success "free-threaded: no wait-gil family, the spin line named" '
		"$DLPROF" report -i ft.data --off-cpu --sort family >famft &&
		cat famft && grep -q "wait-preempted$" famft && ! grep -q "wait-gil" famft &&
		line=$(grep -n "# SPIN_LINE" "$W" | cut -d: -f1) &&
		sed -n "s/^TRUTH //p" truthft >ownft &&
		for tid in $(sed -n "/\"line\": \"spin\"/s/^TRUTH.*\"tid\": \([0-9]*\).*/\1/p" truthft); do
			"$DLPROF" report -i ft.data --sort line --tid $tid --format json >lineft.$tid &&
			json_check lineft.$tid "import json" \
				"own = [o for o in map(json.loads, open(\"ownft\")) if o[\"tid\"] == $tid][0]" \
				"spin = sum(r.self_ns for r in j.rows if r.function == \"spin\" and r.file.endswith(\"/gil_contend.py\") and r.line in ($line, $line + 1)) / 1e6" \
				"print(own[\"name\"], \"on its spin() lines\", spin, \"ms, its own CPU\", own[\"cpu_ms\"])" \
				"abs(spin - own[\"cpu_ms\"]) <= 0.10 * own[\"cpu_ms\"]" || return 1
		done &&
		test $(grep -c "\"line\": \"spin\"" truthft) = 2
	'
	# PYTHON_GIL=1: the same build with its GIL on, which is then reported as any
	test_expect_success "free-threaded, PYTHON_GIL=1: the GIL's waits and holders as any" '
		PYTHON_GIL=1 "$DLPROF" record -o ft1.data -- "$PYFT" "$W" --seconds 2 --native \
			>truthft1 2>errft1 &&
		cat errft1 truthft1 && grep -q "^GIL enabled 3.13" truthft1 &&
		"$DLPROF" report -i ft1.data --sort thread >thft1.txt &&
		"$DLPROF" report -i ft1.data --sort thread --format json >thft1.json &&
		cat thft1.txt && grep -q "free-threaded build whose GIL was turned on" thft1.txt &&
		for tid in $(sed -n "s/^TRUTH.*\"tid\": \([0-9]*\).*/\1/p" truthft1); do
			"$DLPROF" fold -i ft1.data --off-cpu --tid $tid >offft1.$tid || return 1
		done &&
		/usr/bin/python3 "$SRC/tools/gil-check.py" "$W" truthft1 thft1.json offft1
	'
	# the GIL turned on half a second in, by importing an extension module that does
	# not say it runs without it (tests/workloads/gil_late.py): every thread was listed
	# for the kernel's reader before, without a GIL; it is looked for again, and from
	# then on a spinner holds it whenever it runs: held on the CPU within 10% of its CPU
	# time since, no less than that from 0.3 s after (the look comes every 0.2 s)
	test_expect_success "free-threaded, the GIL turned on as it runs: its holders from then on" '
		inc=$("$PYFT" -c "import sysconfig; print(sysconfig.get_paths()[\"include\"])") &&
		suf=$("$PYFT" -c "import sysconfig; print(sysconfig.get_config_var(\"EXT_SUFFIX\"))") &&
		cc -shared -fPIC -O1 -I"$inc" -o "gil_on$suf" "$SRC/workloads/gil_on.c" &&
		"$DLPROF" record -o late.data -- "$PYFT" -W ignore "$SRC/workloads/gil_late.py" . \
			>truthlate 2>errlate &&
		cat errlate truthlate && grep -q "^GIL enabled 3.13" truthlate &&
		sed -n "s/^TRUTH //p" truthlate >ownlate &&
		"$DLPROF" report -i late.data --sort thread --format json >thlate.json &&
		json_check thlate.json "import json" \
			"own = list(map(json.loads, open(\"ownlate\")))" \
			"rows = {r.tid: r for r in j.rows}" \
			"held = {o[\"tid\"]: (rows[o[\"tid\"]].get(\"gil_held_ns\", 0) - rows[o[\"tid\"]].get(\"gil_held_off_cpu_ns\", 0)) / 1e6 for o in own}" \
			"[print(o[\"name\"], \"held on the CPU\", held[o[\"tid\"]], \"ms; its CPU since the GIL went on\", o[\"cpu_after_ms\"], \"from 0.3 s after\", o[\"cpu_late_ms\"]) for o in own]" \
			"len(own) == 2" \
			"all(0.9 * o[\"cpu_late_ms\"] <= held[o[\"tid\"]] <= 1.1 * o[\"cpu_after_ms\"] + 2 for o in own)"
	'
fi

test_done
