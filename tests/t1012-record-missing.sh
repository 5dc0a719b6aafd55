#!/bin/sh
# t1012: record never records less than asked without saying so: a missing ITT collector
# (with where it looked and how to build it), JIT code no perf map names
# (ONEDNN_JIT_PROFILE=0 in the environment, named), a oneDNN workload that never called
# the collector.  Each warning is one line on stderr, kept with -q, and repeated by
# report's header (and the op table's footnote).
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS DNNL OPENBLAS
DEMO="$BUILD/examples/demo"
[ -x "$DEMO" ] || test_skip_all "build/examples/demo not built"
unset ONEDNN_JIT_PROFILE DNNL_JIT_PROFILE INTEL_LIBITTNOTIFY64 INTEL_ITTNOTIFY_GROUPS \
	DLPROF_LIBDIR ONEDNN_ITT_TASK_LEVEL DNNL_ITT_TASK_LEVEL ONEDNN_MAX_CPU_ISA DNNL_MAX_CPU_ISA
export OMP_NUM_THREADS=2
T="$TRASH/nocollector"

test_expect_success 'collector removed: record warns where it looked and how to build it' '
	# a copy of dlprof whose build/ lacks the collector (it finds its rules in share/)
	mkdir -p "$T/build" && cp "$DLPROF" "$T/dlprof" && ln -s "$TOP/share" "$T/share" &&
	cp "$BUILD/libdlprof-mem.so" "$T/build/" &&
	"$T/dlprof" record -q -o noitt.data -- "$DEMO" -n 20 >/dev/null 2>err &&
	cat err && test "$(wc -l <err)" = 1 &&
	test_grep -q "warning: the ITT collector libdlprof-itt.so is missing (looked in $T/build, " err &&
	test_grep -q "build it with .make." err
'

test_expect_success 'collector removed: report says why the dnnl:* rows are missing' '
	"$T/dlprof" report -i noitt.data --sort op >op2.txt && cat op2.txt &&
	test_grep -q "^# warning: the ITT collector libdlprof-itt.so is missing" op2.txt &&
	! grep -q "^dnnl:" op2.txt &&
	sed -n "/not counted/,/^\$/p" op2.txt | tr -s "\n " "  " >foot.txt &&
	test_grep -q "(no ITT data: the ITT collector libdlprof-itt.so is missing" foot.txt &&
	"$T/dlprof" report -i noitt.data --format json >j.json &&
	json_check j.json "len(j.header.warnings) == 1 and \"libdlprof-itt.so is missing\" in j.header.warnings[0]"
'

test_expect_success 'ONEDNN_JIT_PROFILE=0: the unnamed JIT samples are counted, the variable named' '
	ONEDNN_JIT_PROFILE=0 "$DLPROF" record -q -o nojit.data -- "$DEMO" -n 20 >/dev/null 2>err &&
	cat err &&
	n=$(sed -n "s/.*warning: \([0-9]*\) samples (\([0-9.]*\)%) ran JIT code in anonymous memory that no perf map or jitdump names.*/\1/p" err) &&
	test_grep -q "ONEDNN_JIT_PROFILE=0 in the environment keeps oneDNN from publishing" err &&
	"$DLPROF" report -i nojit.data --format json >nj.json &&
	"$DLPROF" report -i nojit.data >nj.txt && test_grep -q "^# warning: $n samples" nj.txt &&
	# the count is the report'"'"'s: samples in [anon] code
	anon=$(json_get nj.json "sum(r.self for r in j.rows if r.dso.startswith(\"[anon\"))") &&
	echo "record: $n unnamed, report: $anon in [anon]" && test "$n" -gt 0 && test "$n" = "$anon"
'

test_expect_success 'a workload that switches the collector: record says it was never called' '
	"$DLPROF" record -q -o switched.data -- sh -c "INTEL_LIBITTNOTIFY64=/nonexistent/libittnotify.so exec \"$DEMO\" -n 20" \
		>/dev/null 2>err && cat err &&
	test_grep -q "warning: the workload mapped .*libdnnl.so.* but never called dlprof.s ITT collector" err &&
	"$DLPROF" report -i switched.data --sort op | test_grep -q "^# warning: the workload mapped"
'

test_expect_success 'JIT names published (the default): no warning' '
	"$DLPROF" record -q -o jit.data -- "$DEMO" -n 20 >/dev/null 2>err &&
	cat err && ! test -s err
'

# docker run whose container record cannot follow (t1019 follows a real one): the
# daemon's own answer to "info" decides.  A stand-in docker answers it as a daemon on
# another host and runs the workload itself for "run": it alone is recorded, and one
# line says why the container is not.  As a daemon with the systemd driver it is
# followed late, by the cidfile the stand-in never writes: said.
mkdir -p "$TRASH/stand-in"
cat >"$TRASH/stand-in/docker" <<-\EOF
	#!/bin/sh
	case "$1" in
	info) [ -n "$DRIVER_ANSWER" ] || exit 125; echo "$DRIVER_ANSWER" ;;
	--version) echo "podman version 4.3.1" ;;
	run) shift; while [ "$1" != image ]; do shift; done; shift; exec "$@" ;;
	esac
	EOF
chmod +x "$TRASH/stand-in/docker"
for answer in "cgroupfs elsewhere-$$:its daemon runs on another host"; do
	test_expect_success "docker run, its daemon answering '${answer%%:*}': not followed, said" '
		DRIVER_ANSWER="${answer%%:*}" "$DLPROF" record -q -o dk.data -- \
			"$TRASH/stand-in/docker" run image "$DEMO" -n 20 >/dev/null 2>err && cat err &&
		test_grep "^dlprof: warning: docker starts its container through a daemon, and it cannot be followed (${answer#*:}" err &&
		test $(wc -l <err) = 1 &&
		"$DLPROF" report -i dk.data --sort comm >dk 2>/dev/null && test_grep "^# warning: docker starts" dk &&
		test_grep -E "^ *[0-9.]+% +[0-9]+ .* demo\$" dk
	'
done
test_expect_success "docker run, its daemon answering with the systemd driver: followed late, no container came, said" '
	DRIVER_ANSWER="systemd $(uname -n)" "$DLPROF" record -q -o sd.data -- \
		"$TRASH/stand-in/docker" run image "$DEMO" -n 20 >/dev/null 2>err && cat err &&
	test_grep "^dlprof: warning: docker.s container did not come: no cgroup of the id in its cidfile" err &&
	test $(wc -l <err) = 1 && ! ls -d /tmp/dlprof-cid.* 2>/dev/null
'
# a docker run a script runs: its container not recorded, said at the end (a process
# whose argv[0] is docker, given "run": python3 reading its program from stdin)
test_expect_success 'a docker run under the command: said at the end, kept' '
	"$DLPROF" record -q -o ur.data -- bash -c "exec -a docker /usr/bin/python3 - run <<<\"import time; time.sleep(0.3)\"" \
		>/dev/null 2>err && cat err &&
	test_grep "^dlprof: warning: process [0-9]* ran .docker run., whose container its daemon starts: not recorded" err &&
	test $(wc -l <err) = 1 &&
	"$DLPROF" report -i ur.data >ur 2>/dev/null && test_grep "^# warning: process [0-9]* ran .docker run." ur
'
# podman-docker's docker is podman, whose containers descend from the command: no word
test_expect_success 'docker run where docker is podman: the command recorded, nothing said' '
	DRIVER_ANSWER= "$DLPROF" record -q -o pd.data -- "$TRASH/stand-in/docker" run image \
		"$DEMO" -n 20 >/dev/null 2>err && cat err && ! test -s err &&
	"$DLPROF" report -i pd.data --sort comm >pd 2>/dev/null && ! grep "^# warning" pd &&
	test_grep -E "^ *[0-9.]+% +[0-9]+ .* demo\$" pd
'
test_done
