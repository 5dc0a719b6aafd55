#!/bin/sh
# t5001: dlprof families: listing, --explain, --families FILE overrides, line-numbered errors
. "$(dirname "$0")/lib.sh"

export DLPROF_DATADIR="$TOP/share"

test_expect_success 'list shows every rule as file:line: text, in order' '
	"$DLPROF" families >out &&
	n=$(grep -cv "^[[:space:]]*\(#\|$\)" "$TOP/share/families.rules") &&
	test "$(wc -l <out)" = "$n" &&
	head -1 out | grep -q "families.rules:[0-9]*: wait-preempted sample=wait stack=take_gil " &&
	sed -n 2p out | grep -q "families.rules:[0-9]*: wait-gil sample=wait " &&
	grep -v " sample=wait" out | head -1 | grep -q "families.rules:[0-9]*: collective "
'

test_expect_success 'names include the required families' '
	"$DLPROF" families --names >names &&
	for f in omp-spin omp-runtime gemm jit-conv jit-reorder jit-other aten python \
		 kernel-fault kernel-sched kernel-syscall kernel-other libc-mem loader other \
		 wait-gil wait-preempted wait-omp wait-io wait-lock wait-sleep wait-other \
		 collective wait-collective wait-rendezvous; do
		grep -qx "$f" names || { echo "missing $f"; exit 1; }
	done
'

test_expect_success 'explain: libgomp barrier is omp-spin' '
	"$DLPROF" families --explain gomp_team_barrier_wait_end --dso libgomp.so.1 >out &&
	test_grep -q "^family: omp-spin$" out && test_grep -q "^rule: .*families.rules:[0-9]*: omp-spin" out
'

test_expect_success 'explain: stripped libgomp spin loop by trait' '
	"$DLPROF" families --explain "libgomp.so.1!func@0x1d2e0" --dso libgomp.so.1 --pause-loop >out &&
	test_grep -q "^family: omp-spin$" out &&
	"$DLPROF" families --explain "libgomp.so.1!func@0x1d2e0" --dso libgomp.so.1 >out2 &&
	test_grep -q "^family: omp-runtime$" out2
'

test_expect_success 'explain: page fault stack, JIT conv ISA, operator' '
	"$DLPROF" families --explain clear_page_erms --kernel handle_mm_fault asm_exc_page_fault >out &&
	test_grep -q "^family: kernel-fault$" out &&
	"$DLPROF" families --explain _jit_avx512_common_conv_fwd_kernel --jit >out &&
	test_grep -q "^family: jit-conv$" out && test_grep -q "^isa: *avx512_common$" out &&
	"$DLPROF" families --explain "at::native::relu(at::Tensor const&)" --dso libtorch_cpu.so \
		"at::_ops::relu::call(at::Tensor const&)" >out &&
	test_grep -q "^family: aten$" out && test_grep -q "^op: *aten::relu$" out
'

test_expect_success 'explain: a gloo all-reduce on the CPU is collective, in the kernel too' '
	"$DLPROF" families --explain "gloo::allreduce(gloo::AllreduceOptions&)" \
		--dso libgloo.so.0 >out &&
	test_grep -q "^family: collective$" out &&
	"$DLPROF" families --explain tcp_sendmsg --kernel __sys_sendto send \
		"gloo::transport::tcp::Pair::write(gloo::transport::tcp::Op&)" >out &&
	test_grep -q "^family: collective$" out
'

test_expect_success '--families FILE goes in front of the built-in rules' '
	printf "# mine\n\nmy-blas dso=libopenblas*\n" >my.rules &&
	"$DLPROF" families --families my.rules --explain sgemm_kernel --dso libopenblas.so.0 >out &&
	test_grep -q "^family: my-blas$" out && test_grep -q "^rule: *my.rules:3: my-blas" out &&
	"$DLPROF" families --families my.rules | head -1 | grep -q "^my.rules:3:"
'

test_expect_success 'a bad rule gives FILE:LINE and exit 2' '
	printf "ok-fam sym=x\n\nbad-fam colour=red\n" >bad.rules &&
	if "$DLPROF" families --families bad.rules >out 2>err; then rc=0; else rc=$?; fi &&
	test "$rc" = 2 && test_grep -q "bad.rules:3: unknown key .colour." err
'
test_done
