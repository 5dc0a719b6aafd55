#!/bin/sh
# t1014: a workload under another root (a container's first step: unshare --mount and
# chroot into a tree of its own), recorded from outside.  Its program and its library
# live at /opt/ct/ in that tree, a path the host does not have: record reads them under
# the process's own root (/proc/PID/root, held open) to unwind its stacks while
# recording, and the stacks go from the leaf in the stripped library through main to
# the thread's root, as the same program's do on the host (t3002); before, record looked
# for /opt/ct on the host, and none of 1,000 samples had that stack.  record keeps the
# tree's files its samples hit in the build-id cache, so report names them with the tree
# gone (and names none with another, empty, cache).  A Python interpreter there, at a path the host lacks, has
# its frames read (its symbols through /proc/PID/map_files: its maps, as record reads
# them, name it by record's root or the container's, not always a path record can open),
# and in a PID namespace of its own as well (its states hold that namespace's thread ids).
. "$(dirname "$0")/lib.sh"
test_require PERF_EVENTS
WL="$BUILD/tests/unw-libmain"
LIB="$BUILD/tests/libunw-lib.so"
[ -x "$WL" ] && [ -e "$LIB" ] || test_skip_all "unw-libmain not built"
[ "$(id -u)" = 0 ] || test_skip_all "chroot needs root"
unshare --mount --fork true 2>/dev/null || test_skip_all "unshare --mount is refused here"
[ ! -e /opt/ct ] || test_skip_all "/opt/ct exists on this machine"

# the tree: the program and its library at /opt/ct (found through LD_LIBRARY_PATH: the
# tree has no /proc for its $ORIGIN), the loader and the C library where the program
# looks for them (copies: the same files as the host's)
make_root() {
	mkdir -p root/opt/ct root/lib64 root/lib/x86_64-linux-gnu &&
	cp "$WL" "$LIB" root/opt/ct/ &&
	cp -L /lib64/ld-linux-x86-64.so.2 root/lib64/ &&
	cp -L /lib/x86_64-linux-gnu/libc.so.6 root/lib/x86_64-linux-gnu/
}

test_expect_success 'record unw-libmain under unshare --mount + chroot' '
	make_root && LD_LIBRARY_PATH=/opt/ct chroot root /opt/ct/unw-libmain >/dev/null &&
	LD_LIBRARY_PATH=/opt/ct "$DLPROF" record -o ct.data -- \
		unshare --mount --fork chroot root /opt/ct/unw-libmain >/dev/null 2>err && cat err &&
	grep -E "^dlprof: files of other roots .*: [1-9][0-9]* kept in the build-id cache" err &&
	ls -R "$DLPROF_BUILDID_DIR" | grep -c . && rm -rf root
'

test_expect_success 'unwound through the tree files: main -> unw_libmain_loop -> unw_lib_spin' '
	"$DLPROF" report -i ct.data --comm unw-libmain | sed -n 5,8p &&
	"$DLPROF" fold -i ct.data --comm unw-libmain >ct.folded &&
	total=$(awk "{ s += \$NF } END { print s }" ct.folded) &&
	good=$(grep -E "^unw-libmain;_start;.*;main;unw_libmain_loop[^;]*;unw_lib_spin;[^;]+ [0-9]+\$" ct.folded |
		awk "{ s += \$NF } END { print s + 0 }") &&
	echo "$good of $total samples complete through the library" &&
	test "$total" -gt 100 && test $((good * 100 / total)) -ge 90
'

test_expect_success 'the tree gone, another (empty) cache: its functions unnamed' '
	DLPROF_BUILDID_DIR=$TRASH/none "$DLPROF" fold -i ct.data --comm unw-libmain >none.folded &&
	! grep -q "unw_lib_spin" none.folded && grep -q "unw_lib_spin" ct.folded
'

# Python under the tree's root, as in a container: its interpreter and script on a tmpfs
# mounted in the new mount namespace only (no path of record's reaches them), the
# host's /usr bound in for its libraries and standard library
test_expect_success 'a Python interpreter under the tree root: its frames read' '
	mkdir -p py/usr py/opt && ln -s usr/lib py/lib && ln -s usr/lib64 py/lib64 &&
	PYTHONHOME=/usr "$DLPROF" record -o py.data -- unshare --mount --fork sh -c \
		"mount --bind /usr py/usr && mount -t tmpfs none py/opt &&
		 cp -L /usr/bin/python3.11 \"$SRC/workloads/py_loop.py\" py/opt/ &&
		 exec chroot py /opt/python3.11 /opt/py_loop.py 1" >/dev/null 2>err && cat err &&
	grep -E "^dlprof: python: [0-9]+ samples read \((9[0-9]|100)\.[0-9]% checked" err &&
	"$DLPROF" report -i py.data --comm python3.11 >rep && sed -n 5,12p rep &&
	grep -E "^# stacks: +(9[0-9]|100)\.[0-9]% reach the thread root" rep
'

# ... and in a PID namespace of its own too (as Podman runs it): its thread states hold
# that namespace's ids (1, 2, ...), the samples record's; NSpid puts them together
test_expect_success 'the same in a PID namespace of its own: its frames read' '
	PYTHONHOME=/usr "$DLPROF" record -o pid.data -- unshare --mount --pid --fork sh -c \
		"mount --bind /usr py/usr && mount -t tmpfs none py/opt &&
		 cp -L /usr/bin/python3.11 \"$SRC/workloads/py_loop.py\" py/opt/ &&
		 exec chroot py /opt/python3.11 /opt/py_loop.py 1 2" >/dev/null 2>err && cat err &&
	grep -E "^dlprof: python: [0-9]+ samples read \((9[0-9]|100)\.[0-9]% checked" err &&
	set -- $(sed -n "s/^dlprof: python: \([0-9]*\) samples read.*; \([0-9]*\) read in the kernel.*/\2 \1/p" err) &&
	echo "$1 of $2 read in the kernel" && test $(( $1 * 100 / $2 )) -ge 90
'

test_done
