#!/bin/sh
# t0003-layers.sh - the arrows between the stages of lib/ only run down
# (scripts/check-layers.py, the order in the Makefile's STAGES): the tree passes, its
# includes and its objects' calls; the check fails on a copy with an upward #include,
# another stage's private header, two files that include each other's header, a file in
# a subfolder that includes upward, a call to a later stage, two files that call each
# other, an extern name without its module's prefix; and says so where the objects are
# not built.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null 2>&1 || test_skip_all "no python3"
CHECK="python3 $TOP/scripts/check-layers.py"

# copy: the parts of the tree the check reads
copy() {
	mkdir -p t && cp -r "$TOP/Makefile" "$TOP/lib" "$TOP/include" "$TOP/cmd" t/
}

test_expect_success 'the tree: every include and call runs down the stages, no circle' '
	$CHECK "$TOP" "$BUILD" >out && cat out &&
	test_grep -q "^0 problems" out &&
	test_grep -q "^calls:  [0-9]* references between [0-9]* objects; names checked" out &&
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

test_expect_success 'a file in a subfolder is a file of its stage' '
	rm -rf t && copy && mkdir t/lib/util/sub &&
	printf "#include \"dlview.h\"\n" >t/lib/util/sub/deep.c &&
	! $CHECK t >out && cat out &&
	test_grep -q "lib/util/sub/deep.c (util): includes dlview.h of the later stage views" out
'

# objects: the build's, linked, and those of the files a test adds, compiled
objects() {
	mkdir -p t/build && cp -rs "$BUILD/lib" "$BUILD/cmd" t/build/ &&
	for f in "$@"; do
		cc -c -o "t/build/${f%.c}.o" "t/$f" || return 1
	done
}

test_expect_success 'a call to a later stage fails, naming the symbol' '
	rm -rf t && copy &&
	printf "const char *output_duration_ns(char *, unsigned long, double);\nconst char *up(void) { static char b[32]; return output_duration_ns(b, 32, 1.0); }\n" >t/lib/util/zz-up.c &&
	objects lib/util/zz-up.c &&
	! $CHECK t t/build >out && cat out &&
	test_grep -q "lib/util/zz-up.c (util): calls output_duration_ns of the later stage views (lib/views/output-table.c)" out
'

test_expect_success 'two files that call each other fail, with no include between them' '
	rm -rf t && copy &&
	printf "int zz_b(int);\nint zz_a(int x) { return x ? zz_b(x - 1) : 0; }\n" >t/lib/views/zz-a.c &&
	printf "int zz_a(int);\nint zz_b(int x) { return x ? zz_a(x - 1) : 1; }\n" >t/lib/views/zz-b.c &&
	objects lib/views/zz-a.c lib/views/zz-b.c &&
	! $CHECK t t/build >out && cat out &&
	test_grep -q "call each other: lib/views/zz-a.c, lib/views/zz-b.c" out
'

test_expect_success 'an extern name without its module'"'"'s prefix fails; a static one, a folder'"'"'s prefix pass' '
	rm -rf t && copy &&
	printf "int helper(int x) { return x + 1; }\nstatic int own(int x) { return x; }\nint zz_name_ok(int x) { return own(x); }\n" >t/lib/views/zz-name.c &&
	printf "int isa_zz(int x) { return x; }\nint zz_isa(int x) { return x; }\nint other(int x) { return x; }\n" >t/lib/isa/zz-isa.c &&
	objects lib/views/zz-name.c lib/isa/zz-isa.c &&
	! $CHECK t t/build >out && cat out &&
	test_grep -q "lib/views/zz-name.c: extern helper does not start with zz$" out &&
	test_grep -q "lib/isa/zz-isa.c: extern other does not start with zz or isa_ or libisa_$" out &&
	test $(grep -c "does not start" out) = 2
'

test_expect_success 'without the objects the calls are not checked, and it says so' '
	rm -rf t && copy &&
	$CHECK t t/none >out && cat out &&
	test_grep -q "^calls:  not checked: no t/none/lib/" out
'

test_done
