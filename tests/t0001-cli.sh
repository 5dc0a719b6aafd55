#!/bin/bash
# t0001-cli.sh - the command line: help, version, usage errors, man pages, completions.
. "$(dirname "$0")/lib.sh"

cmds=$("$DLPROF" --list-cmds)

test_expect_success 'dlprof --list-cmds names the commands' '
	for c in record report fold check-isa families; do
		echo "$cmds" | grep -qx "$c" || { echo "missing command $c"; exit 1; }
	done
'

test_expect_success '--help goes to stdout with exit 0 and lists every command' '
	"$DLPROF" --help >out 2>err &&
	test ! -s err &&
	test_grep "^usage: dlprof" out &&
	for c in $cmds; do
		grep -q "^ *$c " out || { echo "--help does not list $c"; exit 1; }
	done &&
	test_grep "64" out
'

test_expect_success '-h is --help' '
	"$DLPROF" --help >expect &&
	"$DLPROF" -h >actual &&
	test_cmp expect actual
'

test_expect_success '--version prints one line with a version number' '
	"$DLPROF" --version >out 2>err &&
	test ! -s err &&
	test "$(wc -l <out)" = 1 &&
	test_grep -E "^dlprof [0-9]+\.[0-9]+" out
'

test_expect_success 'no command: usage on stderr, exit 64' '
	rc=0 && "$DLPROF" >out 2>err || rc=$? &&
	test "$rc" = 64 &&
	test ! -s out &&
	test_grep "^usage: dlprof" err
'

for c in $cmds; do
	test_expect_success "dlprof help $c and dlprof $c -h: usage on stdout, exit 0" '
		"$DLPROF" help '"$c"' >help.out 2>help.err &&
		test ! -s help.err &&
		test_grep "^usage: dlprof '"$c"'" help.out &&
		"$DLPROF" '"$c"' -h >h.out 2>h.err &&
		test ! -s h.err &&
		test_cmp help.out h.out &&
		"$DLPROF" '"$c"' --help >help2.out &&
		test_cmp help.out help2.out
	'

	test_expect_success "dlprof $c: unknown options exit 64 with one line on stderr" '
		for o in --no-such-option -Z; do
			rc=0 && "$DLPROF" '"$c"' $o >out 2>err || rc=$? &&
			{ test "$rc" = 64 || { echo "$o: exit $rc"; exit 1; }; } &&
			test ! -s out &&
			test "$(wc -l <err)" = 1 &&
			test_grep -e "$o" err || exit 1
		done
	'

	test_expect_success "dlprof $c --list-opts lists the options of its usage" '
		"$DLPROF" '"$c"' --list-opts >opts &&
		"$DLPROF" '"$c"' -h >usage &&
		while read -r o; do
			grep -q -e "$o\\b" usage || { echo "$o not in usage"; exit 1; }
		done <opts
	'
done

test_expect_success 'unknown command: exit 64, one line on stderr naming it' '
	rc=0 && "$DLPROF" frobnicate >out 2>err || rc=$? &&
	test "$rc" = 64 &&
	test ! -s out &&
	test "$(wc -l <err)" = 1 &&
	test_grep frobnicate err &&
	rc=0 && "$DLPROF" help frobnicate >out 2>err || rc=$? &&
	test "$rc" = 64 &&
	test "$(wc -l <err)" = 1
'

test_expect_success 'unknown top-level option: exit 64, one line on stderr' '
	rc=0 && "$DLPROF" --frobnicate >out 2>err || rc=$? &&
	test "$rc" = 64 &&
	test "$(wc -l <err)" = 1
'

# Man pages: man/dlprof.1 names every command; man/dlprof-CMD.1 exists and documents every
# long option the binary lists (troff source: \- and font escapes removed first).
man_text() {
	sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\f(..//g' -e 's/\\(em/--/g' "$1"
}

test_expect_success 'man/dlprof.1 names every command' '
	test -f "$TOP/man/dlprof.1" &&
	man_text "$TOP/man/dlprof.1" >page &&
	for c in $cmds; do
		grep -q "dlprof-$c" page || { echo "man/dlprof.1 does not mention dlprof-$c"; exit 1; }
	done
'

for c in $cmds; do
	test_expect_success "man/dlprof-$c.1 documents every long option of $c" '
		page="$TOP/man/dlprof-'"$c"'.1" &&
		{ test -f "$page" || { echo "missing $page"; exit 1; }; } &&
		man_text "$page" >page &&
		"$DLPROF" '"$c"' --list-opts >opts &&
		missing= &&
		for o in $(grep "^--" opts); do
			grep -q -e "$o\\b" page || missing="$missing $o"
		done &&
		{ test -z "$missing" || { echo "not in $page:$missing"; exit 1; }; }
	'
done

test_expect_success 'man pages are well-formed troff' '
	command -v groff >/dev/null || command -v nroff >/dev/null || exit 0
	for p in "$TOP"/man/*.1; do
		LC_ALL=C.UTF-8 MANWIDTH=80 nroff -man -ww "$p" >/dev/null 2>err || { cat err; exit 1; }
		test ! -s err || { echo "$p:"; cat err; exit 1; }
	done
'

# Completions are generated from the option tables; the committed ones must be current.
test_expect_success 'committed completions equal freshly generated ones (make completions)' '
	bash "$TOP/scripts/gen-completions.sh" "$DLPROF" fresh 2>/dev/null &&
	test_cmp "$TOP/completions/dlprof.bash" fresh/dlprof.bash &&
	test_cmp "$TOP/completions/_dlprof" fresh/_dlprof
'

test_expect_success 'the drift check notices an option the completions lack' '
	bash "$TOP/scripts/gen-completions.sh" "$DLPROF" fresh 2>/dev/null &&
	mkdir bin &&
	cat >bin/dlprof <<-EOS &&
	#!/bin/bash
	if [ "\$2" = --list-opts ]; then "$DLPROF" "\$@"; echo --brand-new-option; exit; fi
	exec "$DLPROF" "\$@"
	EOS
	chmod +x bin/dlprof &&
	bash "$TOP/scripts/gen-completions.sh" bin/dlprof changed 2>/dev/null &&
	! cmp -s fresh/dlprof.bash changed/dlprof.bash &&
	! cmp -s fresh/_dlprof changed/_dlprof &&
	grep -q -e --brand-new-option changed/dlprof.bash
'

complete_words() {
	bash --norc --noprofile -c '
		. "$1" || exit 1
		shift
		COMP_WORDS=("$@")
		COMP_CWORD=$(( $# - 1 ))
		_dlprof
		[ ${#COMPREPLY[@]} = 0 ] || printf "%s\n" "${COMPREPLY[@]}"
	' sh "$TOP/completions/dlprof.bash" "$@"
}

test_expect_success 'bash completion loads and registers _dlprof' '
	bash --norc --noprofile -c ". \"$TOP/completions/dlprof.bash\" && complete -p dlprof" >out &&
	test_grep -e "-F _dlprof" out
'

test_expect_success 'bash completion: dlprof rep<TAB> -> report' '
	complete_words dlprof rep >out &&
	echo report >expect &&
	test_cmp expect out
'

test_expect_success 'bash completion: commands, help CMD, and every command'"'"'s options' '
	complete_words dlprof "" >out &&
	for c in $cmds help; do test_grep -qx -e "$c" out; done &&
	complete_words dlprof help f >out &&
	test_grep -qx fold out &&
	for c in $cmds; do
		complete_words dlprof "$c" -- >out &&
		"$DLPROF" "$c" --list-opts | grep "^--" | sort >expect &&
		sort out >actual &&
		test_cmp expect actual || exit 1
	done
'

test_expect_success 'bash completion: dlprof record ... COMMAND completes the workload' '
	mkdir -p d && : >d/workload-file &&
	complete_words dlprof record -- ech >out &&
	test_grep -qx echo out &&
	complete_words dlprof record -o x.data echo d/work >out &&
	test_grep -qx d/workload-file out
'

if command -v zsh >/dev/null; then
	test_expect_success 'zsh completion parses' '
		zsh -n "$TOP/completions/_dlprof"
	'
else
	test_skip 'zsh completion parses' 'zsh not installed'
fi

test_done
