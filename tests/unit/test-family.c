/* test-family.c - rule parser (line-numbered errors), classification of hand-built
 * stacks, operator extraction from realistic demangled stacks.  TAP output. */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "family.h"
#include "family-rules.h"
#include "util.h"

#include "unit/tap.h"

static struct frame F(const char *sym, const char *dso, unsigned flags, unsigned traits)
{
	struct frame f = { 0x1000, 0x1000, sym, dso, NULL, NULL, flags, traits };
	return f;
}

static void expect_family(struct family_rules *r, const char *want, const struct frame *fr,
			  size_t nr)
{
	const char *rule;
	const char *got = family_classify(r, fr, nr, &rule);
	char title[512];

	snprintf(title, sizeof(title), "%s -> %s", fr[0].sym, want);
	ok(!strcmp(got, want), title, got);
}

/* The family of a one-frame stack that ran inside a oneDNN primitive of kind prim */
static void expect_in_prim(struct family_rules *r, const char *want, const struct frame *f,
			   const char *prim, const char *title)
{
	struct family_ctx ctx = { FAMILY_SAMPLE_CPU, prim };
	const char *got = family_classify_ctx(r, f, 1, &ctx, NULL);

	ok(!strcmp(got, want), title, got);
}

static void expect_op(const char *want, const struct frame *fr, size_t nr, const char *title)
{
	const char *got = family_op_from_stack(fr, nr);

	nr_tests++;
	if (want ? (got && !strcmp(got, want)) : !got) {
		printf("ok %d - %s\n", nr_tests, title);
	} else {
		nr_failed++;
		printf("not ok %d - %s (got '%s', want '%s')\n", nr_tests, title,
		       got ? got : "NULL", want ? want : "NULL");
	}
}

static void expect_parse_error(const char *text, const char *needle)
{
	struct family_rules *r = family_rules_new();
	char path[] = "/tmp/test-family-err.XXXXXX";
	int fd, saved, pipefd[2], ret;
	char buf[1024] = "";
	ssize_t n;
	char title[256];

	/* capture stderr */
	fflush(stderr);
	if (pipe(pipefd))
		abort();
	saved = dup(2);
	dup2(pipefd[1], 2);
	ret = family_rules_add_text(r, "bad.rules", text, 0);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(pipefd[1]);
	n = read(pipefd[0], buf, sizeof(buf) - 1);
	close(pipefd[0]);
	if (n > 0)
		buf[n] = '\0';
	snprintf(title, sizeof(title), "parse error '%s'", needle);
	ok(ret == -1 && strstr(buf, needle) && family_rules_count(r) == 0, title, buf);
	family_rules_free(r);
	(void)fd;
	(void)path;
}

int main(void)
{
	struct family_rules *r, *u;
	const char *where;

	if (!getenv("DLPROF_DATADIR"))
		setenv("DLPROF_DATADIR", "share", 1);

	/* parser */
	expect_parse_error("# ok\nomp-spin sym=foo\n\ngemm dso\n", "bad.rules:4: condition 'dso' is not KEY=PATTERN");
	expect_parse_error("gemm colour=red\n", "bad.rules:1: unknown key 'colour'");
	expect_parse_error("\n\nx flag=kernel|sparkly\n", "bad.rules:3: unknown flag 'sparkly'");
	expect_parse_error("Bad!Name sym=x\n", "bad.rules:1: bad family name 'Bad!Name'");
	expect_parse_error("lonely\n", "bad.rules:1: rule for 'lonely' has no condition");
	expect_parse_error("a sym=\n", "bad.rules:1: empty pattern for 'sym'");
	expect_parse_error("a sym=x||y\n", "bad.rules:1: empty alternative");
	expect_parse_error("a trait=fast\n", "bad.rules:1: unknown trait 'fast'");

	r = family_rules_load(NULL);
	ok(r != NULL && family_rules_count(r) > 20, "built-in rules load", NULL);
	if (!r) {
		printf("1..%d\n", nr_tests);
		return 1;
	}

	{
		struct frame f[] = { F("gomp_barrier_wait_end", "libgomp.so.1", 0, 0) };
		expect_family(r, "omp-spin", f, 1);
	}
	{
		struct frame f[] = { F("gomp_team_barrier_wait_end", "libgomp.so.1", 0, 0) };
		expect_family(r, "omp-spin", f, 1);
	}
	{
		struct frame f[] = { F("libgomp.so.1!func@0x1d2e0", "libgomp.so.1", FRAME_FDE, TRAIT_PAUSE_LOOP) };
		expect_family(r, "omp-spin", f, 1);
	}
	{
		struct frame f[] = { F("libgomp.so.1!func@0x19a40", "libgomp.so.1", FRAME_FDE, 0) };
		expect_family(r, "omp-runtime", f, 1);
	}
	{
		struct frame f[] = { F("GOMP_parallel", "libgomp.so.1", 0, 0) };
		expect_family(r, "omp-runtime", f, 1);
	}
	{
		struct frame f[] = { F("__kmp_hyper_barrier_release", "libomp.so.5", 0, 0) };
		expect_family(r, "omp-spin", f, 1);
	}
	{
		struct frame f[] = { F("sgemm_kernel_SKYLAKEX", "libopenblasp-r0.3.21.so", 0, 0) };
		expect_family(r, "gemm", f, 1);
	}
	{
		/* @caller: ld.so's __tls_get_addr is its caller's: a shared libpython's
		 * thread state, libtorch's thread-locals; alone, the loader's */
		struct frame py[] = { F("__tls_get_addr", "ld-linux-x86-64.so.2", 0, 0),
				      F("_PyObject_Malloc", "libpython3.12.so.1.0", 0, 0),
				      F("_PyEval_EvalFrameDefault", "libpython3.12.so.1.0", 0, 0) };
		struct frame at[] = { F("__tls_get_addr", "ld-linux-x86-64.so.2", 0, 0),
				      F("c10::impl::tls_local_dispatch_key_set", "libc10.so", 0, 0),
				      F("_PyEval_EvalFrameDefault", "libpython3.12.so.1.0", 0, 0) };
		struct frame alone[] = { F("__tls_get_addr", "ld-linux-x86-64.so.2", 0, 0) };
		struct frame reloc[] = { F("_dl_relocate_object", "ld-linux-x86-64.so.2", 0, 0),
					 F("_PyEval_EvalFrameDefault", "libpython3.12.so.1.0", 0, 0) };

		expect_family(r, "python", py, 3);
		expect_family(r, "aten", at, 3);
		expect_family(r, "loader", alone, 1);
		expect_family(r, "loader", reloc, 2);
	}
	{
		struct frame f[] = { F("sgemm_kernel", "libopenblas.so.0", 0, 0) };
		expect_family(r, "gemm", f, 1);
	}
	{
		struct frame f[] = { F("_jit_avx512_common_conv_fwd_kernel", "[jit]", FRAME_JIT, 0) };
		expect_family(r, "jit-conv", f, 1);
		ok(!strcmp(family_isa_from_name(f[0].sym), "avx512_common"), "isa of avx512_common conv kernel", family_isa_from_name(f[0].sym));
	}
	{
		struct frame f[] = { F("jit_uni_reorder_kernel_f32", "[jit]", FRAME_JIT, 0) };
		expect_family(r, "jit-reorder", f, 1);
		ok(!strcmp(family_isa_from_name(f[0].sym), "uni"), "isa of jit_uni_reorder kernel", family_isa_from_name(f[0].sym));
	}
	{
		struct frame f[] = { F("jit_single_blk_kernel", "[jit]", FRAME_JIT, 0) };
		expect_family(r, "jit-reorder", f, 1);
	}
	{
		struct frame f[] = { F("jit_avx512_core_gemm_s8u8s32_kern", "[jit]", FRAME_JIT, 0) };
		expect_family(r, "gemm", f, 1);
	}
	{
		struct frame f[] = { F("_jit_uni_pool_kernel", "[jit]", FRAME_JIT, 0) };
		expect_family(r, "jit-other", f, 1);
	}
	{
		struct frame f[] = { F("[unknown]", "[unknown]", FRAME_ANON | FRAME_UNKNOWN, 0) };
		expect_family(r, "jit-other", f, 1);
	}
	{
		struct frame f[] = {
			F("clear_page_erms", "[kernel.kallsyms]", FRAME_KERNEL, 0),
			F("do_anonymous_page", "[kernel.kallsyms]", FRAME_KERNEL, 0),
			F("handle_mm_fault", "[kernel.kallsyms]", FRAME_KERNEL, 0),
			F("exc_page_fault", "[kernel.kallsyms]", FRAME_KERNEL, 0),
			F("asm_exc_page_fault", "[kernel.kallsyms]", FRAME_KERNEL, 0),
			F("at::native::empty_cpu", "libtorch_cpu.so", 0, 0),
		};
		expect_family(r, "kernel-fault", f, ARRAY_SIZE(f));
	}
	{
		struct frame f[] = {
			F("finish_task_switch.isra.0", "[kernel.kallsyms]", FRAME_KERNEL, 0),
			F("__schedule", "[kernel.kallsyms]", FRAME_KERNEL, 0),
			F("schedule", "[kernel.kallsyms]", FRAME_KERNEL, 0),
			F("futex_wait_queue", "[kernel.kallsyms]", FRAME_KERNEL, 0),
			F("do_syscall_64", "[kernel.kallsyms]", FRAME_KERNEL, 0),
			F("entry_SYSCALL_64_after_hwframe", "[kernel.kallsyms]", FRAME_KERNEL, 0),
		};
		expect_family(r, "kernel-sched", f, ARRAY_SIZE(f));
	}
	{
		struct frame f[] = {
			F("copy_user_enhanced_fast_string", "[kernel.kallsyms]", FRAME_KERNEL, 0),
			F("ksys_read", "[kernel.kallsyms]", FRAME_KERNEL, 0),
			F("do_syscall_64", "[kernel.kallsyms]", FRAME_KERNEL, 0),
		};
		expect_family(r, "kernel-syscall", f, ARRAY_SIZE(f));
	}
	{
		struct frame f[] = { F("__sysvec_apic_timer_interrupt", "[kernel.kallsyms]", FRAME_KERNEL, 0) };
		expect_family(r, "kernel-other", f, 1);
	}
	{
		struct frame f[] = { F("__memmove_avx512_unaligned_erms", "libc.so.6", 0, 0) };
		expect_family(r, "libc-mem", f, 1);
	}
	{
		struct frame f[] = { F("memcpy", "libc.so.6", 0, 0) };
		expect_family(r, "libc-mem", f, 1);
	}
	{
		struct frame f[] = { F("_dl_relocate_object", "ld-linux-x86-64.so.2", 0, 0) };
		expect_family(r, "loader", f, 1);
	}
	{
		struct frame f[] = { F("libtorch_cpu.so!func@0x3a1b2c0", "libtorch_cpu.so", FRAME_FDE, 0) };
		expect_family(r, "aten", f, 1);
	}
	{
		struct frame f[] = { F("_PyEval_EvalFrameDefault", "python3.11", 0, 0) };
		expect_family(r, "python", f, 1);
	}
	{
		struct frame f[] = { F("main", "a.out", 0, 0) };
		expect_family(r, "other", f, 1);
	}

	/* --families FILE goes in front */
	u = family_rules_new();
	ok(family_rules_add_text(u, "base", "gemm sym=sgemm*\n", 0) == 0 &&
	   family_rules_add_text(u, "mine.rules", "# mine\nmy-blas  dso=libopenblas*\n", 1) == 0,
	   "override rules parse", NULL);
	{
		struct frame f[] = { F("sgemm_kernel", "libopenblas.so.0", 0, 0) };
		const char *rule, *fam = family_classify(u, f, 1, &rule);

		ok(!strcmp(fam, "my-blas"), "user rule in front wins", fam);
		ok(!strcmp(rule, "mine.rules:2: my-blas dso=libopenblas*"), "rule description is file:line: text", rule);
	}
	family_rule_family(u, 1, &where);
	ok(where && !strncmp(where, "base:1:", 7), "built-in rule keeps its line", where);
	family_rules_free(u);

	/* operators */
	{
		struct frame f[] = {
			F("_jit_avx512_common_conv_bwd_weights_kernel_f32", "[jit]", FRAME_JIT, 0),
			F("dnnl::impl::cpu::x64::jit_avx512_common_convolution_bwd_weights_t::execute_backward_weights(dnnl::impl::exec_ctx_t const&) const", "libdnnl.so.2", 0, 0),
			F("at::native::mkldnn_convolution_backward(at::Tensor const&, at::Tensor const&, at::Tensor const&, c10::ArrayRef<long>, c10::ArrayRef<long>, c10::ArrayRef<long>, long, std::array<bool, 3ul>)", "libtorch_cpu.so", 0, 0),
			F("at::_ops::mkldnn_convolution_backward::call(at::Tensor const&, at::Tensor const&, at::Tensor const&, c10::ArrayRef<long>, c10::ArrayRef<long>, c10::ArrayRef<long>, long, std::array<bool, 3ul>)", "libtorch_cpu.so", 0, 0),
			F("at::native::convolution_backward(at::Tensor const&, at::Tensor const&, at::Tensor const&, c10::OptionalArrayRef<long>, c10::ArrayRef<long>, c10::ArrayRef<long>, c10::ArrayRef<long>, bool, c10::ArrayRef<long>, long, std::array<bool, 3ul>)", "libtorch_cpu.so", 0, 0),
			F("at::_ops::convolution_backward::call(at::Tensor const&, at::Tensor const&, at::Tensor const&, c10::OptionalArrayRef<long>, c10::ArrayRef<long>, c10::ArrayRef<long>, c10::ArrayRef<long>, bool, c10::ArrayRef<long>, long, std::array<bool, 3ul>)", "libtorch_cpu.so", 0, 0),
			F("torch::autograd::generated::ConvolutionBackward0::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)", "libtorch_cpu.so", 0, 0),
		};
		expect_op("aten::mkldnn_convolution_backward", f, ARRAY_SIZE(f), "innermost at::_ops frame names the op");
		expect_op("aten::convolution_backward", f + 4, 3, "at::_ops::convolution_backward::call");
		expect_op("autograd::ConvolutionBackward0", f + 6, 1, "autograd node without an aten op");
	}
	{
		struct frame f[] = {
			F("libtorch_cpu.so!func@0x2b4c1e0", "libtorch_cpu.so", FRAME_FDE, 0),
			F("void at::native::(anonymous namespace)::batch_norm_cpu_collect_stats_channels_last_impl<float>(at::Tensor const&, at::Tensor&, at::Tensor&)", "libtorch_cpu.so", 0, 0),
			F("std::tuple<at::Tensor, at::Tensor, at::Tensor> at::native::batch_norm_cpu<float>(at::Tensor const&)", "libtorch_cpu.so", 0, 0),
		};
		/* return types in front are a risk: expect the last identifier */
		expect_op("aten::batch_norm_cpu_collect_stats_channels_last_impl", f, 2, "at::native with anonymous namespace and template");
	}
	{
		struct frame f[] = {
			F("at::native::AVX2::(anonymous namespace)::add_kernel(at::TensorIteratorBase&, c10::Scalar const&)::{lambda()#1}::operator()() const", "libtorch_cpu.so", 0, 0),
			F("at::_ops::native_batch_norm::redispatch(c10::DispatchKeySet, at::Tensor const&, c10::optional<at::Tensor> const&, bool, double, double)", "libtorch_cpu.so", 0, 0),
		};
		expect_op("aten::native_batch_norm", f, 2, "::redispatch and lambda frames");
		expect_op("aten::add_kernel", f, 1, "native lambda frame gives the enclosing function");
	}
	{
		struct frame f[] = {
			F("_PyEval_EvalFrameDefault", "python3.11", 0, 0),
			F("main", "python3.11", 0, 0),
		};
		expect_op(NULL, f, 2, "no op outside aten");
	}
	{
		/* torch.compile's C++ kernels: the ATen operators their names list */
		static const struct { const char *sym, *path, *want; } k[] = {
			{ "cpp_fused_gelu_native_layer_norm_0", "/tmp/torchinductor_root/xj/c.so",
			  "fused(aten::gelu, aten::native_layer_norm)" },
			{ "cpp_fused__softmax_3", "/tmp/torchinductor_u/ab/c.so", "fused(aten::_softmax)" },
			{ "cpp_fused__log_softmax_add_12", "/c/torchinductor_u/ab/c.so",
			  "fused(aten::_log_softmax, aten::add)" },
			{ "cpp_fused_native_batch_norm_backward_relu_threshold_backward_7",
			  "/tmp/torchinductor_root/q/c.so",
			  "fused(aten::native_batch_norm_backward, aten::relu, aten::threshold_backward)" },
			{ "cpp_fused_relu_0", "/tmp/torchinductor_root/q/c.so", "fused(aten::relu)" },
			{ "cpp_fused_relu", "/tmp/torchinductor_root/q/c.so", NULL },
			{ "cpp_fused_relu_0", "/usr/lib/libmine.so", NULL },
		};

		for (size_t i = 0; i < ARRAY_SIZE(k); i++) {
			struct frame f[] = {
				F("func@0x1f780", "libgomp.so.1.0.0", 0, 0),
				F(k[i].sym, "c.so", 0, 0),
				F("_PyEval_EvalFrameDefault", "python3.13", 0, 0),
			};
			char title[160];

			f[1].dso_path = k[i].path;
			snprintf(title, sizeof(title), "inductor kernel %s in %s", k[i].sym, k[i].path);
			expect_op(k[i].want, f, 3, title);
		}
	}
	{
		struct frame a[] = { F("at::_ops::relu::call(at::Tensor const&)", "libtorch_cpu.so", 0, 0) };
		struct frame b[] = { F("at::_ops::relu::call(at::Tensor const&)", "libtorch_cpu.so", 0, 0) };
		ok(family_op_from_stack(a, 1) == family_op_from_stack(b, 1), "operator names are interned", NULL);
	}
	{
		/* the Python frame that replaced the eval loop as the leaf: the loop decides */
		struct frame f[] = {
			F("heavy_a (known.py:4)", "python3.11", FRAME_PYTHON, 0),
			F("main (known.py:9)", "python3.11", FRAME_PYTHON, 0),
		};
		struct frame g[] = { F("heavy_a (known.py:4)", "libpython3.12.so.1.0", FRAME_PYTHON, 0) };
		struct frame h[] = { F("heavy_a (known.py:4)", "[python]", FRAME_PYTHON, 0) };

		expect_family(r, "python", f, 2);
		expect_family(r, "python", g, 1);
		expect_family(r, "python", h, 1);	/* by the loop's name alone */
	}
	{
		/* JIT kernels by the primitive they ran in; reorders by name first */
		struct frame bf16[] = { F("_jit_avx512_core_bf16_fwd_kernel", "[jit]", FRAME_JIT, 0) };
		struct frame brg[] = { F("jit_brgemm_kernel_t", "[jit]", FRAME_JIT, 0) };
		struct frame anon[] = { F("[anon:0x7f00]", "[anon]", FRAME_ANON, 0) };
		struct frame ro[] = { F("jit_uni_reorder_kernel_f32", "[jit]", FRAME_JIT, 0) };
		expect_in_prim(r, "jit-conv", bf16, "convolution", "bf16 kernel in a convolution: jit-conv");
		expect_in_prim(r, "jit-other", bf16, NULL, "bf16 kernel outside any primitive: jit-other");
		expect_in_prim(r, "jit-conv", brg, "convolution", "brgemm in a convolution: jit-conv");
		expect_in_prim(r, "gemm", brg, "matmul", "brgemm in a matmul: gemm");
		expect_in_prim(r, "jit-conv", anon, "convolution",
			       "anonymous code in a convolution: jit-conv");
		expect_in_prim(r, "jit-reorder", ro, "convolution",
			       "a reorder kernel in a convolution keeps its name's family");
	}
	{
		/* NumPy's modules by their path */
		struct frame f[] = { F("_multiarray_umath.cpython-311-x86_64-linux-gnu.so!func@0x1234",
				       "_multiarray_umath.cpython-311-x86_64-linux-gnu.so", FRAME_FDE, 0) };

		f[0].dso_path = "/usr/lib/python3/dist-packages/numpy/core/"
				"_multiarray_umath.cpython-311-x86_64-linux-gnu.so";
		expect_family(r, "numpy", f, 1);
	}
	{
		/* the rules' patterns match as fnmatch(3) does, whatever way they are compared */
		static const char *const pats[] = { "*", "**", "abc", "abc*", "*abc", "*abc*", "a*c",
			"\\[kernel.kallsyms\\]", "\\[anon*", "ld-*.so*", "operator?new*", "*a*b*",
			"a\\*b", "[ab]c", "x\\", NULL };
		static const char *const strs[] = { "abc", "abcd", "xabc", "xabcx", "ac", "axxc",
			"[kernel.kallsyms]", "[anon:x]", "ld-linux-x86-64.so.2", "operator new(unsigned)",
			"a*b", "ab", "zaqbz", "bc", "x\\", "x", "", NULL };
		int bad = 0;

		for (int i = 0; pats[i]; i++) {
			struct family_rules *g = family_rules_new();
			char text[64];

			snprintf(text, sizeof(text), "hit sym=%s\n", pats[i]);
			if (family_rules_add_text(g, "glob", text, 0)) {
				bad++;
				continue;
			}
			for (int j = 0; strs[j]; j++) {
				struct frame f[] = { F(strs[j], "x", 0, 0) };
				int want = !fnmatch(pats[i], strs[j], 0);
				int got = !strcmp(family_classify(g, f, 1, NULL), "hit");

				if (want != got) {
					printf("# '%s' on '%s': %d, fnmatch %d\n", pats[i], strs[j], got, want);
					bad++;
				}
			}
			family_rules_free(g);
		}
		ok(!bad, "patterns match as fnmatch does (literal, prefix, suffix, infix, glob)", NULL);
	}
	family_rules_free(r);
	return tap_done();
}
