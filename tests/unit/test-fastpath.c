/* test-fastpath.c - the fast-path findings from FP operations counted by width
 * (lib/views/fastpath.c, record --metrics fp).  No PMU on the machines this runs on, so
 * the counts are made here: samples of a recorded AVX-512 CPU inside oneDNN primitives,
 * each carrying the FP operations of its interval by width as record would read them
 * (META metrics fp-scalar,fp-128,fp-256,fp-512, after the sampling event's own count).
 * The truth is the split given: a convolution whose JIT kernel ran 256-bit FP (capped
 * by ONEDNN_MAX_CPU_ISA=AVX2) is found and its cap named; one at 512 bits is not; a
 * primitive in compiled (reference) code says its scalar share in dnnl-no-jit; the
 * same counts as a counter's own samples (sampled each on its own) give the same. */
#include "../../lib/views/fastpath.h"
#include "recmeta.h"
#include "rephash.h"
#include "tap.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

static const char meta[] =
	"cpu_flags\0fpu sse sse2 avx avx2 fma avx512f avx512bw avx512vl\0"
	"env.ONEDNN_MAX_CPU_ISA\0AVX2\0"
	"metrics\0fp-scalar,fp-128,fp-256,fp-512\0";

/* n samples of one primitive, its leaf in JIT code (kernel name) or in libdnnl, each with
 * the FP operations given by width (scalar, 128, 256, 512); counts_only: as a counter's
 * own samples, fed to fastpath_counts */
static void feed(struct fastpath *fp, const char *prim, const char *leaf, int jit, int n,
		 const uint64_t w[4], int counts_only)
{
	const char *p = str_intern(prim, strlen(prim)), *sym = str_intern(leaf, strlen(leaf));
	const char *fam = str_intern(jit ? "dnnl-jit" : "dnnl", jit ? 8 : 4);
	uint64_t read[5] = { 1000000, w[0], w[1], w[2], w[3] };
	struct frame f = { .ip = 0x1000, .sym = sym, .dso = jit ? "[jit]" : "libdnnl.so.3",
			   .flags = jit ? FRAME_JIT : 0 };
	struct dlp_sample s = { .period = 1000000, .nr_read = 5, .read = read };

	for (int i = 0; i < n; i++) {
		if (counts_only)
			fastpath_counts(fp, &s, p);
		else
			fastpath_sample(fp, NULL, &s, &f, 1, sym, fam, p);
	}
}

/* The finding of id, or NULL */
static const struct finding *find(const struct finding *f, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(f[i].id, id))
			return &f[i];
	return NULL;
}

static void run(int counts_only)
{
	static const uint64_t avx2[4] = { 12, 0, 88, 0 }, avx512[4] = { 4, 0, 0, 96 },
			      scalar[4] = { 50, 0, 0, 0 };
	struct fastpath *fp = fastpath_new();
	struct recmeta m;
	struct finding f[8];
	const struct finding *x;
	const struct fp_prim *p;
	char phrase[128];
	size_t n;

	memset(&m, 0, sizeof(m));
	recmeta_parse(&m, meta, sizeof(meta));
	fastpath_meta(fp, &m);
	/* the CPU samples say where each ran; the counts come with them or apart */
	feed(fp, "convolution", "jit_avx2_conv_fwd_kernel_f32", 1, 40, avx2, 0);
	feed(fp, "inner_product", "jit_avx512_core_gemm_kernel", 1, 40, avx512, 0);
	feed(fp, "pooling", "dnnl::impl::cpu::ref_pooling_fwd_t::execute", 0, 20, scalar, 0);
	if (counts_only) {
		/* a counter sampled on its own: its samples carry the counts, the CPU
		 * samples above none of them (their reads zero) */
		struct fastpath *fp2 = fastpath_new();
		static const uint64_t none[4];

		fastpath_meta(fp2, &m);
		feed(fp2, "convolution", "jit_avx2_conv_fwd_kernel_f32", 1, 40, none, 0);
		feed(fp2, "inner_product", "jit_avx512_core_gemm_kernel", 1, 40, none, 0);
		feed(fp2, "pooling", "dnnl::impl::cpu::ref_pooling_fwd_t::execute", 0, 20, none, 0);
		feed(fp2, "convolution", "", 1, 40, avx2, 1);
		feed(fp2, "inner_product", "", 1, 40, avx512, 1);
		feed(fp2, "pooling", "", 0, 20, scalar, 1);
		fastpath_free(fp);
		fp = fp2;
	}
	n = fastpath_findings(fp, 100, f, 8);

	p = fastpath_prim(fp, str_intern("convolution", 11));
	ok(p && fastpath_fp_phrase(p, phrase, sizeof(phrase)) == 40 * 100 &&
	   !strcmp(phrase, "88.0% 256-bit, 12.0% scalar"),
	   "the convolution's FP operations by width, widest first", p ? phrase : NULL);
	x = find(f, n, "dnnl-fp-width");
	ok(x && strstr(x->text, "oneDNN convolution (40.0% of samples): its 4e+03 FP operations "
		       "(record --metrics fp) 88.0% 256-bit, 12.0% scalar, on a CPU with 512-bit "
		       "(AVX-512) vectors"),
	   "dnnl-fp-width: the convolution ran 256-bit FP on an AVX-512 CPU", x ? x->text : NULL);
	ok(x && strstr(x->text, "ONEDNN_MAX_CPU_ISA=AVX2 in the workload's environment caps its "
		       "kernels"), "... and names the cap", x ? x->text : NULL);
	ok(x && !find(x + 1, n - (size_t)(x + 1 - f), "dnnl-fp-width"),
	   "the inner product at 512 bits is no finding", NULL);
	x = find(f, n, "dnnl-no-jit");
	ok(x && strstr(x->text, "oneDNN pooling ran without a JIT kernel") &&
	   strstr(x->text, "Its 1e+03 FP operations (record --metrics fp): 100.0% scalar."),
	   "dnnl-no-jit says the reference pooling's FP was scalar", x ? x->text : NULL);
	recmeta_release(&m);
	fastpath_free(fp);
}

int main(void)
{
	run(0);
	run(1);
	return tap_done();
}
