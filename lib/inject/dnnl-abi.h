/* dnnl-abi.h - the few oneDNN C API types and values the interposer (dnnl-hook.c) reads,
 * as oneDNN's dnnl_types.h lays them out (facts of its ABI, spelled here so that
 * libdlprof-itt.so builds without libdnnl-dev).  2.x: the memory and op descriptors are
 * structs read in place.  3.x made the memory descriptor opaque and dropped the op
 * descriptors: each field is asked for (dnnl_memory_desc_query, dnnl_primitive_desc_query
 * with the 3.x query values, DABI3_*); its ABI holds across 3.x (dnnl_version()).
 * tests/workloads/dl-prims.c checks the 2.x layouts against the installed headers, and
 * t5032 the 3.x values against 3.x's headers in the Debian 13 root.
 */
#ifndef DLPROF_DNNL_ABI_H
#define DLPROF_DNNL_ABI_H

#include <stddef.h>
#include <stdint.h>

#define DABI_MAX_NDIMS 12

typedef int64_t dabi_dims[DABI_MAX_NDIMS];

/* dnnl_status_t */
enum { DABI_SUCCESS = 0, DABI_RUNTIME_ERROR = 5 };

/* dnnl_format_kind_t */
enum { DABI_FMT_UNDEF = 0, DABI_FMT_ANY, DABI_FMT_BLOCKED, DABI_FMT_WINO, DABI_FMT_RNN_PACKED };

/* dnnl_primitive_kind_t (the ones whose shape is spelled from their op descriptor) */
enum {
	DABI_CONVOLUTION = 5, DABI_DECONVOLUTION = 6, DABI_POOLING = 9,
	DABI_INNER_PRODUCT = 13, DABI_POOLING_V2 = 20,
};

/* dnnl_query_t */
enum {
	DABI_Q_PRIMITIVE_KIND = 2,
	DABI_Q_IMPL_INFO_STR = 8,
	DABI_Q_PROP_KIND = 11,
	DABI_Q_CONVOLUTION_D = 66, DABI_Q_DECONVOLUTION_D = 67, DABI_Q_POOLING_D = 71,
	DABI_Q_INNER_PRODUCT_D = 75, DABI_Q_POOLING_V2_D = 82,
	DABI_Q_SRC_MD = 129, DABI_Q_DIFF_SRC_MD, DABI_Q_WEIGHTS_MD, DABI_Q_DIFF_WEIGHTS_MD,
	DABI_Q_DST_MD, DABI_Q_DIFF_DST_MD,
};

/* dnnl_data_type_t, from 0: undef f16 bf16 f32 s32 s8 u8 (2.x), then (3.x) f64 boolean
 * f8_e5m2 f8_e4m3 s4 u4 e8m0 f4_e2m1 f4_e3m0 */
#define DABI_NR_DT 16

/* oneDNN 3.x: dnnl_primitive_kind_t (the ones whose shape is spelled from their queries) */
enum { DABI3_CONVOLUTION = 5, DABI3_DECONVOLUTION = 6, DABI3_INNER_PRODUCT = 10,
       DABI3_POOLING = 16 };
/* ... dnnl_format_kind_t */
enum { DABI3_FMT_UNDEF = 0, DABI3_FMT_ANY, DABI3_FMT_BLOCKED, DABI3_FMT_OPAQUE, DABI3_FMT_SPARSE };
/* ... dnnl_query_t: of a primitive descriptor (the md queries are 2.x's), and of a memory
 * descriptor (dnnl_memory_desc_query; DABI3_Q_STRIDES too) */
enum {
	DABI3_Q_STRIDES = 14, DABI3_Q_DILATIONS = 15, DABI3_Q_PADDING_L = 16,
	DABI3_Q_KERNEL = 31,
	DABI3_Q_NDIMS = 256, DABI3_Q_DIMS = 257, DABI3_Q_DATA_TYPE = 258,
	DABI3_Q_FORMAT_KIND = 262, DABI3_Q_INNER_NBLKS = 263, DABI3_Q_INNER_BLKS = 264,
	DABI3_Q_INNER_IDXS = 265,
};

/* dnnl_blocking_desc_t */
struct dabi_blocking {
	dabi_dims strides;
	int inner_nblks;
	dabi_dims inner_blks;
	dabi_dims inner_idxs;
};

/* dnnl_memory_desc_t: the format union's largest member is the RNN packed desc */
struct dabi_md {
	int ndims;
	dabi_dims dims;
	int data_type;
	dabi_dims padded_dims;
	dabi_dims padded_offsets;
	int64_t offset0;
	int format_kind;
	union {
		struct dabi_blocking blocking;
		char rnn_packed[296];
	} format_desc;
	struct {
		uint64_t flags;
		int compensation_mask;
		float scale_adjust;
		int asymm_compensation_mask;
		char reserved[60];
	} extra;
};

/* dnnl_convolution_desc_t (deconvolution: the same) */
struct dabi_conv {
	int primitive_kind, prop_kind, alg_kind;
	struct dabi_md src, diff_src, weights, diff_weights, bias, diff_bias, dst, diff_dst;
	dabi_dims strides, dilates, padding[2];
	int accum_data_type;
};

/* dnnl_pooling_desc_t; dnnl_pooling_v2_desc_t adds dilation at the end */
struct dabi_pool {
	int primitive_kind, prop_kind, alg_kind;
	struct dabi_md src, diff_src, dst, diff_dst;
	dabi_dims strides, kernel, padding[2];
	int accum_data_type;
	dabi_dims dilation;	/* pooling_v2 only */
};

/* dnnl_inner_product_desc_t */
struct dabi_ip {
	int primitive_kind, prop_kind;
	struct dabi_md src, diff_src, weights, diff_weights, bias, diff_bias, dst, diff_dst;
	int accum_data_type;
};

/* dnnl_version_t */
struct dabi_version {
	int major, minor, patch;
	const char *hash;
	unsigned cpu_runtime, gpu_runtime;
};

#endif
