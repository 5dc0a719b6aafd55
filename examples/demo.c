/* demo.c - a small workload with the shape of deep-learning work on CPU.
 *
 * Each iteration of the main loop does what one layer of a CNN step does:
 *   - an OpenMP elementwise activation over a large tensor, then a reduction
 *     (a norm) with an explicit barrier between them: libgomp threads and spin;
 *   - a 512x512 OpenBLAS cblas_sgemm (a fully-connected layer): the gemm family;
 *   - a oneDNN forward convolution (N=8 C=64 H=W=56 K=64 3x3, f32) on the blocked
 *     activation layout of the widest ISA oneDNN may use here (dnnl_get_effective_cpu_isa,
 *     which honours ONEDNN_MAX_CPU_ISA): nChw16c with AVX-512, nChw8c below it, with
 *     weights in the format oneDNN picks ("any"), so the plain nchw input and output go
 *     through reorders: oneDNN JIT convolution (jit:avx512_core with the kernel
 *     _jit_avx512_common_conv_fwd_kernel, or jit:avx2 with jit_avx2_conv_fwd_kernel_f32)
 *     and JIT reorders.  A layout blocked for an ISA the CPU lacks has no JIT kernel:
 *     oneDNN 2.6 then runs its reference convolution (ref:any), ~900x slower, which is
 *     what -l nChw16c shows on a CPU without AVX-512.  -l any lets oneDNN choose the
 *     activation layout as well (its brgemm convolution on nhwc with AVX-512).
 *
 * usage: demo [-n ITERATIONS] [-l auto|nChw16c|nChw8c|nhwc|any] [-q]
 * Prints the convolution's implementation as oneDNN names it ("demo: convolution
 * jit:avx2 on nChw8c", from dnnl_query_impl_info_str), "demo: N iterations in X.XXX s"
 * (the workload's own time, used by bench/) and a checksum so the compiler cannot drop
 * any phase.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>
#include <dnnl.h>
#include <omp.h>

#define ACT_LEN		(8u << 20)	/* elements in the activation tensor (32 MiB) */
#define GEMM_N		512
#define GEMM_REPEAT	6

#define CONV_N	8
#define CONV_C	64
#define CONV_HW	56
#define CONV_K	64
#define CONV_R	3

static void check(dnnl_status_t st, const char *what)
{
	if (st != dnnl_success) {
		fprintf(stderr, "demo: oneDNN call '%s' failed with status %d\n", what, (int)st);
		exit(2);
	}
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void fill(float *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (float)((seed >> 8) & 0xffff) / 65536.0f - 0.5f;
	}
}

/*
 * Elementwise GELU-like activation, then a sum of squares; the barrier between the two
 * loops is where the faster thread waits for the slower one.
 */
static double omp_phase(const float *x, float *y, size_t n)
{
	double sum = 0.0;

#pragma omp parallel
	{
#pragma omp for schedule(static)
		for (size_t i = 0; i < n; i++) {
			float v = x[i];

			/* a rational "soft sign" GELU stand-in: vectorizes, no libm call */
			y[i] = 0.5f * v * (1.0f + v / (1.0f + fabsf(v)));
		}
#pragma omp barrier
#pragma omp for schedule(static) reduction(+:sum)
		for (size_t i = 0; i < n; i++)
			sum += (double)y[i] * y[i];
	}
	return sum;
}

static double gemm_phase(const float *a, const float *b, float *c)
{
	for (int r = 0; r < GEMM_REPEAT; r++)
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, GEMM_N, GEMM_N, GEMM_N,
			    1.0f, a, GEMM_N, b, GEMM_N, r ? 0.5f : 0.0f, c, GEMM_N);
	return c[0] + c[GEMM_N * GEMM_N - 1];
}

struct conv {
	dnnl_format_tag_t act_tag;	/* activation layout the convolution works in */
	char impl[128];			/* oneDNN's implementation name */
	dnnl_engine_t engine;
	dnnl_stream_t stream;
	dnnl_primitive_t conv, src_reorder, dst_reorder;
	dnnl_memory_t user_src, user_dst, src, wei, bias, dst;
	float *user_src_buf, *user_dst_buf, *bias_buf;
};

static dnnl_primitive_t make_reorder(struct conv *cv, const dnnl_memory_desc_t *from,
				     const dnnl_memory_desc_t *to)
{
	dnnl_primitive_desc_t pd;
	dnnl_primitive_t p;

	check(dnnl_reorder_primitive_desc_create(&pd, from, cv->engine, to, cv->engine, NULL),
	      "dnnl_reorder_primitive_desc_create");
	check(dnnl_primitive_create(&p, pd), "dnnl_primitive_create(reorder)");
	dnnl_primitive_desc_destroy(pd);
	return p;
}

static void conv_init(struct conv *cv)
{
	dnnl_dims_t src_dims = { CONV_N, CONV_C, CONV_HW, CONV_HW };
	dnnl_dims_t wei_dims = { CONV_K, CONV_C, CONV_R, CONV_R };
	dnnl_dims_t bias_dims = { CONV_K };
	dnnl_dims_t dst_dims = { CONV_N, CONV_K, CONV_HW, CONV_HW };
	dnnl_dims_t strides = { 1, 1 }, pad = { 1, 1 };
	dnnl_memory_desc_t user_src_md, user_dst_md, src_any, wei_any, bias_md, dst_any;
	const dnnl_memory_desc_t *src_md, *wei_md, *dst_md;
	dnnl_convolution_desc_t cd;
	dnnl_primitive_desc_t pd;
	dnnl_primitive_t wei_reorder;
	dnnl_memory_t user_wei;
	size_t src_len = (size_t)CONV_N * CONV_C * CONV_HW * CONV_HW;
	size_t dst_len = (size_t)CONV_N * CONV_K * CONV_HW * CONV_HW;
	size_t wei_len = (size_t)CONV_K * CONV_C * CONV_R * CONV_R;
	float *wei_buf;

	check(dnnl_engine_create(&cv->engine, dnnl_cpu, 0), "dnnl_engine_create");
	check(dnnl_stream_create(&cv->stream, cv->engine, dnnl_stream_default_flags),
	      "dnnl_stream_create");

	check(dnnl_memory_desc_init_by_tag(&user_src_md, 4, src_dims, dnnl_f32, dnnl_nchw), "md src");
	check(dnnl_memory_desc_init_by_tag(&user_dst_md, 4, dst_dims, dnnl_f32, dnnl_nchw), "md dst");
	check(dnnl_memory_desc_init_by_tag(&src_any, 4, src_dims, dnnl_f32, cv->act_tag), "md");
	check(dnnl_memory_desc_init_by_tag(&wei_any, 4, wei_dims, dnnl_f32, dnnl_format_tag_any), "md");
	check(dnnl_memory_desc_init_by_tag(&dst_any, 4, dst_dims, dnnl_f32, cv->act_tag), "md");
	check(dnnl_memory_desc_init_by_tag(&bias_md, 1, bias_dims, dnnl_f32, dnnl_x), "md bias");

	check(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct,
						 &src_any, &wei_any, &bias_md, &dst_any,
						 strides, pad, pad),
	      "dnnl_convolution_forward_desc_init");
	check(dnnl_primitive_desc_create(&pd, &cd, NULL, cv->engine, NULL),
	      "dnnl_primitive_desc_create(convolution)");
	check(dnnl_primitive_create(&cv->conv, pd), "dnnl_primitive_create(convolution)");
	{
		const char *impl = NULL;

		if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success ||
		    !impl)
			impl = "?";
		snprintf(cv->impl, sizeof(cv->impl), "%s", impl);
	}

	src_md = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
	wei_md = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
	dst_md = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);

	cv->user_src_buf = malloc(src_len * sizeof(float));
	cv->user_dst_buf = malloc(dst_len * sizeof(float));
	wei_buf = malloc(wei_len * sizeof(float));
	cv->bias_buf = malloc(CONV_K * sizeof(float));
	if (!cv->user_src_buf || !cv->user_dst_buf || !wei_buf || !cv->bias_buf) {
		fprintf(stderr, "demo: out of memory\n");
		exit(2);
	}
	fill(cv->user_src_buf, src_len, 1);
	fill(wei_buf, wei_len, 2);
	fill(cv->bias_buf, CONV_K, 3);

	check(dnnl_memory_create(&cv->user_src, &user_src_md, cv->engine, cv->user_src_buf), "mem");
	check(dnnl_memory_create(&cv->user_dst, &user_dst_md, cv->engine, cv->user_dst_buf), "mem");
	check(dnnl_memory_create(&cv->bias, &bias_md, cv->engine, cv->bias_buf), "mem");
	check(dnnl_memory_create(&cv->src, src_md, cv->engine, DNNL_MEMORY_ALLOCATE), "mem");
	check(dnnl_memory_create(&cv->wei, wei_md, cv->engine, DNNL_MEMORY_ALLOCATE), "mem");
	check(dnnl_memory_create(&cv->dst, dst_md, cv->engine, DNNL_MEMORY_ALLOCATE), "mem");

	/* weights are converted once, like a framework caches them */
	{
		dnnl_dims_t d = { CONV_K, CONV_C, CONV_R, CONV_R };
		dnnl_memory_desc_t user_wei_md;
		dnnl_exec_arg_t args[2];

		check(dnnl_memory_desc_init_by_tag(&user_wei_md, 4, d, dnnl_f32, dnnl_oihw), "md wei");
		check(dnnl_memory_create(&user_wei, &user_wei_md, cv->engine, wei_buf), "mem");
		wei_reorder = make_reorder(cv, &user_wei_md, wei_md);
		args[0] = (dnnl_exec_arg_t){ DNNL_ARG_FROM, user_wei };
		args[1] = (dnnl_exec_arg_t){ DNNL_ARG_TO, cv->wei };
		check(dnnl_primitive_execute(wei_reorder, cv->stream, 2, args), "execute(reorder)");
		check(dnnl_stream_wait(cv->stream), "dnnl_stream_wait");
		dnnl_primitive_destroy(wei_reorder);
		dnnl_memory_destroy(user_wei);
	}

	cv->src_reorder = make_reorder(cv, &user_src_md, src_md);
	cv->dst_reorder = make_reorder(cv, dst_md, &user_dst_md);
	dnnl_primitive_desc_destroy(pd);
	free(wei_buf);
}

static double conv_phase(struct conv *cv)
{
	dnnl_exec_arg_t in[2] = { { DNNL_ARG_FROM, cv->user_src }, { DNNL_ARG_TO, cv->src } };
	dnnl_exec_arg_t conv_args[4] = {
		{ DNNL_ARG_SRC, cv->src }, { DNNL_ARG_WEIGHTS, cv->wei },
		{ DNNL_ARG_BIAS, cv->bias }, { DNNL_ARG_DST, cv->dst },
	};
	dnnl_exec_arg_t out[2] = { { DNNL_ARG_FROM, cv->dst }, { DNNL_ARG_TO, cv->user_dst } };

	check(dnnl_primitive_execute(cv->src_reorder, cv->stream, 2, in), "execute(reorder)");
	check(dnnl_primitive_execute(cv->conv, cv->stream, 4, conv_args), "execute(convolution)");
	check(dnnl_primitive_execute(cv->dst_reorder, cv->stream, 2, out), "execute(reorder)");
	check(dnnl_stream_wait(cv->stream), "dnnl_stream_wait");
	return cv->user_dst_buf[0];
}

/* The blocked layout of the widest ISA oneDNN may use (its own answer, so a cap set
 * with ONEDNN_MAX_CPU_ISA counts): 16 channels a block for AVX-512, 8 below. */
static dnnl_format_tag_t auto_tag(void)
{
	dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();

	if ((isa & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core)
		return dnnl_nChw16c;
	return dnnl_nChw8c;
}

static const struct {
	const char *name;
	dnnl_format_tag_t tag;
} layouts[] = {
	{ "nChw16c", dnnl_nChw16c }, { "nChw8c", dnnl_nChw8c }, { "nhwc", dnnl_nhwc },
	{ "nchw", dnnl_nchw }, { "any", dnnl_format_tag_any },
};

static const char *tag_name(dnnl_format_tag_t t)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].tag == t)
			return layouts[i].name;
	return "?";
}

int main(int argc, char **argv)
{
	int iters = 240, quiet = 0, c;
	const char *layout = "auto";
	float *x, *y, *a, *b, *cm;
	struct conv cv;
	double t0, t, sum = 0.0;

	memset(&cv, 0, sizeof(cv));
	while ((c = getopt(argc, argv, "n:l:q")) != -1) {
		switch (c) {
		case 'n':
			iters = atoi(optarg);
			break;
		case 'l':
			layout = optarg;
			break;
		case 'q':
			quiet = 1;
			break;
		default:
			fprintf(stderr, "usage: demo [-n ITERATIONS] [-l auto|nChw16c|nChw8c|nhwc|any] [-q]\n");
			return 64;
		}
	}
	if (!strcmp(layout, "auto")) {
		cv.act_tag = auto_tag();
	} else {
		size_t i;

		for (i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
			if (!strcmp(layouts[i].name, layout))
				break;
		if (i == sizeof(layouts) / sizeof(layouts[0])) {
			fprintf(stderr, "demo: unknown layout '%s' (auto, nChw16c, nChw8c, nhwc, nchw, any)\n",
				layout);
			return 64;
		}
		cv.act_tag = layouts[i].tag;
	}
	if (iters <= 0) {
		fprintf(stderr, "demo: iteration count must be positive\n");
		return 64;
	}

	x = malloc(ACT_LEN * sizeof(float));
	y = malloc(ACT_LEN * sizeof(float));
	a = malloc(GEMM_N * GEMM_N * sizeof(float));
	b = malloc(GEMM_N * GEMM_N * sizeof(float));
	cm = malloc(GEMM_N * GEMM_N * sizeof(float));
	if (!x || !y || !a || !b || !cm) {
		fprintf(stderr, "demo: out of memory\n");
		return 2;
	}
	fill(x, ACT_LEN, 4);
	fill(a, GEMM_N * GEMM_N, 5);
	fill(b, GEMM_N * GEMM_N, 6);
	conv_init(&cv);
	printf("demo: convolution %s on %s\n", cv.impl, tag_name(cv.act_tag));
	fflush(stdout);

	t0 = now();
	for (int i = 0; i < iters; i++) {
		sum += omp_phase(x, y, ACT_LEN) * 1e-9;
		sum += gemm_phase(a, b, cm) * 1e-6;
		sum += conv_phase(&cv);
	}
	t = now() - t0;

	if (!quiet)
		printf("demo: %d threads, checksum %.6g\n", omp_get_max_threads(), sum);
	printf("demo: %d iterations in %.3f s\n", iters, t);

	dnnl_primitive_destroy(cv.conv);
	dnnl_primitive_destroy(cv.src_reorder);
	dnnl_primitive_destroy(cv.dst_reorder);
	dnnl_memory_destroy(cv.user_src);
	dnnl_memory_destroy(cv.user_dst);
	dnnl_memory_destroy(cv.src);
	dnnl_memory_destroy(cv.wei);
	dnnl_memory_destroy(cv.bias);
	dnnl_memory_destroy(cv.dst);
	dnnl_stream_destroy(cv.stream);
	dnnl_engine_destroy(cv.engine);
	free(x);
	free(y);
	free(a);
	free(b);
	free(cm);
	free(cv.user_src_buf);
	free(cv.user_dst_buf);
	free(cv.bias_buf);
	return 0;
}
