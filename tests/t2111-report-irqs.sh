#!/bin/sh
# t2111-report-irqs.sh - samples that fell due while interrupts were off.  A software
# clock (cpu-clock, the only one without a PMU) fires its sample when interrupts come
# back on, in the function that turned them on (_raw_spin_unlock_irqrestore,
# pvm_irq_enable, ...).  The workload sends itself signals and yields in a loop: kernel
# work under the signal and runqueue locks with interrupts off, and its own getrusage
# says how much of the run was kernel time.  By default such samples count to the first
# caller that is not an irq-enable function, marked "(irqs off)"; --raw-irqs leaves them.
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS
W="$BUILD/tests/workloads/rep-irqoff"
[ -x "$W" ] || test_skip_all "$W not built"

test_expect_success 'record the signal and yield loop' '
	"$DLPROF" record -q -o irq.data -- "$W" 2 >times.out &&
	cat times.out &&
	"$DLPROF" fold -i irq.data --no-comm --raw-irqs >raw.txt &&
	"$DLPROF" fold -i irq.data --no-comm >fix.txt &&
	"$DLPROF" report -i irq.data --format json --sort dso >fix.json &&
	"$DLPROF" report -i irq.data --format json --sort dso --raw-irqs >raw.json &&
	"$DLPROF" report -i irq.data >fix.tab && head -10 fix.tab
'

# how many raw samples sit in an irq-enable function: decided by what this kernel does
# (a kernel that re-enables interrupts inline shows none, and there is nothing to move)
cat >"$TRASH/count.py" <<'PY'
import re, sys
enabler = re.compile(r"(_irq_enable|_restore_fl|_unlock_irqrestore|_unlock_irq)(\..*)?$")
n = tot = 0
for line in open(sys.argv[1]):
    stack, c = line.rsplit(" ", 1)
    tot += int(c)
    if enabler.search(stack.split(";")[-1]):
        n += int(c)
print(n, tot)
PY
set -- $(cd "$TRASH" && /usr/bin/python3 count.py raw.txt)
raw_irq=${1:-0} total=${2:-0}
echo "# raw samples in irq-enable functions: $raw_irq of $total"
if [ "$raw_irq" -gt 0 ] && [ $((raw_irq * 100)) -ge "$total" ]; then
	have_irq=true
else
	have_irq=false
fi

if $have_irq; then
	test_expect_success 'default: no leaf in an irq-enable function, each moved to its caller' '
		/usr/bin/python3 - <<-\PY
		import collections, re
		enabler = re.compile(r"(_irq_enable|_restore_fl|_unlock_irqrestore|_unlock_irq)(\..*)?$")
		def read(path):
		    c = collections.Counter()
		    for line in open(path):
		        stack, n = line.rsplit(" ", 1)
		        c[stack] += int(n)
		    return c
		raw, fix = read("raw.txt"), read("fix.txt")
		want = collections.Counter()
		moved = 0
		for stack, n in raw.items():
		    f = stack.split(";")
		    k = len(f)
		    while k > 1 and enabler.search(f[k - 1]):
		        k -= 1
		    if k < len(f):
		        f = f[:k]
		        f[-1] += " (irqs off)"
		        moved += n
		    want[";".join(f)] += n
		assert fix == want, set(fix.items()) ^ set(want.items())
		assert not [s for s in fix if enabler.search(s.split(";")[-1])]
		print("moved", moved, "of", sum(raw.values()))
		PY
	'

	test_expect_success 'the header says how many, json counts them, raw keeps them' '
		json_check fix=fix.json raw=raw.json <<-PY
		raw_irq = $raw_irq
		h, hr = fix.header, raw.header
		h.irqs_off_samples == raw_irq and not h.raw_irqs
		hr.irqs_off_samples == raw_irq and hr.raw_irqs
		tab = open("fix.tab").read()
		m = re.search(r"# irqs:\s+([\d.]+)% of samples fell due with interrupts off", tab)
		m and abs(float(m.group(1)) - 100.0 * raw_irq / h.samples) < 0.06
		"(irqs off)" in tab
		PY
	'
else
	test_skip 'irq-enable attribution' 'this kernel shows no sample in an irq-enable function'
fi

test_expect_success 'kernel time: the samples in the kernel match the workload own system time' '
	json_check fix=fix.json raw=raw.json <<-\PY
	user, sys_ = map(int, open("times.out").read().split())
	def kshare(d):
	    k = sum(r.self for r in d.rows if r.symbol.startswith("[kernel"))
	    return 100.0 * k / sum(r.self for r in d.rows)
	want = 100.0 * sys_ / (user + sys_)
	kfix, kraw = kshare(fix), kshare(raw)
	print("kernel: getrusage %.1f%%, dlprof %.1f%% (raw %.1f%%)" % (want, kfix, kraw))
	abs(kfix - kraw) < 0.01
	abs(kfix - want) <= 10
	PY
'

test_done
