#!/bin/bash
# t1005-record-capture.sh - what record captures at the end: perf maps and jitdumps
# (issue 3), ITT task files (issue 4), and that it cleans up after itself.
. "$(dirname "$0")/lib.sh"
. "$SRC/record-lib.sh"
test_require PERF_EVENTS

# a workload that behaves like oneDNN with ONEDNN_JIT_PROFILE=6 and like the ITT collector
cat >"$TRASH/jitwl.sh" <<'WL'
#!/bin/sh
echo "env ONEDNN_JIT_PROFILE=$ONEDNN_JIT_PROFILE DNNL_JIT_PROFILE=$DNNL_JIT_PROFILE" >"$OUT"
echo "env JITDUMPDIR=$JITDUMPDIR DLPROF_ITT_DIR=$DLPROF_ITT_DIR" >>"$OUT"
printf '7f0000001000 100 jit_test_kernel_%s\n' $$ >/tmp/perf-$$.map
if [ -n "$JITDUMPDIR" ]; then
	mkdir -p "$JITDUMPDIR/.debug/jit/dnnl.abc" &&
	printf 'JiTD-fake-dump-%s' $$ >"$JITDUMPDIR/.debug/jit/dnnl.abc/jit-$$.dump"
fi
if [ -n "$DLPROF_ITT_DIR" ]; then
	printf 'itt-1-%s' $$ >"$DLPROF_ITT_DIR/itt-$$.1"
	printf 'itt-2-%s' $$ >"$DLPROF_ITT_DIR/itt-$$.2"
fi
exec "$WL" 0.1
WL
chmod +x "$TRASH/jitwl.sh"
export WL="$WL/rec-hot"

test_expect_success 'perf map and jitdump captured, variables set, files removed' '
	OUT=$TRASH/env1 "$DLPROF" record -q -o jit.data -- ./jitwl.sh &&
	cat env1 &&
	grep -q "ONEDNN_JIT_PROFILE=6 DNNL_JIT_PROFILE=6" env1 &&
	jd=$(sed -n "s/.*JITDUMPDIR=\([^ ]*\) .*/\1/p" env1) && test -n "$jd" &&
	test ! -e "$jd" &&
	"$RECDUMP" jit.data >dump &&
	pid=$(sed -n "s/^PERF COMM pid=\([0-9]*\) .*exec=1 comm=jitwl.sh$/\1/p" dump) &&
	test -n "$pid" &&
	test ! -e /tmp/perf-$pid.map &&
	grep -q "^JITMAP len=$((8 + $(printf "7f0000001000 100 jit_test_kernel_%s\n" $pid | wc -c)))$" dump &&
	grep -q "^JITDUMP len=$((8 + $(printf "JiTD-fake-dump-%s" $pid | wc -c)))$" dump &&
	grep -q "^META jit=on$" dump
'

test_expect_success 'ITT files: one record each with the file bytes, directory removed' '
	if ! grep -q "DLPROF_ITT_DIR=/" env1; then echo "no ITT collector built: skipped"; exit 0; fi &&
	itt=$(sed -n "s/.*DLPROF_ITT_DIR=\([^ ]*\)$/\1/p" env1) &&
	test ! -e "$itt" &&
	test "$(grep -c "^ITT len=" dump)" = 2
'

test_expect_success '--no-jit leaves the variables alone and captures nothing' '
	OUT=$TRASH/env2 "$DLPROF" record -q --no-jit --no-itt -o nojit.data -- ./jitwl.sh &&
	cat env2 &&
	grep -q "ONEDNN_JIT_PROFILE= DNNL_JIT_PROFILE=" env2 &&
	grep -q "DLPROF_ITT_DIR=$" env2 &&
	"$RECDUMP" nojit.data >dump2 &&
	! grep -q "^JITMAP" dump2 && ! grep -q "^ITT" dump2 &&
	grep -q "^META jit=off$" dump2 &&
	pid=$(sed -n "s/^PERF COMM pid=\([0-9]*\) .*exec=1 comm=jitwl.sh$/\1/p" dump2) &&
	rm -f /tmp/perf-$pid.map
'

test_expect_success 'a user-set ONEDNN_JIT_PROFILE is kept; its map is captured, not deleted' '
	ONEDNN_JIT_PROFILE=2 OUT=$TRASH/env3 "$DLPROF" record -q --no-itt -o user.data -- ./jitwl.sh &&
	grep -q "ONEDNN_JIT_PROFILE=2 DNNL_JIT_PROFILE=$" env3 &&
	"$RECDUMP" user.data >dump3 &&
	grep -q "^JITMAP" dump3 && grep -q "^META jit=user$" dump3 &&
	pid=$(sed -n "s/^PERF COMM pid=\([0-9]*\) .*exec=1 comm=jitwl.sh$/\1/p" dump3) &&
	test -e /tmp/perf-$pid.map && rm -f /tmp/perf-$pid.map
'

test_done
