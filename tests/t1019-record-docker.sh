#!/bin/sh
# make check-e2e: over 20 s here, run apart from make check (tests/README.md)
# t1019: a job in a Docker container, recorded from the host.  docker run asks a daemon
# for the container: its processes descend from the daemon's shim, not from the
# command, so events that follow the command saw only the client (155 samples of the
# docker binary for a 6 s CNN, the container's none, and nothing said).  record now opens
# per-cpu events on a cgroup parent of its own before the command starts and adds
# --cgroup-parent to the run.  Known truths: the container's own CPU time (its cgroup's
# cpu.stat under a parent the test made), the CNN's operators and Python lines, the
# names Docker gives its containers, and the cgroup folders that must not be left.
# The same Debian 13 root as t1015 (torch 2.6, oneDNN 3.7, Python 3.13).
. "$(dirname "$0")/lib.sh"
. "$SRC/record-lib.sh"
test_require PERF_EVENTS
docker_setup || test_skip_all "$DK_WHY"
CNN="$TOP/examples/cnn_train.py"
DRIVER=$(docker info --format '{{.CgroupDriver}}' 2>/dev/null)
# each cgroup hierarchy's mount point and type (mountinfo: the type follows " - ")
cgroup_mounts() {
	awk '{ for (i = 7; i < NF; i++) if ($i == "-") { if ($(i + 1) ~ /^cgroup2?$/) print $5, $(i + 1); break } }' \
		/proc/self/mountinfo
}
# where cgroup v2 is mounted (a hybrid machine: unified/), for the parent's cpu.stat
V2=$(cgroup_mounts | awk '$2 == "cgroup2" { print $1; exit }')

if [ "$DRIVER" = cgroupfs ] && [ -n "$V2" ]; then
	# under a parent the test made (kept by record, read after): its cpu.stat counts
	# the CPU time of every process the container ran, the reference for the samples
	test_expect_success 'record -- docker run: the container recorded from its start, all of its CPU time' '
		parent=/dlprof-t1019-$$ && mkdir "$V2$parent" && rc=0 &&
		"$DLPROF" record -o d.data -- $DK_RUN --cgroup-parent $parent \
			dlprof-trixie python3 "$CNN" --steps 8 >out 2>err || rc=$?;
		cat out err; cp out cnn.out; cpu=$(sed -n "s/^usage_usec //p" "$V2$parent/cpu.stat");
		cgroup_mounts | while read m t; do rmdir "$m$parent" 2>/dev/null || :; done;
		test $rc = 0 && grep -q "^cnn_train: 8 steps" out &&
		test_grep "^dlprof: docker starts its container through a daemon: recording what runs in cgroup $V2$parent " err &&
		test_grep "^dlprof: passing into the container .* -e ONEDNN_JIT_PROFILE " err &&
		"$DLPROF" report -i d.data >all 2>/dev/null &&
		n=$(sed -n "s/^# samples: \([0-9]*\) in .*/\1/p" all) &&
		echo "$n samples for $cpu us of the container'"'"'s CPU" &&
		test $((n * 1001)) -ge $((cpu * 95 / 100)) && test $((n * 1001)) -le $((cpu * 105 / 100 + 20000))
	'

	# as t1015 asks of Podman: the container's files read under its own root; and the
	# timed loop's line (loss = step() in cnn_train.py) holds the CPU time the workload
	# counted in it (time.process_time: all its threads; OpenMP workers count under the
	# line that dispatched their work)
	test_expect_success 'its stacks, JIT kernels, operators and Python lines named' '
		"$DLPROF" report -i d.data --comm python3 >rep 2>/dev/null && sed -n 2,12p rep &&
		set -- $(sed -n "s/^# stacks: *\([0-9]*\)\.[0-9]% reach the thread root, \([0-9]*\)\.[0-9]% named.*/\1 \2/p" rep) &&
		echo "root $1%, named $2%" && test "$1" -ge 97 && test "$2" -ge 98 &&
		"$DLPROF" report -i d.data --comm python3 --sort family >fam 2>/dev/null &&
		test_grep -E "^jit-conv " fam &&
		"$DLPROF" report -i d.data --sort op >op 2>/dev/null &&
		test_grep -E "^aten::(mkldnn_)?convolution " op &&
		"$DLPROF" report -i d.data --sort prim >prim 2>/dev/null &&
		test_grep -E "^convolution jit:[a-z0-9_]+ f32 " prim &&
		"$DLPROF" report -i d.data --sort line --limit 0 --format json >line.json 2>/dev/null &&
		cpu=$(sed -n "s/^cnn_train: \([0-9.]*\) s of CPU in the steps/\1/p" cnn.out) &&
		at=$(grep -n "^ *loss = step()" "$CNN" | cut -d: -f1) &&
		/usr/bin/python3 - line.json "$cpu" "$at" <<-\EOF
		import json, sys
		rows = json.load(open(sys.argv[1]))["rows"]
		ns = sum(r["total_ns"] for r in rows
		         if r["file"].endswith("/cnn_train.py") and r["line"] == int(sys.argv[3]))
		cpu = float(sys.argv[2])
		print("cnn_train.py:%s %.3f s, the workload counted %.3f s" % (sys.argv[3], ns / 1e9, cpu))
		sys.exit(not abs(ns / 1e9 - cpu) <= 0.05 * cpu + 0.03)
		EOF
	'

	# the default parent, made by record (/dlprof-PID), gone after; the rows name the
	# container as docker ps does
	test_expect_success 'record -- docker run --name: its parent made and removed, the container named' '
		name=dlprof-t1019-$$ &&
		rc=0 && "$DLPROF" record -o s.data -- $DK_RUN --name $name dlprof-trixie python3 -c "$LATER_SPIN" >out 2>err || rc=$?;
		cat err; test $rc = 0 &&
		dir=$(sed -n "s/^dlprof: docker starts its container .* in cgroup \([^ ]*\) (--cgroup-parent \(.*\))\$/\1/p" err) &&
		echo "followed in $dir" && test -n "$dir" && ! test -e "$dir" &&
		! ls -d /sys/fs/cgroup/*/"${dir##*/}" 2>/dev/null &&
		"$DLPROF" report -i s.data --sort pid >pid 2>/dev/null && sed -n "/Share/,\$p" pid &&
		grep -E " $name +python3 -c " pid &&
		"$DLPROF" fold -i s.data --comm python3 >s.folded 2>/dev/null &&
		n=$(awk "/later_spin \(<string>:[45]\)/ { n += \$NF } END { print n + 0 }" s.folded) &&
		echo "$n samples in later_spin (1.2 s of CPU)" && test "$n" -ge 1100
	'

	# top follows it as record does: the container's thread, by its Docker name, where
	# the docker client alone was watched before
	test_expect_success 'top -- docker run: the container watched, its thread named' '
		name=dlprof-t1019t-$$ &&
		"$DLPROF" top --sort thread --rows 6 -d 1 -- $DK_RUN --name $name dlprof-trixie \
			python3 -c "$LATER_SPIN" >top.out 2>top.err && cat top.out &&
		grep -E "^ *[0-9.]+ +[0-9.]+ +[0-9]+ +[0-9]+ +[0-9]+ +${name%${name#????????????????}}.* python3\$" top.out &&
		n=$(awk -v n="${name%${name#????????????????}}" "/^ *Win%/ { s = 0 }
			\$6 == n && \$7 == \"python3\" { s += \$3 } END { print s + 0 }" top.out) &&
		echo "$n samples of its python3 in the last thread table" && test "$n" -ge 1100
	'

	# late, as under the systemd driver (which makes the container's cgroup as it
	# starts; forced here): the id from the run's cidfile, the cgroup found as runc
	# makes it, its events opened while runc's init waits for the start
	test_expect_success 'record -- docker run, followed late: from runc'"'"'s init on, all its CPU time' '
		parent=/dlprof-t1019l-$$ && mkdir "$V2$parent" && rc=0 &&
		DLPROF_FOLLOW=late "$DLPROF" record -o l.data -- $DK_RUN --cgroup-parent $parent \
			dlprof-trixie python3 "$CNN" --steps 4 >out 2>err || rc=$?;
		cat err; cpu=$(sed -n "s/^usage_usec //p" "$V2$parent/cpu.stat");
		cgroup_mounts | while read m t; do rmdir "$m$parent" 2>/dev/null || :; done;
		test $rc = 0 && grep -q "^cnn_train: 4 steps" out &&
		test_grep "^dlprof: docker starts its container through a daemon, which makes its cgroup as it starts" err &&
		! ls -d /tmp/dlprof-cid.* 2>/dev/null &&
		"$DLPROF" report -i l.data --sort comm >lcomm 2>/dev/null && sed -n "/Comm/,\$p" lcomm &&
		if grep "warning" err; then
			# found after the start (docker'"'"'s create-to-start gap was short): how
			# much was missed is said, and is small
			test $(grep -c warning err) = 1 &&
			ms=$(sed -n "s/^dlprof: warning: the container.s program had started before its cgroup was found .*: \(less than \)\{0,1\}\([0-9]*\) ms of its CPU time then are not recorded\$/\2/p" err) &&
			echo "missed: $ms ms" && test -n "$ms" && test "$ms" -lt 500
		else
			# found before: runc'"'"'s init, waiting for the start, was sampled
			test_grep "^ *[0-9.]*% .* runc:\[2:INIT\]" lcomm
		fi &&
		n=$(sed -n "s/^# samples: \([0-9]*\) in .*/\1/p" lcomm) &&
		echo "$n samples for $cpu us of the container'"'"'s CPU" &&
		test $((n * 1001)) -ge $((cpu * 95 / 100)) && test $((n * 1001)) -le $((cpu * 105 / 100 + 20000))
	'

	# a run whose container never starts: said, not an empty table alone
	test_expect_success 'record -- docker run of an image it does not have: nothing ran, said' '
		rc=0 && "$DLPROF" record -o x.data -- $DK_RUN --pull never dlprof-no-such-image:0 \
			>out 2>err || rc=$?; cat err && test $rc = 125 &&
		test_grep "^dlprof: warning: nothing ran in cgroup .*, where docker was to start its container" err &&
		"$DLPROF" report -i x.data >rep 2>/dev/null && test_grep "^# warning: nothing ran in cgroup" rep &&
		rc=0 && DLPROF_FOLLOW=late "$DLPROF" record -o y.data -- $DK_RUN --pull never \
			dlprof-no-such-image:0 >out 2>err || rc=$?; cat err && test $rc = 125 &&
		test_grep "^dlprof: warning: docker.s container did not come: no cgroup of the id in its cidfile" err
	'
else
	test_expect_success "record -- docker run under the $DRIVER driver: not followed, said" '
		"$DLPROF" record -o d.data -- $DK_RUN dlprof-trixie true >out 2>err; cat err &&
		test_grep "^dlprof: warning: docker starts its container through a daemon, and it cannot be followed" err &&
		"$DLPROF" report -i d.data >rep 2>/dev/null && test_grep "^# warning: docker starts its container" rep
	'
fi

# what cannot follow it says so, in the recording too, and records the command
test_expect_success 'record --memory -- docker run: not followed, said in one line and kept' '
	"$DLPROF" record --memory -o m.data -- $DK_RUN dlprof-trixie true >out 2>err; cat err &&
	test_grep "^dlprof: warning: docker starts its container through a daemon, and it cannot be followed (--memory probes each process)" err &&
	"$DLPROF" report -i m.data >rep 2>/dev/null &&
	test_grep "^# warning: docker starts its container through a daemon" rep
'

# Docker users come with a container its daemon started: --container NAME (docker
# inspect), -p with its host pid
test_expect_success 'record --container NAME and -p PID of a container the daemon started' '
	name=dlprof-t1019p-$$ &&
	docker run -d --rm --network none --name $name dlprof-trixie python3 -c "while True: pass" >id &&
	pid=$(docker inspect --format "{{.State.Pid}}" $name) && echo "pid $pid" &&
	rc=0 && "$DLPROF" record -q -o c.data --container $name --duration 1.5 2>cerr &&
	"$DLPROF" record -q -o p.data -p $pid --duration 1.5 2>perr || rc=$?;
	docker rm -f $name >/dev/null 2>&1; cat cerr perr; test $rc = 0 &&
	for f in c p; do
		"$DLPROF" report -i $f.data --sort pid >$f.pid 2>/dev/null && sed -n "/Share/,\$p" $f.pid &&
		grep -E " $pid .* $name +python3 -c " $f.pid &&
		n=$("$RECDUMP" $f.data | grep -c "^PERF SAMPLE pid=$pid ") && echo "$f: $n samples" &&
		test "$n" -ge 1300 || exit 1
	done
'

test_done
