#!/bin/sh
# t1015: a training job in a container on today's PyTorch, recorded from the host as
# "perf top" users do: examples/cnn_train.py in a Debian 13 container (torch 2.6, oneDNN
# 3.7, Python 3.13; tests/lib.sh container_setup: Podman, or unshare + chroot where
# Podman cannot start, said in the first test's name).  The container has its own root
# (files record must read there, not the host's same paths), its own PID namespace
# (its perf map is /tmp/perf-1.map inside), and under Podman none of record's
# environment unless record passes it in.  Before, the same run had 19.6% of samples
# named, 23.7% in unnamed JIT code and 3% with Python frames.  Known truths: the CNN's
# JIT convolutions (oneDNN names them in its perf map and jitdump), its Python frames
# (cnn_train.py's lines), its aten operators; and the root's own files, read with
# --symfs, as the reference for the names report finds in the build-id cache.
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS
container_setup || test_skip_all "$CT_WHY"
CNN="$TOP/examples/cnn_train.py"

test_expect_success "record the CNN in a container ($CT_KIND) from the host" '
	"$DLPROF" record -o ct.data -- $CT_RUN python3 "$CNN" --steps 12 >out 2>err;
	cat out err && grep -q "^cnn_train: 12 steps" out &&
	if [ "$CT_KIND" = podman ]; then
		test_grep "^dlprof: passing into the container .* -e ONEDNN_JIT_PROFILE .* -v " err
	fi &&
	grep -E "^dlprof: files of other roots .*: [0-9]+ kept in the build-id cache" err &&
	! grep "JIT code in anonymous memory" err
'

test_expect_success 'names and stacks as on the host: the files read under its root' '
	"$DLPROF" report -i ct.data --comm python3 >rep 2>rerr && sed -n 5,12p rep &&
	! grep "changed since it was recorded" rerr &&
	set -- $(sed -n "s/^# stacks: *\([0-9]*\)\.[0-9]% reach the thread root, \([0-9]*\)\.[0-9]% named.*/\1 \2/p" rep) &&
	echo "root $1%, named $2%" && test "$1" -ge 90 && test "$2" -ge 98
'

test_expect_success 'JIT kernels named: the perf map and jitdump of its own pid namespace' '
	"$DLPROF" report -i ct.data --comm python3 --sort family >fam 2>/dev/null &&
	grep -E "^(jit-conv|jit-other|jit-reorder) " fam &&
	pct=$(awk "/^jit-conv /{ sub(\"%\", \"\", \$2); print int(\$2) }" fam) &&
	test "${pct:-0}" -ge 5 && ! grep -E "^ *[0-9.]+%.*\[anon\]@" rep
'

test_expect_success 'Python 3.13 frames: lines of cnn_train.py, threads not left native' '
	grep -E "^# python: *([4-9][0-9]|100)\.[0-9]% of samples with Python frames" rep &&
	left=$(sed -n "s/.* threads \([0-9]*\)\.[0-9]% left native.*/\1/p;s/^# *threads \([0-9]*\)\.[0-9]% left native.*/\1/p" rep) &&
	echo "left native: $left%" && test "$left" -le 5 &&
	"$DLPROF" fold -i ct.data --comm python3 2>/dev/null | grep -q "main (cnn_train.py:[0-9]*)"
'

test_expect_success 'torch 2.6 operators named: its convolutions forward and backward' '
	"$DLPROF" report -i ct.data --comm python3 --sort op >ops 2>/dev/null &&
	test_grep -E "^aten::(mkldnn_)?convolution " ops &&
	test_grep -E "^aten::convolution_backward " ops
'

# the cache against an independent reference: the root's own files (the python3
# processes map only the container's files, so --symfs names them all right)
test_expect_success 'the names kept by build-id are the root file names, and the only ones' '
	"$DLPROF" fold -i ct.data --comm python3 >cache.folded 2>/dev/null &&
	DLPROF_BUILDID_DIR=$TRASH/none "$DLPROF" fold -i ct.data --comm python3 \
		--symfs "$CT_ROOT" >symfs.folded 2>/dev/null &&
	test_cmp symfs.folded cache.folded &&
	DLPROF_BUILDID_DIR=$TRASH/none "$DLPROF" report -i ct.data --comm python3 >none 2>/dev/null &&
	named=$(sed -n "s/^# stacks: .* reach the thread root, \([0-9]*\)\.[0-9]% named.*/\1/p" none) &&
	echo "without the cache: $named% named" && test "$named" -lt 60
'

test_done
