/* dl-conv-impl.c - one oneDNN forward convolution (N=1 C=K=32 H=W=28 3x3, f32 unless
 * -d says), run again and again for a fixed time, in the activation layout asked for:
 *
 *   dl-conv-impl [-l any|nChw16c|nChw8c|nhwc] [-d f32|bf16|s8] [-t SECONDS]
 *
 * Prints the implementation oneDNN chose ("impl: jit:avx2", dnnl_query_impl_info_str:
 * the truth a profile's view of it is checked against), then "calls: N in S s".
 * Memory is created in the layouts the primitive asks for, so no reorder runs: every
 * oneDNN sample is the convolution.  -l nChw16c with ONEDNN_MAX_CPU_ISA=AVX2 (or on a
 * CPU without AVX-512) gets oneDNN's reference convolution (ref:any); -l any gets a JIT
 * kernel of the widest ISA oneDNN may use.  -d bf16 (bf16 data, AVX512_BF16's kernel
 * "_jit_avx512_core_bf16_fwd_kernel") and -d s8 (u8 activations, s8 weights: the int8
 * kernels "_jit_*_x8s8s32x_fwd_kernel") run kernels whose names do not say "conv".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <dnnl.h>

#define PROG "dl-conv-impl"
#include "dnnl-test.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	const char *layout = "any", *dtype = "f32";
	dnnl_data_type_t src_dt = dnnl_f32, wei_dt = dnnl_f32, dst_dt = dnnl_f32;
	double seconds = 1.5, t0, t;
	dnnl_format_tag_t tag;
	dnnl_dims_t src_dims = { 1, 32, 28, 28 }, wei_dims = { 32, 32, 3, 3 };
	dnnl_dims_t dst_dims = { 1, 32, 28, 28 }, strides = { 1, 1 }, pad = { 1, 1 };
	dnnl_memory_desc_t src_md, wei_md, dst_md;
	dnnl_convolution_desc_t cd;
	dnnl_primitive_desc_t pd;
	dnnl_primitive_t conv;
	dnnl_engine_t eng;
	dnnl_stream_t stream;
	dnnl_memory_t src, wei, dst;
	const char *impl = NULL;
	long calls = 0;
	int c;

	while ((c = getopt(argc, argv, "l:d:t:")) != -1) {
		switch (c) {
		case 'l':
			layout = optarg;
			break;
		case 'd':
			dtype = optarg;
			break;
		case 't':
			seconds = atof(optarg);
			break;
		default:
			fprintf(stderr, "usage: dl-conv-impl [-l any|nChw16c|nChw8c|nhwc] [-d f32|bf16|s8] "
				"[-t SECONDS]\n");
			return 64;
		}
	}
	if (!strcmp(layout, "any"))
		tag = dnnl_format_tag_any;
	else if (!strcmp(layout, "nChw16c"))
		tag = dnnl_nChw16c;
	else if (!strcmp(layout, "nChw8c"))
		tag = dnnl_nChw8c;
	else if (!strcmp(layout, "nhwc"))
		tag = dnnl_nhwc;
	else {
		fprintf(stderr, "dl-conv-impl: unknown layout '%s'\n", layout);
		return 64;
	}
	if (!strcmp(dtype, "bf16")) {
		src_dt = wei_dt = dst_dt = dnnl_bf16;
	} else if (!strcmp(dtype, "s8")) {
		src_dt = dst_dt = dnnl_u8;
		wei_dt = dnnl_s8;
	} else if (strcmp(dtype, "f32")) {
		fprintf(stderr, "dl-conv-impl: unknown data type '%s'\n", dtype);
		return 64;
	}

	check(dnnl_engine_create(&eng, dnnl_cpu, 0), "dnnl_engine_create");
	check(dnnl_stream_create(&stream, eng, dnnl_stream_default_flags), "dnnl_stream_create");
	check(dnnl_memory_desc_init_by_tag(&src_md, 4, src_dims, src_dt, tag), "md src");
	check(dnnl_memory_desc_init_by_tag(&wei_md, 4, wei_dims, wei_dt, dnnl_format_tag_any), "md wei");
	check(dnnl_memory_desc_init_by_tag(&dst_md, 4, dst_dims, dst_dt, tag), "md dst");
	check(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct,
						 &src_md, &wei_md, NULL, &dst_md, strides, pad, pad),
	      "dnnl_convolution_forward_desc_init");
	check(dnnl_primitive_desc_create(&pd, &cd, NULL, eng, NULL), "dnnl_primitive_desc_create");
	check(dnnl_primitive_create(&conv, pd), "dnnl_primitive_create");
	if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) != dnnl_success || !impl)
		impl = "?";
	printf("impl: %s\n", impl);
	fflush(stdout);

	src = make_mem(dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), eng, 1);
	wei = make_mem(dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), eng, 2);
	dst = make_mem(dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), eng, 3);

	t0 = now();
	do {
		dnnl_exec_arg_t args[3] = {
			{ DNNL_ARG_SRC, src }, { DNNL_ARG_WEIGHTS, wei }, { DNNL_ARG_DST, dst },
		};

		check(dnnl_primitive_execute(conv, stream, 3, args), "dnnl_primitive_execute");
		check(dnnl_stream_wait(stream), "dnnl_stream_wait");
		calls++;
	} while ((t = now() - t0) < seconds);
	printf("calls: %ld in %.3f s\n", calls, t);

	dnnl_primitive_destroy(conv);
	dnnl_primitive_desc_destroy(pd);
	dnnl_memory_destroy(src);
	dnnl_memory_destroy(wei);
	dnnl_memory_destroy(dst);
	dnnl_stream_destroy(stream);
	dnnl_engine_destroy(eng);
	return 0;
}
