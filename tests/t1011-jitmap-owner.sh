#!/bin/sh
# t1011: a /tmp/perf-PID.map that is not a regular file owned by the recording user (or
# root), or that was last written before the recording started (left by an earlier
# process with the same pid: pids wrap), is ignored with one warning, and nothing of it
# reaches the recording: a planted or stale map would put false names into the report.
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS
[ "$(id -u)" = 0 ] || test_skip_all "needs root to hand a file to another user"

# The workload writes its own perf map, then gives it away (or replaces it by a symlink).
# ONEDNN_JIT_PROFILE set by the user: dlprof captures maps but deletes none of them.
cat >"$TRASH/planted.sh" <<'SH'
#!/bin/sh
map=/tmp/perf-$$.map
printf '%x 100 planted_kernel\n' 4096 >"$map"
case "$1" in
chown) chown 65534:65534 "$map" ;;
symlink) printf '%x 100 planted_kernel\n' 4096 >"$map.target"; rm -f "$map"; ln -s "$map.target" "$map" ;;
stale) touch -d '2 hours ago' "$map" ;;
fifo) rm -f "$map"; mkfifo "$map" ;;
esac
i=0; while [ $i -lt 20000 ]; do i=$((i + 1)); done
echo "pid $$"
SH
chmod +x "$TRASH/planted.sh"

why_chown="not a regular file owned by you or root"
why_symlink=$why_chown
why_fifo=$why_chown
why_stale="last written before this recording started (left by an earlier process with pid"
for how in chown symlink fifo stale; do
	eval "why=\$why_$how"
	test_expect_success "a perf map made by '$how' is ignored with a warning" '
		ONEDNN_JIT_PROFILE=2 "$DLPROF" record -o $how.data -- ./planted.sh '"$how"' >out 2>err &&
		cat err &&
		pid=$(sed -n "s/^pid //p" out) &&
		test_grep -qF "ignoring '"'"'/tmp/perf-$pid.map'"'"': '"$why"'" err &&
		[ "$(grep -c "perf-$pid.map" err)" = 1 ] &&
		"$BUILD/tests/recdump" $how.data >dump.txt &&
		! grep -q "^JITMAP" dump.txt &&
		rm -f /tmp/perf-$pid.map /tmp/perf-$pid.map.target
	'
done

test_expect_success 'the same map owned by the user is captured' '
	cat >mine.sh <<-\SH &&
	#!/bin/sh
	printf "%x 100 my_kernel\n" 4096 >/tmp/perf-$$.map
	i=0; while [ $i -lt 20000 ]; do i=$((i + 1)); done
	echo "pid $$"
	SH
	chmod +x mine.sh &&
	ONEDNN_JIT_PROFILE=2 "$DLPROF" record -o mine.data -- ./mine.sh >out 2>err &&
	pid=$(sed -n "s/^pid //p" out) &&
	! grep -q "ignoring .*perf-$pid.map" err &&
	"$BUILD/tests/recdump" mine.data >dump.txt &&
	test_grep -q "^JITMAP" dump.txt &&
	rm -f /tmp/perf-$pid.map
'
test_done
