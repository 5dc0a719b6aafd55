#!/bin/sh
# t0003-layers.sh - the arrows between the stages of lib/ only run down
# (scripts/check-layers.py, the order in the Makefile's STAGES): the tree passes, and the
# check fails on a copy with an upward #include, another stage's private header, or two
# files that include each other's header.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null 2>&1 || test_skip_all "no python3"
CHECK="python3 $TOP/scripts/check-layers.py"

# copy: the parts of the tree the check reads
copy() {
	mkdir -p t && cp -r "$TOP/Makefile" "$TOP/lib" "$TOP/include" "$TOP/cmd" t/
}

test_expect_success 'the tree: every include runs down the stages, no cycle' '
	$CHECK "$TOP" >out && cat out &&
	test_grep -q "^0 problems" out &&
	test_grep -q "^stages: util < file < isa < resolve < record < attribute < views" out
'

test_expect_success 'an upward include fails, naming the file and the stage' '
	copy &&
	sed -i "s/#include \"util.h\"/#include \"util.h\"\n#include \"dlview.h\"/" t/lib/util/rephash.c &&
	! $CHECK t >out && cat out &&
	test_grep -q "lib/util/rephash.c (util): includes dlview.h of the later stage views" out
'

test_expect_success 'another stage'"'"'s private header fails' '
	rm -rf t && copy &&
	printf "#include \"../file/recfile-priv.h\"\n" >>t/lib/attribute/attr.c &&
	! $CHECK t >out && cat out &&
	test_grep -q "lib/attribute/attr.c: includes recfile-priv.h, private to lib/file/" out
'

test_expect_success 'two files of one stage that include each other'"'"'s header fail' '
	rm -rf t && copy &&
	printf "#include \"diff.h\"\n" >>t/lib/views/calltree.c &&
	printf "#include \"calltree.h\"\n" >>t/lib/views/diff.c &&
	! $CHECK t >out && cat out &&
	test_grep -q "depend on each other: lib/views/calltree.c, lib/views/diff.c" out
'

test_expect_success 'a header of no known stage fails' '
	rm -rf t && copy &&
	printf "struct x;\n" >t/include/orphan.h &&
	printf "#include \"orphan.h\"\n" >>t/lib/views/diff.c &&
	! $CHECK t >out && cat out &&
	test_grep -q "include/orphan.h: no stage" out
'

test_done
