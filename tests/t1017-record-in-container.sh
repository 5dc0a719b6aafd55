#!/bin/sh
# t1017: dlprof run inside a container, as on a host, or one line on what it lacks.  The
# Debian 13 container (tests/lib.sh container_setup) gets dlprof's binary and the
# libraries it links (copied from the host: the container has none of them).  Under the
# runtime's default seccomp profile perf_event_open is refused even to root: record says
# so in one line, with the flags that allow it, and exits 2.  With seccomp unconfined and
# CAP_PERFMON and CAP_BPF it records a Python loop whose hot line is known, its Python
# frames read in the kernel: the BPF program numbers threads as record's own PID
# namespace does (the container's), not as the host does.  Reported in the container,
# as a host's recording is reported on that host.
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS
container_setup || test_skip_all "$CT_WHY"
[ "$CT_KIND" = podman ] || test_skip_all "no Podman here (the chroot fallback has no seccomp profile to test)"

mkdir -p "$TRASH/dl" &&
ldd "$TOP/dlprof" | awk '$3 ~ /^\// { print $3 }' |
	grep -Ev '/(libc|libm|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
	while read -r l; do cp -L "$l" "$TRASH/dl/"; done
cat >"$TRASH/spin.py" <<-\EOF
	import time
	def spin(seconds):
	    end = time.process_time() + seconds
	    while time.process_time() < end:
	        pass
	spin(1.0)
EOF
IN="$CT_PODMAN run --rm -v $TOP:$TOP:ro -v $TRASH:$TRASH -w $TRASH -e LD_LIBRARY_PATH=$TRASH/dl"

test_expect_success 'the default profile: one line on the seccomp filter and the flags, exit 2' '
	$IN dlprof-trixie "$TOP/dlprof" record -o in0.data -- true >out 2>err; rc=$?
	cat err && test $rc = 2 && test $(wc -l <err) = 1 &&
	test_grep -q "a seccomp filter refuses perf_event_open" err &&
	test_grep -q -- "--security-opt seccomp=unconfined" err && ! test -e in0.data
'

test_expect_success 'seccomp unconfined, PERFMON and BPF: the hot line, Python read in the kernel' '
	$IN --security-opt seccomp=unconfined --cap-add PERFMON,BPF dlprof-trixie \
		"$TOP/dlprof" record -o in.data -- python3 spin.py >out 2>err &&
	cat err &&
	set -- $(sed -n "s/^dlprof: python: \([0-9]*\) samples read.*; \([0-9]*\) read in the kernel at the sample.*/\1 \2/p" err) &&
	echo "python samples $1, read in the kernel $2" &&
	test "$1" -ge 500 && test $(($2 * 100)) -ge $(($1 * 95)) &&
	$IN dlprof-trixie "$TOP/dlprof" report -i in.data --sort line >line 2>/dev/null &&
	sed -n "/Python line/,+3p" line &&
	test_grep -E "^ +9[0-9]\.[0-9]%.*  spin \(spin\.py:[45]\)" line
'

test_done
