#!/bin/sh
# t8003: the Python reader against a fake CPython 3.11 (tests/workloads/py-fake.c, built
# as python3.11): a good chain comes out in order; a chain whose reads fail half-way, and
# one a second thread tears all the time, never crash the recorder or the readers: the
# samples keep their native stacks and are counted; another version gets one line, and so
# does a 3.13 without the _Py_DebugOffsets that confirm its layout.  Each version is its
# own binary (python3.12, 3.13, 3.14 beside it): its Py_Version is set from exec on, as
# a real one's (record may probe it as it starts: at its first switch-out).
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS
FAKE="$BUILD/tests/workloads/fakepy/python3.11"
FAKE312="$BUILD/tests/workloads/fakepy312/python3.12"
FAKE313="$BUILD/tests/workloads/fakepy313/python3.13"
FAKE314="$BUILD/tests/workloads/fakepy314/python3.14"
for f in "$FAKE" "$FAKE312" "$FAKE313" "$FAKE314"; do
	[ -x "$f" ] || test_skip_all "$f not built"
done

# The eval loop's frame left native (no Python frames) in at most 2 samples: the loop
# ends after 1 s and clears its chain, and the sample taken as it ends is read tens of
# microseconds later, when the chain is gone (it is counted, and keeps its native stack)
at_most_native() {
	n=$(awk "/_PyEval_EvalFrameDefault/ { n += \$NF } END { print n + 0 }" "$1")
	echo "samples with the eval loop left native: $n"
	test "$n" -le 2
}

test_expect_success 'a good chain: fake_root;fake_mid;fake_leaf where the eval loop ran' '
	"$DLPROF" record -o good.data -- "$FAKE" good 1 2>err && cat err &&
	grep -E "^dlprof: python: [0-9]+ samples read \((9[0-9]|100)\.[0-9]% checked" err &&
	"$DLPROF" fold -i good.data >good.fold &&
	grep -E ";main;fake_root \(fake\.py:10\);fake_mid \(fake\.py:20\);fake_leaf \(fake\.py:30\) [0-9]+$" good.fold &&
	at_most_native good.fold
'

test_expect_success 'CPython 3.12 layout: the same chain (the entry shim frame skipped)' '
	"$DLPROF" record -o good312.data -- "$FAKE312" good312 1 2>err && cat err &&
	grep -E "^dlprof: python: [0-9]+ samples read \((9[0-9]|100)\.[0-9]% checked" err &&
	"$DLPROF" fold -i good312.data >good312.fold &&
	grep -E ";main;fake_root \(fake\.py:10\);fake_mid \(fake\.py:20\);fake_leaf \(fake\.py:30\) [0-9]+$" good312.fold &&
	! grep -q "shim" good312.fold && at_most_native good312.fold
'
test_expect_success 'reads that fail half-way: counted, native stacks, no crash' '
	"$DLPROF" record -o half.data -- "$FAKE" half 1 2>err && cat err &&
	grep -E "^dlprof: python: [0-9]+ samples read .* (9[0-9]|100)\.[0-9]% unreadable" err &&
	"$DLPROF" report -i half.data >half.txt && sed -n 1,10p half.txt &&
	grep -E "^#          threads (9[0-9]|100)\.[0-9]% left native \(code moved on [0-9.]+%, unreadable (9[0-9]|100)\.[0-9]%,$" half.txt &&
	"$DLPROF" fold -i half.data >half.fold &&
	grep -q ";main;_PyEval_EvalFrameDefault [0-9]*$" half.fold && ! grep -q "fake_" half.fold
'

test_expect_success 'torn memory: record, report, fold, pprof and diff all finish' '
	"$DLPROF" record -o torn.data -- "$FAKE" torn 1 2>err && cat err &&
	grep -q "^dlprof: python: [0-9]* samples read" err &&
	"$DLPROF" report -i torn.data >/dev/null &&
	"$DLPROF" report -i torn.data --sort op >/dev/null &&
	"$DLPROF" fold -i torn.data >/dev/null &&
	"$DLPROF" pprof -i torn.data -o torn.pb.gz 2>/dev/null &&
	"$DLPROF" diff torn.data good.data >/dev/null
'

test_expect_success 'another Python version: one line on stderr, native stacks' '
	"$DLPROF" record -o v314.data -- "$FAKE314" v314 0.3 2>err && cat err &&
	test "$(grep -c "runs Python 3.14: dlprof reads the frames of Python 3.11 to 3.13," err)" = 1 &&
	! grep -q "^dlprof: python:" err &&
	"$DLPROF" fold -i v314.data | grep -q "_PyEval_EvalFrameDefault"
'

test_expect_success 'a 3.13 whose _Py_DebugOffsets do not confirm the layout: one line, native stacks' '
	"$DLPROF" record -o v313.data -- "$FAKE313" v313 0.3 2>err && cat err &&
	test "$(grep -c "runs Python 3.13.0, whose structures are not laid out as dlprof reads them" err)" = 1 &&
	! grep -q "^dlprof: python:" err &&
	"$DLPROF" fold -i v313.data | grep -q "_PyEval_EvalFrameDefault"
'

test_expect_success 'hostile Python records: stacks that mostly repeat are capped, said once' '
	/usr/bin/python3 - "$DLPROF" <<-\EOF
	import resource, struct, subprocess, sys, zlib
	def rec(t, payload):
	    return struct.pack("<II", t, len(payload)) + payload + bytes(-len(payload) % 8)
	def stack(time, nr, same):
	    return struct.pack("<IIQIBBHH3H", 1, 1, time, 0, 1, 0, nr, same, 0, 0, 0)
	recs = [rec(12, stack(1000, 512, 0) + struct.pack("<II", 1, 5) * 512)]
	# each a new leaf over the 511 frames before: 200000 distinct stacks (the same stack
	# again is stored once, and costs nothing)
	recs += [rec(12, stack(2000 + i, 512, 511) + struct.pack("<II", 1, 6 + i))
	         for i in range(200000)]
	out = b"DLPROF\r\n" + struct.pack("<II", 2, 0)
	chunks, cur = [], b""
	for r in recs:
	    if len(cur) + len(r) > 1 << 20:
	        chunks.append(cur)
	        cur = b""
	    cur += r
	chunks.append(cur)
	for i, c in enumerate(chunks):
	    z = zlib.compressobj(1, zlib.DEFLATED, -15)
	    data = z.compress(c) + z.flush()
	    nr, o = 0, 0
	    while o < len(c):
	        t, l = struct.unpack_from("<II", c, o)
	        o += 8 + l + (-l % 8)
	        nr += 1
	    h = struct.pack("<7I", 0x4b434c44, 2 | (i == len(chunks) - 1), len(data), len(c), nr,
	                    zlib.crc32(data), i)
	    out += h + struct.pack("<I", zlib.crc32(h)) + data
	open("amp.data", "wb").write(out)
	p = subprocess.run([sys.argv[1], "report", "-i", "amp.data"], capture_output=True, text=True)
	rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
	print(p.returncode, rss, "KiB", p.stderr.strip())
	# uncapped, its 200000 records would each materialize 512 frames: 800 MB
	assert p.returncode == 0 and rss < 200 * 1024, (p.returncode, rss)
	assert p.stderr.count("records that repeat more frames than the recording holds") == 1
	EOF
'

test_done
