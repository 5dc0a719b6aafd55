#!/bin/sh
# t9001: dlprof speedscope writes speedscope's file format: valid against the schema the
# speedscope npm package ships (when npm and python's jsonschema are here), one sampled
# profile per thread whose weights add up to its samples' time, stacks root first, and
# Python frames with their file and line apart.
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS
/usr/bin/python3 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' ||
	test_skip_all "/usr/bin/python3 is not CPython 3.11"

test_expect_success 'record a Python workload at a fixed period, export it' '
	"$DLPROF" record -q -e cpu-clock -c 1000000 -o kn.data -- /usr/bin/python3 \
		"$SRC/workloads/py_known.py" 1 kn.json &&
	"$DLPROF" speedscope -i kn.data -o kn.ss.json 2>err && cat err &&
	grep -E "^dlprof: wrote kn.ss.json: [0-9]+ samples" err &&
	"$DLPROF" report -i kn.data --sort tid --format json >tid.json &&
	"$DLPROF" fold -i kn.data --no-comm >kn.fold
'

test_expect_success 'profiles, weights, stack order and Python frames' '
	json_check d=kn.ss.json k=kn.json tids=tid.json <<-\PY
	frames = d.shared.frames
	d["$schema"] == "https://www.speedscope.app/file-format-schema.json"
	samples = {int(r.symbol.split()[0]): r.self for r in tids.rows}
	for p in d.profiles:
	    assert p.type == "sampled" and p.unit == "nanoseconds", p.name
	    assert len(p.samples) == len(p.weights) and p.endValue == sum(p.weights)
	    tid = int(p.name.rsplit("tid ", 1)[1].rstrip(")"))
	    assert sum(p.weights) == samples[tid] * 1000000, (p.name, sum(p.weights), samples[tid])
	main = d.profiles[0]
	roots = {frames[s[0]].name for s in main.samples if s}
	"_start" in roots
	hot = [i for i, f in enumerate(frames) if f.name == "work_a" and f.get("line") == k.lines.work_a]
	hot and frames[hot[0]].file.endswith("/py_known.py")
	w = sum(wt for s, wt in zip(main.samples, main.weights) if hot[0] in s)
	fold = sum(int(l.rsplit(" ", 1)[1]) for l in open("kn.fold")
	           if "work_a (py_known.py:%d)" % k.lines.work_a in l)
	print("work_a:", w // 1000000, "samples in speedscope,", fold, "in fold")
	w == fold * 1000000
	PY
'

# the schema from the speedscope package itself
if command -v npm >/dev/null 2>&1 && python3 -c "import jsonschema" 2>/dev/null &&
   (cd "$TRASH" && timeout 120 npm pack --silent speedscope >npm.out 2>npm.err) &&
   tar xzf "$TRASH/$(tail -1 "$TRASH/npm.out")" -C "$TRASH" package/dist/release/file-format-schema.json 2>/dev/null; then
	test_expect_success 'valid against speedscope file-format-schema.json' '
		python3 - <<-\EOF
		import json, jsonschema
		schema = json.load(open("package/dist/release/file-format-schema.json"))
		jsonschema.validate(json.load(open("kn.ss.json")),
		                    dict(schema, **{"$ref": "#/definitions/FileFormat.File"}))
		print("valid against the schema of", open("npm.out").read().strip())
		EOF
	'
else
	test_skip 'speedscope schema' 'npm registry, the speedscope package or python jsonschema not at hand'
fi

test_done
