#!/usr/bin/python3
"""pprof-summary.py - check and sum a pprof profile as `protoc --decode` prints it.

Reads protoc's text format of a Profile (tests/pprof/profile.proto) on stdin, checks
that every index and id it holds points at something (string table, locations,
functions, mappings), and prints one fact per line for the tests to compare:
    samples N / value1 N / sample_type NAME/UNIT ... / leaf SYMBOL N (by samples) /
    label KEY=VALUE N / root SYMBOL N / line FUNCTION FILE:LINE N (locations with a line
    number, by the samples whose stack holds them)
Exits 1 with a message on the first broken reference.
"""
import sys


def parse(lines):
    """protoc text format into nested dicts of lists."""
    stack = [{}]
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        if line.endswith("{"):
            node = {}
            stack[-1].setdefault(line[:-1].strip(), []).append(node)
            stack.append(node)
        elif line == "}":
            stack.pop()
        else:
            key, _, val = line.partition(":")
            val = val.strip()
            if val.startswith('"'):
                val = bytes(val[1:-1], "utf-8").decode("unicode_escape").encode("latin-1").decode("utf-8")
            else:
                val = int(val) if val not in ("true", "false") else val == "true"
            stack[-1].setdefault(key.strip(), []).append(val)
    return stack[0]


def die(msg):
    print("pprof-summary: " + msg, file=sys.stderr)
    sys.exit(1)


def one(node, key, default=0):
    return node.get(key, [default])[0]


def main():
    prof = parse(sys.stdin)
    strs = prof.get("string_table", [])
    if not strs or strs[0] != "":
        die("string_table[0] is not the empty string")

    def s(i):
        if not 0 <= i < len(strs):
            die("string index %d out of range (%d strings)" % (i, len(strs)))
        return strs[i]

    maps = {one(m, "id"): m for m in prof.get("mapping", [])}
    funcs = {one(f, "id"): f for f in prof.get("function", [])}
    locs = {one(l, "id"): l for l in prof.get("location", [])}
    for f in funcs.values():
        s(one(f, "name")), s(one(f, "filename"))
    for m in maps.values():
        s(one(m, "filename"))

    def loc_name(lid):
        loc = locs.get(lid)
        if loc is None:
            die("sample names location %d, which does not exist" % lid)
        if one(loc, "mapping_id") not in maps:
            die("location %d names a missing mapping" % lid)
        lines = loc.get("line", [])
        if not lines or one(lines[0], "function_id") not in funcs:
            die("location %d has no function" % lid)
        return s(one(funcs[one(lines[0], "function_id")], "name"))

    types = [s(one(t, "type")) + "/" + s(one(t, "unit")) for t in prof.get("sample_type", [])]
    print("sample_type " + " ".join(types))
    print("default_sample_type " + s(one(prof, "default_sample_type")))
    total = [0] * len(types)
    leaf, root, labels, lines = {}, {}, {}, {}

    def loc_line(lid):
        ln = locs[lid].get("line", [])
        if not ln or not one(ln[0], "line"):
            return None
        f = funcs[one(ln[0], "function_id")]
        return "%s %s:%d" % (s(one(f, "name")), s(one(f, "filename")), one(ln[0], "line"))
    for smp in prof.get("sample", []):
        vals = smp.get("value", [])
        if len(vals) != len(types):
            die("a sample has %d values for %d sample types" % (len(vals), len(types)))
        for i, v in enumerate(vals):
            total[i] += v
        ids = smp.get("location_id", [])
        if ids:
            leaf[loc_name(ids[0])] = leaf.get(loc_name(ids[0]), 0) + vals[0]
            root[loc_name(ids[-1])] = root.get(loc_name(ids[-1]), 0) + vals[0]
            for key in {loc_line(i) for i in ids} - {None}:
                lines[key] = lines.get(key, 0) + vals[0]
        for lab in smp.get("label", []):
            key = s(one(lab, "key"))
            val = s(one(lab, "str")) if "str" in lab else str(one(lab, "num"))
            labels[key + "=" + val] = labels.get(key + "=" + val, 0) + vals[0]
    print("samples %d" % total[0])
    for i in range(1, len(total)):
        print("value%d %d" % (i, total[i]))
    for name, n in sorted(leaf.items(), key=lambda kv: -kv[1]):
        print("leaf %s %d" % (name, n))
    for name, n in sorted(root.items(), key=lambda kv: -kv[1]):
        print("root %s %d" % (name, n))
    for kv, n in sorted(labels.items(), key=lambda kv: -kv[1]):
        print("label %s %d" % (kv, n))
    for kv, n in sorted(lines.items(), key=lambda kv: -kv[1]):
        print("line %s %d" % (kv, n))


main()
