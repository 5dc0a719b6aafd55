#!/bin/sh
# t3001-unwind-jit.sh - dwarf stacks through JIT code: unw-jit runs a vector kernel in
# anonymous memory (no CFI), published by a perf map and a jitdump, from
# main -> jit_driver.  The kernel must be named in [jit] and its stacks reach main.
# The kernel is the widest this CPU runs (AVX-512, AVX2 or SSE: unw-jit says which);
# the SSE one, which every x86-64 runs, is checked as well where it is not the widest.
. "$(dirname "$0")/lib.sh"
. "$SRC/record-lib.sh"
test_require PERF_EVENTS

WL="$BUILD/tests/unw-jit"

trap 'jit_maps_cleanup; test_cleanup' EXIT

# check ISA: record the kernel unw-jit picks for UNW_JIT_ISA=ISA ("" = the widest), and
# check the table, the folded stacks and the scan share
check() {
	isa=$1 tag=${1:-widest}

	test_expect_success "record unw-jit ($tag kernel) with --call-graph dwarf" "
		UNW_JIT_ISA=$isa JITDUMPDIR=\$TRASH \"\$DLPROF\" record --call-graph dwarf \
			-o jit-$tag.data -- \"\$WL\" >wl-$tag.out 2>err &&
		cat err wl-$tag.out && grep '^pid ' wl-$tag.out && grep '^kernel unw_' wl-$tag.out
	"

	test_expect_success "report names the $tag kernel in [jit] as the hottest symbol" "
		k=\$(sed -n 's/^kernel //p' wl-$tag.out) &&
		\"\$DLPROF\" report -i jit-$tag.data >rep-$tag && cat rep-$tag &&
		grep -A1 'Self%' rep-$tag | tail -1 | test_grep -E \"\$k +\\[jit\\]\"
	"

	test_expect_success "fold ($tag): most samples are main;jit_driver;KERNEL under _start" "
		k=\$(sed -n 's/^kernel //p' wl-$tag.out) &&
		\"\$DLPROF\" fold -i jit-$tag.data >folded-$tag &&
		total=\$(awk '{ s += \$NF } END { print s }' folded-$tag) &&
		good=\$(grep -E \"^unw-jit;_start;.*;main;jit_driver;\$k [0-9]+\\\$\" folded-$tag |
			awk '{ s += \$NF } END { print s + 0 }') &&
		echo \"complete through the JIT kernel: \$good of \$total\" &&
		test \"\$total\" -gt 100 && test \$((good * 100)) -ge \$((total * 90))
	"

	test_expect_success "header ($tag): most stacks went through the JIT kernel by a stack scan" "
		sed -n 's/^# stacks: .* \\([0-9]*\\)\\.[0-9]% recovered by scan.*/\\1/p' rep-$tag >rec &&
		echo \"recovered: \$(cat rec)%\" && test \"\$(cat rec)\" -ge 80
	"
}

check ""
if grep -q '^kernel unw_sse_kernel' "$TRASH/wl-widest.out" 2>/dev/null; then
	test_skip 'the SSE kernel as well' 'it is the widest this CPU runs: checked above'
else
	check sse
fi
test_done
