#!/bin/sh
# t7002: make install puts binary, man pages, completions, rules and the ITT collector in
# place, and the installed dlprof finds its own files relative to itself, whatever PREFIX
# it was built with.  It installs under DESTDIR: a PREFIX of its own would rebuild the
# tree's objects with that PREFIX compiled in.
. "$(dirname "$0")/lib.sh"

test_expect_success 'make install PREFIX=... installs every part' '
	make -s -C "$TOP" install DESTDIR="$TRASH/dest" >install.log 2>&1 || { cat install.log; false; } &&
	prefix=$(sed -n "s/^PREFIX *?= *//p" "$TOP/Makefile") &&
	mv "$TRASH/dest$prefix" inst &&
	for f in bin/dlprof share/dlprof/families.rules lib/dlprof/libdlprof-itt.so \
		 share/man/man1/dlprof.1 share/man/man1/dlprof-record.1 share/man/man1/dlprof-report.1 \
		 share/bash-completion/completions/dlprof share/zsh/vendor-completions/_dlprof; do
		[ -s "inst/$f" ] || { echo "missing $f"; false; }
	done
'

test_expect_success 'the installed binary finds its rules and collector (moved tree, no env)' '
	mv inst moved &&
	env -u DLPROF_DATADIR -u DLPROF_LIBDIR moved/bin/dlprof families >rules.txt &&
	test_grep -q "^.*moved/bin/../share/dlprof/families.rules:[0-9]*: omp-spin" rules.txt &&
	env -u DLPROF_DATADIR -u DLPROF_LIBDIR moved/bin/dlprof families --explain GOMP_parallel --dso libgomp.so.1 >explain.txt &&
	test_grep -q "omp-runtime" explain.txt &&
	env -u DLPROF_DATADIR -u DLPROF_LIBDIR -u INTEL_LIBITTNOTIFY64 \
		moved/bin/dlprof record -o itt.data -- sh -c "echo \$INTEL_LIBITTNOTIFY64" >itt.txt 2>/dev/null &&
	test_grep -q "moved/bin/../lib/dlprof/libdlprof-itt.so$" itt.txt
'
test_done
