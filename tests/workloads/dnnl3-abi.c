/* dnnl3-abi.c - the oneDNN 3.x values libdlprof-itt.so uses without 3.x's headers
 * (lib/inject/dnnl-abi.h, DABI3_* and the query values 2.x and 3.x share), checked at
 * compile time against the headers of a oneDNN 3.x.  Compiled, never run: t1015 builds
 * it in the Debian 13 container (oneDNN 3.7, libdnnl-dev). */
#include <oneapi/dnnl/dnnl.h>

#include "dnnl-abi.h"

#define SAME(a, b) _Static_assert((int)(a) == (int)(b), #a " == " #b)

SAME(DABI_Q_PRIMITIVE_KIND, dnnl_query_primitive_kind);
SAME(DABI_Q_IMPL_INFO_STR, dnnl_query_impl_info_str);
SAME(DABI_Q_PROP_KIND, dnnl_query_prop_kind);
SAME(DABI_Q_SRC_MD, dnnl_query_src_md);
SAME(DABI_Q_DIFF_SRC_MD, dnnl_query_diff_src_md);
SAME(DABI_Q_WEIGHTS_MD, dnnl_query_weights_md);
SAME(DABI_Q_DIFF_WEIGHTS_MD, dnnl_query_diff_weights_md);
SAME(DABI_Q_DST_MD, dnnl_query_dst_md);
SAME(DABI_Q_DIFF_DST_MD, dnnl_query_diff_dst_md);
SAME(DABI3_Q_STRIDES, dnnl_query_strides);
SAME(DABI3_Q_DILATIONS, dnnl_query_dilations);
SAME(DABI3_Q_PADDING_L, dnnl_query_padding_l);
SAME(DABI3_Q_KERNEL, dnnl_query_kernel);
SAME(DABI3_Q_NDIMS, dnnl_query_ndims_s32);
SAME(DABI3_Q_DIMS, dnnl_query_dims);
SAME(DABI3_Q_DATA_TYPE, dnnl_query_data_type);
SAME(DABI3_Q_FORMAT_KIND, dnnl_query_format_kind);
SAME(DABI3_Q_INNER_NBLKS, dnnl_query_inner_nblks_s32);
SAME(DABI3_Q_INNER_BLKS, dnnl_query_inner_blks);
SAME(DABI3_Q_INNER_IDXS, dnnl_query_inner_idxs);
SAME(DABI3_CONVOLUTION, dnnl_convolution);
SAME(DABI3_DECONVOLUTION, dnnl_deconvolution);
SAME(DABI3_INNER_PRODUCT, dnnl_inner_product);
SAME(DABI3_POOLING, dnnl_pooling);
SAME(DABI3_FMT_ANY, dnnl_format_kind_any);
SAME(DABI3_FMT_BLOCKED, dnnl_blocked);
SAME(DABI3_FMT_OPAQUE, dnnl_format_kind_opaque);
SAME(DABI3_FMT_SPARSE, dnnl_format_kind_sparse);
/* the names dnnl-hook.c gives data types, by value (later ones are past 3.7's) */
SAME(3, dnnl_f32);
SAME(2, dnnl_bf16);
SAME(5, dnnl_s8);
SAME(7, dnnl_f64);
SAME(8, dnnl_boolean);
SAME(9, dnnl_f8_e5m2);
SAME(10, dnnl_f8_e4m3);
SAME(11, dnnl_s4);
SAME(12, dnnl_u4);
_Static_assert(DNNL_MAX_NDIMS == DABI_MAX_NDIMS, "DNNL_MAX_NDIMS");
_Static_assert(sizeof(dnnl_dim_t) == sizeof(int64_t), "dnnl_dim_t");

int main(void)
{
	return 0;
}
