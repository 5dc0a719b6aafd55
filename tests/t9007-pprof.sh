#!/bin/sh
# t9007-pprof.sh - dlprof pprof: the recording as a gzipped profile.proto.  protoc decodes
# it against tests/pprof/profile.proto (a field of the wrong wire type fails there),
# tests/tools/pprof-summary.py checks every reference and sums it; the sums must be the
# report's: samples, CPU time, the hot function, threads and operator families.
. "$(dirname "$0")/lib.sh"
. "$SRC/record-lib.sh"
test_require PERF_EVENTS PROTOC

# summarize PROFILE.pb.gz > summary
summarize() {
	zcat "$1" >raw.pb &&
	protoc --proto_path="$SRC/pprof" --decode=dlprof_check.Profile "$SRC/pprof/profile.proto" \
		<raw.pb >decoded.txt &&
	/usr/bin/python3 "$SRC/tools/pprof-summary.py" <decoded.txt
}

cat >"$TRASH/fam.rules" <<'RULES'
busy-loop   sym=rec_thread_work
RULES

test_expect_success 'record two threads (-g), write the profile' '
	"$DLPROF" record -q -g -o t.data -- "$WL/rec-threads" 2 0.5 &&
	"$DLPROF" pprof -i t.data -o t.pb.gz 2>err && cat err &&
	test_grep -q "^dlprof: wrote t.pb.gz: [0-9]* samples, [0-9]* functions, [0-9]* stacks" err &&
	summarize t.pb.gz >sum && cat sum
'

test_expect_success 'samples and CPU time are the recording'"'"'s; the hot leaf is rec_thread_work' '
	n=$("$RECDUMP" t.data | grep "^PERF SAMPLE" | grep -vc " ev=context-switches") &&
	test_grep -qx "samples $n" sum &&
	test_grep -qx "sample_type samples/count cpu/nanoseconds" sum &&
	test_grep -qx "default_sample_type cpu" sum &&
	ns=$(sed -n "s/^value1 //p" sum) &&
	echo "$n samples, $ns ns" &&
	test $((ns / n)) -gt 800000 && test $((ns / n)) -lt 1250000 &&
	sed -n "s/^leaf //p" sum | head -1 | test_grep -q "^rec_thread_work [0-9]" &&
	hot=$(sed -n "s/^leaf rec_thread_work //p" sum) && test $((hot * 100)) -ge $((n * 90))
'

test_expect_success 'labels: two tids of about half each, the thread name' '
	grep "^label tid=" sum >tids && cat tids &&
	test "$(awk "\$3 * 100 >= $(sed -n "s/^samples //p" sum) * 30" tids | wc -l)" -ge 2 &&
	test_grep -q "^label thread=rec-threads " sum
'

test_expect_success '--families: the family label follows the rules; stacks start at the root' '
	"$DLPROF" pprof -i t.data -o f.pb.gz --families "$TRASH/fam.rules" 2>/dev/null &&
	summarize f.pb.gz >fsum &&
	hot=$(sed -n "s/^leaf rec_thread_work //p" fsum) &&
	test_grep -qx "label family=busy-loop $hot" fsum &&
	sed -n "s/^root //p" fsum | head -1 | test_grep -q "^start_thread [0-9]"
'

test_expect_success '--no-kernel leaves no kernel function; -o - writes to a pipe' '
	"$DLPROF" pprof -i t.data -o - --no-kernel >k.pb.gz &&
	summarize k.pb.gz >ksum &&
	test_grep -qx "samples $(sed -n "s/^samples //p" sum)" ksum &&
	! grep -q "kallsyms" decoded.txt
'

test_expect_success 'a missing or corrupt recording: one line, exit 2, no profile' '
	{ "$DLPROF" pprof -i nosuch.data -o x.pb.gz 2>err; test $? = 2; } &&
	test "$(wc -l <err)" = 1 && test ! -e x.pb.gz &&
	cp t.data bad.data &&
	printf "\377\377\377\377" | dd of=bad.data bs=1 seek=60 conv=notrunc 2>/dev/null &&
	{ "$DLPROF" pprof -i bad.data -o x.pb.gz 2>err; test $? = 2; } && cat err &&
	test "$(wc -l <err)" = 1 && test_grep -q "corrupt recording" err && test ! -e x.pb.gz
'

test_expect_success 'a truncated recording: a warning, exit 1, the profile of what it holds' '
	size=$(wc -c <t.data) &&
	head -c $((size / 2)) t.data >cut.data &&
	{ "$DLPROF" pprof -i cut.data -o cut.pb.gz 2>err; test $? = 1; } && cat err &&
	test_grep -q "truncated" err &&
	summarize cut.pb.gz >csum && sed -n 3p csum &&
	test "$(sed -n "s/^samples //p" csum)" -le "$(sed -n "s/^samples //p" sum)"
'

test_done
