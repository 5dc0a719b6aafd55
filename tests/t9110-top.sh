#!/bin/sh
# make check-e2e: over 20 s here, run apart from make check (tests/README.md)
# t9110: dlprof top, as a person uses it.  Off a terminal: one table per refresh, -n
# quits, the last table of a command that ended is every view, and each view agrees row
# for row with report on the recording top kept (-o): the one attribution, live; on the
# CNN the OpenMP workers' operators settle as in report.  The shares follow the
# workload's own timers (dl-gemm: OpenBLAS against its own loop).  In tmux: the hot
# function and family appear within two refreshes, s f o t switch the view, z zeroes, a
# resize redraws to fit, colour only without NO_COLOR, the command's output goes to a
# log named at the end, q exits 0 and leaves the terminal sane; attached (-p) to a
# process that ends under it.  JIT code is named live as report names it.  Bad input:
# one line, exit 64.
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS
W="$BUILD/tests/workloads"
[ -x "$W/dl-gemm" ] && [ -x "$W/rec-hot" ] || test_skip_all "workloads not built"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

# top_table FILE VIEW N: the N-th table of VIEW in top's plain output, as
# "samples<TAB>key" lines (self: symbol<TAB>dso cut to 24; thread: pid tid name)
cat >"$TRASH/tables.py" <<-\EOF
	import sys
	def tables(path):
	    out, cur, view = [], None, None
	    for line in open(path, errors="replace"):
	        line = line.rstrip("\n")
	        if line.startswith("dlprof top: "):
	            cur = None
	        elif " | view: " in line:
	            view = line.split(" | view: ")[1].split(" |")[0]
	            cur = {"view": view, "rows": [], "head": line}
	            out.append(cur)
	        elif cur is not None and line.startswith("  Win%"):
	            pass
	        elif cur is not None and len(line) > 27 and line[6:8] == "  ":
	            samples = int(line[15:25])
	            if view == "self":
	                key = (line[69:], line[44:68].rstrip())
	            elif view == "thread":
	                f = line[27:].split(None, 2)
	                key = (int(f[0]), int(f[1]), f[2] if len(f) > 2 else "")
	            else:
	                key = line[27:]
	            cur["rows"].append((samples, key, float(line[0:6]), float(line[8:14])))
	    return out
EOF

test_expect_success 'off a terminal: a table per refresh, the hot function first, -n 3 quits (exit 0)' '
	start=$(date +%s) &&
	"$DLPROF" top -d 0.4 -n 3 -- "$W/dl-gemm" 60 >out 2>err &&
	end=$(date +%s) && cat out &&
	test $((end - start)) -lt 15 &&
	test "$(grep -c "^dlprof top: " out)" = 3 &&
	! grep -q "$(printf "\033")" out &&
	/usr/bin/python3 - <<-\EOF
	import sys; sys.path.insert(0, ".")
	from tables import tables
	t = tables("out")
	assert len(t) == 3 and all(x["view"] == "self" for x in t), t
	# within two refreshes OpenBLAS'"'"'s kernel leads (dl-gemm runs it first)
	r = t[1]["rows"][0]
	assert r[1][0].startswith("sgemm_kernel") and r[2] > 50, t[1]
	assert t[2]["rows"][0][0] > t[0]["rows"][0][0], "counts grow"
	EOF
'

test_expect_success 'the last table is every view; each agrees with report on top -o; shares follow the workload'"'"'s timers' '
	"$DLPROF" top -d 100 --rows 200 -o gemm.data -- "$W/dl-gemm" 2 >out 2>err &&
	cat out err && test -s gemm.data &&
	grep "^gemm-seconds" out >timers &&
	for v in self family thread; do
		"$DLPROF" report -i gemm.data --sort $v --limit 500 --format csv >rep.$v 2>/dev/null || return 1
	done &&
	/usr/bin/python3 - <<-\EOF
	import csv, sys; sys.path.insert(0, ".")
	from tables import tables
	t = {x["view"]: x for x in tables("out")}
	assert set(t) == {"self", "family", "op", "thread"}, t.keys()
	assert "the command ended (status 0)" in t["self"]["head"], t["self"]["head"]
	mine = {r[1]: r[0] for r in t["self"]["rows"]}
	rep = {(r["symbol"], r["dso"][:24]): int(r["self"]) for r in csv.DictReader(open("rep.self")) if int(r["self"])}
	assert mine == rep, (set(mine.items()) ^ set(rep.items()))
	mine = {r[1]: r[0] for r in t["family"]["rows"]}
	rep = {r["family"]: int(r["samples"]) for r in csv.DictReader(open("rep.family"))}
	assert mine == rep, (mine, rep)
	mine = {r[1][:2]: r[0] for r in t["thread"]["rows"]}
	rep = {(int(r["pid"]), int(r["tid"])): int(r["samples"]) for r in csv.DictReader(open("rep.thread"))}
	assert mine == rep, (mine, rep)
	# the workload timed both halves itself: OpenBLAS against its own loop
	f = open("timers").read().split()
	gemm, own = float(f[1]), float(f[3])
	fam = {r[1]: r[3] for r in t["family"]["rows"]}
	share = fam["gemm"] / (fam["gemm"] + fam["other"])
	print("gemm share %.3f, the workload says %.3f" % (share, gemm / (gemm + own)))
	assert abs(share - gemm / (gemm + own)) < 0.05, (share, gemm, own)
	EOF
'

# A JIT that publishes each kernel just before running it, several a millisecond on two
# threads (tests/workloads/jit-chain.c): a miss asks the map at once whether it grew,
# so every sample is named live as report names it (a look at most once a millisecond
# left 1 to 10 of ~400 [anon])
test_expect_success 'JIT code published a moment before it runs: named live, as report names it' '
	"$DLPROF" top -d 100 --rows 5000 -o jc.data -- "$BUILD/tests/jit-chain" 1000 0.2 2 \
		>out 2>err &&
	"$DLPROF" report -i jc.data --sort self --limit 5000 --format csv >rep.self 2>/dev/null &&
	/usr/bin/python3 - <<-\EOF
	import csv, sys; sys.path.insert(0, ".")
	from tables import tables
	t = {x["view"]: x for x in tables("out")}
	mine = {r[1]: r[0] for r in t["self"]["rows"]}
	rep = {(r["symbol"], r["dso"][:24]): int(r["self"]) for r in csv.DictReader(open("rep.self")) if int(r["self"])}
	chain = lambda d: sum(n for k, n in d.items() if k[0].startswith("chain_kernel_"))
	anon = [k for k in mine if k[1] == "[anon]"]
	print("chain kernels: top", chain(mine), "report", chain(rep), "[anon] in top:", anon)
	assert not anon and chain(mine) == chain(rep) and chain(rep) > 200, (anon, chain(mine), chain(rep))
	EOF
'

if test_have TORCH; then
	test_expect_success 'the CNN: operators (OpenMP workers settled live) and JIT kernels as report has them' '
		unset OMP_NUM_THREADS OPENBLAS_NUM_THREADS &&
		"$DLPROF" top -d 100 --rows 100000 -o cnn.data -- /usr/bin/python3 "$SRC/workloads/dl_torch_cnn.py" 2 >out 2>err &&
		"$DLPROF" report -i cnn.data --sort op --limit 500 --format json >rep.op 2>/dev/null &&
		"$DLPROF" report -i cnn.data --sort self --limit 2000 --format csv >rep.self 2>/dev/null &&
		/usr/bin/python3 - <<-\EOF
		import csv, json, sys; sys.path.insert(0, ".")
		from tables import tables
		t = {x["view"]: x for x in tables("out")}
		mine = {r[1]: r[0] for r in t["op"]["rows"]}
		rep = {}
		for r in json.load(open("rep.op"))["rows"]:
		    if r["self_samples"]:
		        rep[r["name"] + ("." + r["overload"] if r["overload"] else "")] = r["self_samples"]
		assert mine == rep, sorted(set(mine.items()) ^ set(rep.items()))
		assert any(k.startswith("aten::") for k in list(mine)[:3]), mine
		mine = {r[1]: r[0] for r in t["self"]["rows"]}
		rep = {(r["symbol"], r["dso"][:24]): int(r["self"]) for r in csv.DictReader(open("rep.self")) if int(r["self"])}
		# live, a sample can come before the mmap record of its code (drained from
		# another cpu'"'"'s ring): [unknown] to top, named in report; a handful at most
		unk = sum(n for k, n in mine.items() if k[1] == "[unknown]") - \
		      sum(n for k, n in rep.items() if k[1] == "[unknown]")
		diff = {k: rep.get(k, 0) - mine.get(k, 0) for k in set(mine) | set(rep)}
		moved = {k: d for k, d in diff.items() if d and k[1] != "[unknown]"}
		print("self rows differing:", moved, "unknown to top alone:", unk)
		assert sum(moved.values()) == unk and 0 <= unk <= 0.001 * sum(rep.values()) + 1, moved
		jit = [k for k in mine if k[1] == "[jit]"]
		assert jit and not [k for k in mine if k[1] == "[anon]"], (jit, mine)
		print("ops", len(rep), "jit kernels", len(jit))
		EOF
	'
else
	test_skip 'the CNN under top' 'no python3-torch'
fi

# The kernel's functions, named live: top reads this boot's core kernel from record's
# cache (DLPROF_KSYMS_DIR), the rest of /proc/kallsyms whole when a sample is past it.
# dd copies zeros in the kernel: each kernel row top shows is a function /proc/kallsyms
# has (the truth), none unnamed; the same with the kept text cut to 16 bytes (every
# kernel sample past it).
if test "$(head -c 16 /proc/kallsyms)" != "0000000000000000"; then
	top_kernel_named() {
		"$DLPROF" top -d 100 --rows 400 -- dd if=/dev/zero of=/dev/null bs=64k \
			count=600000 >"$1" 2>"$1.err" &&
		/usr/bin/python3 - "$1" <<-\EOF
		import sys; sys.path.insert(0, ".")
		from tables import tables
		names = {l.split()[2] for l in open("/proc/kallsyms") if len(l.split()) >= 3}
		self = [x for x in tables(sys.argv[1]) if x["view"] == "self"][-1]
		kern = [(n, key) for n, key, _, _ in self["rows"] if key[1].startswith("[kernel")]
		print(len(kern), "kernel rows, first", kern[:3])
		def known(name):
		    # (a name wider than its column keeps its two ends about an ellipsis)
		    if "\u2026" not in name:
		        return name in names
		    a, b = name.split("\u2026", 1)
		    return any(n.startswith(a) and n.endswith(b) for n in names)
		bad = [k for k in kern if not known(k[1][0].split()[0])]
		assert len(kern) >= 3 and not bad, bad
		assert sum(n for n, _ in kern) * 2 > sum(r[0] for r in self["rows"]), "dd in the kernel"
		EOF
	}
	test_expect_success 'the kernel named live: from the cache, or read whole past it' '
		export DLPROF_KSYMS_DIR="$TRASH/ksc" &&
		"$DLPROF" record -q -o warm.data -- true &&
		boot=$(cat /proc/sys/kernel/random/boot_id) && test -s "ksc/$boot" &&
		top_kernel_named k1.out &&
		/usr/bin/python3 "$SRC/tools/ksyms-cut.py" "ksc/$boot" &&
		top_kernel_named k2.out
	'
fi

test_expect_success 'bad input: one line, exit 64' '
	test_expect_code() { want=$1; shift; "$@" >o 2>e; rc=$?; cat e; test $rc = $want && test $(wc -l <e) -le 2; } &&
	test_expect_code 64 "$DLPROF" top -a -- true &&
	test_expect_code 64 "$DLPROF" top --sort nope -- true &&
	test_expect_code 64 "$DLPROF" top -d 0 -- true &&
	test_expect_code 64 "$DLPROF" top -w 61 -- true &&
	test_expect_code 64 "$DLPROF" top -p 1 -- true &&
	! "$DLPROF" top -p 2147483000 >o 2>e && cat e && test $(wc -l <e) = 1
'

if ! command -v tmux >/dev/null 2>&1; then
	test_skip 'top in tmux' 'no tmux'
	test_done
	exit
fi

# The terminal tests: a tmux server of our own, a 100x30 window running sh.
export TMUX_TMPDIR="$TRASH"
tm() { tmux -L "dlprof-t9110-$sock" "$@"; }
trap 'for sock in keys log attach; do tm kill-server 2>/dev/null; done; test_cleanup' EXIT
ln -s "$W/dl-gemm" "$TRASH/gemm"
# wait_for PATTERN [SECONDS]: until the pane shows PATTERN (grep -E); the pane in "pane"
wait_for() {
	n=$(( ${2:-10} * 10 ))
	while [ $n -gt 0 ]; do
		tm capture-pane -p -t t >pane 2>/dev/null && grep -Eq -- "$1" pane && return 0
		sleep 0.1
		n=$((n - 1))
	done
	echo "the pane never showed '$1':"; cat pane
	return 1
}
# start_pane NAME: a server of its own per test (each test runs in a subshell)
start_pane() {
	sock=$1
	tm new-session -d -s t -x 100 -y 30 "env PS1='$ ' sh" &&
	tm send-keys -t t "cd $TRASH" Enter
}

test_expect_success 'tmux: the hot function and family within two refreshes; s f o t z; resize; q exits 0, the terminal sane' '
	start_pane keys &&
	tm send-keys -t t "TERM=xterm-256color $DLPROF top -d 0.5 -- ./gemm 120; echo EXIT=\$?" Enter &&
	wait_for "^dlprof top: " &&
	sleep 0.7 && tm capture-pane -p -t t >pane &&
	cat pane && grep -q "gemm  *libopenblas.*sgemm_kernel" pane &&
	grep -q "view: self" pane &&
	tm send-keys -t t f && wait_for "view: family" 2 &&
	grep -Eq "^ *[0-9.]+ +[0-9.]+ +[0-9]+  gemm" pane &&
	tm send-keys -t t o && wait_for "view: op" 2 && grep -q "Operator" pane &&
	grep -q "(no op)" pane &&
	tm send-keys -t t t && wait_for "view: thread" 2 && grep -q " gemm\$" pane &&
	tm send-keys -t t s && wait_for "view: self" 2 &&
	before=$(sed -n "s/.* | \([0-9,]*\) samples,.*/\1/p" pane | tr -d ,) &&
	tm send-keys -t t z && sleep 0.3 && tm capture-pane -p -t t >pane &&
	after=$(sed -n "s/.* | \([0-9,]*\) samples,.*/\1/p" pane | tr -d ,) &&
	echo "samples before z $before, after $after" && test "$after" -lt "$before" &&
	tm resize-window -t t -x 60 -y 12 && sleep 0.4 && tm capture-pane -p -t t >pane &&
	cat pane && test "$(awk "length > 60" pane | wc -l)" = 0 &&
	grep -q "^dlprof top: " pane && test "$(grep -c "^ *[0-9.]* *[0-9.]* *[0-9]*  " pane)" -le 9 &&
	tm capture-pane -e -p -t t >colour && grep -q "$(printf "\033\\[")" colour &&
	tm send-keys -t t q && wait_for "EXIT=[0-9]" 5 && grep -q "EXIT=0" pane &&
	! grep -q "^dlprof top: " pane &&
	tm send-keys -t t "stty -a | tr \" \" \"\\n\" | grep -xE -- \"-?(icanon|echo|isig)\" | sort | tr \"\\n\" \" \"; echo" Enter &&
	wait_for "^echo icanon isig" 3
'

test_expect_success 'tmux: NO_COLOR, no colour; the command'"'"'s output in a log named at the end' '
	start_pane log &&
	tm send-keys -t t "NO_COLOR=1 $DLPROF top -d 0.3 -n 3 -- sh -c \"echo hello-from-the-workload; exec $W/rec-hot 30\" 2>err; echo EXIT=\$?" Enter &&
	wait_for "^dlprof top: " &&
	tm capture-pane -e -p -t t >colour && ! grep -q "$(printf "\033\\[3[0-9]m")" colour &&
	wait_for "EXIT=0" 10 && cat err &&
	log=$(sed -n "s/.*the command.s output is in \([^ ]*\) .*/\1/p" err) &&
	test -n "$log" && grep -q hello-from-the-workload "$log" &&
	! grep -q "^hello-from-the-workload" pane
'

test_expect_success 'tmux: attached (-p) to a process that ends under it; q exits 0' '
	start_pane attach &&
	tm send-keys -t t "$W/rec-hot 3 & $DLPROF top -d 0.5 -p \$!; echo EXIT=\$?" Enter &&
	wait_for "rec_hot_loop" 5 &&
	wait_for "the process ended" 10 && cat pane &&
	tm send-keys -t t q && wait_for "EXIT=0" 5
'

test_done
