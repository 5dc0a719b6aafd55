/* dl-prims.c - two oneDNN forward convolutions of different shapes, one after the other
 * again and again for a fixed time, each timing its own dnnl_primitive_execute() calls:
 *
 *   dl-prims [-t SECONDS]
 *
 *   ref  N=1 C=K=16 H=W=14 3x3 pad 1, activations in nChw16c: with
 *        ONEDNN_MAX_CPU_ISA=AVX2 (or on a CPU without AVX-512) oneDNN's reference
 *        convolution (ref:any)
 *   jit  N=2 C=32 K=64 H=W=28 3x3 stride 2 pad 1, every layout left to oneDNN: a JIT
 *        (or brgemm) implementation of the widest ISA allowed
 *
 * For each it prints the truth a profile is checked against (t5031):
 *
 *   prim: NAME impl=IMPL shape=SHAPE calls=N ns=TOTAL first_ns=FIRST
 *
 * IMPL is dnnl_query_impl_info_str, SHAPE the problem in ONEDNN_VERBOSE's spelling
 * (built here from the sizes asked for), TOTAL the summed wall time of its execute
 * calls but the first, FIRST the first's (CLOCK_MONOTONIC).  Memory is created in the layouts the
 * primitives ask for, so no reorder runs.  Built against the installed headers, it also checks at compile time the
 * layouts libdlprof-itt.so reads without them (lib/inject/dnnl-abi.h).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <dnnl.h>

#define PROG "dl-prims"
#include "dnnl-test.h"

#include "dnnl-abi.h"

#define SAME_OFF(a, fa, b, fb) _Static_assert(offsetof(a, fa) == offsetof(b, fb), #a "." #fa)
_Static_assert(sizeof(struct dabi_md) == sizeof(dnnl_memory_desc_t), "memory desc size");
SAME_OFF(struct dabi_md, data_type, dnnl_memory_desc_t, data_type);
SAME_OFF(struct dabi_md, format_kind, dnnl_memory_desc_t, format_kind);
SAME_OFF(struct dabi_md, format_desc.blocking.inner_nblks, dnnl_memory_desc_t, format_desc.blocking.inner_nblks);
SAME_OFF(struct dabi_md, format_desc.blocking.inner_idxs, dnnl_memory_desc_t, format_desc.blocking.inner_idxs);
SAME_OFF(struct dabi_conv, diff_dst, dnnl_convolution_desc_t, diff_dst_desc);
SAME_OFF(struct dabi_conv, padding, dnnl_convolution_desc_t, padding);
SAME_OFF(struct dabi_pool, kernel, dnnl_pooling_desc_t, kernel);
SAME_OFF(struct dabi_pool, padding, dnnl_pooling_desc_t, padding);
SAME_OFF(struct dabi_pool, dilation, dnnl_pooling_v2_desc_t, dilation);
SAME_OFF(struct dabi_ip, diff_dst, dnnl_inner_product_desc_t, diff_dst_desc);
SAME_OFF(struct dabi_version, cpu_runtime, dnnl_version_t, cpu_runtime);
#pragma GCC diagnostic ignored "-Wenum-compare"
#define I(x) ((int)(x))
_Static_assert(I(DABI_Q_PRIMITIVE_KIND) == I(dnnl_query_primitive_kind) && DABI_Q_IMPL_INFO_STR ==
	       dnnl_query_impl_info_str && I(DABI_Q_PROP_KIND) == I(dnnl_query_prop_kind) &&
	       I(DABI_Q_CONVOLUTION_D) == I(dnnl_query_convolution_d) && DABI_Q_DECONVOLUTION_D ==
	       dnnl_query_deconvolution_d && I(DABI_Q_POOLING_D) == I(dnnl_query_pooling_d) &&
	       I(DABI_Q_INNER_PRODUCT_D) == I(dnnl_query_inner_product_d) && DABI_Q_POOLING_V2_D ==
	       dnnl_query_pooling_v2_d && I(DABI_Q_SRC_MD) == I(dnnl_query_src_md) &&
	       I(DABI_Q_DIFF_DST_MD) == I(dnnl_query_diff_dst_md), "query values");
_Static_assert(DABI_CONVOLUTION == dnnl_convolution && I(DABI_DECONVOLUTION) == I(dnnl_deconvolution) &&
	       I(DABI_POOLING) == I(dnnl_pooling) && I(DABI_INNER_PRODUCT) == I(dnnl_inner_product) &&
	       I(DABI_POOLING_V2) == I(dnnl_pooling_v2), "primitive kinds");
_Static_assert(DABI_FMT_BLOCKED == dnnl_blocked && I(DABI_FMT_RNN_PACKED) == I(dnnl_format_kind_rnn_packed) &&
	       I(dnnl_f32) == 3 && I(dnnl_u8) == 6 && DABI_NR_DT > 6 && I(DABI_RUNTIME_ERROR) == I(dnnl_runtime_error), "enums");

struct conv {
	const char *name;
	int n, c, k, hw, stride;
	dnnl_format_tag_t tag;
	dnnl_primitive_desc_t pd;
	dnnl_primitive_t prim;
	dnnl_memory_t src, wei, dst;
	const char *impl;
	char shape[128];
	long calls;
	long long ns, first_ns;
};

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void setup(struct conv *cv, dnnl_engine_t eng)
{
	int oh = (cv->hw + 2 - 3) / cv->stride + 1;
	dnnl_dims_t src_dims = { cv->n, cv->c, cv->hw, cv->hw }, wei_dims = { cv->k, cv->c, 3, 3 };
	dnnl_dims_t dst_dims = { cv->n, cv->k, oh, oh }, strides = { cv->stride, cv->stride };
	dnnl_dims_t pad = { 1, 1 };
	dnnl_memory_desc_t src_md, wei_md, dst_md;
	dnnl_convolution_desc_t cd;

	check(dnnl_memory_desc_init_by_tag(&src_md, 4, src_dims, dnnl_f32, cv->tag), "md src");
	check(dnnl_memory_desc_init_by_tag(&wei_md, 4, wei_dims, dnnl_f32, dnnl_format_tag_any), "md wei");
	check(dnnl_memory_desc_init_by_tag(&dst_md, 4, dst_dims, dnnl_f32, cv->tag), "md dst");
	check(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct,
						 &src_md, &wei_md, NULL, &dst_md, strides, pad, pad),
	      "dnnl_convolution_forward_desc_init");
	check(dnnl_primitive_desc_create(&cv->pd, &cd, NULL, eng, NULL), "dnnl_primitive_desc_create");
	check(dnnl_primitive_create(&cv->prim, cv->pd), "dnnl_primitive_create");
	if (dnnl_primitive_desc_query(cv->pd, dnnl_query_impl_info_str, 0, &cv->impl) != dnnl_success ||
	    !cv->impl)
		cv->impl = "?";
	/* verbose's spelling of a 2D convolution without groups or dilation */
	snprintf(cv->shape, sizeof(cv->shape),
		 "mb%d_ic%doc%d_ih%doh%dkh3sh%ddh0ph1_iw%dow%dkw3sw%ddw0pw1",
		 cv->n, cv->c, cv->k, cv->hw, oh, cv->stride, cv->hw, oh, cv->stride);
	cv->src = make_mem(dnnl_primitive_desc_query_md(cv->pd, dnnl_query_src_md, 0), eng, 1);
	cv->wei = make_mem(dnnl_primitive_desc_query_md(cv->pd, dnnl_query_weights_md, 0), eng, 2);
	cv->dst = make_mem(dnnl_primitive_desc_query_md(cv->pd, dnnl_query_dst_md, 0), eng, 3);
}

static void run(struct conv *cv, dnnl_stream_t stream)
{
	dnnl_exec_arg_t args[3] = {
		{ DNNL_ARG_SRC, cv->src }, { DNNL_ARG_WEIGHTS, cv->wei }, { DNNL_ARG_DST, cv->dst },
	};
	long long t0 = now_ns();

	check(dnnl_primitive_execute(cv->prim, stream, 3, args), "dnnl_primitive_execute");
	/* the first call apart: under dlprof record the hook describes the primitive then,
	 * before the call it times, and the first execution is the slowest */
	if (cv->calls++)
		cv->ns += now_ns() - t0;
	else
		cv->first_ns = now_ns() - t0;
	check(dnnl_stream_wait(stream), "dnnl_stream_wait");
}

static void release(struct conv *cv)
{
	dnnl_primitive_destroy(cv->prim);
	dnnl_primitive_desc_destroy(cv->pd);
	dnnl_memory_destroy(cv->src);
	dnnl_memory_destroy(cv->wei);
	dnnl_memory_destroy(cv->dst);
}

int main(int argc, char **argv)
{
	struct conv convs[2] = {
		{ .name = "ref", .n = 1, .c = 16, .k = 16, .hw = 14, .stride = 1, .tag = dnnl_nChw16c },
		{ .name = "jit", .n = 2, .c = 32, .k = 64, .hw = 28, .stride = 2, .tag = dnnl_format_tag_any },
	};
	double seconds = 2;
	long long t0;
	dnnl_engine_t eng;
	dnnl_stream_t stream;
	int c;

	while ((c = getopt(argc, argv, "t:")) != -1) {
		if (c != 't') {
			fprintf(stderr, "usage: dl-prims [-t SECONDS]\n");
			return 64;
		}
		seconds = atof(optarg);
	}
	check(dnnl_engine_create(&eng, dnnl_cpu, 0), "dnnl_engine_create");
	check(dnnl_stream_create(&stream, eng, dnnl_stream_default_flags), "dnnl_stream_create");
	for (int i = 0; i < 2; i++)
		setup(&convs[i], eng);
	t0 = now_ns();
	do {
		run(&convs[0], stream);
		run(&convs[1], stream);
	} while (now_ns() - t0 < seconds * 1e9);
	for (int i = 0; i < 2; i++) {
		printf("prim: %s impl=%s shape=%s calls=%ld ns=%lld first_ns=%lld\n", convs[i].name,
		       convs[i].impl, convs[i].shape, convs[i].calls, convs[i].ns, convs[i].first_ns);
		release(&convs[i]);
	}
	dnnl_stream_destroy(stream);
	dnnl_engine_destroy(eng);
	return 0;
}
