#!/bin/sh
# t9003: dlprof flamegraph draws the SVG itself: well-formed XML with its own script
# (syntax checked by node where it is installed), frames whose widths are their weights
# (children within their parent, the root the whole width), tooltips with weight and
# share equal to fold's counts, colours by operator family, off-CPU weights in us.
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS DNNL
DEMO="$BUILD/examples/demo"
[ -x "$DEMO" ] || test_skip_all "build/examples/demo not built"
export OMP_NUM_THREADS=2

test_expect_success 'record the demo, draw it' '
	"$DLPROF" record -q -o demo.data -- "$DEMO" -n 40 >/dev/null &&
	"$DLPROF" flamegraph -i demo.data -o flame.svg --title "demo run" 2>err && cat err &&
	grep -E "^dlprof: wrote flame.svg: [0-9]+ frames" err &&
	"$DLPROF" flamegraph -i demo.data -o - --title "demo run" >stdout.svg && cmp -s flame.svg stdout.svg &&
	"$DLPROF" fold -i demo.data >demo.fold
'

test_expect_success 'geometry and tooltips: widths are weights, as fold counts them' '
	/usr/bin/python3 - <<-\EOF
	import collections, re, xml.etree.ElementTree as ET
	ns = {"s": "http://www.w3.org/2000/svg"}
	root = ET.parse("flame.svg").getroot()
	assert root.find("s:script", ns) is not None
	assert any(t.text == "demo run" for t in root.findall("s:text", ns))
	frames = []
	for g in root.findall(".//s:g[@id=\"frames\"]/s:g", ns):
	    title = g.find("s:title", ns).text
	    m = re.match(r"(.*) \((\d+) samples, ([\d.]+)%\)$", title)
	    r = g.find("s:rect", ns)
	    frames.append((m.group(1), int(m.group(2)), float(r.get("x")), float(r.get("width")),
	                   float(r.get("y")), r.get("fill")))
	total = frames[0][1]
	assert frames[0][0] == "all" and abs(frames[0][3] - 1180) < 0.2, frames[0]
	fold = collections.Counter()
	nsum = 0
	for l in open("demo.fold"):
	    st, n = l.rsplit(" ", 1)
	    fold[st.split(";")[0]] += int(n)
	    nsum += int(n)
	assert total == nsum, (total, nsum)
	top = {f[0]: f[1] for f in frames if f[4] == frames[0][4] - 16}
	assert top == dict(fold), (top, dict(fold))
	for name, n, x, w, y, fill in frames:
	    assert abs(w - 1180.0 * n / total) < 0.15, (name, n, w)
	# each frame lies within a frame one row below it (its parent)
	rows = collections.defaultdict(list)
	for f in frames:
	    rows[f[4]].append(f)
	for name, n, x, w, y, fill in frames[1:]:
	    assert any(p[2] - 0.2 <= x and x + w <= p[2] + p[3] + 0.2 for p in rows[y + 16]), name
	# colours: the convolution kernel is JIT work (green), kernel frames orange
	fills = {f[0]: f[5] for f in frames}
	kern = [f for f in fills if "conv" in f and "kernel" in f]
	rgb = [int(v) for v in re.findall(r"\d+", fills[kern[0]])]
	assert rgb[1] > rgb[0] and rgb[1] > rgb[2], (kern[0], fills[kern[0]])
	print(len(frames), "frames, total", total)
	EOF
'

if command -v node >/dev/null 2>&1; then
	test_expect_success 'the viewer script parses (node --check)' '
		/usr/bin/python3 -c "
import re
s = open(\"flame.svg\").read()
open(\"viewer.js\", \"w\").write(re.search(r\"<!\[CDATA\[(.*?)\]\]>\", s, re.S).group(1))
" && node --check viewer.js
	'
else
	test_skip 'viewer script syntax' 'node is not installed'
fi

test_expect_success 'off-CPU flame graph: weights in microseconds' '
	"$DLPROF" record -q --off-cpu -o w.data -- "$BUILD/tests/workloads/rep-waits" >truth.txt &&
	"$DLPROF" flamegraph -i w.data --off-cpu -o off.svg 2>/dev/null &&
	grep -E "<title>wait_for_batch \([0-9]+ us, [0-9.]+%\)</title>" off.svg
'

# rep-split's split turned around: rep_hot 70% -> 30%, rep_warm 30% -> 70% of the time
test_expect_success 'flamegraph --diff: widths from NEW, red where it took more time, blue less' '
	"$DLPROF" record -q -o base.data -- "$BUILD/tests/workloads/rep-split" 40 7 3 &&
	"$DLPROF" record -q -o new.data -- "$BUILD/tests/workloads/rep-split" 40 3 7 &&
	"$DLPROF" flamegraph --diff base.data new.data -o diff.svg 2>err &&
	test_grep -q "wrote diff.svg" err &&
	/usr/bin/python3 - <<-\EOF
	import re
	s = open("diff.svg").read()
	f = {}
	for m in re.finditer(r"<title>([^<(]+) \((\d+) us, ([0-9.]+)%; base (\d+) us, ([-+]\d+) us\)</title>"
	                     r"<rect [^>]*width=\"([0-9.]+)\"[^>]*fill=\"rgb\((\d+),(\d+),(\d+)\)\"", s):
	    name, new, pct, base, d, w, r, g, b = m.groups()
	    f[name] = (int(new), float(pct), int(base), int(d), float(w), int(r), int(g), int(b))
	hot, warm = f["rep_hot"], f["rep_warm"]
	print("rep_hot", hot, "rep_warm", warm)
	# the change is NEW minus BASE
	assert hot[3] == hot[0] - hot[2] and warm[3] == warm[0] - warm[2]
	# shares of the new run: 30/70 within 8 points; the base had them the other way
	assert abs(hot[1] - 30) < 8 and abs(warm[1] - 70) < 8, (hot, warm)
	assert hot[2] > 1.8 * hot[0] and warm[0] > 1.8 * warm[2]
	# colours: rep_hot blue, rep_warm red, both strong (the largest changes)
	assert hot[7] == 255 and hot[5] < 120 and warm[5] == 255 and warm[7] < 120
	# widths follow the new profile (the shares of the two functions of each other: on
	# a busy machine a few percent of the samples land in the task switch instead)
	assert abs(warm[4] / (hot[4] + warm[4]) - warm[1] / (hot[1] + warm[1])) < 0.01
	EOF
'

test_expect_success 'flamegraph --diff: one recording, or an unreadable one, is an error; -i with FILE... too' '
	{ "$DLPROF" flamegraph --diff base.data -o x.svg 2>err; st=$?; } ; test $st = 64 &&
	test_grep -q "takes two recordings" err &&
	{ "$DLPROF" flamegraph --diff base.data nosuch.data -o x.svg 2>err; st=$?; } ; test $st = 2 &&
	test_grep -q "cannot read .nosuch.data." err && test ! -e x.svg &&
	{ "$DLPROF" flamegraph -i base.data new.data 2>err; st=$?; } ; test $st = 64 &&
	test_grep -q "not both" err
'

test_done
