#!/bin/sh
# torch-goals.sh - measure issue 3/4 goals on the PyTorch CNN training run, dlprof vs perf.
#
# usage: bench/torch-goals.sh [SECONDS]        (default 10; run from anywhere)
#
# Run 1 (the family accuracy goal): `perf record -a -F 997 -g` samples the whole machine
# while `dlprof record -F 999 --call-graph dwarf` records examples/cnn_train.py, so both
# tools sample the SAME run.  ONEDNN_JIT_PROFILE=2 is set here (user-set: dlprof captures
# /tmp/perf-PID.map and leaves it in place, so perf names the JIT code too; this script
# deletes the maps of its own runs at the end).  perf's samples of the workload's pid are
# classified with dlprof's own rules (`dlprof families --batch`) and compared per family
# to `dlprof report --sort family`.  perf runs at 997 Hz, not 999: both tools sample on
# cpu-clock hrtimers of the same CPUs, and equal periods could phase-lock (one tool's
# interrupt always landing just after the other's); 997 vs 999 Hz drifts by ~2 us per
# sample, a full beat every ~0.5 s.
# Run 2 (perf's own figures: named, complete stacks, report time, file size): a separate
# `perf record -B -N -F 999 --call-graph dwarf` run of the same workload.
# Prints every figure side by side and PASS/FAIL per goal; exit 1 if a goal fails.
set -e
secs=${1:-10}
top=$(cd "$(dirname "$0")/.." && pwd)
dlprof=${DLPROF:-$top/dlprof}
py=/usr/bin/python3
work=${TORCH_GOALS_DIR:-$(mktemp -d /tmp/torch-goals.XXXXXX)}
mkdir -p "$work"
cd "$work"
export DLPROF_DATADIR="$top/share"
export ONEDNN_JIT_PROFILE=2 DNNL_JIT_PROFILE=2
wl="$py $top/examples/cnn_train.py --seconds $secs"

now() { date +%s.%N; }
t0=$(now)
echo "# run 1: perf record -a -F 997 -g around dlprof record --call-graph dwarf ..." >&2
# `sleep` only caps perf's run if this script dies; it is stopped with SIGTERM below
perf record -a -F 997 -g -o s.data -- sleep $((secs * 6 + 60)) >rec-s.out 2>rec-s.err &
spid=$!
sleep 2		# perf has opened its events before the workload starts
"$dlprof" record -F 999 --call-graph dwarf -o d.data -- $wl >rec-d.out 2>rec-d.err || true
kill -TERM $spid 2>/dev/null || true
wait $spid || true
echo "# run 2: perf record --call-graph dwarf ..." >&2
perf record -B -N -F 999 --call-graph dwarf -o p.data -- $wl >rec-p.out 2>rec-p.err
grep -h "steps/s" rec-d.out rec-p.out >&2 || true

echo "# dlprof report ..." >&2
t1=$(now)
"$dlprof" report -i d.data >d-report.txt 2>d-report.err
t2=$(now)
"$dlprof" report -i d.data --sort family --format json >d-fam.json 2>/dev/null
"$dlprof" report -i d.data --sort op --format json >d-op.json 2>/dev/null
"$dlprof" report -i d.data --sort thread --format json >d-thr.json 2>/dev/null
echo "# perf report --stdio ..." >&2
t3=$(now)
perf report -i p.data --stdio >p-report.txt 2>p-report.err
t4=$(now)
perf report -i p.data --stats >p-stats.txt 2>/dev/null || true
echo "# perf script ..." >&2
perf script -i p.data -F comm,pid,tid,ip,sym,dso >p-script.txt 2>p-script.err
# run 1: only the workload's samples (its pid: every thread of the python process)
wpids=$("$py" -c 'import json,sys; print(",".join(sorted({str(r["pid"]) for r in json.load(open(sys.argv[1]))["rows"]})))' d-thr.json)
perf script -i s.data --pid "$wpids" -F comm,pid,tid,ip,sym,dso >s-script.txt 2>s-script.err
perf script -i s.data -F pid >s-pids.txt 2>/dev/null || true

echo "$t1 $t2 $t3 $t4" >times.txt
exec "$py" - "$dlprof" "$work" "$t0" <<'EOF'
import json, os, re, subprocess, sys, time

dlprof, work, t0 = sys.argv[1], sys.argv[2], float(sys.argv[3])
os.chdir(work)
t1, t2, t3, t4 = map(float, open("times.txt").read().split())

# ---- dlprof side ----
hdr = open("d-report.txt").read()
m = re.search(r"# samples: (\d+) in .*?, lost: (\d+)", hdr)
d_samples, d_lost = int(m.group(1)), int(m.group(2))
m = re.search(r"# stacks:\s+([\d.]+)% reach the thread root", hdr)
d_complete = float(m.group(1))
d_named = float(re.search(r"# stacks:.*?([\d.]+)% (of samples )?named", hdr).group(1))
d_fam = {r["family"]: r["self_pct"] for r in json.load(open("d-fam.json"))["rows"]}
op = json.load(open("d-op.json"))
d_findings = [l.strip() for l in hdr.splitlines() if l.strip().startswith("* [")]

# ---- perf side ----
head = re.compile(r"^(\S.*?)\s+(\d+)/(\d+)\s*$")
frame = re.compile(r"^\s+([0-9a-f]+)\s+(.*?)\s+\((.*)\)\s*$")
roots = {"_start", "__libc_start_main", "clone3", "__clone3", "__GI___clone3", "start_thread",
         "__clone", "clone", "__GI___clone", "__clone_internal"}

def parse_script(path):
    samples, cur = [], None
    for line in open(path, errors="replace"):
        if not line.strip():
            if cur:
                samples.append(cur)
            cur = None
            continue
        if cur is None:
            mh = head.match(line.rstrip("\n"))
            if not mh:
                continue
            cur = {"comm": mh.group(1).strip(), "pid": int(mh.group(2)), "frames": []}
            continue
        mf = frame.match(line.rstrip("\n"))
        if mf:
            cur["frames"].append((mf.group(2), mf.group(3), int(mf.group(1), 16)))
    if cur:
        samples.append(cur)
    return samples

def unnamed(sym):
    return sym == "[unknown]" or re.match(r"^(0x)?[0-9a-f]+$", sym) is not None

def short_dso(d):
    if re.match(r"^/tmp/perf-\d+\.map$", d):
        return "[jit]"
    return os.path.basename(d) if d.startswith("/") else d

def classify(samples):
    """family shares (%) of perf samples by dlprof's own rules: one batch line per
    distinct (flags, dso, stack); kernel leaves carry their kernel stack"""
    keys, order = {}, []
    for s in samples:
        sym, dso = s["frames"][0][:2]
        sd = short_dso(dso)
        if sd == "[kernel.kallsyms]":
            flags = "k"
            stack = [f[0] for f in s["frames"] if short_dso(f[1]) == "[kernel.kallsyms]"][:48]
        elif sd == "[jit]":
            flags, stack = "j", [sym]
        elif sd == "[unknown]":
            flags, stack = "a", [sym]
        else:
            flags, stack = "-", [sym]
        k = "\t".join([flags, sd] + [x.replace("\t", " ") for x in stack])
        if k not in keys:
            keys[k] = None
            order.append(k)
        s["key"] = k
    out = subprocess.run([dlprof, "families", "--batch"], input="\n".join(order) + "\n",
                         capture_output=True, text=True).stdout.split("\n")
    for k, fam in zip(order, out):
        keys[k] = fam
    cnt = {}
    for s in samples:
        s["family"] = keys[s["key"]]
        cnt[s["family"]] = cnt.get(s["family"], 0) + 1
    return {f: 100.0 * n / max(len(samples), 1) for f, n in cnt.items()}

# run 2: perf's own dwarf recording of the workload (not of a dlprof process)
samples = parse_script("p-script.txt")
p_all = len(samples)
samples = [s for s in samples if s["frames"] and not s["comm"].startswith("dlprof")]
p_samples = len(samples)
p_named = sum(1 for s in samples if not unnamed(s["frames"][0][0]))
p_complete = sum(1 for s in samples
                 if re.sub(r"\+0x[0-9a-f]+$", "", s["frames"][-1][0]) in roots)

# run 1: perf -a's samples of the workload's pid, in the very run dlprof recorded
s_samples = [s for s in parse_script("s-script.txt") if s["frames"]]
s_fam = classify(s_samples)
s_lost = 0
for l in open("s-script.err", errors="replace"):
    m = re.search(r"lost (\d+) chunks", l)
    if m:
        s_lost = int(m.group(1))
s_total = sum(1 for l in open("s-pids.txt") if l.strip())

# independent spin evidence for run 1: perf leaves in OpenMP runtimes whose address lies
# inside a loop that contains PAUSE (objdump: a backward jump at most 256 bytes back over a
# pause instruction).  Instruction-level, where dlprof's pause-loop trait is per function.
def pause_loops(path):
    ins = []
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path], capture_output=True,
                         text=True).stdout
    for l in out.splitlines():
        m = re.match(r"^\s+([0-9a-f]+):\s+(\S+)\s*(.*)$", l)
        if m:
            ins.append((int(m.group(1), 16), m.group(2), m.group(3)))
    pauses = [x[0] for x in ins if x[1] == "pause"]
    loops = []
    for i, (addr, opc, arg) in enumerate(ins):
        m = re.match(r"^([0-9a-f]+)\s", arg)
        if not opc.startswith("j") or not m:
            continue
        t = int(m.group(1), 16)
        end = ins[i + 1][0] if i + 1 < len(ins) else addr + 2
        if t <= addr and end - t <= 256 and any(t <= x < end for x in pauses):
            loops.append((t, end))
    return loops
omp_dso = re.compile(r"/lib(gomp|iomp5|omp)[^/]*\.so[^/]*$")
loops, s_spin = {}, 0
for s in s_samples:
    sym, dso, ip = s["frames"][0]
    if omp_dso.search(dso) and os.path.exists(dso):
        if dso not in loops:
            loops[dso] = pause_loops(dso)
        if any(a <= ip < b for a, b in loops[dso]):
            s_spin += 1
s_spin_pct = 100.0 * s_spin / max(len(s_samples), 1)

m = re.search(r"LOST events:\s+(\d+)", open("p-stats.txt").read())
p_lost = int(m.group(1)) if m else 0
for l in open("rec-p.err"):
    m = re.search(r"lost (\d+) chunks", l)
    if m:
        p_lost = max(p_lost, int(m.group(1)))

d_size, p_size = os.path.getsize("d.data"), os.path.getsize("p.data")
d_rep, p_rep = t2 - t1, t4 - t3

# the JIT maps of the two runs (and no one else's)
pids = {s["pid"] for s in samples + s_samples} | {r["pid"] for r in json.load(open("d-thr.json"))["rows"]}
for pid in pids:
    try:
        os.unlink("/tmp/perf-%d.map" % pid)
    except OSError:
        pass

# ---- ITT reference: samples inside oneDNN tasks, less their waiting (OpenMP, kernel) ----
itt = {}
for t in op.get("itt_tasks", []):
    busy = sum(n for f, n in t.get("families", {}).items()
               if not f.startswith("omp-") and not f.startswith("kernel-"))
    itt[t["name"]] = (100.0 * busy / max(op["samples"], 1), t["task_cpu_pct"], t["calls"])

# ---- print ----
res = []
def goal(name, ok, text):
    res.append(ok)
    print("%-5s %-34s %s" % ("PASS" if ok else "FAIL", name, text))

print("\n%-34s %14s %14s" % ("", "dlprof", "perf"))
print("%-34s %14d %14d" % ("samples (workload)", d_samples, p_samples))
print("%-34s %14d %14d" % ("lost", d_lost, p_lost))
print("%-34s %13.1f%% %13.1f%%" % ("named", d_named, 100.0 * p_named / p_samples))
print("%-34s %13.1f%% %13.1f%%" % ("stacks reaching the thread root", d_complete,
                                    100.0 * p_complete / p_samples))
print("%-34s %13.2fs %13.2fs" % ("report time", d_rep, p_rep))
print("%-34s %14.0f %14.0f" % ("file bytes per sample", d_size / d_samples, p_size / max(p_all, 1)))
print("(perf column: its own dwarf run, run 2)")

# ---- family split: dlprof vs perf -a in the same run (run 1) ----
print("\nsame run: dlprof %d samples, perf -a %d samples of pid %s (%d machine-wide, "
      "%d chunks lost)" % (d_samples, len(s_samples), ",".join(sorted({str(s["pid"])
      for s in s_samples})), s_total, s_lost))
print("%-16s %8s %8s %8s" % ("family", "dlprof", "perf", "diff"))
def bucket(tab, f):
    if f == "omp":
        return sum(v for k, v in tab.items() if k.startswith("omp-"))
    if f == "kernel":
        return sum(v for k, v in tab.items() if k.startswith("kernel-"))
    return tab.get(f, 0)
fams = sorted(set(d_fam) | set(s_fam), key=lambda f: -max(d_fam.get(f, 0), s_fam.get(f, 0)))
cmp = [f for f in fams if not f.startswith("omp-")] + ["omp", "kernel"]
worst, worst_f = 0.0, ""
for f in cmp:
    a, b = bucket(d_fam, f), bucket(s_fam, f)
    bad = abs(a - b) > 3.0
    print("%-16s %7.2f%% %7.2f%% %+7.2f %s" % (f, a, b, a - b, "FAIL" if bad else "ok"))
    if abs(a - b) > worst:
        worst, worst_f = abs(a - b), f
print("(omp = omp-spin + omp-runtime, kernel = kernel-*: perf sees stripped libgomp as "
      "[unknown], so it cannot split spin from runtime; dlprof: spin %.2f%%, runtime %.2f%%)"
      % (d_fam.get("omp-spin", 0), d_fam.get("omp-runtime", 0)))
print("omp-spin vs perf leaves inside a PAUSE loop of the OpenMP runtime (objdump): "
      "%.2f%% vs %.2f%% (%+.2f)" % (d_fam.get("omp-spin", 0), s_spin_pct,
                                     d_fam.get("omp-spin", 0) - s_spin_pct))
print("\nITT tasks: name, calls, task time % of sampled CPU (wall, incl. off-CPU), "
      "compute samples in task %")
for n, (busy, wall, calls) in itt.items():
    print("  %-14s %6d %8.2f%% %8.2f%%" % (n, calls, wall, busy))
cov = op.get("op_coverage_pct", 0)
cov_ops = cov - op.get("op_by_phase_pct", 0)
print("\noperator coverage: %.1f%% of %d samples in libtorch/libdnnl/JIT (stack %.1f%%, ITT %.1f%%, "
      "OpenMP master %.1f%%, library init/exit %.1f%%)" % (cov, op.get("fw_samples", 0),
      op.get("op_by_stack_pct", 0), op.get("op_by_itt_pct", 0), op.get("op_by_master_pct", 0),
      op.get("op_by_phase_pct", 0)))
print("findings:")
for f in d_findings:
    print("  " + f)
print()
goal("named >= 97%", d_named >= 97, "%.1f%% (perf %.1f%%)" % (d_named, 100.0 * p_named / p_samples))
goal("complete stacks >= 95%", d_complete >= 95, "%.1f%% (perf %.1f%%)"
     % (d_complete, 100.0 * p_complete / p_samples))
goal("report >= 20x faster than perf", p_rep >= 20 * d_rep, "%.2f s vs %.2f s: %.1fx"
     % (d_rep, p_rep, p_rep / max(d_rep, 1e-9)))
goal("file/sample <= 1/5 of perf's", (d_size / d_samples) * 5 <= p_size / max(p_all, 1),
     "%.0f vs %.0f bytes: 1/%.1f" % (d_size / d_samples, p_size / max(p_all, 1),
                                     (p_size / max(p_all, 1)) / (d_size / d_samples)))
goal("0 lost", d_lost == 0, "%d lost (perf %d)" % (d_lost, p_lost))
goal("families within 3 pts of perf+map", worst <= 3.0,
     "same run, worst %s %+.2f pts" % (worst_f, bucket(d_fam, worst_f) - bucket(s_fam, worst_f)))
goal("omp-spin within 3 pts of PAUSE loops", abs(d_fam.get("omp-spin", 0) - s_spin_pct) <= 3.0,
     "%.2f%% vs %.2f%% of perf's leaves in them" % (d_fam.get("omp-spin", 0), s_spin_pct))
for n, fam in (("convolution", "jit-conv"), ("reorder", "jit-reorder")):
    if n in itt:
        diff = d_fam.get(fam, 0) - itt[n][0]
        goal("%s within 3 pts of ITT %s" % (fam, n), abs(diff) <= 3.0,
             "%.2f%% vs %.2f%% (%+.2f)" % (d_fam.get(fam, 0), itt[n][0], diff))
    else:
        goal("%s within 3 pts of ITT %s" % (fam, n), False, "no ITT task %s recorded" % n)
goal("op coverage >= 90%", cov >= 90, "%.1f%% (%.1f%% without the library init/exit phases)"
     % (cov, cov_ops))
print("\ntotal bench time %.0f s; files in %s" % (time.time() - t0, work))
sys.exit(0 if all(res) else 1)
EOF
