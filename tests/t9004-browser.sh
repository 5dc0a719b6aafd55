#!/bin/sh
# make check-e2e: over 20 s here, run apart from make check (tests/README.md)
# t9004: the pictures open in a real browser, as a person would use them: headless
# Chromium (Debian's chromium, driven by npm's playwright-core) opens dlprof's flame
# graph (frames in the DOM, the tooltip on hover, Search through the prompt covers the
# share fold counts, a click zooms, Reset Zoom restores; the differential one too), and
# speedscope's own app (the npm package's dist/release) loads `dlprof speedscope`'s file
# through its file input (the thread's name on screen, the sandwich view's top function
# and share, a screenshot that is not blank), and the Chrome trace of `dlprof timeline`
# (speedscope's Chrome-trace importer: the process by its command line, a primitive's
# time equal to the file's).  Skips, saying why, where chromium, node or
# the npm packages are not at hand; .ci/run installs chromium.
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
export CHROMIUM
[ -x "$CHROMIUM" ] || test_skip_all "no $CHROMIUM (Debian's chromium package)"
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 ||
	test_skip_all "node and npm are not installed"
NPMDIR="$BUILD/npm"
if [ ! -d "$NPMDIR/node_modules/playwright-core" ] || [ ! -d "$NPMDIR/node_modules/speedscope" ]; then
	mkdir -p "$NPMDIR" &&
	timeout 300 npm install --silent --no-audit --no-fund --prefix "$NPMDIR" \
		playwright-core speedscope >"$TRASH/npm.log" 2>&1 ||
		test_skip_all "npm could not install playwright-core and speedscope (registry not reachable?)"
fi
PLAYWRIGHT="$NPMDIR/node_modules/playwright-core"
export PLAYWRIGHT
CHECK="$SRC/tools/browser-check.js"
WL="$BUILD/tests/workloads"

test_expect_success 'record rep-split (rep_hot 70%, rep_warm 30%); its pictures' '
	"$DLPROF" record -q -o split.data -- "$WL/rep-split" 30 &&
	"$DLPROF" flamegraph -i split.data -o flame.svg 2>fg.err &&
	"$DLPROF" speedscope -i split.data -o split.ss.json 2>ss.err &&
	"$DLPROF" fold -i split.data >fold.txt &&
	cat fg.err ss.err
'

test_expect_success 'the flame graph in Chromium: hover, search, zoom, reset' '
	node "$CHECK" flame flame.svg rep_hot rep_warm >flame.json &&
	frames=$(sed -n "s/.*: \([0-9]*\) frames$/\1/p" fg.err) &&
	json_check r=flame.json <<-PY
	print(r)
	total = warm = 0
	for line in open("fold.txt"):
	    stack, n = line.rsplit(" ", 1)
	    total += int(n)
	    if "rep_warm" in stack.split(";"):
	        warm += int(n)
	share = 100.0 * warm / total
	r.page_errors == []
	r.frames == int("$frames")
	r.details.startswith("rep_hot (")
	matched = float(r.matched.split()[1].rstrip("%"))
	print("search covers %.1f%%, fold says %.1f%%" % (matched, share))
	abs(matched - share) < 0.5
	r.highlighted >= 1
	abs(r.width_zoomed - (r.svg_width - 20)) < 1 and r.hidden_zoomed > 0
	r.width_reset == r.width_before and r.hidden_reset == 0
	PY
'

test_expect_success 'the differential flame graph opens and searches' '
	"$DLPROF" record -q -o split2.data -- "$WL/rep-split" 30 3 7 &&
	"$DLPROF" flamegraph --diff split.data split2.data -o diff.svg 2>/dev/null &&
	node "$CHECK" flame diff.svg rep_warm rep_hot >diff.json &&
	json_check r=diff.json <<-\PY
	print(r)
	r.page_errors == [] and r.frames > 5
	"base" in r.details and r.details.startswith("rep_warm (")
	PY
'

test_expect_success 'speedscope (its own app) loads the file: thread, sandwich, not blank' '
	node "$CHECK" speedscope "$NPMDIR/node_modules/speedscope/dist/release" split.ss.json >ss.json &&
	json_check r=ss.json <<-\PY
	print({k: (v[:300] if isinstance(v, str) else v) for k, v in r.items()})
	r.page_errors == []
	re.search(r"rep-split \(pid \d+, tid \d+\)", r.text)
	# the sandwich table: Total, Self, name; the heaviest self first
	rows = re.findall(r"([0-9.]+\w*s) \(([0-9.]+)%\)\s+([0-9.]+\w*s) \(([0-9.]+)%\)\s+(\S+)", r.sandwich)
	print(rows[:3])
	rows and rows[0][4] == "rep_hot" and abs(float(rows[0][3]) - 70) < 8
	r.png > 3 * r.blank_png
	PY
'

# Perfetto UI needs the network and Chromium has chrome://tracing no more; speedscope
# reads the Chrome Trace Event format too (its own importer), headless like the rest
test_expect_success 'the Chrome trace (dlprof timeline) in a viewer: speedscope loads it' '
	"$DLPROF" record -q -o itt.data -- "$WL/dl-itt-user" >/dev/null &&
	"$DLPROF" timeline -i itt.data -o trace.json 2>/dev/null &&
	node "$CHECK" speedscope "$NPMDIR/node_modules/speedscope/dist/release" trace.json >tr.json &&
	json_check r=tr.json tr=trace.json <<-\PY
	print({k: (v[:400] if isinstance(v, str) else v) for k, v in r.items()})
	r.page_errors == []
	# the process by its command line, a thread of it, one profile per track
	m = re.search(r"dl-itt-user \(pid (\d+)\), dl-itt-user \(tid (\d+)\) \(1/(\d+)\)", r.text)
	m and int(m.group(3)) >= 2
	tid = int(m.group(2))
	# the total the viewer shows for the thread primitive is the ITT tasks time in the file
	ms = collections.defaultdict(float)
	for e in tr.traceEvents:
	    if e.get("ph") == "X" and e.get("cat") == "dnnl" and e.tid == tid:
	        ms[e.name] += e.dur / 1000.0
	# the row of the primitive: all of the thread (speedscope says >99% when anything else,
	# however small, shares it)
	shown = re.findall(r"([0-9.]+)ms \((?:100|>99)%\)\s+[0-9.]+ms \((?:100|>99)%\)\s+(\w+)",
	                   r.sandwich)
	print(dict(ms), shown)
	shown and shown[0][1] in ms
	abs(float(shown[0][0]) - ms[shown[0][1]]) <= 0.02 * ms[shown[0][1]] + 0.01
	r.png > 3 * r.blank_png
	PY
'

test_done
