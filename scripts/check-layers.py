#!/usr/bin/python3
"""check-layers.py [ROOT [OBJDIR]] - the arrows between dlprof's stages only run down.

lib/ holds one folder per stage (and its subfolders), in the order the Makefile's
STAGES gives (a stage may use the stages before it); cmd/ is above them all,
lib/inject/ (what record loads into workloads) beside cmd/.  A header in include/
belongs to the stage of the file that implements it (include/X.h: lib/STAGE/X.c), or
to the one HEADER_STAGE below names; a header beside its files (lib/STAGE/x.h) is
private to that stage.  Two views of the arrows:

  includes: a file that includes a header of a later stage or another stage's private
            header; files that include each other's headers (a circle of #includes
            between the files that implement them); a header of no known stage;
  calls:    from the objects the build made (OBJDIR, default ROOT/build: nm's defined
            and undefined symbols of each lib/**.o), a call or reference to a symbol
            defined in a later stage; files that call each other (a circle of calls
            between files, CALL_CIRCLES below excepted, with their reason);
  names:    an extern name a lib/ or cmd/ object defines that does not start with its
            module's name: the first word of its file's name (unwind-dso.c: unwind...),
            or a prefix PREFIXES below gives the file, its folder or the files named
            alike.

Fails, one line per problem; without the objects the calls and names are not checked,
and it says so.
"""
import subprocess
import os
import re
import sys

# headers no lib/STAGE/NAME.c implements: what they declare belongs here
HEADER_STAGE = {
    "frame.h": "util",        # the resolved frame: a type every stage after util passes
    "version.h": "util",
    "memevent.h": "util",     # the allocation sampler's events: an ABI shared with inject
    "itt-format.h": "util",   # the ITT collector's file: an ABI shared with inject
    "family-rules.h": "attribute",
    "isa.h": "isa",
    "output.h": "views",
    "kunwind.h": "resolve",   # the kernel walk's tables: made by unwind-table.c, read by
                              # record's BPF program
}

# circles of calls between files allowed, each with its reason (none today)
CALL_CIRCLES = {}

# The prefixes extern names may start with besides the first word of the file's name,
# by lib/ path: a file, a folder ("isa/") or the start of the files' names
# ("resolve/unwind"); None: any name, with its reason
PREFIXES = {
    "util/util.c": None,            # the C basics every file calls: die, error, xmalloc,
                                    # strbuf_*, as git's usage.c, wrapper.c, strbuf.h
    "util/rephash.c": ("hash_", "str_intern", "strpool_", "u64map_"),
    "util/paths.c": ("dlprof_", "buildid_", "mkdir_p", "remove_tree"),
    "util/elfcheck.c": ("elf_", "fde_index_"),
    "util/elfsyms.c": ("elf_", "build_id_"),
    "util/parse-options.c": ("usage_with_options", "list_options"),  # git's names
    "file/recfile.c": ("recwriter_", "recreader_"),
    "isa/": ("isa_", "libisa_"),    # the stage is one module to its callers
    "resolve/process.c": ("machine_", "dso_", "proc_"),  # perf's machine, thread and dso
                                    # model; the PROC records' table
    "cmd/": ("cmd_",),               # one entry point a command (cmds.h)
    "cmd/dlprof.c": ("main",),
    "resolve/unwind": ("unw_",),    # unwind*.c share unwind-priv.h's unw_ names
    "record/recunwind": ("recunw_",),
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def stages_of(root):
    with open(os.path.join(root, "Makefile")) as f:
        m = re.search(r"^STAGES\s*:=\s*(.+)$", f.read(), re.M)
    if not m:
        sys.exit("check-layers: no STAGES in the Makefile")
    return m.group(1).split()


def circles(deps):
    """the strongly connected components of more than one file (Tarjan), sorted"""
    index, low, onstack, stack, comps = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        onstack.add(v)
        for w in sorted(deps.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in onstack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                onstack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(deps):
        if v not in index:
            visit(v)
    return sorted(comps)


def nm(objs, *flags):
    """{object: nm's lines of it} for every object, in one run; None: nm failed"""
    out = subprocess.run(["nm", "-A", *flags, *objs], capture_output=True, text=True)
    if out.returncode != 0:
        return None
    lines = {obj: [] for obj in objs}
    for line in out.stdout.splitlines():
        for obj in (line.split(":", 1)[0],) if ":" in line else ():
            if obj in lines:    # "OBJECT:ADDRESS TYPE NAME" (-A)
                lines[obj].append(line[len(obj) + 1:])
    return lines


def prefixes_of(path):
    """the prefixes an extern name defined by file path (lib/ or cmd/) may start with;
    None: any"""
    rel = path[len("lib/"):] if path.startswith("lib/") else path
    allowed = [os.path.basename(rel).split("-")[0].split(".")[0]]
    for key, more in PREFIXES.items():
        if rel == key or (key.endswith("/") and rel.startswith(key)) or \
                (not key.endswith((".c", "/")) and rel.startswith(key)):
            if more is None:
                return None
            allowed.extend(more)
    return tuple(allowed)


def check_names(path, defined, problems):
    """extern names of lib/ file path (nm's defined lines) without its module's prefix"""
    allowed = prefixes_of(path)
    if allowed is None or path.endswith(".bpf.c"):   # a BPF program: its maps' names
        return
    for line in defined:
        f = line.split()
        if len(f) == 3 and f[1] in "TDBRVW" and not f[2].lower().startswith(allowed):
            problems.append("%s: extern %s does not start with %s"
                            % (path, f[2], " or ".join(allowed)))


def check_calls(root, objdir, files, rank, problems):
    """the calls between the objects of lib/ (not inject/: it is not linked with them);
    a line for the summary"""
    objs = []
    for path, st in files:
        if path.endswith(".c") and st != "inject":
            obj = os.path.join(objdir, path[:-2] + ".o")
            if not os.path.exists(obj):
                return "not checked: no %s (build first)" % obj
            objs.append((path, st, obj))
    where, wants = {}, {}
    all_defined = nm([o for _, _, o in objs], "--defined-only", "-g")
    all_undefined = nm([o for _, _, o in objs], "-u")
    if all_defined is None or all_undefined is None:
        return "not checked: nm cannot read the objects"
    for path, st, obj in objs:
        defined, undefined = all_defined[obj], all_undefined[obj]
        check_names(path, defined, problems)
        for line in defined:
            f = line.split()
            if len(f) == 3 and f[1] in "TDBRVW":
                where[f[2]] = (path, st)
        wants[path] = (st, [line.split()[-1] for line in undefined if line.split()])
    deps, nr = {}, 0
    for path, (st, syms) in sorted(wants.items()):
        for sym in sorted(set(syms)):
            if sym not in where or where[sym][0] == path:
                continue
            nr += 1
            dpath, dst = where[sym]
            deps.setdefault(path, set()).add(dpath)
            if rank[dst] > rank[st]:
                problems.append("%s (%s): calls %s of the later stage %s (%s)"
                                % (path, st, sym, dst, dpath))
    for comp in circles(deps):
        if tuple(comp) not in CALL_CIRCLES:
            problems.append("call each other: " + ", ".join(comp))
    return "%d references between %d objects" % (nr, len(objs))


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    stages = stages_of(root)
    rank = {s: i for i, s in enumerate(stages)}
    rank["cmd"] = rank["inject"] = len(stages)
    files = []      # (path relative to root, stage)
    impl = {}       # header base name -> (stage, implementing .c)
    for s in stages + ["inject"]:
        top = os.path.join(root, "lib", s)
        for d, subs, names in sorted(os.walk(top)):
            subs.sort()
            rel = os.path.relpath(d, root)
            for n in sorted(names):
                if n.endswith((".c", ".h")):
                    files.append((os.path.join(rel, n), s))
                    if n.endswith(".c"):
                        impl[n[:-2] + ".h"] = (s, os.path.join(rel, n))
    for n in sorted(os.listdir(os.path.join(root, "cmd"))):
        if n.endswith(".c"):
            files.append((os.path.join("cmd", n), "cmd"))
    problems = []

    def header(path, inc):
        """(stage, private, implementing file or None) of an included header"""
        here = os.path.normpath(os.path.join(os.path.dirname(path), inc))
        if os.path.exists(os.path.join(root, here)):
            if here.startswith("lib" + os.sep) and here.split(os.sep)[1] in rank:
                st = here.split(os.sep)[1]
                c = here[:-2] + ".c"
                return st, True, c if os.path.exists(os.path.join(root, c)) else None
        if os.path.exists(os.path.join(root, "include", inc)):
            if inc in HEADER_STAGE:
                return HEADER_STAGE[inc], False, None
            if inc in impl:
                return impl[inc][0], False, impl[inc][1]
            problems.append("include/%s: no stage (no lib/STAGE/%s.c; name it in "
                            "HEADER_STAGE)" % (inc, inc[:-2]))
            return None, False, None
        return None, False, None    # a system header in quotes, or a missing one

    deps = {}
    for path, st in files:
        with open(os.path.join(root, path), errors="replace") as f:
            text = f.read()
        for inc in INCLUDE.findall(text):
            hs, private, c = header(path, inc)
            if hs is None:
                continue
            if private and hs != st:
                problems.append("%s: includes %s, private to lib/%s/"
                                % (path, os.path.basename(inc), hs))
            elif rank[hs] > rank[st]:
                problems.append("%s (%s): includes %s of the later stage %s"
                                % (path, st, inc, hs))
            if c and c != path and path.endswith(".c"):
                deps.setdefault(path, set()).add(c)

    for comp in circles(deps):
        problems.append("depend on each other: " + ", ".join(comp))
    objdir = sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "build")
    called = check_calls(root, objdir, files, rank, problems)

    counts = {}
    for path, st in files:
        counts[st] = counts.get(st, 0) + 1
    print("stages: " + " < ".join(stages) + " < cmd, inject")
    print("files:  " + ", ".join("%s %d" % (s, counts.get(s, 0))
                                 for s in stages + ["inject", "cmd"]))
    print("calls:  " + called + ("" if called.startswith("not") else "; names checked"))
    for p in problems:
        print("check-layers: " + p)
    print("%d problems" % len(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
