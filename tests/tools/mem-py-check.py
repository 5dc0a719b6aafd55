"""mem-py-check.py - check report --memory --sort line --format json of a mem_py.py run
against the workload's own accounting (its "alloc FUNCTION BYTES COUNT" lines):

  * the bytes of each C call belong to the Python line that called it, within 5%;
  * alternate() allocates on one line and spins on the next: the allocations' bytes are
    all on the first (at least 97%), none on the spin line (a Python stack read any later
    than the allocation, as from outside, names the spin).

    mem-py-check.py MEM_PY_PY OWN_OUTPUT REPORT_JSON
"""
import json
import sys

src = open(sys.argv[1]).read().split("\n")
tags = ("batch", "cache", "leak", "one", "spin")
line = {t: i + 1 for i, l in enumerate(src) for t in tags if "# LINE:" + t in l}
rows = {r["name"]: r for r in json.load(open(sys.argv[3]))["rows"]}
own = {l.split()[1]: int(l.split()[2]) for l in open(sys.argv[2]) if l.startswith("alloc ")}


def got(fn, t):
    return rows.get("%s (mem_py.py:%d)" % (fn, line[t]), {"alloc_bytes": 0})["alloc_bytes"]


for fn, t, c in (("small_objects", "batch", "batch_small"), ("big_blocks", "cache", "keep_cache"),
                 ("big_blocks", "leak", "leak_blocks")):
    print(fn, t, got(fn, t), own[c])
    assert abs(got(fn, t) - own[c]) <= 0.05 * own[c], (fn, got(fn, t), own[c])
one, spin = got("alternate", "one"), got("alternate", "spin")
print("alternate: allocation line", one, "spin line", spin, "made", own["one_block"])
assert one >= 0.97 * own["one_block"], ("allocation line", one, own["one_block"])
assert spin <= 0.01 * own["one_block"], ("spin line", spin)
